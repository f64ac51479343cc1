"""A run's budget as a bank balance: every model request reserves its worst case first.

A run with a budget (``max_cost`` in US dollars, ``max_tokens``) has one :class:`Ledger`,
shared by every thread and process that plays its episodes. Before a model request is sent,
:func:`admit` reserves the request's worst case on it: :func:`prompt_tokens_bound` of the
prompt at the input price plus ``max_tokens`` at the output price. The reservation is
granted when what was spent plus every reservation still held plus this one fits the
budget; when it would fit only once requests in flight settle, the request waits for them;
when it cannot fit even then, it is not sent: :class:`BudgetRefused`, and the ledger closes,
so every later request of the run is refused at once. On the answer, :func:`settle` replaces
the reservation by the answer's real usage (a failed call settles to nothing, except a
timeout, whose request may have been billed: it keeps its reservation as spent).

So the spend (settled usage) never passes the budget, whatever the workers, the episodes in
flight or the backend, as long as the server bills no more than the bound:

* prompt tokens at most :func:`prompt_tokens_bound`: the prompt's UTF-8 bytes plus 8 tokens
  a message (every token of a byte-level BPE or byte-fallback tokenizer covers at least one
  byte; 8 covers the chat template's role markers), plus :func:`image_tokens_bound` per
  image. It is four times the usual count of English text: a budget is never spent to
  its last cent, but it is never passed.
* completion tokens at most the request's ``max_tokens``.

Where the ledger lives (:class:`LedgerSpec`): a JSON file in the run's folder, changed under
an exclusive ``flock`` of its lock file (every process of the machine: ``--workers``,
``--concurrency``, a local Ray), or, for a Ray cluster, a named Ray actor that holds the
same state. A reservation held by a process that died is counted as spent (its request may
have been billed). Amounts are integers of 10^-12 US dollars, so sums are exact.

An episode plays inside a :func:`call_scope` (the episode runner opens it): the ledger and
the price of the episode's agent, a ``cut`` flag set when one of the episode's requests was
refused (the runner then drops the episode: it is not recorded, and ``resume`` plays it),
and ``rate_limited``, the rate-limit answers the episode's requests were retried after.
"""

from __future__ import annotations

import json
import math
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mindhelper_env.models.base import ModelError, normalize_messages

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["BudgetRefused", "LedgerSpec", "Ledger", "LedgerState", "prompt_tokens_bound",
           "image_tokens_bound", "call_scope", "current_scope", "admit", "settle",
           "note_rate_limited", "PICO", "MESSAGE_OVERHEAD"]

#: Units of the ledger per US dollar (amounts are ints of 10^-12 dollars).
PICO = 10**12
#: Tokens counted per message for the chat template (role markers, separators).
MESSAGE_OVERHEAD = 8


class BudgetRefused(ModelError):
    """A model request was not sent: its worst case does not fit what is left of the run's
    budget. The episode that asked is cut (not recorded)."""

    def __init__(self, message: str = "the run's budget is spent") -> None:
        super().__init__(message, "budget")


# --------------------------------------------------------------------------------------
# The worst case of a request
# --------------------------------------------------------------------------------------


def image_tokens_bound(height: int, width: int, rule: str | None = None) -> int:
    """Most tokens one ``height x width`` image is billed for by the common vision APIs:
    OpenAI's high detail (:func:`~mindhelper_env.models.images.image_tokens`' ``openai``
    rule), Anthropic's ``w * h / 750``, Gemini's 258 per 768-pixel tile and Qwen-VL's
    28-pixel patches, and the client's own image rule ``rule`` where one is given (e.g.
    ``fixed:N`` for a model that bills images at a larger count, such as gpt-4o-mini),
    whichever is largest."""
    from mindhelper_env.models.images import image_tokens

    h, w = max(1, int(height)), max(1, int(width))
    anthropic = math.ceil(h * w / 750)
    gemini = 258 * math.ceil(h / 768) * math.ceil(w / 768)
    qwen = math.ceil(h / 28) * math.ceil(w / 28) + 2
    own = image_tokens(h, w, rule) if rule is not None else 0
    return max(image_tokens(h, w, "openai"), anthropic, gemini, qwen, own)


