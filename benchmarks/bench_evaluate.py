"""Time a full evaluation of a suite at several worker counts.

    python benchmarks/bench_evaluate.py                      # vh-test-v5, oracle, workers 1 and 2
    python benchmarks/bench_evaluate.py --workers 1,2,4 --agents oracle,silent --limit 200

Suite episodes are generated on demand and cached only inside a process, so each row runs in
a fresh Python process and its time includes generating the episodes it plays (every
worker process generates its own). Rows:

* ``generate``: building every episode of the suite once (``suite_references``), no play;
* ``evaluate, workers=N``: ``mindhelper_env.evaluation.evaluate`` without plots or progress
  bar; "in evaluate" is the runner's own wall time, "process" adds interpreter start-up and
  imports;
* ``evaluate, workers=1, pre-generated``: the same after generating the episodes in that
  process, i.e. the cost of playing alone.

Results are checked to be identical across worker counts (up to ``usage.seconds``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import mindhelper_env
from mindhelper_env.evaluation import evaluate
from mindhelper_env.scenarios.suites import suite_references
args = json.loads(sys.argv[1])
out = {}
if args["mode"] == "generate":
    t = time.perf_counter()
    n = len(suite_references(args["suite"]))
    out["inner"] = time.perf_counter() - t
    out["episodes"] = n
else:
    if args["pregenerate"]:
        from mindhelper_env.scenarios.suites import suite_episode
        for i in range(args["limit"] or 10**9):
            try:
                suite_episode(args["suite"], i)
            except ValueError:
                break
    t = time.perf_counter()
    summary = evaluate(args["suite"], args["agents"], args["out"], workers=args["workers"],
                       limit=args["limit"], progress=False, plots=False)
    out["inner"] = time.perf_counter() - t
    out["episodes"] = sum(summary["episodes"].values())
    out["table"] = summary["table"]
out["process"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def _run_child(args: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(args)], check=True,
                          capture_output=True, text=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process"] = time.perf_counter() - t0
    return result


def _records(path: Path) -> list[dict[str, Any]]:
    recs = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        rec["usage"].pop("seconds", None)
        recs.append(rec)
    return recs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="vh-test-v5")
    parser.add_argument("--agents", default="oracle")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    agents = [a for a in args.agents.split(",") if a]
    worker_counts = [int(w) for w in args.workers.split(",") if w]

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-evaluate-") as tmp:
        gen = _run_child({"mode": "generate", "suite": args.suite})
        rows.append({"run": f"generate {args.suite}", "episodes": gen["episodes"],
                     "inner_s": gen["inner"], "process_s": gen["process"]})
        outs: dict[int, Path] = {}
        for w in worker_counts:
            out = Path(tmp) / f"w{w}"
            res = _run_child({"mode": "evaluate", "suite": args.suite, "agents": agents,
                              "out": str(out), "workers": w, "limit": args.limit,
                              "pregenerate": False})
            outs[w] = out
            rows.append({"run": f"evaluate, workers={w}", "episodes": res["episodes"],
                         "inner_s": res["inner"], "process_s": res["process"],
                         "table": res["table"]})
        out = Path(tmp) / "pre"
        res = _run_child({"mode": "evaluate", "suite": args.suite, "agents": agents,
                          "out": str(out), "workers": 1, "limit": args.limit,
                          "pregenerate": True})
        rows.append({"run": "evaluate, workers=1, pre-generated", "episodes": res["episodes"],
                     "inner_s": res["inner"], "process_s": res["process"]})
        first = worker_counts[0]
        identical = all(_records(outs[w] / f"{a}.jsonl") == _records(outs[first] / f"{a}.jsonl")
                        for w in worker_counts for a in agents)

    for row in rows:
        row["episodes_per_s"] = row["episodes"] / row["inner_s"] if row["inner_s"] else None
    if args.json:
        print(json.dumps({"rows": rows, "identical_across_workers": identical,
                          "cpus": os.cpu_count()}, indent=2))
        return 0 if identical else 1

    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"evaluate {args.suite} ({', '.join(agents)}; {os.cpu_count()} CPUs)")
    for col in ("run", "episodes", "in evaluate (s)", "episodes/s", "process (s)"):
        t.add_column(col, justify="left" if col == "run" else "right")
    for row in rows:
        t.add_row(row["run"], str(row["episodes"]), f"{row['inner_s']:.2f}",
                  f"{row['episodes_per_s']:.0f}", f"{row['process_s']:.2f}")
    console = Console()
    console.print(t)
    console.print(f"records identical across worker counts {worker_counts}: {identical}")
    for row in rows:
        if "table" in row:
            pct = {a: {k: row["table"][a][k] for k in ("PIR", "PSR", "TA")} for a in agents}
            console.print(f"{row['run']}: {pct}")
            break
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
