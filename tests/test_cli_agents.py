"""CLI plumbing for model-backed and user agents: --model, --agent, --record/--replay,
agents by import path (with workers), the efficiency table, and `mindhelper play`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mindhelper_env.agents import make_agent
from mindhelper_env.cli import main
from tests.fake_openai_server import Reply, ScriptedServer, need

DEV = "vh-dev-v2"
USER_AGENT = "tests.user_agents:WalkOnlyAgent"


def _one_line_error(capsys: pytest.CaptureFixture[str], rc: int, *needles: str) -> None:
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def test_user_agent_by_import_path_with_two_workers(tmp_path: Path) -> None:
    rc = main(["evaluate", "--suite", DEV, "--agents", f"silent,{USER_AGENT}", "--limit", "6",
               "--workers", "2", "--out", str(tmp_path), "--no-progress", "--no-plots",
               "--json"])
    assert rc == 0
    files = sorted(p.name for p in tmp_path.glob("*.jsonl"))
    assert len(files) == 2
    user = tmp_path / "walk-only.jsonl"  # the agent's name names its file and row
    records = [json.loads(x) for x in user.read_text().splitlines()]
    assert len(records) == 6 and {r["agent"] for r in records} == {"walk-only"}
    # it only walked: movement is free, so it never intervened
    assert all(r["intervention_tick"] == -1 and r["first_move_tick"] >= 0 for r in records)
    assert make_agent(USER_AGENT, env=object()).saw_env


@pytest.mark.parametrize("argv, needles", [
    (["--agents", "nosuch.module:Agent"], ["cannot import agent", "nosuch.module"]),
    (["--agents", "silent", "--model", "openai:m"], ["--model", "none of --agents"]),
    (["--agents", "direct-vlm", "--model", "bogus"], ["--model", "bogus"]),
    (["--agents", "silent", "--agent", "random:p=0.5"], ["--agent", "'random' is not in"]),
    (["--agents", "random", "--agent", "random"], ["--agent", "NAME:key=value"]),
    (["--agents", "direct-vlm", "--model", "openai:m", "--record", "a", "--replay", "b"],
     ["--record and --replay"]),
    (["--agents", "silent", "--replay", "c.jsonl"], ["none of --agents uses a model"]),
])
def test_bad_agent_options_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  argv: list[str], needles: list[str]) -> None:
    rc = main(["evaluate", "--suite", DEV, "--out", str(tmp_path / "o"), "--limit", "2",
               *argv])
    _one_line_error(capsys, rc, *needles)
    assert not (tmp_path / "o").exists()  # nothing written before the arguments are checked


def test_model_flags_record_then_replay_identically(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    need("openai")
    cassette = tmp_path / "cassette.jsonl"
    common = ["evaluate", "--suite", DEV, "--agents", "direct-vlm", "--limit", "3",
              "--no-progress", "--no-plots", "--no-timing"]
    with ScriptedServer([Reply()]) as srv:
        rc = main([*common, "--out", str(tmp_path / "rec"), "--record", str(cassette),
                   "--agent", f"direct-vlm:model=openai:test@{srv.url},api_key=k"])
        assert rc == 0 and len(srv.requests) > 0
    out = capsys.readouterr().out
    assert "efficiency" in out and "calls" in out
    rc = main([*common, "--out", str(tmp_path / "rep"), "--replay", str(cassette)])
    assert rc == 0
    rec = (tmp_path / "rec" / "direct-vlm.jsonl").read_bytes()
    assert rec == (tmp_path / "rep" / "direct-vlm.jsonl").read_bytes()
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    eff = summary["metrics"]["direct-vlm"]["efficiency"]
    assert eff["model_calls_per_episode"] > 0 and eff["tokens_per_decision"] > 0


def test_play_command_reads_the_terminal_and_records(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mindhelper_env.cli", "play", "--suite", DEV, "--index", "1",
         "--out", str(tmp_path)],
        input="?\nhelp\n\n", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "robot>" in proc.stdout and "Verbs:" in proc.stdout
    rec = json.loads((tmp_path / "human.jsonl").read_text().splitlines()[0])
    assert rec["agent"] == "human" and rec["index"] == 1
