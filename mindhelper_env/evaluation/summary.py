"""Summaries of result records: the headline table, full metrics, and repeated trials.

:func:`summarize` scores one trial (or records without trials). :func:`summarize_trials`
scores a run of ``K > 1`` trials: every metric per trial, its mean and a 95 % interval over
the trials (Student's t: ``mean ± t(0.975, K-1) · s / √K``), and pass^k for PHR — the chance
that ``k`` trials of a help episode drawn without replacement from its ``K`` are all precise
and helpful (τ-bench's estimator ``C(c, k) / C(K, k)`` per episode, ``c`` its precise-helpful
trials, averaged over help episodes); pass^K is the share of help episodes helped precisely in
every trial.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["HEADLINE_KEYS", "headline", "summarize", "summarize_trials", "trial_interval",
           "pass_hat_k", "trials_of", "agent_errors", "mostly_raised", "coverage"]

#: Metrics of the paper's Table II (in its column order), then silent-all (Fig. 5) and harm.
HEADLINE_KEYS: tuple[str, ...] = ("PHA", "PHR", "TA", "SR", "AC", "PIR", "PSR", "PIA", "silent_all",
                                 "harm_rate")

# Student's t quantile t(0.975, df) for df = 1..30; beyond, the normal 1.96 is within 2 %.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def headline(metrics_pct: Mapping[str, Any]) -> dict[str, Any]:
    """The rate metrics (percentages) of one agent: :data:`HEADLINE_KEYS` first, then the
    other rates of :data:`mindhelper_env.metrics.RATE_KEYS`."""
    from mindhelper_env.metrics import RATE_KEYS

    keys = list(HEADLINE_KEYS) + [k for k in RATE_KEYS if k not in HEADLINE_KEYS]
    out = {k: metrics_pct.get(k) for k in keys}
    out["belief_accuracy"] = (metrics_pct.get("belief") or {}).get("accuracy")
    return out


def summarize(
    records_by_agent: Mapping[str, Sequence[Mapping[str, Any]]],
    references: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """``{"table": {agent: headline %}, "metrics": {agent: full metrics in %}}``, plus
    ``"models"`` (:func:`mindhelper_env.models.report.model_report`) when an agent called a
    model."""
    from mindhelper_env.metrics import as_percentages, compute_table
    from mindhelper_env.models.report import model_report

    table = compute_table(records_by_agent, references)
    pct = {agent: as_percentages(m) for agent, m in table.items()}
    out = {"table": {agent: headline(m) for agent, m in pct.items()}, "metrics": pct}
    models = model_report(records_by_agent)
    if models:
        out["models"] = models
    return out


def trials_of(records: Sequence[Mapping[str, Any]]) -> int:
    """The number of trials in ``records``: one more than the largest ``trial`` (1 without)."""
    return 1 + max((int(r.get("trial", 0)) for r in records), default=0)


def trial_interval(values: Sequence[float | None]) -> dict[str, Any]:
    """``{"mean", "low", "high", "n"}`` over the non-``None`` values (a 95 % t interval;
    ``low == high == mean`` for one value, all ``None`` for none)."""
    xs = [float(v) for v in values if v is not None]
    n = len(xs)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    mean = sum(xs) / n
    if n == 1:
        return {"mean": mean, "low": mean, "high": mean, "n": 1}
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    t = _T975[n - 2] if n - 1 <= len(_T975) else 1.96
    half = t * sd / math.sqrt(n)
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def pass_hat_k(successes: Sequence[int], trials: int) -> dict[str, float | None]:
    """``{k: pass^k}`` for ``k = 1..trials`` (percentages) from each help episode's count of
    precise-helpful trials; ``None`` without help episodes."""
    out: dict[str, float | None] = {}
    for k in range(1, trials + 1):
        if not successes:
            out[str(k)] = None
            continue
        total = math.comb(trials, k)
        out[str(k)] = 100.0 * sum(math.comb(c, k) / total for c in successes) / len(successes)
    return out


def summarize_trials(
    records_by_agent: Mapping[str, Sequence[Mapping[str, Any]]],
    references: Mapping[str, Mapping[str, Any]],
    trials: int,
) -> dict[str, Any]:
    """A summary of a ``trials``-trial run: :func:`summarize` of trial 0 (``metrics``: the
    full metrics, breakdowns and plots of the first trial) with ``table`` the mean over
    trials of each trial's headline, and ``trials``: ``{"k", "per_trial": {agent: [headline of each trial]},
    "interval": {agent: {metric: trial_interval}}, "pass_hat_k": {agent: {k: PHR pass^k}}}``."""
    from mindhelper_env.metrics import episode_outcome

    first = {a: [r for r in recs if int(r.get("trial", 0)) == 0]
             for a, recs in records_by_agent.items()}
    out = summarize(first, references)
    per_trial: dict[str, list[dict[str, Any]]] = {}
    interval: dict[str, dict[str, Any]] = {}
    passes: dict[str, dict[str, float | None]] = {}
    for agent, records in records_by_agent.items():
        rows = []
        for t in range(trials):
            part = [r for r in records if int(r.get("trial", 0)) == t]
            rows.append(summarize({agent: part}, references)["table"][agent] if part else {})
        per_trial[agent] = rows
        keys = list(out["table"][agent])
        interval[agent] = {k: trial_interval([row.get(k) for row in rows]) for k in keys}
        out["table"][agent] = {k: interval[agent][k]["mean"] for k in keys}
        counts: dict[str, int] = {}
        for rec in records:
            ref = references.get(str(rec.get("episode_id")))
            if ref is None or not ref.get("needs_intervention"):
                continue
            eid = str(rec["episode_id"])
            counts[eid] = counts.get(eid, 0) + int(bool(episode_outcome(rec, ref)
                                                        ["helpful_precise"]))
        passes[agent] = pass_hat_k(list(counts.values()), trials)
    out["trials"] = {"k": trials, "per_trial": per_trial, "interval": interval,
                     "pass_hat_k": passes}
    return out


def agent_errors(records_by_agent: Mapping[str, Sequence[Mapping[str, Any]]]
                 ) -> dict[str, dict[str, int]]:
    """Per agent: ``errors`` (exceptions its ``act``/``reset`` raised, ``usage.agent_errors``),
    ``decisions`` and ``episodes`` with at least one error."""
    out = {}
    for agent, records in records_by_agent.items():
        errors = decisions = episodes = 0
        for rec in records:
            usage = rec.get("usage") or {}
            n = int(usage.get("agent_errors", 0) or 0)
            errors += n
            episodes += n > 0
            decisions += int(usage.get("decisions", 0) or 0)
        out[agent] = {"errors": errors, "decisions": decisions, "episodes": episodes}
    return out


def mostly_raised(counts: Mapping[str, int]) -> bool:
    """True when more than half of an agent's decisions raised (its numbers are those of a
    silent agent, not of the agent)."""
    return counts.get("errors", 0) * 2 > max(counts.get("decisions", 0), 1)


def coverage(records_by_agent: Mapping[str, Sequence[Mapping[str, Any]]],
             suite_episodes: int) -> dict[str, dict[str, int]]:
    """Per agent: distinct ``episodes`` scored of the suite's ``suite_episodes``."""
    return {agent: {"episodes": len({str(r.get("episode_id")) for r in records}),
                    "suite_episodes": int(suite_episodes)}
            for agent, records in records_by_agent.items()}
