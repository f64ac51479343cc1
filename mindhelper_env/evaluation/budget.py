"""What a run spends on models, and the budget that stops it.

Prices are US dollars per million input (prompt) and output (completion) tokens, set per
model spec: ``{"gpt-4o-mini": (0.15, 0.60)}``. An agent's price is looked up by its model
spec (``agent_kwargs[agent]["model"]``, else ``$MINDHELPER_MODEL``): first the whole spec,
then the spec without a ``record:FILE=`` wrapper, then without the ``@URL`` suffix, then the
model name alone (``openai:gpt-4o-mini@http://...`` matches a price given for
``openai:gpt-4o-mini`` or ``gpt-4o-mini``). ``replay:`` answers cost nothing; an agent
without a model costs nothing.

Spend is counted from the tokens in the result records (``usage.prompt_tokens``,
``usage.completion_tokens``: the server's counts, or estimates where it sent none), as each
episode finishes. The :class:`Meter` says when to stop: when what was spent, plus the
episodes still in flight at the mean cost of an episode so far, reaches ``max_cost`` (or
``max_tokens``), no new episode starts, the ones in flight finish and are written, and the
run ends with :class:`BudgetExhausted`; ``resume`` plays the rest (the records are those of an
uninterrupted run). Episodes differ in cost (one that acts early stops asking), so the run
can pass the limit by what the episodes in flight spend above the mean: at most
``workers * (concurrency + 1)`` episodes, and nothing is thrown away. Answers served from a response cache are counted as if paid: the
figures are an upper bound.

:func:`estimate_run` is the dry pass made before a run with a budget: the first episodes are
played with a model that answers nothing (:class:`~mindhelper_env.models.dry.DryClient`: no
request leaves the machine); completion tokens are counted at the agent's ``max_tokens``.
For ``direct-vlm``, which asks in every window until it acts, that is an upper bound; an
agent whose next calls depend on what the model answers (MindClaw asks for a program after
a "blocked" answer) can spend more.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Price", "Meter", "BudgetExhausted", "parse_price", "check_prices", "price_of",
           "record_cost", "estimate_run", "model_spec_of"]


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
    """A run stopped at its budget: the records played so far are written; ``resume``
    continues. ``spend`` is the meter's :meth:`Meter.to_dict`."""

    def __init__(self, message: str, spend: dict[str, Any]) -> None:
        super().__init__(message)
        self.spend = spend


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
    are added with ``played=False`` (in the totals, not in this run's spend)."""

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
            if pt + ct:
                self._model_episodes += 1

    _model_episodes = 0

    def should_stop(self, in_flight: int) -> str | None:
        """``"max_cost"`` / ``"max_tokens"`` when this run's spend plus ``in_flight``
        episodes, each at the mean of this run's episodes that used a model, reaches a
        limit; else None."""
        n = self._model_episodes
        if self.max_cost is not None:
            projected = self.run_cost + (in_flight * self.run_cost / n if n else 0.0)
            if projected >= self.max_cost:
                return "max_cost"
        if self.max_tokens is not None:
            projected_t = self.run_tokens + (in_flight * self.run_tokens / n if n else 0.0)
            if projected_t >= self.max_tokens:
                return "max_tokens"
        return None

    def total_usd(self) -> float | None:
        """US dollars of every counted record; None when an agent that made model calls
        has no price."""
        if any(self.prices.get(a) is None and row["model_calls"]
               for a, row in self.by_agent.items()):
            return None
        return sum(row["usd"] for row in self.by_agent.values())

    def progress_text(self) -> str:
        text = f"${self.run_cost:.4f}"
        if self.max_cost is not None:
            text += f" of ${self.max_cost:g}"
        if self.max_tokens is not None:
            text += f" | {self.run_tokens:,} of {self.max_tokens:,} tok"
        return text

    def to_dict(self) -> dict[str, Any]:
        total = self.total_usd()
        return {
            "usd": None if total is None else round(total, 6),
            "run_usd": round(self.run_cost, 6),
            "run_tokens": self.run_tokens,
            "max_cost": self.max_cost,
            "max_tokens": self.max_tokens,
            "stopped": self.stopped,
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
    from mindhelper_env.evaluation.runners import EpisodeRunner, Job, freeze

    agent_kwargs = dict(settings.agent_kwargs or {})
    out: dict[str, Any] = {"episodes_sampled": k, "agents": {}}
    total_usd: float | None = 0.0
    for agent, n in episodes_to_play.items():
        spec = model_spec_of(agent, agent_kwargs)
        if spec is None or spec.startswith(("replay:", "hf:", "dry:")) or n == 0:
            continue
        kwargs = {**(agent_kwargs.get(agent) or {}), "model": f"dry:{spec}"}
        job = Job(suite=settings.suite, env_id=settings.env_id,
                  env_kwargs=freeze(settings.env_kwargs),
                  agent_kwargs=((agent, freeze(kwargs)),), seed=int(settings.seed),
                  timing=False)
        runner = EpisodeRunner(job)
        calls = pt = ct = 0
        try:
            played = 0
            for index in range(k):
                record, _ref = runner.play(agent, index)
                usage = record["usage"]
                calls += int(usage.get("model_calls", 0))
                pt += int(usage.get("prompt_tokens", 0))
                ct += int(usage.get("completion_tokens", 0))
                played += 1
        finally:
            runner.close()
        per = max(played, 1)
        row = {"calls_per_episode": round(calls / per, 2),
               "prompt_tokens_per_episode": round(pt / per, 1),
               "completion_tokens_per_episode": round(ct / per, 1),
               "episodes": n,
               "tokens": math.ceil((pt + ct) / per * n)}
        price = prices.get(agent)
        if price is not None:
            row["usd"] = round(price.cost(pt, ct) / per * n, 4)
            if total_usd is not None:
                total_usd += row["usd"]
        else:
            total_usd = None
        out["agents"][agent] = row
    out["usd"] = None if total_usd is None else round(total_usd, 4)
    out["tokens"] = sum(r["tokens"] for r in out["agents"].values())
    return out
