"""Killing ``mindhelper evaluate --workers 2`` (SIGKILL, SIGTERM, Ctrl-C to the process group):
no process is left behind, nothing hangs, and ``--resume`` ends with byte-identical records.
The full version, with 10 random kills, is ``benchmarks/bench_kill_resume.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mindhelper_env.scenarios.suites import suite_names
from tests.signals import default_sigint

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")

SUITE = next((n for n in suite_names() if "test" in n), suite_names()[-1])
AGENTS = ("silent", "random", "oracle")
LIMIT = 300


def _cmd(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mindhelper_env.cli", "evaluate", "--suite", SUITE,
            "--agents", ",".join(AGENTS), "--out", str(out), "--limit", str(LIMIT),
            "--workers", "2", "--no-progress", "--no-plots", "--no-timing", "--json", *extra]


def _session_alive(sid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def _kill_mid_run(out: Path, sig: int, group: bool, extra: tuple[str, ...] = ()) -> tuple[int, str]:
    proc = subprocess.Popen(_cmd(out, *extra), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=default_sigint)
    deadline = time.monotonic() + 60
    start = sum(_lines(out / f"{a}.jsonl") for a in AGENTS)
    # wait until episodes are being written, so the kill lands mid-run
    while time.monotonic() < deadline and proc.poll() is None:
        if sum(_lines(out / f"{a}.jsonl") for a in AGENTS) >= start + 30:
            break
        time.sleep(0.02)
    if group:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=20)  # a hang here is the bug of issue 10
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    end = time.monotonic() + 5
    left = _session_alive(proc.pid)
    while left and time.monotonic() < end:
        time.sleep(0.1)
        left = _session_alive(proc.pid)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"processes left 5 s after the kill: {left}"
    return proc.returncode, err.decode("utf-8", "replace")


def test_kill_and_term_then_resume_is_byte_identical(tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    subprocess.run(_cmd(ref), check=True, stdout=subprocess.DEVNULL)
    out = tmp_path / "killed"
    rc, err = _kill_mid_run(out, signal.SIGKILL, group=False)
    assert rc in (-signal.SIGKILL, 0), err
    rc, err = _kill_mid_run(out, signal.SIGTERM, group=False, extra=("--resume",))
    assert rc in (130, 0), err
    if rc == 130:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and "SIGTERM" in lines[0] and "--resume" in lines[0], err
    rc, err = _kill_mid_run(out, signal.SIGINT, group=True, extra=("--resume",))  # Ctrl-C in a terminal
    assert rc in (130, 0), err
    assert "Traceback" not in err and len([ln for ln in err.splitlines() if ln.strip()]) <= 1
    done = subprocess.run(_cmd(out, "--resume"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for agent in AGENTS:
        assert (out / f"{agent}.jsonl").read_bytes() == (ref / f"{agent}.jsonl").read_bytes()
