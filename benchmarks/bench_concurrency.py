"""Requests per second against a hosted-API stand-in, by episodes in flight
(``python benchmarks/bench_concurrency.py``).

A stdlib OpenAI-compatible server (``tests/slot_server.py``, in its own process) answers
after ``--latency`` seconds and serves ``--slots`` requests at once; past them it refuses
with 429. ``direct-vlm`` plays the first ``--limit`` episodes of ``--suite`` through
``evaluate`` with ``--workers`` processes and ``--concurrency N`` for each ``N`` of
``--curve``. Two scenarios:

* ``capped``: the model's ``concurrency`` option is ``--slots`` (the requests in flight are
  held at the server's capacity across processes: no 429);
* ``overflow``: no cap; the server has ``--overflow-slots`` slots and answers 429 past them,
  so the adaptive limit must find the capacity.

Per run: requests/s over the whole run (model calls / wall time, start-up and the last wave
of episodes included), the ratio to the server's capacity (``slots / latency``), episodes
written and lost (must be 0), fallbacks (failed calls), 429s, and the peak resident memory
of the run (this process and its workers, sampled every 0.2 s). Results also go to
``--json``.

The issue's target is the full ``vh-test-v5`` (1,000 episodes, 1.0 s latency, 64 slots,
``--concurrency 64 --workers 2``: >= 0.85 x 64 requests/s, <= 2 GB; 16 slots with 429s past
them: >= 0.8 x 16, nothing lost). ``--short`` is a quick look (``--limit 200 --latency 0.2
--curve 1,4,16,64``) that runs in a few minutes; small ``N`` play fewer episodes
(``--episodes-per-slot``, so the run stays short; the rate is still over the whole run).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class ServerProcess:
    """``tests/slot_server.py`` in a child process; ``stats()`` asks for its counters."""

    def __init__(self, latency: float, slots: int, retry_after: float | None) -> None:
        cmd = [sys.executable, str(ROOT / "tests" / "slot_server.py"), "--latency",
               str(latency), "--slots", str(slots)]
        if retry_after is not None:
            cmd += ["--retry-after", str(retry_after)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError(f"the slot server did not start: {self.url!r}")

    def stats(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


class PeakMemory:
    """Peak resident memory of this process and its children (sampled)."""

    def __init__(self) -> None:
        import psutil

        self._me = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        import psutil

        total = 0
        for proc in [self._me, *self._me.children(recursive=True)]:
            try:
                if "slot_server" in " ".join(proc.cmdline()):
                    continue  # the stand-in server is not part of the run
                total += proc.memory_info().rss
            except psutil.Error:
                continue
        self.peak = max(self.peak, total)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()

    def __enter__(self) -> PeakMemory:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def one_run(args: argparse.Namespace, server: ServerProcess, n: int, episodes: int,
            cap: int | None, out: Path) -> dict[str, Any]:
    from mindhelper_env.evaluation import evaluate, read_result_file

    before = server.stats()
    opts: dict[str, Any] = {"model": f"openai:bench@{server.url}", "api_key": "k",
                            "timeout": 60.0, "lock_dir": str(out / "locks")}
    if cap is not None:
        opts["concurrency"] = cap
    t0 = time.perf_counter()
    with PeakMemory() as mem:
        evaluate(args.suite, ["direct-vlm"], out / f"n{n}", limit=episodes,
                 workers=args.workers, force_workers=True, concurrency=n, progress=False,
                 plots=False, timing=False, agent_kwargs={"direct-vlm": opts})
    wall = time.perf_counter() - t0
    after = server.stats()
    records = [r for _line, r in read_result_file(out / f"n{n}" / "direct-vlm.jsonl")]
    calls = sum(r["usage"]["model_calls"] for r in records)
    return {"concurrency": n, "episodes": episodes, "written": len(records),
            "lost": episodes - len(records), "model_calls": calls,
            "fallbacks": sum(r["usage"]["fallbacks"] for r in records),
            "refused_429": after["refused"] - before["refused"],
            "peak_in_flight": after["peak"], "wall_s": round(wall, 2),
            "requests_per_s": round(calls / wall, 2),
            "peak_memory_mb": round(mem.peak / 2**20, 1)}


def scenario(args: argparse.Namespace, name: str, slots: int, cap: int | None,
             curve: list[int], root: Path) -> list[dict[str, Any]]:
    server = ServerProcess(args.latency, slots, args.retry_after)
    capacity = slots / args.latency
    rows = []
    try:
        for n in curve:
            episodes = min(args.limit, max(16, args.episodes_per_slot * n * args.workers))
            row = one_run(args, server, n, episodes, cap, root / name)
            row["scenario"] = name
            row["slots"] = slots
            row["of_capacity"] = round(row["requests_per_s"] / capacity, 3)
            rows.append(row)
            print(f"{name:8s} slots={slots:3d} N={n:4d} episodes={episodes:5d} "
                  f"{row['requests_per_s']:7.2f} req/s ({row['of_capacity']:.2f} of "
                  f"{capacity:.0f}) lost={row['lost']} fallbacks={row['fallbacks']} "
                  f"429s={row['refused_429']} peak={row['peak_memory_mb']:.0f} MB "
                  f"wall={row['wall_s']:.1f} s", flush=True)
    finally:
        server.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="vh-test-v5", help="suite (default vh-test-v5)")
    parser.add_argument("--limit", type=int, default=1000, help="episodes (default 1000)")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per answer")
    parser.add_argument("--slots", type=int, default=64, help="server slots (capped)")
    parser.add_argument("--overflow-slots", type=int, default=16,
                        help="server slots of the overflow scenario (429 past them)")
    parser.add_argument("--retry-after", type=float, default=None,
                        help="Retry-After seconds sent with a 429 (default: none)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--curve", default="1,4,16,64,128",
                        help="comma-separated --concurrency values")
    parser.add_argument("--overflow-concurrency", type=int, default=64,
                        help="--concurrency of the overflow scenario")
    parser.add_argument("--episodes-per-slot", type=int, default=1_000_000,
                        help="at most this many episodes per episode in flight")
    parser.add_argument("--scenarios", default="capped,overflow")
    parser.add_argument("--short", action="store_true",
                        help="--limit 200 --latency 0.2 --curve 1,4,16,64 "
                             "--episodes-per-slot 4")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = parser.parse_args(argv)
    if args.short:
        args.limit, args.latency, args.curve = 200, 0.2, "1,4,16,64"
        args.episodes_per_slot = 4
    curve = [int(x) for x in args.curve.split(",") if x.strip()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-concurrency-") as tmp:
        root = Path(tmp)
        if "capped" in args.scenarios:
            rows += scenario(args, "capped", args.slots, args.slots, curve, root)
        if "overflow" in args.scenarios:
            rows += scenario(args, "overflow", args.overflow_slots, None,
                             [args.overflow_concurrency], root)
    if args.json is not None:
        args.json.write_text(json.dumps({"suite": args.suite, "latency": args.latency,
                                         "workers": args.workers, "rows": rows}, indent=2)
                             + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
