"""How long ``evaluate --report`` spends on the report (``python benchmarks/bench_report.py``).

Runs the issue's command once, ``evaluate --suite vh-dev-v5 --agents
silent,random,reactive,belief-tracker,oracle,mindclaw`` in this process (``--workers``,
default 1 as in the issue's command; timing off), then builds its report ``--repeat`` times in
fresh folders as ``--report`` does (:func:`mindhelper_env.report.write_report`, replay and
pages in one process per CPU) and prints the median wall time of the evaluation and of the
report step, the report's CPU seconds (this process and its replay workers) and the median of
each stage (replay, scoring, charts, pages). The goal: the report step under 10 s.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from mindhelper_env.evaluation import evaluate
from mindhelper_env.report import write_report

AGENTS = "silent,random,reactive,belief-tracker,oracle,mindclaw"


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="vh-dev-v5")
    ap.add_argument("--agents", default=AGENTS)
    ap.add_argument("--workers", type=int, default=1,
                    help="evaluate --workers (the issue's command uses the default, 1)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        t = time.perf_counter()
        evaluate(args.suite, args.agents.split(","), run, workers=args.workers, timing=False,
                 progress=False)
        evaluation = time.perf_counter() - t
        walls, cpus, stages = [], [], []
        for k in range(args.repeat):
            c, t = _cpu(), time.perf_counter()
            result = write_report(Path(tmp) / f"report{k}", [run])  # as evaluate --report
            walls.append(time.perf_counter() - t)
            cpus.append(_cpu() - c)
            stages.append(result["timings"])
        print(f"evaluation ({args.suite}, {args.agents}, {args.workers} workers): "
              f"{evaluation:.1f} s")
        print(f"report step: median {statistics.median(walls):.2f} s wall over {args.repeat} "
              f"runs (all: {', '.join(f'{w:.2f}' for w in walls)}), "
              f"{statistics.median(cpus):.2f} s CPU, {result['pages']} episode pages")
        for key in stages[0]:
            print(f"  {key}: median {statistics.median(s[key] for s in stages):.2f} s")


if __name__ == "__main__":
    main()
