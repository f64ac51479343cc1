"""What a run spends on models, and the budget that stops it.

Prices are US dollars per million input (prompt) and output (completion) tokens, set per
model spec: ``{"gpt-4o-mini": (0.15, 0.60)}``. An agent's price is looked up by its model
spec (``agent_kwargs[agent]["model"]``, else ``$MINDHELPER_MODEL``): first the whole spec,
then the spec without a ``record:FILE=`` wrapper, then without the ``@URL`` suffix, then the
model name alone (``openai:gpt-4o-mini@http://...`` matches a price given for
``openai:gpt-4o-mini`` or ``gpt-4o-mini``). ``replay:`` answers cost nothing; an agent
without a model costs nothing.

Spend by agent is counted from the tokens in the result records (``usage.prompt_tokens``,
``usage.completion_tokens``: the server's counts, or estimates where it sent none), as each
episode finishes (:class:`Meter`). Answers served from a response cache are counted as if
paid: the figures are an upper bound.

A budget (``max_cost``, ``max_tokens``) holds like a bank balance: the run has one ledger
(:mod:`mindhelper_env.models.ledger`: a file-locked JSON file in the run's folder, or a Ray
actor on a Ray cluster) shared by every worker process and thread. An episode of an agent
with a live model starts only when what is left covers its worst case (its agent's most
calls an episode times the worst case of its largest request, learned from what the server
billed: :mod:`mindhelper_env.models.worst_case`), and waits while only the episodes in
flight stand in the way; each of its requests draws its worst case from the episode's hold.
The first episode the budget cannot cover even with none in flight closes the ledger: no
new episode starts (those handed out come back *not started*, nothing of them sent), the
episodes in flight finish on what they hold; one whose request its hold and the free budget
cannot cover is *cut* (not recorded; ``resume`` plays it, as it plays the ones not started).
The episodes that finish are written, the summary is written marked ``partial``, and the run
ends with :class:`BudgetExhausted`. The ledger's ``spent_usd`` (what the server billed, cut
episodes included) never passes ``max_cost`` as long as no request is billed more than its
worst case; the summary's ``spend.spent_usd`` is that figure, split into ``written_usd``
(the records this run wrote) and ``unwritten_usd`` (episodes cut).

:func:`estimate_run` is the dry pass made before a run with a budget: the first episodes are
played with a model that answers nothing (:class:`~mindhelper_env.models.dry.DryClient`: no
request leaves the machine); completion tokens are counted at the agent's ``max_tokens``.
For ``direct-vlm``, which asks in every window until it acts, that is an upper bound; an
agent whose next calls depend on what the model answers (MindClaw asks for a program after
a "blocked" answer) can spend more. It also gives the ledger its start: each agent's most
calls an episode and largest request (:func:`ledger_seed`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Price", "Meter", "BudgetExhausted", "BudgetTooSmall", "parse_price",
           "check_prices", "price_of", "record_cost", "estimate_run", "scale_estimate",
           "episode_over_budget", "model_spec_of", "ledger_seed"]


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (self.input * prompt_tokens + self.output * completion_tokens) / 1e6

    def to_dict(self) -> dict[str, float]:
        return {"input_per_million": self.input, "output_per_million": self.output}


class BudgetExhausted(RuntimeError):
    """A run stopped at its budget: the records played so far and ``summary.json`` (marked
    ``partial``) are written; ``resume`` continues. ``spend`` is the meter's
    :meth:`Meter.to_dict` (with the ledger's figures); ``summary`` the summary written."""

    def __init__(self, message: str, spend: dict[str, Any],
                 summary: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.spend = spend
        self.summary = summary


class BudgetTooSmall(ValueError):
    """The dry pass says one episode costs more than the whole budget (refused before any
    file is touched, unless ``allow_partial``)."""


def parse_price(value: Any) -> Price:
    """``Price`` from ``(input, output)``, ``"input,output"`` or a ``Price``; ValueError
    otherwise (both must be finite and >= 0)."""
    if isinstance(value, Price):
        pair: Sequence[Any] = (value.input, value.output)
    elif isinstance(value, str):
        pair = [p.strip() for p in value.split(",")]
    elif isinstance(value, Mapping):
        pair = (value.get("input_per_million"), value.get("output_per_million"))
    else:
        pair = value
    try:
        inp, out = (float(x) for x in pair)
    except (TypeError, ValueError):
        raise ValueError(f"a price is 'INPUT,OUTPUT' (US dollars per million input and "
                         f"output tokens), got {value!r}") from None
    if not (math.isfinite(inp) and math.isfinite(out)) or inp < 0 or out < 0:
        raise ValueError(f"prices must be finite and >= 0, got {value!r}")
    return Price(inp, out)


def check_prices(prices: Mapping[str, Any] | None) -> dict[str, Price]:
    """The price table as ``{spec: Price}``; ValueError for a bad entry."""
    if prices is None:
        return {}
    if not isinstance(prices, Mapping):
        raise ValueError(f"prices must be a mapping of model spec to (input, output), got "
                         f"{type(prices).__name__}")
    out = {}
    for key, value in prices.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"price keys are model specs, got {key!r}")
        out[key.strip()] = parse_price(value)
    return out


def model_spec_of(agent: str, agent_kwargs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The model spec an agent runs with, or None (an agent without a model)."""
    spec = (agent_kwargs.get(agent) or {}).get("model")
    if isinstance(spec, str) and spec.strip():
        return spec.strip()
    if (agent_kwargs.get(agent) or {}).get("client") is not None:
        return None
    from mindhelper_env.agents.hedge import split_prefix_suffix

    env = os.environ.get("MINDHELPER_MODEL", "").strip()
    if env and split_prefix_suffix(agent)[0] in _ENV_MODEL_AGENTS:
        return env
    return None


#: Agents that take ``$MINDHELPER_MODEL`` when given no model.
_ENV_MODEL_AGENTS = ("direct-vlm", "mindclaw", "mindclaw-vlm", "mindclaw-pixels")


def _candidates(spec: str) -> list[str]:
    out = [spec]
    kind, _, target = spec.partition(":")
    if kind == "record":
        inner = target.partition("=")[2]
        out.append(inner)
        spec = inner
        kind, _, target = spec.partition(":")
    for scheme in ("@http://", "@https://"):
        if scheme in target:
            target = target[:target.find(scheme)]
            out.append(f"{kind}:{target}")
    out.append(target)
    if kind == "inspect" and "/" in target:
        out.append(target.rsplit("/", 1)[1])
    return out


def price_of(spec: str | None, prices: Mapping[str, Price]) -> Price | None:
    """The price of a model spec (see the module docstring), or None when none is set;
    ``Price(0, 0)`` for ``replay:`` and for no model."""
    if spec is None or spec.startswith("replay:"):
        return Price(0.0, 0.0)
    for key in _candidates(spec):
        if key in prices:
            return prices[key]
    return None


def record_cost(record: Mapping[str, Any], price: Price | None) -> float:
    usage = record.get("usage") or {}
    if price is None:
        return 0.0
    return price.cost(int(usage.get("prompt_tokens", 0) or 0),
                      int(usage.get("completion_tokens", 0) or 0))


class Meter:
    """Spend of a run by agent, and the stop rule of the module docstring.

    ``prices`` maps agent name to its :class:`Price` (None: unknown, not counted in US
    dollars). ``add(record, played=True)`` counts a record; kept records of a resumed run
    are added with ``played=False`` (in the totals, not in this run's spend). ``ledger``
    holds the run's ledger figures (:meth:`mindhelper_env.models.ledger.LedgerState.summary`)
    when it has a budget; ``rate_limited`` counts rate-limit answers retried, ``cut`` the
    episodes the budget cut, ``not_started`` those it did not start."""

    def __init__(self, prices: Mapping[str, Price | None], *, max_cost: float | None = None,
                 max_tokens: int | None = None) -> None:
        self.prices = dict(prices)
        self.max_cost = max_cost
        self.max_tokens = max_tokens
        self.by_agent: dict[str, dict[str, Any]] = {}
        self.run_cost = 0.0
        self.run_tokens = 0
        self.run_episodes = 0
        self.stopped: str | None = None
        self.ledger: dict[str, Any] | None = None
        self.rate_limited = 0
        self.cut = 0
        self.not_started = 0

    def add(self, record: Mapping[str, Any], *, played: bool = True) -> None:
        agent = str(record.get("agent"))
        usage = record.get("usage") or {}
        pt = int(usage.get("prompt_tokens", 0) or 0)
        ct = int(usage.get("completion_tokens", 0) or 0)
        cost = record_cost(record, self.prices.get(agent))
        row = self.by_agent.setdefault(agent, {"episodes": 0, "model_calls": 0,
                                               "prompt_tokens": 0, "completion_tokens": 0,
                                               "usd": 0.0, "tokens_estimated": False})
        row["episodes"] += 1
        row["model_calls"] += int(usage.get("model_calls", 0) or 0)
        row["prompt_tokens"] += pt
        row["completion_tokens"] += ct
        row["usd"] += cost
        row["tokens_estimated"] = row["tokens_estimated"] or bool(usage.get("tokens_estimated"))
        if played:
            self.run_cost += cost
            self.run_tokens += pt + ct
            self.run_episodes += 1

    def total_usd(self) -> float | None:
        """US dollars of every counted record; None when an agent that made model calls
        has no price."""
        if any(self.prices.get(a) is None and row["model_calls"]
               for a, row in self.by_agent.items()):
            return None
        return sum(row["usd"] for row in self.by_agent.values())

    def spent_usd(self) -> float:
        """What this run paid: the ledger's figure (cut episodes included) when it has a
        budget, else the US dollars of the records it wrote."""
        if self.ledger is not None:
            return float(self.ledger.get("spent_usd", 0.0))
        return self.run_cost

    def progress_text(self) -> str:
        paid = self.spent_usd()
        text = f"${paid:.4f}"
        if self.max_cost is not None:
            text += f" of ${self.max_cost:g}"
        if self.max_tokens is not None:
            text += f" | {self.run_tokens:,} of {self.max_tokens:,} tok"
        return text

    def to_dict(self) -> dict[str, Any]:
        total = self.total_usd()
        spent = self.spent_usd()
        return {
            "usd": None if total is None else round(total, 6),
            "spent_usd": round(spent, 6),
            "written_usd": round(self.run_cost, 6),
            "unwritten_usd": round(max(0.0, spent - self.run_cost), 6),
            "run_usd": round(self.run_cost, 6),
            "run_tokens": self.run_tokens,
            "max_cost": self.max_cost,
            "max_tokens": self.max_tokens,
            "stopped": self.stopped,
            "rate_limited_retries": self.rate_limited,
            "episodes_cut": self.cut,
            "episodes_not_started": self.not_started,
            **({"ledger": dict(self.ledger)} if self.ledger is not None else {}),
            "prices": {a: (p.to_dict() if p is not None else None)
                       for a, p in sorted(self.prices.items())},
            "by_agent": {a: {**row, "usd": round(row["usd"], 6)}
                         for a, row in sorted(self.by_agent.items())},
        }


def estimate_run(settings: Any, episodes_to_play: Mapping[str, int],
                 prices: Mapping[str, Price | None], k: int) -> dict[str, Any]:
    """The dry pass (see the module docstring): the first ``k`` episodes of each agent
    that uses a priced or budgeted live model, with answers of a
    :class:`~mindhelper_env.models.dry.DryClient`; per agent: calls, prompt and completion
    tokens per episode, and the upper-bound tokens and US dollars of
    ``episodes_to_play[agent]`` episodes."""
    import json
    import tempfile
    from pathlib import Path

    from mindhelper_env.evaluation.runners import EpisodeRunner, Job, freeze
    from mindhelper_env.models.ledger import Ledger, LedgerSpec
    from mindhelper_env.models.worst_case import Shape, episode_worst

    agent_kwargs = dict(settings.agent_kwargs or {})
    out: dict[str, Any] = {"episodes_sampled": k, "agents": {}}
    total_usd: float | None = 0.0
    scratch = tempfile.TemporaryDirectory(prefix="mindhelper-dry-")
    for agent, n in episodes_to_play.items():
        spec = model_spec_of(agent, agent_kwargs)
        if spec is None or spec.startswith(("replay:", "hf:", "dry:")) or n == 0:
            continue
        kwargs = {**(agent_kwargs.get(agent) or {}), "model": f"dry:{spec}"}
        # a ledger without limits sees the dry episodes' calls and requests (their shapes)
        ledger_spec = LedgerSpec(path=str(Path(scratch.name) / f"{len(out['agents'])}.json"),
                                 metered=(agent,))
        Ledger.create(ledger_spec, max_cost=None, max_tokens=None)
        job = Job(suite=settings.suite, env_id=settings.env_id,
                  env_kwargs=freeze(settings.env_kwargs),
                  agent_kwargs=((agent, freeze(kwargs)),), seed=int(settings.seed),
                  timing=False, ledger=ledger_spec)
        runner = EpisodeRunner(job)
        calls = pt = ct = 0
        price = prices.get(agent)
        worst_usd, worst_tokens = 0.0, 0
        try:
            played = 0
            for index in range(k):
                record, _ref = runner.play(agent, index)
                usage = record["usage"]
                e_pt = int(usage.get("prompt_tokens", 0))
                e_ct = int(usage.get("completion_tokens", 0))
                calls += int(usage.get("model_calls", 0))
                pt += e_pt
                ct += e_ct
                worst_tokens = max(worst_tokens, e_pt + e_ct)
                if price is not None:
                    worst_usd = max(worst_usd, price.cost(e_pt, e_ct))
                played += 1
        finally:
            runner.close()
        per = max(played, 1)
        row = {"calls_per_episode": round(calls / per, 2),
               "prompt_tokens_per_episode": round(pt / per, 1),
               "completion_tokens_per_episode": round(ct / per, 1),
               "max_episode_tokens": worst_tokens,
               "episodes": n,
               "tokens": math.ceil((pt + ct) / per * n)}
        seen = (json.loads(Path(str(ledger_spec.path)).read_text(encoding="utf-8"))
                ["agents"].get(agent) or {})
        if seen.get("shape"):
            # what the run's ledger starts from: an episode's calls and largest request,
            # and what its first episode is held at before the server's first answer
            row["max_calls_per_episode"] = int(seen.get("calls", 0))
            row["largest_request"] = dataclasses.asdict(Shape.from_list(seen["shape"]))
            hold = episode_worst(int(seen.get("calls", 0)), Shape.from_list(seen["shape"]),
                                 None, (price.input, price.output) if price else (0.0, 0.0))
            if hold is not None:
                if price is not None:
                    row["first_episode_hold_usd"] = round(hold[0] / 1e12, 6)
                row["first_episode_hold_tokens"] = hold[1]
        if price is not None:
            row["max_episode_usd"] = round(worst_usd, 6)
            row["usd"] = round(price.cost(pt, ct) / per * n, 4)
            if total_usd is not None:
                total_usd += row["usd"]
        else:
            total_usd = None
        out["agents"][agent] = row
    scratch.cleanup()
    out["usd"] = None if total_usd is None else round(total_usd, 4)
    out["tokens"] = sum(r["tokens"] for r in out["agents"].values())
    return out


def scale_estimate(estimate: dict[str, Any], episodes_to_play: Mapping[str, int],
                   prices: Mapping[str, Price | None]) -> dict[str, Any]:
    """``estimate`` (of :func:`estimate_run`) for ``episodes_to_play[agent]`` episodes (the
    dry pass runs before a resumed run knows what is left to play)."""
    out = {**estimate, "agents": {}}
    total: float | None = 0.0
    for agent, row in estimate["agents"].items():
        n = int(episodes_to_play.get(agent, 0))
        per_t = row["prompt_tokens_per_episode"] + row["completion_tokens_per_episode"]
        new = {**row, "episodes": n, "tokens": math.ceil(per_t * n)}
        price = prices.get(agent)
        if price is not None:
            new["usd"] = round(price.cost(row["prompt_tokens_per_episode"],
                                          row["completion_tokens_per_episode"]) * n, 4)
            if total is not None:
                total += new["usd"]
        else:
            total = None
        out["agents"][agent] = new
    out["usd"] = None if total is None else round(total, 4)
    out["tokens"] = sum(r["tokens"] for r in out["agents"].values())
    return out


def ledger_seed(estimate: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """What the run's ledger starts from (:meth:`~mindhelper_env.models.ledger.LedgerState.seed`):
    each agent's most calls an episode and largest request in the dry pass."""
    from mindhelper_env.models.worst_case import Shape

    out = {}
    for agent, row in ((estimate or {}).get("agents") or {}).items():
        if row.get("largest_request") and row.get("max_calls_per_episode"):
            out[agent] = {"calls": int(row["max_calls_per_episode"]),
                          "shape": Shape(**row["largest_request"]).to_list()}
    return out


def episode_over_budget(estimate: Mapping[str, Any], max_cost: float | None,
                        max_tokens: int | None) -> str | None:
    """A one-line reason when the dry pass's costliest episode of an agent, or what the
    run's first episode of it is held at before the server's first answer
    (``first_episode_hold_usd`` / ``_tokens``: its most calls at the hard bound of its
    largest request), is over the whole budget (no such episode could start), else
    None."""
    for agent, row in estimate["agents"].items():
        usd = row.get("max_episode_usd")
        hold = row.get("first_episode_hold_usd")
        if max_cost is not None and hold is not None and hold > max_cost \
                and (usd is None or usd <= max_cost):
            return (f"the first episode of {agent} is held at up to ${hold:.4f} before the "
                    "server's first answer (every window asked, the prompt at its hard "
                    "bound, every answer at max_tokens), over the whole budget (--max-cost "
                    f"${max_cost:g}): raise --max-cost, or add --allow-partial to start "
                    "anyway (no episode that does not fit is started)")
        if max_cost is not None and usd is not None and usd > max_cost:
            return (f"one episode of {agent} is estimated at up to ${usd:.4f}, over the whole "
                    f"budget (--max-cost ${max_cost:g}): raise --max-cost, or add "
                    "--allow-partial to start anyway (no episode that does not fit is "
                    "started)")
        tokens = max(row.get("max_episode_tokens") or 0,
                     row.get("first_episode_hold_tokens") or 0)
        if max_tokens is not None and tokens > max_tokens:
            return (f"one episode of {agent} is held at up to {tokens:,} tokens, over the "
                    f"whole budget (--max-tokens {max_tokens:,}): raise --max-tokens, or add "
                    "--allow-partial to start anyway (no episode that does not fit is "
                    "started)")
    return None
