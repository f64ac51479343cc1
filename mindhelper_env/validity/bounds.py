"""Bound sets and the checks of the object-seeing instruments.

Two bound sets, chosen by the generator of a suite (:func:`bounds_for`):

* :data:`~mindhelper_env.validity.core.BOUNDS` for ``mh-gen-2.x`` suites (checked by
  :func:`~mindhelper_env.validity.core.check_bounds`). The object-seeing instruments are
  *reported* on them, not bounded: v2 is known to leak to agents that track objects;
* :data:`BOUNDS_V3` for ``mh-gen-3.x`` suites: everything of :data:`BOUNDS` (the tracker's
  minimum raised to 99) plus the bounds of the object-seeing instruments, checked by
  :func:`check_bounds_v3`: every agent without a mind (:data:`NON_MIND_AGENTS`, rule or
  learned, hedged or not) at PHA <= 55 and PIA <= 60 overall and PHA <= 60 in every twin
  group; every hedge gaining <= 2 PHA overall and <= 5 in any group; every classifier of the
  object-centric scan (best single feature, depth-3 tree, gradient boosting) <= 60 % per
  twin group at both struggles, with and without the pre-deadline history (post-hoc features
  reported only). The coarse-mind agent is reported, not bounded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mindhelper_env.validity.core import BOUNDS, WINDOW_AGENTS, twin_groups

__all__ = ["BOUNDS_V3", "SILENT_PHA", "NON_MIND_AGENTS", "HEDGE_KINDS", "COARSE_MIND", "generator_of",
           "bounds_for", "is_v3", "base_agent", "check_bounds_v3"]

#: Bounds of the ``mh-gen-3.x`` suites (percentages; accuracies as fractions).
BOUNDS_V3: dict[str, float] = {
    **BOUNDS,
    "tracker_PHA_min": 99.0,
    "non_mind_PHA_max": 55.0,            # overall, every non-mind agent, hedged or not
    "non_mind_PIA_max": 60.0,
    "non_mind_group_PHA_max": 60.0,      # in every twin group
    "hedge_gain_max": 2.0,               # PHA(agent+hedge) - PHA(agent), overall
    "hedge_group_gain_max": 5.0,         # the same in every twin group
    "object_classifier_max": 0.60,       # every classifier of the object scan, every group
}

#: PHA of the silent agent, overall and in every twin group (PHR 0, PSR 100): the hedge
#: bounds count a hedge's gain over the better of the agent and silence.
SILENT_PHA = 50.0
#: Agents that track no mind (each is bounded with every hedge it is played with).
NON_MIND_AGENTS: tuple[str, ...] = ("physical-rules", "physical-learned", "perspective-free",
                                    "reactive", "moved-absent", "prior", *WINDOW_AGENTS)
#: The hedges the bench plays with the non-mind agents (registry suffixes).
HEDGE_KINDS: tuple[str, ...] = ("wait3", "repeat2", "delay1", "prefix8")
#: The coarse mind: reported, never bounded.
COARSE_MIND = "coarse-mind"


def generator_of(suite: str) -> str:
    """The generator version a registered suite was built with (``"mh-gen-2.5"``, ...)."""
    from mindhelper_env.scenarios.suites import SUITES

    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; known: {sorted(SUITES)}")
    return str(SUITES[suite].get("generator", ""))


def is_v3(suite: str) -> bool:
    """Was ``suite`` built by an ``mh-gen-3.x`` generator (so :data:`BOUNDS_V3` apply)?"""
    return generator_of(suite).startswith("mh-gen-3")


def bounds_for(suite: str) -> dict[str, float]:
    """:data:`BOUNDS_V3` for an ``mh-gen-3.x`` suite, :data:`BOUNDS` otherwise."""
    return dict(BOUNDS_V3 if is_v3(suite) else BOUNDS)


def base_agent(name: str) -> tuple[str, list[str]]:
    """``("physical-rules", ["wait3", "prefix8"])`` for ``"physical-rules+wait3+prefix8"``
    (:func:`~mindhelper_env.agents.hedge.strip_hedges`)."""
    from mindhelper_env.agents.hedge import strip_hedges

    return strip_hedges(name)


def _pha(m: Mapping[str, Any], group: str | None = None) -> float | None:
    if group is None:
        return m.get("PHA")
    gm = m.get("groups", {}).get(group)
    return None if gm is None else gm.get("PHA")


def check_bounds_v3(agents: Mapping[str, Mapping[str, Any]], *,
                    scan: Mapping[str, Mapping[str, Any]] | None = None,
                    bounds: Mapping[str, float] = BOUNDS_V3,
                    non_mind: Sequence[str] = NON_MIND_AGENTS) -> list[str]:
    """The broken bounds of the object-seeing instruments, one line each (empty: all hold).

    ``agents``: ``{name: scores(...)}``, hedged agents named ``base+hedgeK``; every agent
    whose base name is in ``non_mind`` is held to the non-mind bounds, and every hedged
    agent whose base was played to the hedge-gain bounds. ``scan``:
    :func:`~mindhelper_env.validity.objects.object_scan`'s result; its ``cue`` and
    ``history`` sets are bounded, ``post-hoc`` is not. The bounds of
    :func:`~mindhelper_env.validity.core.check_bounds` (oracle, tracker, ablations, ...) are
    checked there, with ``bounds=BOUNDS_V3``.
    """
    b = bounds
    broken: list[str] = []
    groups = twin_groups()
    for name, m in agents.items():
        base, hedges = base_agent(name)
        if base in non_mind:
            if m.get("PHA") is not None and m["PHA"] > b["non_mind_PHA_max"]:
                broken.append(f"{name} PHA {m['PHA']:.1f} > {b['non_mind_PHA_max']}")
            if m.get("PIA") is not None and m["PIA"] > b["non_mind_PIA_max"]:
                broken.append(f"{name} PIA {m['PIA']:.1f} > {b['non_mind_PIA_max']}")
            for g in groups:
                p = _pha(m, g)
                if p is not None and p > b["non_mind_group_PHA_max"]:
                    broken.append(f"{name} PHA {p:.1f} in {g} > {b['non_mind_group_PHA_max']}")
        if hedges:
            inner = name[:name.rindex("+")]
            m0 = agents.get(inner)
            if m0 is None:
                continue
            # a gain over the better of the agent and silence: a hedge that only makes an
            # agent act less moves it toward silence's 50, which it cannot pass by acting
            # less; what is bounded is what a hedge adds beyond that
            p, p0 = _pha(m), _pha(m0)
            if p is not None and p0 is not None and p - max(p0, SILENT_PHA) > b["hedge_gain_max"]:
                broken.append(f"{name} gains {p - max(p0, SILENT_PHA):+.1f} PHA over the better "
                              f"of {inner} and silence (> {b['hedge_gain_max']})")
            for g in groups:
                p, p0 = _pha(m, g), _pha(m0, g)
                if p is not None and p0 is not None \
                        and p - max(p0, SILENT_PHA) > b["hedge_group_gain_max"]:
                    broken.append(f"{name} gains {p - max(p0, SILENT_PHA):+.1f} PHA over the "
                                  f"better of {inner} and silence in {g} "
                                  f"(> {b['hedge_group_gain_max']})")
    bound = b["object_classifier_max"]
    for g, res in (scan or {}).items():
        for key, r in res.items():
            if not isinstance(r, Mapping) or key.endswith("/post-hoc"):
                continue
            for clf, label in (("single", "best single feature"), ("tree", "depth-3 tree"),
                               ("gb", "gradient boosting")):
                acc = r.get(clf, {}).get("test")
                if acc is not None and acc > bound:
                    what = f" ({r[clf]['feature']})" if clf == "single" else ""
                    broken.append(f"object scan {key}: {label}{what} {100 * acc:.1f}% in "
                                  f"{g} > {100 * bound:.0f}%")
    return broken
