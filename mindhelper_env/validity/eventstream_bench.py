"""The house-wide timing instruments together, and their bounds (``bench_validity.py``
section 11, ``--eventstream``).

:func:`run_eventstream` trains and plays, on a suite (and on fresh episodes of its generator):

1. ``event-stream-gbm`` — gradient boosting over the text event stream
   (:mod:`~mindhelper_env.validity.eventstream`), with every hedge of
   :data:`~mindhelper_env.validity.bounds.HEDGE_KINDS`, and its permutation importance per
   twin group (by verb and by feature kind);
2. ``event-stream-gru`` — a GRU over the same stream
   (:mod:`~mindhelper_env.validity.eventstream_nn`; skipped, and said so, without torch);
3. ``pixel-stream-gbm`` — gradient boosting over frame-difference colour counts
   (:mod:`~mindhelper_env.validity.pixelstream`), on the suite's first ``pixels`` episodes;
4. ``coarse-mind-unbound`` — the ladder's rules applied house-wide
   (:mod:`mindhelper_env.agents.coarse_mind_unbound`), hedged;
5. the decisive-moment statistic (:mod:`~mindhelper_env.validity.decisive`).

:func:`check_eventstream` holds them to :data:`EVENTSTREAM_BOUNDS` on every generator but
those of :data:`KNOWN_TIMING_LEAK` (``mh-gen-3.2`` and before: its belief groups are known to
be passed by house-wide event timing, docs/validity.md; they are measured and reported).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["FRESH_MIN_GROUP", "EVENTSTREAM_BOUNDS", "KNOWN_TIMING_LEAK", "TIMING_BOUNDED_GROUPS",
           "eventstream_bounded", "run_eventstream", "check_eventstream", "STREAM_AGENTS",
           "format_eventstream"]

#: Bounds of the house-wide timing instruments (percent).
EVENTSTREAM_BOUNDS: dict[str, float] = {
    "PHA_max": 55.0,          # overall, every stream agent, hedged or not
    "PIA_max": 60.0,
    "group_PHA_max": 60.0,    # in every twin group (the unbound coarse mind: belief groups)
    "decisive_max": 55.0,     # the decisive-moment statistic per group, fresh episodes
}
#: Generators whose suites are known to leak the side to house-wide event timing: measured
#: and reported, never failing the run (``vh-test-v5`` and ``tdw-test-v5``, ``mh-gen-3.2``;
#: the older ones were never built against it).
KNOWN_TIMING_LEAK = frozenset({"mh-gen-2.5", "mh-gen-3.0", "mh-gen-3.1", "mh-gen-3.2"})
#: The stream agents (bounded with every hedge).
STREAM_AGENTS = ("event-stream-gbm", "event-stream-gru", "pixel-stream-gbm",
                 "coarse-mind-unbound")
#: The groups where the unbound coarse mind and the decisive-moment statistic are bounded:
#: the belief groups and search (in reach and blocked the moment is the struggle itself and
#: the rung's attention rule is the mind the group tests: reported).
TIMING_BOUNDED_GROUPS = ("false_belief_relocation", "false_belief_watched",
                         "false_belief_told_away", "false_belief_emptied",
                         "implicit_goal_search")


def eventstream_bounded(generator: str) -> bool:
    """Are suites of ``generator`` held to :data:`EVENTSTREAM_BOUNDS` (every generator but
    :data:`KNOWN_TIMING_LEAK`: ``mh-gen-3.3`` and later)?"""
    return bool(generator) and generator not in KNOWN_TIMING_LEAK


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _slim(m: Mapping[str, Any]) -> dict[str, Any]:
    return {"PHA": m.get("PHA"), "PIA": m.get("PIA"), "PHR": m.get("PHR"), "PSR": m.get("PSR"),
            "PHA_ci": m.get("PHA_ci"),
            "groups": {g: {"PHA": gm.get("PHA"), "PHA_ci": gm.get("PHA_ci"),
                           "n": (gm.get("n_help") or 0) + (gm.get("n_silent") or 0)}
                       for g, gm in m.get("groups", {}).items()}}


def run_eventstream(suite: str, *, per_family: int = 80, limit: int | None = None,
                    fresh: int = 0, pixels: int = 200, pixel_train_per_family: int = 30,
                    gru: bool = True, hedges: Sequence[str] | None = None,
                    log: Callable[[str], None] = _log) -> dict[str, Any]:
    """Train and play the timing instruments on ``suite`` (its first ``limit`` episodes) and,
    with ``fresh``, on that many fresh episodes; ``pixels``: suite episodes the pixel
    learner plays (0: skipped). Returns every figure (``"suite"``, ``"fresh"``: ``{agent:
    metrics}``; ``"decisive"``; ``"importance"``; ``"models"``)."""
    from mindhelper_env.agents import make_agent
    from mindhelper_env.agents.event_stream import STREAM_VERBS
    from mindhelper_env.scenarios.suites import suite_episode
    from mindhelper_env.validity import eventstream as ES
    from mindhelper_env.validity.bounds import HEDGE_KINDS, generator_of
    from mindhelper_env.validity.core import scores
    from mindhelper_env.validity.decisive import decisive_statistic
    from mindhelper_env.validity.fresh import episode_scores, fresh_episodes

    hedges = tuple(HEDGE_KINDS if hedges is None else hedges)
    out: dict[str, Any] = {"suite_name": suite, "generator": generator_of(suite),
                           "suite": {}, "fresh": {}, "models": {}}
    log(f"[eventstream] {suite}: training episodes, {per_family} a family")
    specs = ES.training_specs(suite, per_family)
    data = ES.stream_data(specs)
    fit, tune = ES.split_fit_tune(data)
    gbm = ES.train_stream_model(fit, tune, channels=STREAM_VERBS, log=log)
    out["models"]["event-stream-gbm"] = {"params": gbm.params, "threshold": gbm.threshold,
                                         "tune_accuracy": 100 * gbm.tune_accuracy,
                                         "train_episodes": len(data)}
    models: dict[str, Any] = {"event-stream-gbm": gbm}
    if gru:
        try:
            import torch  # noqa: F401 - only to say whether the GRU can run
        except ImportError:
            out["models"]["event-stream-gru"] = {"skipped": "torch is not installed"}
        else:
            from mindhelper_env.validity.eventstream_nn import train_gru_model

            g = train_gru_model(fit, tune, channels=STREAM_VERBS, log=log)
            models["event-stream-gru"] = g
            out["models"]["event-stream-gru"] = {"params": g.params, "threshold": g.threshold,
                                                 "tune_accuracy": 100 * g.tune_accuracy}
    n_suite = limit
    suite_specs = None

    def suite_list() -> list[dict[str, Any]]:
        nonlocal suite_specs
        if suite_specs is None:
            from mindhelper_env.scenarios.suites import SUITES

            n = int(SUITES[suite]["n"]) if n_suite is None else min(n_suite, int(SUITES[suite]["n"]))
            suite_specs = [suite_episode(suite, i) for i in range(n)]
        return suite_specs

    fspecs = fresh_episodes(suite, fresh) if fresh else []

    def play_all(name: str, build: Callable[[], Any]) -> None:
        for h in ("", *hedges):
            label = name if not h else f"{name}+{h}"
            log(f"[eventstream] playing {label}")
            agent = ES._hedged(build(), h or None)
            recs, refs = ES.play_specs(suite_list(), agent, label)
            out["suite"][label] = _slim(scores(recs, refs))
            if fspecs:
                recs, _ = ES.play_specs(fspecs, agent, label)
                out["fresh"][label] = _slim(episode_scores(recs, fspecs))

    for name, model in models.items():
        play_all(name, lambda model=model, name=name: ES.stream_agent(model, name))
    play_all("coarse-mind-unbound", lambda: make_agent("coarse-mind-unbound"))
    # importance of the text learner on the suite's silent streams
    log("[eventstream] permutation importance on the suite's silent streams")
    sdata = ES.stream_data(suite_list())
    out["importance"] = ES.stream_importance(gbm, sdata, top=8)
    out["suite_decisions"] = {k: {g: 100 * a for g, a in ES.group_accuracy(
        sdata, ES.model_decisions(m, sdata)).items()} for k, m in models.items()}
    # pixels
    if pixels:
        from mindhelper_env.validity.pixelstream import (
            frame_size_for,
            pixel_stream_data,
            play_pixels,
            train_pixel_model,
        )

        size = frame_size_for(suite)
        log(f"[eventstream] pixels: training on {pixel_train_per_family} a family, "
            f"frames of {size} px")
        pdata = pixel_stream_data(ES.training_specs(suite, pixel_train_per_family, seed=1),
                                  frame_size=size)
        pfit, ptune = ES.split_fit_tune(pdata)
        pm = train_pixel_model(pfit, ptune, log=log)
        out["models"]["pixel-stream-gbm"] = {"params": pm.params, "threshold": pm.threshold,
                                             "tune_accuracy": 100 * pm.tune_accuracy,
                                             "train_episodes": len(pdata), "frame_size": size}
        for h in ("", "prefix8", "delay1"):
            label = "pixel-stream-gbm" + (f"+{h}" if h else "")
            log(f"[eventstream] playing {label} on {pixels} suite episodes")
            recs, refs = play_pixels(suite_list()[:pixels], pm, frame_size=size,
                                     hedge=h or None)
            out["suite"][label] = _slim(scores(recs, refs))
    # the decisive moment
    log("[eventstream] the decisive-moment statistic")
    out["decisive"] = {"suite": decisive_statistic(suite_list())}
    if fspecs:
        out["decisive"]["fresh"] = decisive_statistic(fspecs)
    out["fresh_episodes"] = len(fspecs)
    out["suite_episodes"] = len(suite_list())
    return out


#: The fresh episodes a twin group needs before its fresh figures are bounded (as
#: ``bench_validity.FRESH_MIN_GROUP``: one standard error near 50 % is then about 2.2 points).
FRESH_MIN_GROUP = 500


def check_eventstream(res: Mapping[str, Any], bounds: Mapping[str, float] = EVENTSTREAM_BOUNDS,
                      *, min_group: int = FRESH_MIN_GROUP) -> list[str]:
    """The broken bounds of :func:`run_eventstream`'s figures, one line each, whatever the
    generator (the caller decides with :func:`eventstream_bounded`): the agents on the suite,
    and on the fresh episodes the agents' and the decisive moment's per-group figures of the
    groups with at least ``min_group`` episodes (a smaller group is reported only)."""
    broken: list[str] = []
    for where in ("suite", "fresh"):
        for name, m in res.get(where, {}).items():
            base = name.split("+", 1)[0]
            unbound = base == "coarse-mind-unbound"
            if not unbound:
                if m.get("PHA") is not None and m["PHA"] > bounds["PHA_max"]:
                    broken.append(f"{where}: {name} PHA {m['PHA']:.1f} > {bounds['PHA_max']}")
                if m.get("PIA") is not None and m["PIA"] > bounds["PIA_max"]:
                    broken.append(f"{where}: {name} PIA {m['PIA']:.1f} > {bounds['PIA_max']}")
            for g, gm in m.get("groups", {}).items():
                if unbound and g not in TIMING_BOUNDED_GROUPS:
                    continue
                if where == "fresh" and (gm.get("n") or 0) < min_group:
                    continue
                if gm.get("PHA") is not None and gm["PHA"] > bounds["group_PHA_max"]:
                    broken.append(f"{where}: {name} PHA {gm['PHA']:.1f} in {g} > "
                                  f"{bounds['group_PHA_max']}")
    for g, r in res.get("decisive", {}).get("fresh", {}).items():
        if g not in TIMING_BOUNDED_GROUPS or (r.get("n") or 0) < min_group:
            continue
        # only "anyone" is bounded: "other" (people but the focus person) already binds the
        # moment to the person who later looks, which is what a mind does (on mh-gen-3.3 it
        # reads the decoy's state, the focus person's own swapped; reported)
        acc = r["anyone"]["best"]
        if acc > bounds["decisive_max"]:
            broken.append(f"fresh: decisive moment (anyone) {acc:.1f}% in {g} > "
                          f"{bounds['decisive_max']}%")
    return broken


def format_eventstream(res: Mapping[str, Any], groups: Sequence[str],
                       short: Callable[[str], str] = lambda g: g) -> str:
    """The figures as Markdown tables: the agents (suite; fresh with intervals), the
    decisive-moment statistic, and the top features per group."""
    def pct(x: Any) -> str:
        return "—" if x is None else f"{x:.1f}"

    lines = [f"#### House-wide timing on {res.get('suite_name')} ({res.get('generator')})", "",
             "| agent | PHA | PIA | " + " | ".join(short(g) for g in groups) + " |",
             "|---|---|---|" + "---|" * len(groups)]
    for where in ("suite", "fresh"):
        for name, m in res.get(where, {}).items():
            label = name if where == "suite" else f"{name} (fresh)"
            lines.append(f"| {label} | {pct(m.get('PHA'))} | {pct(m.get('PIA'))} | " + " | ".join(
                pct(m.get("groups", {}).get(g, {}).get("PHA")) for g in groups) + " |")
    for where, dec in res.get("decisive", {}).items():
        lines += ["", f"Decisive moment ({where}): accuracy % of 'help iff anyone busy or "
                      "away' (better direction) [95 % Wilson]; anyone but the focus person", "",
                  "| group | moment | n | anyone | others than the focus person | "
                  "share help / twin (anyone) |", "|---|---|---|---|---|---|"]
        for g, r in dec.items():
            a, o = r["anyone"], r["other"]
            lines.append(f"| {short(g)} | {r['kind']} | {r['n']} | {a['best']:.1f} "
                         f"[{a['best_ci'][0]:.0f}–{a['best_ci'][1]:.0f}] | {o['best']:.1f} "
                         f"[{o['best_ci'][0]:.0f}–{o['best_ci'][1]:.0f}] | "
                         f"{pct(a['share_help'])} / {pct(a['share_twin'])} |")
    imp = res.get("importance", {})
    if imp:
        lines += ["", "Permutation importance of event-stream-gbm (points of balanced "
                      "accuracy lost), top verbs and feature kinds per group", "",
                  "| group | accuracy | verbs | kinds |", "|---|---|---|---|"]
        for g, r in imp.items():
            verbs = ", ".join(f"{k} {v:.1f}" for k, v in list(r["channel"].items())[:5])
            kinds = ", ".join(f"{k} {v:.1f}" for k, v in list(r["kind"].items())[:4])
            lines.append(f"| {short(g)} | {r['accuracy']:.1f} | {verbs} | {kinds} |")
    return "\n".join(lines)
