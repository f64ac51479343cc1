"""Figures on fresh episodes: is a suite's figure the group, or the draw of its episodes?

A 1,000-episode suite holds about 140 episodes a twin group, where one standard error of an
accuracy is about ±4 points: a per-group bound of 60 cannot be read off it alone. This module
plays agents on, and tests classifiers against, **fresh episodes** of a suite's own
generator and house (a seed stream of their own, :data:`FRESH_SEED`, drawn like the training
episodes: half needing help, families weighted as the suite's generator weighs them), scored
against the episodes' own references, per twin group with a 95 % interval:

* :func:`fresh_episodes` builds them; :func:`play_episodes` plays an agent (a registered name,
  hedges included, or an agent object) on them in this process; :func:`episode_scores` turns
  the records into metrics overall and per twin group, like
  :func:`~mindhelper_env.validity.core.scores`;
* :func:`pha_interval` is the 95 % interval of a PHA (the mean of two proportions: PHR over
  the help episodes, PSR over the silent ones; normal approximation), :func:`wilson` that of
  an accuracy.

``benchmarks/bench_validity.py --scan-fresh N`` uses them for every bounded instrument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["FRESH_SEED", "fresh_episodes", "play_episodes", "episode_scores", "pha_interval",
           "wilson", "group_counts"]

#: The seed of the fresh episodes (the training episodes use seed 0).
FRESH_SEED = 20_261_206


def fresh_episodes(suite: str, n: int, *, seed: int = FRESH_SEED) -> list[dict[str, Any]]:
    """``n`` fresh episodes of ``suite``'s generator, set in its house (training seeds, a
    stream of their own; never a suite episode), each once."""
    from mindhelper_env.scenarios.suites import SUITES
    from mindhelper_env.validity.bounds import generator_of
    from mindhelper_env.validity.data import training_episodes

    specs = training_episodes(n, seed=seed, house=SUITES[suite].get("house"),
                              generator=generator_of(suite))
    seen: set[str] = set()
    out = []
    for s in specs:  # an id is family and seed: a rare repeat is the same episode
        if s["episode_id"] not in seen:
            seen.add(s["episode_id"])
            out.append(s)
    return out


def play_episodes(specs: Sequence[Mapping[str, Any]], agent: Any, name: str, *,
                  env_id: str) -> list[dict[str, Any]]:
    """Play ``agent`` (an agent object, or a registered name such as
    ``"physical-rules+wait3"``) on every episode spec of ``specs`` on ``env_id``; return its
    result records (``timing=False``: reproducible)."""
    from mindhelper_env.agents import make_agent
    from mindhelper_env.evaluation import make_env, run_episode

    if isinstance(agent, str):
        agent = make_agent(agent)
    env = make_env(env_id)
    try:
        return [run_episode(env, agent, seed=i, options={"episode": dict(s)}, agent_name=name,
                            timing=False) for i, s in enumerate(specs)]
    finally:
        env.close()


def episode_scores(records: Sequence[Mapping[str, Any]],
                   specs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Metrics (percentages) of ``records`` against the references of ``specs``, overall and
    per twin group (``"groups"``), as :func:`~mindhelper_env.validity.core.scores`; each
    carries ``"PHA_ci"``, its 95 % interval."""
    from mindhelper_env.scenarios.suites import reference_record
    from mindhelper_env.validity.core import scores

    out = scores(records, {s["episode_id"]: reference_record(s) for s in specs})
    for m in (out, *out["groups"].values()):
        m["PHA_ci"] = pha_interval(m)
    return out


def pha_interval(m: Mapping[str, Any], z: float = 1.96) -> tuple[float, float] | None:
    """95 % interval (percent) of ``m["PHA"] = (PHR + PSR) / 2`` from ``n_help`` and
    ``n_silent`` (normal approximation, clipped to 0-100); None without both sides."""
    phr, psr = m.get("PHR"), m.get("PSR")
    nh, ns = m.get("n_help") or 0, m.get("n_silent") or 0
    if phr is None or psr is None or not nh or not ns:
        return None
    a, b = phr / 100.0, psr / 100.0
    se = 0.5 * math.sqrt(a * (1 - a) / nh + b * (1 - b) / ns)
    pha = (a + b) / 2
    return (100 * max(0.0, pha - z * se), 100 * min(1.0, pha + z * se))


def wilson(accuracy: float, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95 % Wilson interval (percent) of an accuracy (a fraction) measured on ``n`` cases
    (:func:`mindhelper_env.validity.timing.wilson` on the count); None without cases."""
    from mindhelper_env.validity.timing import wilson as wilson_count

    return None if n <= 0 else wilson_count(round(accuracy * n), n, z)


def group_counts(data: Sequence[Any]) -> dict[str, int]:
    """``{twin group: episodes}`` of episode data (anything with ``.group``)."""
    out: dict[str, int] = {}
    for d in data:
        if getattr(d, "group", None) is not None:
            out[d.group] = out.get(d.group, 0) + 1
    return out
