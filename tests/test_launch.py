"""The `mindhelper` command handles Ctrl-C and SIGTERM from the moment its launcher runs
(only the interpreter's own start-up, a few tens of milliseconds, comes before)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.signals import default_sigint


def _command() -> list[str]:
    script = Path(sys.executable).with_name("mindhelper")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "_mindhelper_launch"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("delay", [0.2, 0.5])
def test_interrupt_while_starting_is_one_line_and_130(tmp_path: Path, sig: int,
                                                      delay: float) -> None:
    out = tmp_path / "run"
    # the 1,000-episode suite: a silent run of the 100-episode one from a warm pool can end
    # before the signal is sent (then it exits 0 and there is nothing to test)
    proc = subprocess.Popen([*_command(), "evaluate", "--suite", "vh-test-v2", "--agents",
                             "silent", "--out", str(out), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=default_sigint)
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    assert proc.returncode == 130, (proc.returncode, err)
    assert len(err.strip().splitlines()) == 1, err


def test_launcher_runs_the_cli() -> None:
    proc = subprocess.run([*_command(), "list", "--json"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and '"MindHelper-VirtualHome-v0"' in proc.stdout


@pytest.mark.parametrize("args", [["list"], ["list", "--json"], ["--help"]])
def test_a_reader_that_stops_reading_is_not_an_error(args: list[str]) -> None:
    """``mindhelper ... | head``: the pipe closes before the output is written; the command
    ends with its own exit code, with nothing on stderr (rich alone would exit 1)."""
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first line
    try:
        proc = subprocess.run([*_command(), *args], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
