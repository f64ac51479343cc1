"""The rough edges of issue 17, each as a new user met it, and repeated trials."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mindhelper_env.agents.human import complete_line
from mindhelper_env.cli import main
from mindhelper_env.evaluation import EvalSettings, evaluate, read_result_file, trial_seed

ROOT = Path(__file__).resolve().parents[1]
DEV = "vh-dev-v2"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------- checks before --out
def test_missing_tdw_extra_is_named_before_out_is_touched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tdw" else real(name, *a))
    out = tmp_path / "run"
    code, _, err = _run(capsys, "evaluate", "--suite", "tdw-dev-v2", "--agents", "silent",
                        "--out", str(out), "--limit", "1", "--no-progress")
    assert code == 2
    assert "tdw extra" in err and "video" not in err, err
    assert not out.exists()


def test_direct_vlm_without_a_model_points_at_the_model_flag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MINDHELPER_MODEL", raising=False)
    out = tmp_path / "run"
    code, _, err = _run(capsys, "evaluate", "--suite", DEV, "--agents", "direct-vlm",
                        "--out", str(out), "--limit", "1", "--no-progress")
    assert code == 2
    assert "--model" in err and "make_agent" not in err, err
    assert not out.exists()


# --------------------------------------------------------------- resume and overwrite
@pytest.mark.parametrize("make_folder", [False, True])
def test_resume_without_run_json_exits_2_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], make_folder: bool) -> None:
    out = tmp_path / "run"
    if make_folder:
        out.mkdir()
    code, _, err = _run(capsys, "evaluate", "--suite", DEV, "--agents", "silent", "--out",
                        str(out), "--limit", "1", "--resume", "--no-progress", "--no-plots")
    assert code == 2
    assert str(out / "run.json") in err, err
    assert out.exists() == make_folder
    if make_folder:
        assert list(out.iterdir()) == []


def test_folder_with_results_needs_resume_or_overwrite(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    args = ("evaluate", "--suite", DEV, "--agents", "silent", "--out", str(out), "--limit", "2",
            "--no-progress", "--no-plots", "--no-timing")
    assert _run(capsys, *args)[0] == 0
    before = (out / "silent.jsonl").read_bytes()
    code, _, err = _run(capsys, *args)
    assert code == 2 and "--resume" in err and "--overwrite" in err, err
    assert (out / "silent.jsonl").read_bytes() == before
    assert _run(capsys, *args, "--overwrite")[0] == 0
    assert (out / "silent.jsonl").read_bytes() == before
    assert _run(capsys, *args, "--resume")[0] == 0
    with pytest.raises(ValueError, match="overwrite"):
        evaluate(DEV, ["silent"], out, limit=2, progress=False, plots=False)


# --------------------------------------------------------------- module:Class from cwd
def test_agent_module_in_the_current_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = tmp_path / "mypkg_house17"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "agents.py").write_text(
        "class Quiet:\n"
        "    name = 'quiet'\n"
        "    def reset(self, *, seed=None):\n        pass\n"
        "    def act(self, obs, info):\n        return 'none'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    code, _, err = _run(capsys, "evaluate", "--suite", DEV, "--agents",
                        "mypkg_house17.agents:Quiet", "--out", str(tmp_path / "run"),
                        "--limit", "1", "--no-progress", "--no-plots")
    assert code == 0, err


def test_readme_documents_the_agent_protocol() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("### The agent protocol")
    section = readme[start:readme.index("\n#", start + 5)]
    for word in ("reset", "act", "name", "usage", "module:Class"):
        assert word in section, word


# --------------------------------------------------------------- tables and formats
def _scored(tmp_path: Path) -> list[str]:
    out = tmp_path / "run"
    evaluate(DEV, ["silent", "belief-tracker", "ablation-shared-view"], out, limit=4,
             progress=False, plots=False, timing=False)
    return [str(out / f) for f in ("silent.jsonl", "belief-tracker.jsonl",
                                   "ablation-shared-view.jsonl")]


def _cells_whole(text: str) -> None:
    assert "…" not in text
    for name in ("belief-tracker", "ablation-shared-view", "100.00", "50.00"):
        assert name in text, name


def test_tables_never_cut_when_piped(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    files = _scored(tmp_path)
    code, out, _ = _run(capsys, "score", *files, "--suite", DEV)
    assert code == 0
    _cells_whole(out)


def test_tables_fold_in_a_100_column_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    files = _scored(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, _ = _run(capsys, "score", *files, "--suite", DEV)
    assert code == 0
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)  # a terminal gets colours
    _cells_whole(out)
    assert max(len(line) for line in out.splitlines()) <= 100


def test_score_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _scored(tmp_path)
    _, md, _ = _run(capsys, "score", *files, "--suite", DEV, "--format", "markdown")
    assert "| agent | PHA |" in md and "| belief-tracker |" in md
    _, csv_text, _ = _run(capsys, "score", *files, "--suite", DEV, "--format", "csv")
    assert csv_text.splitlines()[0].startswith("agent,PHA,PHR")
    assert len(csv_text.splitlines()) == 4
    _, js, _ = _run(capsys, "score", *files, "--suite", DEV, "--format", "json")
    assert set(json.loads(js)) == {"silent", "belief-tracker", "ablation-shared-view"}


# --------------------------------------------------------------- small points
def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import mindhelper_env

    code, out, _ = _run(capsys, "--version")
    assert code == 0 and out.strip() == f"mindhelper {mindhelper_env.__version__}"


def test_exported_suite_files_have_normal_modes(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    umask = os.umask(0o022)
    try:
        assert _run(capsys, "suite", "export", "vh-dev-v2", str(tmp_path / "s"))[0] == 0
    finally:
        os.umask(umask)
    for path in (tmp_path / "s").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


def test_completion_after_a_verb() -> None:
    words = ["[walk]", "[grab]", "<fridge> (12)", "<mug> (40)"]
    assert complete_line(words, "[wa") == ["[walk]"]
    assert complete_line(words, "[walk] <fr") == ["[walk] <fridge> (12)"]
    assert complete_line(words, "[grab] <mug> (40) ") == [
        "[grab] <mug> (40) " + w for w in words]


def test_play_bad_index_errors_before_the_banner(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    code, out, err = _run(capsys, "play", "--index", "-1", "--out", str(tmp_path))
    assert code == 2 and "--index" in err
    assert out == ""


def test_train_trigger_timesteps_error_names_timesteps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "train-trigger", "--timesteps", "100", "--out",
                        str(tmp_path / "t"))
    assert code == 2
    assert "--timesteps" in err and "argument --eval-freq" not in err, err


def test_error_prefix_is_not_doubled(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "evaluate", "--agents", "silent", "--out", "x")
    assert code == 2
    assert err.startswith("mindhelper: error: evaluate: "), err
    assert "error: mindhelper" not in err


@pytest.mark.parametrize("script", ["train_ppo.py", "rllib_trigger.py"])
def test_examples_without_their_extra_end_in_one_line(tmp_path: Path, script: str) -> None:
    # a stand-in package that hides the extra's modules
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('stable_baselines3', 'sb3_contrib', 'ray', 'torch'):\n"
        "            raise ModuleNotFoundError(f\"No module named '{name}'\", name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Hide())\n")
    env = {**os.environ, "PYTHONPATH": str(hide)}
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "extra" in proc.stderr and "pip install" in proc.stderr, proc.stderr


# --------------------------------------------------------------- repeated trials
def test_trial_seeds_are_deterministic_and_distinct() -> None:
    assert trial_seed(0, 5, 0) == 5
    seeds = {trial_seed(0, 5, t) for t in range(5)}
    assert len(seeds) == 5
    assert trial_seed(3, 5, 2) == trial_seed(3, 5, 2) != trial_seed(3, 6, 2)


def test_trials_with_the_random_agent(tmp_path: Path) -> None:
    out = tmp_path / "run"
    settings = EvalSettings(DEV, ["random"], out, limit=6, trials=3, timing=False,
                            progress=False, plots=False)
    summary = evaluate(settings)
    recs = [r for _, r in read_result_file(out / "random.jsonl")]
    assert [(r["index"], r["trial"]) for r in recs] == [(i, t) for i in range(6)
                                                         for t in range(3)]
    # different agent seeds: the trials of an episode do not all act alike
    by_index: dict[int, set[str]] = {}
    for r in recs:
        by_index.setdefault(r["index"], set()).add(json.dumps(r["actions"]))
    assert any(len(v) > 1 for v in by_index.values())
    # trial 0 is the one-trial run's record, plus its trial number
    single = tmp_path / "one"
    evaluate(DEV, ["random"], single, limit=6, timing=False, progress=False, plots=False)
    one = [r for _, r in read_result_file(single / "random.jsonl")]
    assert all("trial" not in r for r in one)
    # (the provenance stamps differ: the run's trials are part of the key)
    assert [{k: v for k, v in r.items() if k not in ("trial", "provenance")}
            for r in recs if r["trial"] == 0] == \
        [{k: v for k, v in r.items() if k != "provenance"} for r in one]
    trials = summary["trials"]
    assert trials["k"] == 3
    iv = trials["interval"]["random"]["PHA"]
    assert iv["low"] <= iv["mean"] <= iv["high"]
    passes = trials["pass_hat_k"]["random"]
    assert passes["1"] is not None and passes["1"] >= passes["2"] >= passes["3"]
    assert json.loads((out / "run.json").read_text())["trials"] == 3
    # resume understands trials: drop the last record, resume plays only it
    lines = (out / "random.jsonl").read_bytes().splitlines(keepends=True)
    (out / "random.jsonl").write_bytes(b"".join(lines[:-1]))
    again = evaluate(settings.replace(resume=True))
    assert again["played"] == 1
    assert (out / "random.jsonl").read_bytes() == b"".join(lines)
    # and refuses other trial counts
    with pytest.raises(ValueError, match="trials"):
        evaluate(settings.replace(resume=True, trials=2))


def test_score_reports_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code, text, err = _run(capsys, "evaluate", "--suite", DEV, "--agents", "random,silent",
                           "--out", str(out), "--limit", "4", "--trials", "2",
                           "--no-progress", "--no-plots")
    assert code == 0, err
    assert "2 trials" in text and "pass^2" in text
    code, text, _ = _run(capsys, "score", str(out / "random.jsonl"), "--suite", DEV,
                         "--format", "csv")
    assert code == 0
    assert "PHR_pass^2" in text.splitlines()[0]


def test_train_ppo_prints_pha() -> None:
    if os.environ.get("MINDHELPER_REQUIRE_RL") != "1" and (
            importlib.util.find_spec("sb3_contrib") is None):
        pytest.skip("needs the rl extra (CI sets MINDHELPER_REQUIRE_RL=1)")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "train_ppo.py"),
                           "--timesteps", "256", "--envs", "1", "--eval-episodes", "2"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MINDHELPER_POOL_SIZE": "8"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("PHA ") and "PHR " in last and "percent" in last, last
