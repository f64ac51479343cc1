"""A run's budget as a bank balance: every episode holds its worst case before it starts,
and every model request draws its own worst case from that hold before it is sent.

A run with a budget (``max_cost`` in US dollars, ``max_tokens``) has one :class:`Ledger`,
shared by every thread and process that plays its episodes.

* **An episode starts only when the budget covers its worst case**
  (:meth:`Ledger.start_episode`, called by the episode runner): the most model calls an
  episode of the agent made (the dry pass's episodes, then every episode played) times
  the worst case of the agent's largest request
  (:func:`~mindhelper_env.models.worst_case.episode_worst`). It is held when what was
  spent plus every hold plus this one fits the budget; while only the holds of episodes in
  flight stand in the way, the episode waits for them; when it cannot fit even with none
  in flight, it is not started (:class:`EpisodeNotStarted`) and the ledger closes: no
  episode starts after it, the episodes in flight play on. An agent whose episodes are not
  known yet (no dry pass) plays one first episode with nothing held, alone.
* **Every request draws its worst case** (:func:`admit`, in
  :func:`~mindhelper_env.models.accounting.accounted_call`) from its episode's hold; what
  the hold lacks (an episode longer than any seen) it takes from what nobody holds, and
  when that is not enough either the request is not sent (:class:`BudgetRefused`) and its
  episode is **cut**. On the answer, :func:`settle` charges the server's billed usage
  (a failed call nothing, a timeout its whole reservation, since it may have been billed)
  and the hold becomes what the rest of the episode can cost at worst: it shrinks, or, when
  the bills were higher than held, grows from what nobody holds; when that leaves it short
  by more than the worst case's 10 % margin, the episode is cut at its next request,
  before it spends more. When the episode ends,
  what it still holds is released.
* **The worst case is learned from the bills**
  (:mod:`mindhelper_env.models.worst_case`): before the run's first answer, a request is
  bounded by :func:`prompt_tokens_bound` (UTF-8 bytes plus 8 tokens a message, plus the
  most tokens any common vision API bills for each image) plus ``max_tokens``; from then on
  by the package's estimate (4 characters a token, images by the client's image rule)
  scaled by the largest ratio of billed to estimated tokens seen, per kind (text, and
  tokens an image), never below the package's rules, plus 10 %. A server that bills more
  than the package estimates is reserved at what it bills from its first answer on; that
  first answer is paid from its episode's hold.

So the spend (settled usage) never passes the budget, whatever the workers, the episodes in
flight or the backend, as long as no episode is billed more than it holds plus what nobody
holds: each request's worst case is what the server billed for its kind so far, and an
answer billed above it (the first of a kind) is paid from its episode's hold.

Where the ledger lives (:class:`LedgerSpec`): a JSON file in the run's folder, changed under
an exclusive ``flock`` of its lock file (every process of the machine: ``--workers``,
``--concurrency``, a local Ray), or, for a Ray cluster, a named Ray actor that holds the
same state. A hold of a process that died is counted as spent (its requests may have been
billed). Amounts are integers of 10^-12 US dollars, so sums are exact. A request made
outside an episode (a :func:`call_scope` without ``episode``) reserves on its own: it waits
while requests in flight stand in the way, and the first one that cannot fit closes the
ledger (:meth:`LedgerState.try_reserve`).

An episode plays inside a :func:`call_scope` (the episode runner opens it): the ledger, the
price of the episode's agent, the episode's hold, a ``cut`` flag set when one of the
episode's requests was refused (the runner then drops the episode: it is not recorded, and
``resume`` plays it), and ``rate_limited``, the rate-limit answers the episode's requests
were retried after.
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

from mindhelper_env.models.base import ModelError
from mindhelper_env.models.worst_case import (
    MARGIN,
    MESSAGE_OVERHEAD,
    Shape,
    episode_worst,
    fresh_rates,
    image_tokens_bound,
    learn,
    max_shape,
    request_shape,
    worst_tokens,
)

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["BudgetRefused", "EpisodeNotStarted", "LedgerSpec", "Ledger", "LedgerState", "prompt_tokens_bound",
           "image_tokens_bound", "call_scope", "current_scope", "admit", "settle",
           "note_rate_limited", "PICO", "MESSAGE_OVERHEAD"]

#: Units of the ledger per US dollar (amounts are ints of 10^-12 dollars).
PICO = 10**12


class BudgetRefused(ModelError):
    """A model request was not sent: its worst case does not fit what is left of the run's
    budget. The episode that asked is cut (not recorded)."""

    def __init__(self, message: str = "the run's budget is spent") -> None:
        super().__init__(message, "budget")


class EpisodeNotStarted(BudgetRefused):
    """An episode was not started: its worst case does not fit what is left of the run's
    budget, even once the episodes in flight end. Nothing of it was sent or spent."""


# --------------------------------------------------------------------------------------
# The hard bound of a request (the prior of mindhelper_env.models.worst_case)
# --------------------------------------------------------------------------------------


def prompt_tokens_bound(messages: list[dict[str, Any]], image_rule: str | None = None) -> int:
    """An upper bound of the prompt tokens of ``messages`` (any form
    :func:`~mindhelper_env.models.base.normalize_messages` takes): the UTF-8 bytes of every
    text part and role, :data:`MESSAGE_OVERHEAD` a message, and :func:`image_tokens_bound`
    of every image part (``image_rule``: the client's image-token rule, counted too): what a
    request is reserved at before the run has seen any answer."""
    shape = request_shape(messages, 0, image_rule)
    return shape.text_bound + shape.image_bound


# --------------------------------------------------------------------------------------
# The ledger's state and where it lives
# --------------------------------------------------------------------------------------


@dataclass
class LedgerState:
    """The balance: limits, what was spent, reservations held (by id: ``[pico, tokens,
    pid]``; an episode's hold is held under the episode's id), requests sent and refused,
    the reason the ledger closed (None: open), what the run learned of the server's bills
    (``rates``, :func:`~mindhelper_env.models.worst_case.fresh_rates`), each agent's most
    calls an episode and largest request (``agents``: ``{agent: {"calls", "shape"}}``), the
    episodes in flight (``episodes``: ``{id: {"agent", "calls", "out", "probe"}}``,
    ``out`` the requests in flight ``{id: [pico, tokens]}``) and the episodes started and
    refused."""

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
    rates: dict[str, Any] = field(default_factory=fresh_rates)
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    episodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    episodes_started: int = 0
    episodes_refused: int = 0

    def reserved(self) -> tuple[int, int]:
        return (sum(h[0] for h in self.held.values()), sum(h[1] for h in self.held.values()))

    def _over(self, pico: int, tokens: int, *, with_held: bool = True) -> str | None:
        """The limit ``pico`` and ``tokens`` more would pass (counting what is held unless
        ``with_held`` is False), or None."""
        r_pico, r_tokens = self.reserved() if with_held else (0, 0)
        if self.max_pico is not None and self.spent_pico + r_pico + pico > self.max_pico:
            return "max_cost"
        if self.max_tokens is not None and \
                self.spent_tokens + r_tokens + tokens > self.max_tokens:
            return "max_tokens"
        return None

    def _free(self) -> tuple[int, int]:
        """What no reservation holds, within the limits (a large number without one)."""
        r_pico, r_tokens = self.reserved()
        free_pico = 10**30 if self.max_pico is None else \
            max(0, self.max_pico - self.spent_pico - r_pico)
        free_tokens = 10**30 if self.max_tokens is None else \
            max(0, self.max_tokens - self.spent_tokens - r_tokens)
        return free_pico, free_tokens

    def try_reserve(self, rid: str, pico: int, tokens: int, pid: int) -> str:
        """One request outside an episode: ``"ok"`` (held), ``"wait"`` (fits once requests
        in flight settle) or ``"refused"`` (never fits: the ledger closes)."""
        if self.closed is None:
            self.closed = self._over(pico, tokens, with_held=False)
        if self.closed is not None:
            self.refused += 1
            self.unsent_pico += pico
            self.unsent_tokens += tokens
            return "refused"
        if self._over(pico, tokens) is not None:
            return "wait"
        self.held[rid] = [pico, tokens, pid]
        self.sent += 1
        return "ok"

    def settle(self, rid: str, pico: int, tokens: int) -> None:
        if self.held.pop(rid, None) is None:
            return  # counted as spent when its process was found dead
        self.spent_pico += pico
        self.spent_tokens += tokens

    # -- episodes ------------------------------------------------------------------

    def _agent_worst(self, agent: str, calls: int,
                     price: tuple[float, float]) -> tuple[int, int] | None:
        row = self.agents.get(agent) or {}
        shape = Shape.from_list(row["shape"]) if row.get("shape") else None
        return episode_worst(calls, shape, self.rates, price)

    def start_episode(self, eid: str, agent: str, price: Any, pid: int) -> str:
        """Hold an episode's worst case (:func:`~mindhelper_env.models.worst_case.episode_worst`
        of the agent's most calls an episode): ``"ok"``; ``"wait"`` while only what other
        episodes hold stands in the way (or, for an agent whose episodes are not known
        yet, while its first episode, played with nothing held, is in flight);
        ``"refused"`` when it cannot fit even once every episode in flight ends (the
        ledger closes: no episode starts after it)."""
        price = (float(price[0]), float(price[1]))
        if self.closed is not None:
            self.episodes_refused += 1
            return "refused"
        row = self.agents.get(agent) or {}
        worst = self._agent_worst(agent, int(row.get("calls", 0)), price)
        if worst is None:
            if any(e["probe"] and e["agent"] == agent for e in self.episodes.values()):
                return "wait"
            pico = tokens = 0
        else:
            pico, tokens = worst
            over = self._over(pico, tokens, with_held=False)
            if over is not None:
                self.closed = over
                self.episodes_refused += 1
                return "refused"
            if self._over(pico, tokens) is not None:
                return "wait"
        self.held[eid] = [int(pico), int(tokens), int(pid)]
        self.episodes[eid] = {"agent": agent, "calls": 0, "out": {}, "probe": worst is None}
        self.episodes_started += 1
        return "ok"

    def request(self, eid: str | None, rid: str, shape: list[int], price: Any,
                pid: int) -> str:
        """Reserve one request's worst case (:func:`~mindhelper_env.models.worst_case.worst_tokens`
        at what was learned so far). In an episode it is drawn from the episode's hold,
        which takes what it lacks from what nobody holds: ``"ok"``, or ``"refused"`` when
        that is not enough (the episode is cut; the ledger stays open). Outside an
        episode, :meth:`try_reserve`."""
        price = (float(price[0]), float(price[1]))
        req = Shape.from_list(shape)
        prompt, completion = worst_tokens(req, self.rates)
        pico = math.ceil(_pico(price, prompt, completion))
        tokens = prompt + completion
        if eid is None:
            return self.try_reserve(rid, pico, tokens, pid)
        ep = self.episodes.get(eid)
        hold = self.held.get(eid)
        if ep is None or hold is None:  # its process was counted dead
            self.refused += 1
            return "refused"
        if ep.get("doomed"):
            self.refused += 1
            self.unsent_pico += pico
            self.unsent_tokens += tokens
            return "refused"
        row = self.agents.setdefault(ep["agent"], {"calls": 0, "shape": None})
        row["shape"] = max_shape(Shape.from_list(row["shape"]) if row.get("shape") else None,
                                 req).to_list()
        ep["calls"] += 1
        row["calls"] = max(int(row.get("calls", 0)), ep["calls"])
        out_pico = sum(o[0] for o in ep["out"].values())
        out_tokens = sum(o[1] for o in ep["out"].values())
        extra_pico = max(0, out_pico + pico - hold[0])
        extra_tokens = max(0, out_tokens + tokens - hold[1])
        if (extra_pico or extra_tokens) and self._over(extra_pico, extra_tokens) is not None:
            self.refused += 1
            self.unsent_pico += pico
            self.unsent_tokens += tokens
            return "refused"
        hold[0] += extra_pico
        hold[1] += extra_tokens
        ep["out"][rid] = [pico, tokens]
        self.sent += 1
        return "ok"

    def settle_request(self, eid: str | None, rid: str, shape: list[int], price: Any,
                       prompt_tokens: int | None, completion_tokens: int | None,
                       kind: str | None = None) -> None:
        """Settle a request to the answer's billed usage (learned, :func:`learn`); a failed
        call (no usage) to nothing, except a ``timeout`` (it may have been billed) to its
        whole reservation. In an episode the amount leaves the episode's hold, which then
        becomes what the rest of the episode can cost at worst (at what was learned): it
        shrinks, or grows from what nobody holds; when that leaves it short by more than
        the worst case's margin, the episode's next request is refused (it is cut before
        it spends more)."""
        price = (float(price[0]), float(price[1]))
        req = Shape.from_list(shape)
        if eid is None:
            held = self.held.get(rid)
        else:
            ep = self.episodes.get(eid)
            held = None if ep is None else ep["out"].pop(rid, None)
        if held is None:
            return  # counted as spent when its process was found dead
        if prompt_tokens is None or completion_tokens is None:
            pico, tokens = (held[0], held[1]) if kind == "timeout" else (0, 0)
        else:
            learn(self.rates, req, int(prompt_tokens), int(completion_tokens))
            pico = round(_pico(price, int(prompt_tokens), int(completion_tokens)))
            tokens = int(prompt_tokens) + int(completion_tokens)
        if eid is None:
            self.settle(rid, pico, tokens)
            return
        self.spent_pico += pico
        self.spent_tokens += tokens
        hold = self.held[eid]
        hold[0] = max(0, hold[0] - pico)
        hold[1] = max(0, hold[1] - tokens)
        row = self.agents.get(ep["agent"]) or {}
        rest = self._agent_worst(ep["agent"], int(row.get("calls", 0)) - ep["calls"], price)
        out_pico = sum(o[0] for o in ep["out"].values())
        out_tokens = sum(o[1] for o in ep["out"].values())
        need_pico = (rest[0] if rest is not None else 0) + out_pico
        need_tokens = (rest[1] if rest is not None else 0) + out_tokens
        extra_pico, extra_tokens = max(0, need_pico - hold[0]), max(0, need_tokens - hold[1])
        if not (extra_pico or extra_tokens):
            hold[0], hold[1] = need_pico, need_tokens  # shrink: release the rest
        elif self._over(extra_pico, extra_tokens) is None:
            hold[0] += extra_pico  # the bills were higher than held: hold more
            hold[1] += extra_tokens
        else:
            # hold what is free; when even that leaves the rest's worst case short by more
            # than its margin, the episode cannot be expected to finish: cut it now, before
            # it spends more (a smaller shortfall plays on: each request is still checked)
            free_pico, free_tokens = self._free()
            hold[0] += min(extra_pico, free_pico)
            hold[1] += min(extra_tokens, free_tokens)
            if need_pico > hold[0] * (1.0 + MARGIN) or need_tokens > hold[1] * (1.0 + MARGIN):
                ep["doomed"] = True

    def end_episode(self, eid: str) -> None:
        """Release what the episode still holds; requests it never settled count as
        spent."""
        ep = self.episodes.pop(eid, None)
        self.held.pop(eid, None)
        if ep is None:
            return
        for pico, tokens in ep["out"].values():
            self.spent_pico += pico
            self.spent_tokens += tokens
        row = self.agents.setdefault(ep["agent"], {"calls": 0, "shape": None})
        row["calls"] = max(int(row.get("calls", 0)), ep["calls"])

    def drop_dead(self, alive: Any) -> None:
        """Reservations of processes that died count as spent (an episode's whole hold)."""
        for rid, (pico, tokens, pid) in list(self.held.items()):
            if not alive(pid):
                self.settle(rid, pico, tokens)
                self.episodes.pop(rid, None)

    def seed(self, agents: dict[str, dict[str, Any]]) -> None:
        """Start from what a dry pass saw of each agent (``{"calls", "shape"}``)."""
        for agent, row in agents.items():
            mine = self.agents.setdefault(agent, {"calls": 0, "shape": None})
            mine["calls"] = max(int(mine.get("calls", 0)), int(row.get("calls", 0)))
            if row.get("shape"):
                mine["shape"] = max_shape(
                    Shape.from_list(mine["shape"]) if mine.get("shape") else None,
                    Shape.from_list(row["shape"])).to_list()

    def apply(self, method: str, args: tuple[Any, ...], alive: Any = None) -> Any:
        """One operation (what the file and the Ray actor both run); an answer ``"wait"``
        is tried again after the reservations of dead processes are dropped (``alive``)."""
        if method not in _OPERATIONS:
            raise ValueError(f"unknown ledger operation {method!r}")
        out = getattr(self, method)(*args)
        if out == "wait" and alive is not None:
            self.drop_dead(alive)
            out = getattr(self, method)(*args)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def summary(self) -> dict[str, Any]:
        """The figures a run reports (US dollars rounded to 10^-6)."""
        r_pico, r_tokens = self.reserved()
        rates = {k: (round(v, 4) if isinstance(v, float) else v)
                 for k, v in self.rates.items()}
        return {
            "spent_usd": round(self.spent_pico / PICO, 6),
            "spent_tokens": self.spent_tokens,
            "reserved_usd": round(r_pico / PICO, 6),
            "requests_sent": self.sent,
            "requests_refused": self.refused,
            "unsent_usd": round(self.unsent_pico / PICO, 6),
            "unsent_tokens": self.unsent_tokens,
            "episodes_started": self.episodes_started,
            "episodes_not_started": self.episodes_refused,
            "learned": rates,
            "closed": self.closed,
        }


_OPERATIONS = ("try_reserve", "settle", "start_episode", "request", "settle_request",
               "end_episode", "summary", "seed")


@dataclass(frozen=True)
class LedgerSpec:
    """Where a run's ledger lives: ``path`` (a JSON file; its lock is ``path`` + ``.lock``)
    or ``actor`` (the name of a Ray actor in the ``mindhelper`` namespace); the price of
    each agent ``(agent, input_per_million, output_per_million)``; the ``metered`` agents.
    Picklable."""

    path: str | None = None
    actor: str | None = None
    prices: tuple[tuple[str, float, float], ...] = ()
    #: the agents whose episodes hold their worst case before they start (those with a
    #: live model); the others' episodes start at once (their requests, if any, reserve
    #: one by one)
    metered: tuple[str, ...] = ()

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
    def create(cls, spec: LedgerSpec, *, max_cost: float | None, max_tokens: int | None,
               seed: dict[str, dict[str, Any]] | None = None) -> Ledger:
        """A fresh ledger; ``seed``: what a dry pass saw of each agent
        (:meth:`LedgerState.seed`)."""
        state = LedgerState(max_pico=None if max_cost is None else math.floor(max_cost * PICO),
                            max_tokens=max_tokens)
        state.seed(dict(seed or {}))
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
                before = json.dumps(state.to_dict(), sort_keys=True)  # a deep snapshot
                yield state
                if json.dumps(state.to_dict(), sort_keys=True) != before:
                    self._write(state)
            finally:
                if fcntl is not None:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _call(self, method: str, *args: Any) -> Any:
        if self.spec.actor is not None:
            import ray

            if self._actor is None:
                self._actor = ray.get_actor(self.spec.actor, namespace="mindhelper")
            return ray.get(self._actor.apply.remote(method, args))
        with self._file_state() as state:
            return state.apply(method, args, _alive)

    def _until_decided(self, method: str, *args: Any) -> str:
        """Call ``method`` until it answers something else than ``"wait"``."""
        from mindhelper_env.models.limits import cancellable_sleep

        delay = self.POLL
        while True:
            answer = self._call(method, *args)
            if answer != "wait":
                return str(answer)
            cancellable_sleep(delay)
            delay = min(delay * 1.5, 0.2)

    # -- the operations --------------------------------------------------------------

    def reserve(self, pico: int, tokens: int) -> str:
        """Hold ``pico`` and ``tokens`` (waiting for requests in flight to settle when that
        is what it takes); the reservation's id, or :class:`BudgetRefused`."""
        rid = uuid.uuid4().hex
        if self._until_decided("try_reserve", rid, int(pico), int(tokens),
                               os.getpid()) == "ok":
            return rid
        raise BudgetRefused(
            f"not sent: its worst case (${pico / PICO:.6f}, {tokens:,} tokens) does not fit "
            "what is left of the run's budget")

    def settle(self, rid: str, pico: int, tokens: int) -> None:
        self._call("settle", rid, int(pico), int(tokens))

    def start_episode(self, agent: str, price: tuple[float, float]) -> str:
        """Hold the worst case of an episode of ``agent`` (waiting while episodes in flight
        stand in the way); the episode's id, or :class:`EpisodeNotStarted`."""
        eid = "episode-" + uuid.uuid4().hex
        if self._until_decided("start_episode", eid, agent, list(price),
                               os.getpid()) == "ok":
            return eid
        raise EpisodeNotStarted(
            f"episode of {agent} not started: its worst case does not fit what is left of "
            "the run's budget")

    def request(self, eid: str | None, shape: Shape, price: tuple[float, float]) -> str:
        """Reserve a request's worst case (:meth:`LedgerState.request`): its id, or
        :class:`BudgetRefused`."""
        rid = uuid.uuid4().hex
        args = (eid, rid, shape.to_list(), list(price), os.getpid())
        answer = self._until_decided("request", *args) if eid is None \
            else self._call("request", *args)
        if answer == "ok":
            return rid
        raise BudgetRefused("not sent: its worst case does not fit what its episode holds "
                            "and what is left of the run's budget")

    def settle_request(self, eid: str | None, rid: str, shape: Shape,
                       price: tuple[float, float], prompt_tokens: int | None,
                       completion_tokens: int | None, kind: str | None = None) -> None:
        self._call("settle_request", eid, rid, shape.to_list(), list(price),
                   None if prompt_tokens is None else int(prompt_tokens),
                   None if completion_tokens is None else int(completion_tokens), kind)

    def end_episode(self, eid: str) -> None:
        self._call("end_episode", eid)

    def summary(self) -> dict[str, Any]:
        return dict(self._call("summary"))


def _ray_ledger(name: str, state: LedgerState) -> Any:
    """A fresh named Ray actor holding ``state`` (the ledger of a run on a Ray cluster)."""
    import ray

    class _LedgerActor:
        def __init__(self, initial: dict[str, Any]) -> None:
            self.state = LedgerState(**initial)

        def apply(self, method: str, args: tuple[Any, ...]) -> Any:
            return self.state.apply(method, args)

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
    """The model calls of one episode (see the module docstring): ``episode`` is the id of
    the episode's hold on the ledger (None: each request reserves on its own)."""

    ledger: Ledger | None = None
    price: tuple[float, float] = (0.0, 0.0)
    cut: bool = False
    rate_limited: int = 0
    episode: str | None = None


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
          image_rule: str | None = None) -> tuple[str, Shape] | None:
    """Reserve a request's worst case on this thread's ledger (from its episode's hold
    when the scope has one): ``(id, shape)`` to pass to :func:`settle`, None without a
    ledger; :class:`BudgetRefused` when it does not fit (the scope is then ``cut``, and so
    is every later request of the episode)."""
    scope = current_scope()
    if scope is None or scope.ledger is None:
        return None
    if scope.cut:
        raise BudgetRefused("not sent: an earlier request of this episode was refused")
    shape = request_shape(messages, max_tokens, image_rule)
    try:
        return scope.ledger.request(scope.episode, shape, scope.price), shape
    except BudgetRefused:
        scope.cut = True
        raise


def settle(held: tuple[str, Shape] | None, prompt_tokens: int | None,
           completion_tokens: int | None, *, kind: str | None = None) -> None:
    """Settle :func:`admit`'s reservation to the answer's usage (the ledger learns from
    it); a failed call (no usage) settles to nothing, a ``timeout`` to its whole
    reservation."""
    scope = current_scope()
    if held is None or scope is None or scope.ledger is None:
        return
    rid, shape = held
    scope.ledger.settle_request(scope.episode, rid, shape, scope.price, prompt_tokens,
                                completion_tokens, kind)
