"""Does the benchmark need a mind? (``python benchmarks/bench_validity.py``)

On a suite (:data:`mindhelper_env.validity.TEST_SUITE` by default) this prints, in order:

1. the **ablation gap** per twin group: PHA of the belief tracker and of its two
   perspective-free ablations (``ablation-shared-view``, ``ablation-own-actions``);
2. the **agent table**: oracle, belief-tracker, the ablations, ``perspective-free``,
   ``reactive``, ``moved-absent``, ``prior``, ``random``, ``silent`` and the trained
   window classifiers (the window alone; with the two windows before it), each also with the
   movement-prefix hedge (``+prefix8``) where it applies;
3. the **classifiers** per twin group: bag-of-words needs-help classifiers on the reset
   observation and on the narration up to the first visible struggle (cue time), and the
   window classifier's episode accuracy;
4. the **feature scan** per twin group: the best single-feature threshold rule and a
   depth-3 decision tree over all features, the post-hoc ones of the silent rollout included
   (bounded), and over the reset and cue-time ones alone (what an agent has in time);
5. the bounds (:data:`mindhelper_env.validity.BOUNDS`); exits 1 if one breaks.

Classifiers are trained on ``--train`` training-seed episodes set in the suite's houses.
"""

from __future__ import annotations

import argparse
import sys
import time

from rich.console import Console
from rich.table import Table

from mindhelper_env import validity as V

COLUMNS = ("PHA", "PHR", "PIR", "PSR", "PIA", "TA", "premature_rate", "late_rate",
           "false_alarm_rate", "harm_rate")
REGISTERED = ("oracle", "belief-tracker", *V.ABLATION_AGENTS, V.GOAL_ABLATION,
              "perspective-free", "reactive",
              "moved-absent", "prior", "random", "silent")
#: agents played with the hedge too (the oracle reads the env; silent never acts)
HEDGED = tuple(a for a in REGISTERED if a not in ("oracle", "silent"))