def prompt_tokens_bound(messages: list[dict[str, Any]], image_rule: str | None = None) -> int:
    """An upper bound of the prompt tokens of ``messages`` (any form
    :func:`~mindhelper_env.models.base.normalize_messages` takes): the UTF-8 bytes of every
    text part and role, :data:`MESSAGE_OVERHEAD` a message, and :func:`image_tokens_bound`
    of every image part (``image_rule``: the client's image-token rule, counted too). The
    one function a request's reservation counts its prompt with."""
    total = 0
    for msg in normalize_messages(messages):
        total += MESSAGE_OVERHEAD + len(msg["role"].encode("utf-8"))
        for kind, value in msg["content"]:
            if kind == "text":
                total += len(value.encode("utf-8"))
            else:
                total += image_tokens_bound(value.shape[0], value.shape[1], image_rule)
    return total


# --------------------------------------------------------------------------------------
# The ledger's state and where it lives
# --------------------------------------------------------------------------------------


@dataclass
class LedgerState:
    """The balance: limits, what was spent, reservations held (by id: ``[pico, tokens,
    pid]``), requests sent and refused, and the reason the ledger closed (None: open)."""

    max_pico: int | None = None
    max_tokens: int | None = None
    spent_pico: int = 0
    spent_tokens: int = 0
    held: dict[str, list[int]] = field(default_factory=dict)
    sent: int = 0
    refused: int = 0
    unsent_pico: int = 0
    unsent_tokens: int = 0
    closed: str | None = None

    def reserved(self) -> tuple[int, int]:
        return (sum(h[0] for h in self.held.values()), sum(h[1] for h in self.held.values()))

    def try_reserve(self, rid: str, pico: int, tokens: int, pid: int) -> str:
        """``"ok"`` (held), ``"wait"`` (fits once requests in flight settle) or
        ``"refused"`` (never fits: the ledger closes)."""
        if self.closed is None:
            if self.max_pico is not None and self.spent_pico + pico > self.max_pico:
                self.closed = "max_cost"
            elif self.max_tokens is not None and self.spent_tokens + tokens > self.max_tokens:
                self.closed = "max_tokens"
        if self.closed is not None:
            self.refused += 1
            self.unsent_pico += pico
            self.unsent_tokens += tokens
            return "refused"
        r_pico, r_tokens = self.reserved()
        if (self.max_pico is not None and self.spent_pico + r_pico + pico > self.max_pico) or \
                (self.max_tokens is not None
                 and self.spent_tokens + r_tokens + tokens > self.max_tokens):
            return "wait"
        self.held[rid] = [pico, tokens, pid]
        self.sent += 1
        return "ok"

    def settle(self, rid: str, pico: int, tokens: int) -> None:
        if self.held.pop(rid, None) is None:
            return  # counted as spent when its process was found dead
        self.spent_pico += pico
        self.spent_tokens += tokens

    def drop_dead(self, alive: Any) -> None:
        """Reservations of processes that died count as spent."""
        for rid, (pico, tokens, pid) in list(self.held.items()):
            if not alive(pid):
                self.settle(rid, pico, tokens)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def summary(self) -> dict[str, Any]:
        """The figures a run reports (US dollars rounded to 10^-6)."""
        r_pico, r_tokens = self.reserved()
        return {
            "spent_usd": round(self.spent_pico / PICO, 6),
            "spent_tokens": self.spent_tokens,
            "reserved_usd": round(r_pico / PICO, 6),
            "requests_sent": self.sent,
            "requests_refused": self.refused,
            "unsent_usd": round(self.unsent_pico / PICO, 6),
            "unsent_tokens": self.unsent_tokens,
            "closed": self.closed,
        }


