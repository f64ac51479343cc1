"""Kill ``mindhelper evaluate --workers 2`` at random moments, resume, compare with a clean run.

    python benchmarks/bench_kill_resume.py                   # 10 kills on vh-test-v5
    python benchmarks/bench_kill_resume.py --kills 3 --limit 200 --seed 1

1. A reference run (``--no-timing``) writes the expected records.
2. The same command runs into a second folder and is killed ``--kills`` times at a random
   moment (SIGKILL or SIGTERM, chosen at random); each restart uses ``--resume``. After each
   kill the script waits 5 s and counts the processes left in the run's session (zombies,
   which are dead and only wait to be reaped, are not counted).
3. A last ``--resume`` finishes the run; every result file must be byte-identical to the
   reference.

Prints one line per kill and a verdict; exits 1 if a process was left, an exit code was not
0/130/-9 (or -15 for a SIGTERM that lands while Python is still importing, before the CLI
installs its handler), or a file differs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def session_processes(sid: int) -> list[int]:
    """Pids of live (non-zombie) processes in session ``sid`` (Linux ``/proc``)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...; comm may contain spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def wait_gone(sid: int, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    left = session_processes(sid)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = session_processes(sid)
    return left


def command(suite: str, agents: str, out: Path, limit: int | None, workers: int,
            resume: bool) -> list[str]:
    cmd = [sys.executable, "-m", "mindhelper_env.cli", "evaluate", "--suite", suite,
           "--agents", agents, "--out", str(out), "--workers", str(workers), "--no-progress",
           "--no-plots", "--no-timing", "--json"]
    if limit:
        cmd += ["--limit", str(limit)]
    if resume:
        cmd.append("--resume")
    return cmd


def kill_at(cmd: list[str], delay: float, sig: int) -> tuple[int | None, list[int], str]:
    """Start ``cmd`` in a new session, send ``sig`` after ``delay`` s; return its exit code
    (None if it hung), the processes still alive 5 s later and its stderr."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    time.sleep(delay)
    if proc.poll() is None:
        os.kill(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # the bug this script exists to catch
        proc.kill()
        _, err = proc.communicate()
        return None, session_processes(proc.pid), err.decode("utf-8", "replace")
    left = wait_gone(proc.pid, 5.0)
    for pid in left:  # leave nothing behind ourselves
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.returncode, left, err.decode("utf-8", "replace")


def _count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default=None, help="default: the first test suite")
    parser.add_argument("--agents", default="silent,random,oracle")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random kill moments")
    parser.add_argument("--keep", action="store_true", help="keep the output folders")
    args = parser.parse_args(argv)
    if args.suite is None:
        from mindhelper_env.scenarios.suites import suite_names

        names = suite_names()
        args.suite = next((n for n in names if "test" in n), names[0])
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-kill-"))
    ok = True
    try:
        ref, run = tmp / "reference", tmp / "killed"
        t0 = time.perf_counter()
        subprocess.run(command(args.suite, args.agents, ref, args.limit, args.workers, False),
                       check=True, stdout=subprocess.DEVNULL)
        full = time.perf_counter() - t0
        print(f"reference run: {full:.1f} s ({args.suite}, {args.agents}, "
              f"workers={args.workers})")
        agents = args.agents.split(",")
        total = sum(_count_lines(ref / f"{a}.jsonl") for a in agents)
        codes: list[int | None] = []
        max_left = 0
        for k in range(args.kills):
            sig = rng.choice([signal.SIGKILL, signal.SIGTERM])
            # A random moment of what is left of the run (start-up included), so that most
            # kills land while episodes are being played.
            written = sum(_count_lines(run / f"{a}.jsonl") for a in agents)
            remaining = full * max(0.0, 1 - written / max(total, 1))
            delay = rng.uniform(0.05, max(0.2, 0.6 + remaining * 0.8))
            cmd = command(args.suite, args.agents, run, args.limit, args.workers, resume=k > 0)
            code, left, err = kill_at(cmd, delay, sig)
            codes.append(code)
            max_left = max(max_left, len(left))
            tail = err.strip().splitlines()[-1] if err.strip() else ""
            print(f"kill {k + 1:2d}: {signal.Signals(sig).name:7s} after {delay:5.2f} s -> "
                  f"exit {code}, {len(left)} processes left after 5 s  {tail[:110]}")
            # -15: SIGTERM arrived while Python was still importing, before the CLI set its
            # handler; the default action ends the process silently before any file work.
            if code not in (0, 130, -signal.SIGKILL, -signal.SIGTERM) or left:
                ok = False
        done = subprocess.run(command(args.suite, args.agents, run, args.limit, args.workers,
                                      True), capture_output=True, text=True)
        if done.returncode != 0:
            print(f"final resume failed (exit {done.returncode}): {done.stderr.strip()}")
            ok = False
        same = []
        for agent in agents:
            a, b = ref / f"{agent}.jsonl", run / f"{agent}.jsonl"
            same.append(a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes())
        identical = all(same)
        ok = ok and identical
        print(json.dumps({"kills": args.kills, "exit_codes": codes,
                          "max_processes_left_after_5s": max_left,
                          "records_byte_identical": identical, "ok": ok}))
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