def _hedge_class():
    try:
        from mindhelper_env.agents.hedge import MovementPrefix
    except ImportError:
        return None
    return MovementPrefix


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default=V.TEST_SUITE)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--train", type=int, default=2000,
                    help="training episodes for the classifiers (default 2000)")
    ap.add_argument("--limit", type=int, default=None, help="first N suite episodes only")
    ap.add_argument("--hedge-lines", type=int, default=V.HEDGE_LINES)
    ap.add_argument("--no-hedge", action="store_true", help="skip the hedged agents")
    ap.add_argument("--json", default=None, metavar="FILE",
                    help="also write every figure (agents overall and per twin group, "
                         "classifiers, scan, broken bounds) to FILE")
    args = ap.parse_args(argv)
    console = Console(width=160)
    t_all = time.perf_counter()
    from mindhelper_env.scenarios.suites import SUITES

    hedge = None if args.no_hedge else _hedge_class()
    unchecked: list[str] = []
    if hedge is None and not args.no_hedge:
        unchecked.append("the movement-prefix hedge (mindhelper_env.agents.hedge) is not "
                         "installed: hedged agents not played")

    def h(name: str) -> str:
        return V.hedged(name, args.hedge_lines)

    # ---- play the registered agents
    t0 = time.perf_counter()
    names = list(REGISTERED) + ([h(a) for a in HEDGED] if hedge is not None else [])
    recs = V.agent_records(args.suite, names, workers=args.workers, limit=args.limit)
    scores = {a: V.scores(r, args.suite) for a, r in recs.items()}
    t_play = time.perf_counter() - t0

    # ---- training data, classifiers, the window-classifier agent
    t0 = time.perf_counter()
    train = V.training_data(args.train, house=SUITES[args.suite].get("house"))
    test = V.suite_data(args.suite, args.limit)
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    wclfs = {}
    for ctx, wname in zip(V.WINDOW_CONTEXTS, V.WINDOW_AGENTS, strict=True):
        wclf = wclfs[wname] = V.train_window_classifier(train, context=ctx)
        scores[wname] = V.scores(V.play_records(args.suite, V.WindowClassifierAgent(wclf),
                                                wname, limit=args.limit), args.suite)
        if hedge is not None:
            hn = h(wname)
            scores[hn] = V.scores(V.play_records(
                args.suite, hedge(V.WindowClassifierAgent(wclf), lines=args.hedge_lines), hn,
                limit=args.limit), args.suite)
    classifiers = {
        "reset": V.text_classifier_accuracy(train, test, lambda d: d.windows[0]),
        "reset+2": V.text_classifier_accuracy(train, test,
                                              lambda d: [t for w in d.windows[:3] for t in w]),
        "cue": V.cue_classifier_accuracy(train, test),
        **{"window" + wname[len("window-classifier"):]: {
            "all": scores[wname]["PIA"] / 100.0,
            **{g: m["accuracy"] / 100.0 for g, m in scores[wname]["groups"].items()}}
           for wname in V.WINDOW_AGENTS},
    }
    timing_only = {w: V.window_classifier_accuracy(c, test) for w, c in wclfs.items()}
    scan = V.feature_scan(train, test)  # every feature, post-hoc ones included (bounded)
    scan_time = V.feature_scan(train, test, kinds=("reset", "cue"))  # what is known in time
    t_clf = time.perf_counter() - t0

    groups = V.twin_groups()
    belief = set(V.belief_groups())
    # 1. ablation gap
    table = Table(title=f"{args.suite}: PHA of the belief tracker and its ablations per twin "
                        "group (* = the decision turns on a belief)")
    table.add_column("twin group", style="bold")
    for a in ("belief-tracker", *V.ABLATION_AGENTS):
        table.add_column(a, justify="right")
    for a in V.ABLATION_AGENTS:
        table.add_column(f"gap {a.split('-', 1)[1]}", justify="right")
    for g in (*groups, "all"):
        def pha(a: str, g: str = g):
            m = scores[a] if g == "all" else scores[a]["groups"].get(g, {})
            return m.get("PHA")
        tr = pha("belief-tracker")
        row = [f"{g}{' *' if g in belief else ''}", _pct(tr),
               *(_pct(pha(a)) for a in V.ABLATION_AGENTS),
               *(_pct(None if tr is None or pha(a) is None else tr - pha(a))
                 for a in V.ABLATION_AGENTS)]
        table.add_row(*row)
    console.print(table)
    # 1b. the goal-inference gap: PHR (the right object handed over) per goal group
    table = Table(title=f"{args.suite}: PHR of the belief tracker and of "
                        f"{V.GOAL_ABLATION} (no earlier steps) in the goal-inference groups")
    table.add_column("twin group", style="bold")
    for a in ("belief-tracker", V.GOAL_ABLATION):
        table.add_column(a, justify="right")
    table.add_column("gap", justify="right")
    for g in V.goal_groups():
        def phr(a: str, g: str = g):
            return scores[a]["groups"].get(g, {}).get("PHR")
        tr, gb = phr("belief-tracker"), phr(V.GOAL_ABLATION)
        table.add_row(g, _pct(tr), _pct(gb),
                      _pct(None if tr is None or gb is None else tr - gb))
    console.print(table)

    # 2. agent table
    table = Table(title=f"{args.suite}: agents that read only obs and info (oracle: "
                        f"privileged); +prefix{args.hedge_lines}: the movement-prefix hedge")
    table.add_column("agent", style="bold")
    for c in COLUMNS:
        table.add_column(c.replace("_rate", ""), justify="right")
    order = []
    for a in (*REGISTERED, *V.WINDOW_AGENTS):
        order.append(a)
        if h(a) in scores:
            order.append(h(a))
    for a in order:
        table.add_row(a, *(_pct(scores[a].get(c)) for c in COLUMNS))
    console.print(table)

    # 3. classifiers
    table = Table(title=f"needs-help classifiers ({len(train)} training episodes; accuracy %, "
                        "per twin group a classifier trained on that group)")
    table.add_column("classifier", style="bold")
    for g in (*groups, "all"):
        table.add_column(g, justify="right")
    what = {"reset": "reset observation", "reset+2": "reset + first 2 windows",
            "cue": "up to the first struggle"}
    for k, accs in classifiers.items():
        label = what.get(k, f"{k.replace('window', 'window-classifier', 1)} agent")
        table.add_row(label, *(_pct(None if accs.get(g) is None else 100 * accs[g])
                               for g in (*groups, "all")))
    for w, accs in timing_only.items():
        table.add_row(f"{w}, timing only",
                      *(_pct(None if accs.get(g) is None else 100 * accs[g])
                        for g in (*groups, "all")))
    console.print(table)
    console.print("window classifier thresholds: " + ", ".join(
        f"{w} {c.threshold:.3f}" for w, c in wclfs.items()))

    # 4. feature scan
    table = Table(title=f"feature scan: {len(V.FEATURES)} observable features, rules trained "
                        "on each group's training episodes, accuracy % on the suite "
                        "(bounded: every feature, post-hoc ones included; in time: reset and "
                        "cue-time features only)")
    table.add_column("twin group", style="bold")
    for c in ("best single feature", "test", "depth-3 tree", "in time: best single", "test",
              "tree", "n train/test"):
        table.add_column(c, justify="right")

    def rule(s) -> str:
        return f"{s['feature']} {'>' if s['direction'] == 1 else '<='} {s['threshold']:g}"

    for g in groups:
        r, rp = scan.get(g), scan_time.get(g)
        if r is None or rp is None:
            continue
        table.add_row(g, rule(r["single"]), _pct(100 * r["single"]["test"]),
                      _pct(100 * r["tree"]["test"]), rule(rp["single"]),
                      _pct(100 * rp["single"]["test"]), _pct(100 * rp["tree"]["test"]),
                      f"{r['n_train']}/{r['n_test']}")
    console.print(table)

    # 5. bounds
    shortcut = [*V.SHORTCUT_BASELINES, *V.WINDOW_AGENTS]
    broken = V.check_bounds(scores, classifiers={k: v for k, v in classifiers.items()
                                                 if k != "reset+2"},
                            scan=scan, shortcuts=shortcut)
    console.print(f"played agents in {t_play:.0f} s, rolled out {len(train)} training and "
                  f"{len(test)} suite episodes in {t_data:.0f} s, classifiers and scan in "
                  f"{t_clf:.0f} s; total {time.perf_counter() - t_all:.0f} s")
    if args.json:
        import json

        keep = ("PHA", "PHR", "PIR", "PSR", "PIA", "TA", "SR", "AC", "premature_rate",
                "late_rate", "false_alarm_rate", "harm_rate", "n_help", "n_silent", "accuracy")

        def slim(m):
            return {k: m.get(k) for k in keep if k in m}

        out = {"suite": args.suite, "limit": args.limit, "train": len(train),
               "bounds": V.BOUNDS,
               "agents": {a: {**slim(m), "groups": {g: slim(gm) for g, gm
                                                    in m["groups"].items()}}
                          for a, m in scores.items()},
               "classifiers": classifiers, "window_timing_only": timing_only,
               "window_thresholds": {w: c.threshold for w, c in wclfs.items()},
               "scan": {g: {"single": r["single"], "tree": r["tree"]["test"]}
                        for g, r in scan.items()},
               "scan_in_time": {g: {"single": r["single"], "tree": r["tree"]["test"]}
                                for g, r in scan_time.items()},
               "broken": broken, "unchecked": unchecked}
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    for u in unchecked:
        console.print(f"[red]NOT CHECKED[/red]: {u}")
    for b in broken:
        console.print(f"[red]BOUND BROKEN[/red]: {b}")
    if not broken and not unchecked:
        console.print("all validity bounds hold")
    return 1 if broken or unchecked else 0


if __name__ == "__main__":
    sys.exit(main())