@dataclass(frozen=True)
class LedgerSpec:
    """Where a run's ledger lives: ``path`` (a JSON file; its lock is ``path`` + ``.lock``)
    or ``actor`` (the name of a Ray actor in the ``mindhelper`` namespace); and the price
    of each agent ``(agent, input_per_million, output_per_million)``. Picklable."""

    path: str | None = None
    actor: str | None = None
    prices: tuple[tuple[str, float, float], ...] = ()

    def price(self, agent: str) -> tuple[float, float]:
        for name, inp, out in self.prices:
            if name == agent:
                return inp, out
        return 0.0, 0.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class Ledger:
    """The client of a run's ledger (see the module docstring). ``Ledger.create(spec,
    max_cost=..., max_tokens=...)`` starts a fresh one (the run's coordinator);
    ``Ledger(spec)`` opens it (every worker)."""

    POLL = 0.02

    def __init__(self, spec: LedgerSpec) -> None:
        self.spec = spec
        self._actor: Any = None
        self._lock = threading.Lock()  # flock is per open file: one holder per process too

    @classmethod
    def create(cls, spec: LedgerSpec, *, max_cost: float | None,
               max_tokens: int | None) -> Ledger:
        state = LedgerState(max_pico=None if max_cost is None else math.floor(max_cost * PICO),
                            max_tokens=max_tokens)
        ledger = cls(spec)
        if spec.actor is not None:
            ledger._actor = _ray_ledger(spec.actor, state)
        else:
            ledger._write(state)
        return ledger

    # -- storage ---------------------------------------------------------------------

    def _write(self, state: LedgerState) -> None:
        path = Path(str(self.spec.path))
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state.to_dict()), encoding="utf-8")
        os.replace(tmp, path)

    @contextmanager
    def _file_state(self) -> Iterator[LedgerState]:
        path = Path(str(self.spec.path))
        with self._lock, open(str(path) + ".lock", "a+b") as fh:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                state = LedgerState(**json.loads(path.read_text(encoding="utf-8")))
                before = state.to_dict()
                yield state
                if state.to_dict() != before:
                    self._write(state)
            finally:
                if fcntl is not None:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _call(self, method: str, *args: Any) -> Any:
        if self.spec.actor is not None:
            import ray

            if self._actor is None:
                self._actor = ray.get_actor(self.spec.actor, namespace="mindhelper")
            return ray.get(getattr(self._actor, method).remote(*args))
        with self._file_state() as state:
            if method == "try_reserve":
                out = state.try_reserve(*args)
                if out == "wait":
                    state.drop_dead(_alive)
                    out = state.try_reserve(*args)
                return out
            if method == "settle":
                return state.settle(*args)
            return state.summary()

    # -- the operations --------------------------------------------------------------

    def reserve(self, pico: int, tokens: int) -> str:
        """Hold ``pico`` and ``tokens`` (waiting for requests in flight to settle when that
        is what it takes); the reservation's id, or :class:`BudgetRefused`."""
        from mindhelper_env.models.limits import cancellable_sleep

        rid = uuid.uuid4().hex
        delay = self.POLL
        while True:
            answer = self._call("try_reserve", rid, int(pico), int(tokens), os.getpid())
            if answer == "ok":
                return rid
            if answer == "refused":
                raise BudgetRefused(
                    f"not sent: its worst case (${pico / PICO:.6f}, {tokens:,} tokens) does "
                    "not fit what is left of the run's budget")
            cancellable_sleep(delay)
            delay = min(delay * 1.5, 0.2)

    def settle(self, rid: str, pico: int, tokens: int) -> None:
        self._call("settle", rid, int(pico), int(tokens))

    def summary(self) -> dict[str, Any]:
        return dict(self._call("summary"))


