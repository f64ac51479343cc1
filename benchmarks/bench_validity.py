"""Is the benchmark passable without theory of mind? (``python benchmarks/bench_validity.py``)

Plays every agent that reads only ``obs`` and ``info`` — silent, random, the shortcut
baselines (reactive, moved-absent, prior) and the belief-tracker reference — plus the
privileged oracle on a suite (``vh-test-v2`` by default), prints PHA, PHR, PIR, PSR, PIA and
TA for each, then the accuracy of a bag-of-words classifier trained on training seeds that
predicts *needs help* from the reset observation and from the reset plus the first two
windows. Finally it checks the promised bounds (:data:`mindhelper_env.validity.BOUNDS`) and
exits 1 if one is broken.
"""

from __future__ import annotations

import argparse
import sys
import time

from rich.console import Console
from rich.table import Table

from mindhelper_env.validity import (
    BOUNDS,
    SHORTCUTS,
    agent_scores,
    bag_of_words_accuracy,
)

AGENTS = ("silent", "random", *SHORTCUTS, "belief-tracker", "oracle")
COLUMNS = ("PHA", "PHR", "PIR", "PSR", "PIA", "TA", "premature_rate", "late_rate",
           "false_alarm_rate", "harm_rate")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="vh-test-v2")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--train", type=int, default=2000,
                    help="training episodes for the classifier (default 2000)")
    ap.add_argument("--limit", type=int, default=None, help="first N suite episodes only")
    args = ap.parse_args(argv)
    console = Console(width=150)
    t0 = time.perf_counter()
    scores = agent_scores(args.suite, AGENTS, workers=args.workers, limit=args.limit)
    table = Table(title=f"{args.suite}: agents that read only obs and info (oracle: privileged)")
    table.add_column("agent", style="bold")
    for c in COLUMNS:
        table.add_column(c.replace("_rate", ""), justify="right")
    for a in AGENTS:
        table.add_row(a, *(f"{scores[a][c]:.1f}" if scores[a].get(c) is not None else "n/a"
                           for c in COLUMNS))
    console.print(table)
    console.print(f"agents played in {time.perf_counter() - t0:.1f} s")
    t1 = time.perf_counter()
    clf = {w: bag_of_words_accuracy(args.suite, windows=w, n_train=args.train, limit=args.limit)
           for w in (0, 2)}
    console.print(f"bag-of-words needs-help classifier ({args.train} training episodes, "
                  f"{time.perf_counter() - t1:.1f} s):")
    for w, r in clf.items():
        what = "reset observation" if w == 0 else f"reset + first {w} windows"
        console.print(f"  {what:28s} accuracy {100 * r['accuracy']:.1f}%  "
                      f"(train {100 * r['train_accuracy']:.1f}%, majority "
                      f"{100 * r['majority']:.1f}%)")
    broken = []
    tr = scores["belief-tracker"]
    if tr["PHA"] < BOUNDS["tracker_PHA_min"] or tr["PIA"] < BOUNDS["tracker_PIA_min"]:
        broken.append(f"belief-tracker PHA {tr['PHA']} / PIA {tr['PIA']} below the bound")
    for a in SHORTCUTS:
        if scores[a]["PIA"] > BOUNDS["shortcut_PIA_max"] or \
                scores[a]["PHA"] > BOUNDS["shortcut_PHA_max"]:
            broken.append(f"{a} PIA {scores[a]['PIA']} / PHA {scores[a]['PHA']} above the bound")
    if clf[0]["accuracy"] > BOUNDS["reset_classifier_max"]:
        broken.append(f"reset-observation classifier {clf[0]['accuracy']:.3f} above the bound")
    oracle = scores["oracle"]
    if any(oracle[k] != 100.0 for k in ("PHA", "PIR", "PSR", "TA")):
        broken.append("oracle is not 100 on every metric")
    for b in broken:
        console.print(f"[red]BOUND BROKEN[/red]: {b}")
    if not broken:
        console.print("all validity bounds hold")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
