"""The ``mindhelper`` command and the evaluation runner, run in-process on a prefix of
vh-dev-v2 (the first 16 episodes: two full blocks, so every family twice)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from mindhelper_env.cli import main
from mindhelper_env.evaluation import read_result_file, run_episode

SUITE = "vh-dev-v2"
LIMIT = 16
AGENTS = ("silent", "random", "oracle")
TABLE_II = ("TA", "SR", "AC", "PIR", "PSR", "PIA")


def _evaluate(out: Path, *extra: str, agents: tuple[str, ...] = AGENTS) -> int:
    return main(["evaluate", "--suite", SUITE, "--agents", ",".join(agents), "--out", str(out),
                 "--limit", str(LIMIT), "--no-progress", "--no-plots", *extra])


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _without_seconds(path: Path) -> list[dict[str, Any]]:
    """Records of a result file with the one wall-clock field (and the record checksum,
    which covers it) removed."""
    out = []
    for line in _lines(path):
        rec = json.loads(line)
        rec["usage"].pop("seconds")
        rec["provenance"].pop("checksum")
        out.append(rec)
    return out


def _assert_one_line_error(capsys: pytest.CaptureFixture[str], rc: int, *needles: str) -> str:
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("mindhelper: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One serial, timing-free evaluation that other tests compare against."""
    out = tmp_path_factory.mktemp("baseline")
    assert _evaluate(out, "--no-timing") == 0
    return out