def _ray_ledger(name: str, state: LedgerState) -> Any:
    """A fresh named Ray actor holding ``state`` (the ledger of a run on a Ray cluster)."""
    import ray

    class _LedgerActor:
        def __init__(self, initial: dict[str, Any]) -> None:
            self.state = LedgerState(**initial)

        def try_reserve(self, rid: str, pico: int, tokens: int, pid: int) -> str:
            return self.state.try_reserve(rid, pico, tokens, pid)

        def settle(self, rid: str, pico: int, tokens: int) -> None:
            self.state.settle(rid, pico, tokens)

        def summary(self) -> dict[str, Any]:
            return self.state.summary()

    # one call at a time (the state is never changed by two); owned by the driver's job,
    # so it ends with the run even if the driver dies
    actor_cls = ray.remote(num_cpus=0, max_concurrency=1)(_LedgerActor)
    return actor_cls.options(name=name, namespace="mindhelper").remote(state.to_dict())


def kill_ray_ledger(spec: LedgerSpec) -> None:
    """Remove a run's ledger actor (after the run)."""
    if spec.actor is None:
        return
    import contextlib

    import ray

    with contextlib.suppress(Exception):
        ray.kill(ray.get_actor(spec.actor, namespace="mindhelper"))


# --------------------------------------------------------------------------------------
# The episode's scope: what model calls made by this thread reserve on
# --------------------------------------------------------------------------------------


@dataclass
class CallScope:
    """The model calls of one episode (see the module docstring)."""

    ledger: Ledger | None = None
    price: tuple[float, float] = (0.0, 0.0)
    cut: bool = False
    rate_limited: int = 0


_local = threading.local()


@contextmanager
def call_scope(ledger: Ledger | None = None,
               price: tuple[float, float] = (0.0, 0.0)) -> Iterator[CallScope]:
    """Model calls made by this thread inside the block reserve on ``ledger`` at ``price``
    (US dollars per million input and output tokens); yields the :class:`CallScope`."""
    previous = getattr(_local, "scope", None)
    scope = _local.scope = CallScope(ledger, (float(price[0]), float(price[1])))
    try:
        yield scope
    finally:
        _local.scope = previous


def current_scope() -> CallScope | None:
    return getattr(_local, "scope", None)


def note_rate_limited() -> None:
    """Count a rate-limit answer that a request of this thread's episode is retried after."""
    scope = current_scope()
    if scope is not None:
        scope.rate_limited += 1


def _pico(price: tuple[float, float], prompt: int, completion: int) -> float:
    return (price[0] * prompt + price[1] * completion) * 1e6


def admit(messages: list[dict[str, Any]], max_tokens: int,
          image_rule: str | None = None) -> tuple[str, int, int] | None:
    """Reserve a request's worst case on this thread's ledger: ``(id, pico, tokens)`` to
    pass to :func:`settle`, None without a ledger; :class:`BudgetRefused` when it does not
    fit (the scope is then ``cut``, and so is every later request of the episode)."""
    scope = current_scope()
    if scope is None or scope.ledger is None:
        return None
    if scope.cut:
        raise BudgetRefused("not sent: an earlier request of this episode was refused")
    tokens = prompt_tokens_bound(messages, image_rule) + int(max_tokens)
    pico = math.ceil(_pico(scope.price, tokens - int(max_tokens), int(max_tokens)))
    try:
        return scope.ledger.reserve(pico, tokens), pico, tokens
    except BudgetRefused:
        scope.cut = True
        raise


def settle(held: tuple[str, int, int] | None, prompt_tokens: int | None,
           completion_tokens: int | None, *, kind: str | None = None) -> None:
    """Settle :func:`admit`'s reservation to the answer's usage; a failed call (no usage)
    settles to nothing, a ``timeout`` to its whole reservation."""
    scope = current_scope()
    if held is None or scope is None or scope.ledger is None:
        return
    rid, pico, tokens = held
    if prompt_tokens is None or completion_tokens is None:
        if kind != "timeout":
            pico = tokens = 0
    else:
        pico = round(_pico(scope.price, int(prompt_tokens), int(completion_tokens)))
        tokens = int(prompt_tokens) + int(completion_tokens)
    scope.ledger.settle(rid, pico, tokens)
