"""Wall time of ``--backend ray`` against the local ``--workers 2`` runner, same records.

    python benchmarks/bench_ray.py                         # the test suite, 3 runs each
    python benchmarks/bench_ray.py --runs 5 --agents oracle --limit 300

Each run is a fresh ``mindhelper evaluate ... --no-timing`` process; the time is the whole
process (interpreter start-up, imports, episode generation in every worker, writing). Rows:

* ``local --workers 2``: the spawn process pool;
* ``ray, local instance``: ``--backend ray --workers 2``: the command starts (and stops) a
  local Ray instance with 2 CPUs itself, so Ray's start-up (several seconds) is included;
* ``ray, running cluster``: ``--backend ray --address <addr>`` against a 2-CPU cluster
  started once beforehand (``ray start --head --num-cpus 2``), the way a long evaluation
  on a cluster runs; its workers are warm after the first run (the first run is reported
  separately and not in the median); compared with local runs made while that cluster
  sits idle.

Runs alternate between the two sides of each comparison, so that load from other processes
on a shared machine hits both alike. Prints the medians, the ratios to the local runner and whether every record file is
byte-identical to the local runner's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _evaluate(suite: str, agents: str, out: Path, limit: int | None, extra: list[str]) -> float:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "mindhelper_env.cli", "evaluate", "--suite", suite, "--agents",
           agents, "--out", str(out), "--workers", "2", "--no-progress", "--no-plots",
           "--no-timing", "--json", *extra]
    if limit:
        cmd += ["--limit", str(limit)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed


def _same(a: Path, b: Path, agents: str) -> bool:
    return all((a / f"{x}.jsonl").read_bytes() == (b / f"{x}.jsonl").read_bytes()
               for x in agents.split(","))


def _ray_cli() -> str:
    exe = Path(sys.executable).with_name("ray")
    return str(exe) if exe.exists() else "ray"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default=None, help="default: the first test suite")
    parser.add_argument("--agents", default="silent,random,oracle")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-cluster", action="store_true",
                        help="skip the pre-started cluster rows")
    args = parser.parse_args(argv)
    if args.suite is None:
        from mindhelper_env.scenarios.suites import suite_names

        names = suite_names()
        args.suite = next((n for n in names if "test" in n), names[0])
    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    # Runs are interleaved (local, ray, local, ray, ...) so that load from other processes
    # on a shared machine hits both sides alike; each Ray row has its own local baseline.
    rows: dict[str, list[float]] = {"local --workers 2": [], "ray, local instance": []}
    base_of = {"ray, local instance": "local --workers 2"}
    identical = True
    cluster_first: float | None = None
    try:
        ref = tmp / "local"
        for _ in range(args.runs):
            rows["local --workers 2"].append(_evaluate(args.suite, args.agents, ref,
                                                       args.limit, []))
            out = tmp / "ray"
            rows["ray, local instance"].append(_evaluate(
                args.suite, args.agents, out, args.limit, ["--backend", "ray"]))
            identical = identical and _same(ref, out, args.agents)
        if not args.no_cluster:
            env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
            start = subprocess.run([_ray_cli(), "start", "--head", "--num-cpus", "2",
                                    "--include-dashboard", "false", "--disable-usage-stats"],
                                   capture_output=True, text=True, env=env)
            if start.returncode != 0:
                print(f"ray start failed; cluster rows skipped: {start.stderr.strip()[-300:]}")
            else:
                try:
                    rows["local --workers 2 (cluster idle)"] = []
                    rows["ray, running cluster"] = []
                    base_of["ray, running cluster"] = "local --workers 2 (cluster idle)"
                    for i in range(args.runs + 1):
                        out = tmp / "cluster"
                        t = _evaluate(args.suite, args.agents, out, args.limit,
                                      ["--backend", "ray", "--address", "auto"])
                        identical = identical and _same(ref, out, args.agents)
                        if i == 0:
                            cluster_first = t
                            continue
                        rows["ray, running cluster"].append(t)
                        rows["local --workers 2 (cluster idle)"].append(_evaluate(
                            args.suite, args.agents, tmp / "local2", args.limit, []))
                        identical = identical and _same(ref, tmp / "local2", args.agents)
                finally:
                    subprocess.run([_ray_cli(), "stop", "--force"], capture_output=True,
                                   env=env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    result = {"suite": args.suite, "agents": args.agents, "limit": args.limit,
              "runs": args.runs, "cpus": os.cpu_count(), "records_byte_identical": identical,
              "rows": {}}
    for name, times in rows.items():
        med = statistics.median(times)
        base = statistics.median(rows[base_of.get(name, name)])
        result["rows"][name] = {"median_s": round(med, 2), "ratio_to_local": round(med / base, 2),
                                "runs_s": [round(t, 2) for t in times]}
        print(f"{name:34s} median {med:6.2f} s  ({med / base:4.2f}x local)  "
              f"runs: {', '.join(f'{t:.2f}' for t in times)}")
    if cluster_first is not None:
        result["cluster_first_run_s"] = round(cluster_first, 2)
        print(f"{'(cluster, first run)':34s}        {cluster_first:6.2f} s")
    print(f"records byte-identical to the local runner: {identical}")
    print(json.dumps(result))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