@pytest.fixture()
def summary(baseline: Path) -> dict[str, Any]:
    return json.loads((baseline / "summary.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------


def test_evaluate_writes_sorted_records_per_agent(baseline: Path) -> None:
    for agent in AGENTS:
        records = [json.loads(x) for x in _lines(baseline / f"{agent}.jsonl")]
        assert [r["index"] for r in records] == list(range(LIMIT))
        assert [r["episode_id"] for r in records] == [f"{SUITE}-{i:04d}" for i in range(LIMIT)]
        for r in records:
            assert r["agent"] == agent and r["suite"] == SUITE
            assert "reference" not in r  # ground truth never goes into result files
            assert r["usage"]["decisions"] == r["steps"] > 0
            assert r["usage"]["seconds"] == 0.0  # --no-timing
            assert r["usage"]["fallbacks"] == 0


def test_evaluate_metrics_oracle_and_silent(summary: dict[str, Any]) -> None:
    table = summary["table"]
    assert set(table) == set(AGENTS)
    for key in TABLE_II:
        assert table["oracle"][key] == 100.0, key
    assert table["oracle"]["harm_rate"] == 0.0
    assert table["oracle"]["silent_all"] == 50.0  # silent exactly on the 8 no-help episodes
    assert table["silent"]["PSR"] == 100.0
    assert table["silent"]["PIR"] == 0.0
    assert table["silent"]["TA"] == 0.0
    assert table["silent"]["PIA"] == 50.0
    assert table["silent"]["silent_all"] == 100.0
    m = summary["metrics"]["oracle"]
    assert (m["episodes"], m["n_help"], m["n_silent"]) == (LIMIT, LIMIT // 2, LIMIT // 2)
    assert set(m["per_family"]) and sum(b["episodes"] for b in m["per_family"].values()) == LIMIT


def test_evaluate_prints_table_and_writes_plots(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["evaluate", "--suite", SUITE, "--agents", "oracle,silent", "--out",
               str(tmp_path), "--limit", "8", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    for col in (*TABLE_II, "Silent-all", "Harm"):
        assert col in out
    assert "oracle" in out and "silent" in out and "100.00" in out
    for name in ("metrics.png", "silent_all.png", "per_family.png", "breakdown.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["plots"] == ["metrics.png", "silent_all.png", "per_family.png",
                                "breakdown.png"]
    # the ability breakdown: a table in the output and a block per agent in summary.json
    assert "ability breakdown" in out and "type false_belief" in out
    groups = summary["metrics"]["oracle"]["breakdown"]
    assert set(groups) == {"task_type", "ability", "twin_group"}
    assert sum(b["episodes"] for b in groups["twin_group"].values()) <= 8


def test_score_json_reproduces_evaluate(baseline: Path, summary: dict[str, Any],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(baseline / f"{a}.jsonl") for a in AGENTS]
    assert main(["score", *files, "--suite", SUITE, "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored == summary["table"]
    assert scored["oracle"]["PIR"] == 100.0


def test_score_table(baseline: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(baseline / "oracle.jsonl"), "--suite", SUITE]) == 0
    out = capsys.readouterr().out
    assert "PIR" in out and "oracle" in out and "100.00" in out


def test_resume_after_losing_half_the_lines_and_truncating_the_last(
        baseline: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(baseline, run)
    for agent in AGENTS:
        path = run / f"{agent}.jsonl"
        kept = _lines(path)[: LIMIT // 2]
        # The last kept line is cut mid-record, as by a crash while writing it.
        text = "\n".join(kept[:-1]) + "\n" + kept[-1][: len(kept[-1]) // 2]
        path.write_text(text, encoding="utf-8")
        assert not path.read_text().endswith("\n")
    assert _evaluate(run, "--no-timing", "--resume") == 0
    for agent in AGENTS:
        assert (run / f"{agent}.jsonl").read_bytes() == (baseline / f"{agent}.jsonl").read_bytes()
    assert json.loads((run / "summary.json").read_text())["played"] == 3 * (LIMIT // 2 + 1)


def test_resume_with_nothing_missing_plays_nothing(baseline: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(baseline, run)
    assert _evaluate(run, "--no-timing", "--resume") == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["played"] == 0
    assert summary["table"] == json.loads((baseline / "summary.json").read_text())["table"]


def test_two_workers_identical_to_one(baseline: Path, tmp_path: Path) -> None:
    # With timing on, the records differ from the timing-free baseline only in usage.seconds.
    assert _evaluate(tmp_path, "--workers", "2") == 0
    for agent in AGENTS:
        assert _without_seconds(tmp_path / f"{agent}.jsonl") == \
            _without_seconds(baseline / f"{agent}.jsonl")
        assert any(json.loads(x)["usage"]["seconds"] > 0 for x in _lines(tmp_path / f"{agent}.jsonl"))


def test_window_ticks_is_passed_to_the_env(baseline: Path, tmp_path: Path) -> None:
    assert _evaluate(tmp_path, "--no-timing", "--window-ticks", "1", agents=("silent",)) == 0
    fine = [json.loads(x) for x in _lines(tmp_path / "silent.jsonl")]
    coarse = [json.loads(x) for x in _lines(baseline / "silent.jsonl")]
    # One tick per window instead of three: more windows for the same episodes.
    assert all(f["steps"] == f["ticks"] for f in fine)
    assert sum(f["steps"] for f in fine) > sum(c["steps"] for c in coarse)


# --------------------------------------------------------------------------------------
# run_episode: agent failures are counted fallbacks
# --------------------------------------------------------------------------------------


class _FlakyAgent:
    """Raises on every other decision and returns a non-string once."""

    name = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    def reset(self, *, seed: int | None = None) -> None:
        self.calls = 0

    def act(self, observation: Any, info: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            return 42
        if self.calls % 2 == 0:
            raise RuntimeError("model server down")
        return "none"


def test_run_episode_counts_agent_failures_as_fallbacks() -> None:
    env = gym.make("MindHelper-VirtualHome-v0")
    agent = _FlakyAgent()
    rec = run_episode(env, agent, seed=0, options={"suite": SUITE, "index": 0})
    env.close()
    steps = rec["steps"]
    assert steps == agent.calls == rec["usage"]["decisions"]
    assert rec["usage"]["fallbacks"] == 1 + steps // 2
    assert rec["actions"] == []  # every fallback is silence
    assert (rec["agent"], rec["suite"], rec["index"]) == ("flaky", SUITE, 0)
    assert "reference" not in rec


# --------------------------------------------------------------------------------------
# suite, list
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("suite") / SUITE
    assert main(["suite", "export", SUITE, str(out)]) == 0
    return out


def test_suite_export_and_validate(exported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert {p.name for p in exported.iterdir()} >= {"public.jsonl", "reference.jsonl",
                                                     "manifest.json"}
    assert main(["suite", "validate", str(exported)]) == 0
    assert "valid" in capsys.readouterr().out


def test_suite_validate_rejects_tampered_file(exported: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "tampered"
    shutil.copytree(exported, bad)
    path = bad / "reference.jsonl"
    lines = _lines(path)
    # Flip the ground truth of one episode, keeping the line valid JSON.
    yes, no = '"needs_intervention":true', '"needs_intervention":false'
    lines[3] = lines[3].replace(yes, no) if yes in lines[3] else lines[3].replace(no, yes)
    assert lines[3] != _lines(path)[3]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rc = main(["suite", "validate", str(bad)])
    _assert_one_line_error(capsys, rc, "reference.jsonl")


def test_suite_validate_rejects_missing_file(exported: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "missing"
    shutil.copytree(exported, bad)
    (bad / "public.jsonl").unlink()
    rc = main(["suite", "validate", str(bad)])
    _assert_one_line_error(capsys, rc, "public.jsonl", "missing")


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert "MindHelper-VirtualHome-v0" in listing["envs"]
    assert {"silent", "random", "oracle"} <= set(listing["agents"])
    assert {"vh-dev-v2", "vh-test-v2"} <= set(listing["suites"])
    assert listing["suites"]["vh-dev-v2"]["n"] == 100
    assert listing["families"]["routine"]["needs_intervention"] is False
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "implicit_goal_reach" in out and "vh-test-v2" in out


# --------------------------------------------------------------------------------------
# Bad input: one line on stderr, exit code 2, never a traceback
# --------------------------------------------------------------------------------------


def _copy_file(baseline: Path, tmp_path: Path, agent: str = "oracle") -> Path:
    dst = tmp_path / f"{agent}.jsonl"
    shutil.copy(baseline / f"{agent}.jsonl", dst)
    return dst


def test_score_rejects_corrupt_line(baseline: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy_file(baseline, tmp_path)
    lines = _lines(path)
    lines[2] = lines[2][:-5] + "#"
    path.write_text("\n".join(lines) + "\n")
    rc = main(["score", str(path), "--suite", SUITE])
    _assert_one_line_error(capsys, rc, f"{path}:3:", "invalid JSON")


def test_score_rejects_truncated_file(baseline: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy_file(baseline, tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    rc = main(["score", str(path), "--suite", SUITE])
    _assert_one_line_error(capsys, rc, f"{path}:{LIMIT}:")


def test_score_rejects_record_of_another_suite_version(
        baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy_file(baseline, tmp_path)
    lines = _lines(path)
    rec = json.loads(lines[4])
    rec["suite"], rec["episode_id"] = "vh-dev-v0", "vh-dev-v0-0004"
    lines[4] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    rc = main(["score", str(path), "--suite", SUITE])
    _assert_one_line_error(capsys, rc, f"{path}:5:", "vh-dev-v0")


def test_score_rejects_foreign_episode_ids(baseline: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy_file(baseline, tmp_path)
    lines = _lines(path)
    for k in (1, 6):
        rec = json.loads(lines[k])
        rec["episode_id"] = f"vh-test-v2-{k:04d}"
        rec["suite"] = None  # only the id gives it away
        lines[k] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    rc = main(["score", str(path), "--suite", SUITE])
    _assert_one_line_error(capsys, rc, f"{path}:2:", "'vh-test-v2-0001'", "'vh-test-v2-0006'")


def test_score_rejects_duplicate_episode_ids(baseline: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy_file(baseline, tmp_path)
    lines = _lines(path)
    path.write_text("\n".join([*lines, lines[5]]) + "\n")
    rc = main(["score", str(path), "--suite", SUITE])
    _assert_one_line_error(capsys, rc, f"{path}:{LIMIT + 1}:", "duplicate",
                           f"'{SUITE}-0005'", f"{path}:6")


def test_score_rejects_duplicates_across_files(baseline: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # two files of one agent in one folder (from two folders, they are two rows)
    path = _copy_file(baseline, tmp_path)
    shutil.copy(path, tmp_path / "oracle-again.jsonl")
    rc = main(["score", str(path), str(tmp_path / "oracle-again.jsonl"), "--suite", SUITE])
    _assert_one_line_error(capsys, rc, "duplicate")


def test_score_rejects_schema_violation(baseline: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy_file(baseline, tmp_path)
    lines = _lines(path)
    rec = json.loads(lines[0])
    rec["focus_success"] = "yes"
    lines[0] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    rc = main(["score", str(path), "--suite", SUITE])
    _assert_one_line_error(capsys, rc, f"{path}:1:", "focus_success")


@pytest.mark.parametrize("argv, needles", [
    (["evaluate", "--suite", SUITE, "--agents", "silent,nobody", "--out", "{tmp}"],
     ("unknown agent 'nobody'",)),
    (["evaluate", "--suite", "vh-nope-v0", "--agents", "silent", "--out", "{tmp}"],
     ("unknown suite 'vh-nope-v0'",)),
    (["score", "{tmp}/x.jsonl", "--suite", "vh-nope-v0"], ("unknown suite 'vh-nope-v0'",)),
    (["score", "{tmp}/missing.jsonl", "--suite", SUITE], ("missing.jsonl",)),
    (["suite", "export", "vh-nope-v0", "{tmp}/s"], ("unknown suite",)),
    (["suite", "validate", "{tmp}/nowhere"], ("nowhere",)),
    (["evaluate", "--suite", SUITE, "--agents", "silent", "--out", "{tmp}", "--workers", "0"],
     ("--workers",)),
    (["score", "--suite", SUITE], ("files",)),
    (["frobnicate"], ("frobnicate",)),
])
def test_bad_arguments_exit_2(argv: list[str], needles: tuple[str, ...], tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    _assert_one_line_error(capsys, rc, *needles)


def test_resume_rejects_corrupt_middle_line(baseline: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(baseline, run)
    path = run / "random.jsonl"
    lines = _lines(path)
    lines[3] = "{oops"
    path.write_text("\n".join(lines) + "\n")
    rc = _evaluate(run, "--no-timing", "--resume")
    _assert_one_line_error(capsys, rc, f"{path}:4:", "invalid JSON")


def test_resume_rejects_other_settings(baseline: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(baseline, run)
    rc = _evaluate(run, "--no-timing", "--resume", "--window-ticks", "2")
    _assert_one_line_error(capsys, rc, "run.json", "env_kwargs")


def test_resume_rejects_records_of_another_agent(baseline: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(baseline, run)
    shutil.copy(run / "silent.jsonl", run / "oracle.jsonl")
    rc = _evaluate(run, "--no-timing", "--resume")
    _assert_one_line_error(capsys, rc, f"{run / 'oracle.jsonl'}:1:", "agent 'silent'")


def test_read_result_file_repairs_only_the_tail(baseline: Path, tmp_path: Path) -> None:
    path = _copy_file(baseline, tmp_path)
    full = path.read_bytes()
    # A complete last record that only lost its newline is kept (and the newline restored).
    path.write_bytes(full[:-1])
    assert len(read_result_file(path, repair_tail=True)) == LIMIT
    assert path.read_bytes() == full
    path.write_bytes(full[:-10])
    assert len(read_result_file(path, repair_tail=True)) == LIMIT - 1
    assert path.read_bytes() == b"".join(full.splitlines(keepends=True)[:-1])
