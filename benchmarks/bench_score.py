"""How long ``mindhelper score`` and ``mindhelper report`` take on 1,000 ``vh-test-v5`` records
(``python benchmarks/bench_score.py``).

Makes the records once with ``evaluate`` (``--agents``, default ``silent``: a cheap agent,
since scoring does not depend on what the agent did; ``--workers``, timing off) or takes a
run folder (``--run DIR``), then runs each command ``--repeat`` times as a user does: a new
``mindhelper`` process every time (so nothing stays cached between runs), ``score DIR
--suite SUITE`` and ``report DIR --out NEW --workers W``. Prints the median wall time and
CPU seconds (the process and its replay workers) of each, every run's wall time, and, with
``MINDHELPER_GENERATE_SUITES=1`` in the environment, the same without the shipped suite
files (the figures before they shipped). The goal (issue 53): ``score`` <= 3 s and
``report`` <= 15 s on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mindhelper_env.evaluation import evaluate
from mindhelper_env.scenarios import shipped


def _children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def _timed(cmd: list[str]) -> tuple[float, float]:
    c, t = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, _children_cpu() - c


def _line(name: str, runs: list[tuple[float, float]]) -> str:
    walls = [w for w, _ in runs]
    return (f"{name}: median {statistics.median(walls):.2f} s wall, "
            f"{statistics.median(c for _, c in runs):.2f} s CPU over {len(runs)} runs "
            f"(all: {', '.join(f'{w:.2f}' for w in walls)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="vh-test-v5")
    ap.add_argument("--agents", default="silent")
    ap.add_argument("--workers", type=int, default=2, help="evaluate's and report's workers")
    ap.add_argument("--run", type=Path, default=None, help="score this run folder instead")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-report", action="store_true", help="time score only")
    args = ap.parse_args()
    cli = [sys.executable, "-m", "mindhelper_env.cli"]
    print(f"shipped suite files: {'off' if not shipped.enabled() else shipped.shipped_suites()}"
          f"; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            run = Path(tmp) / "run"
            t = time.perf_counter()
            evaluate(args.suite, args.agents.split(","), run, workers=args.workers,
                     timing=False, progress=False, plots=False)
            print(f"records: evaluate {args.suite} {args.agents} in "
                  f"{time.perf_counter() - t:.1f} s")
        summary = json.loads((run / "summary.json").read_text())
        n = sum(1 for f in run.glob("*.jsonl") for _ in f.open())
        print(f"scoring {n} records of {summary.get('suite', args.suite)} in {run}")
        score = [_timed([*cli, "score", str(run), "--suite", args.suite, "--json"])
                 for _ in range(args.repeat)]
        print(_line("score", score))
        if not args.no_report:
            report = []
            for k in range(args.repeat):
                out = Path(tmp) / f"report{k}"
                report.append(_timed([*cli, "report", str(run), "--out", str(out),
                                      "--workers", str(args.workers)]))
                shutil.rmtree(out)
            print(_line("report", report))
        print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
