"""Hostile inputs to the CLI, the env and the result/suite files (issue 10).

Every case must end with exit code 0, 2 or 130 (never 1, never a traceback), with a one-line
error naming the flag or ``<file>:<line>`` at fault, and must leave existing results
untouched (no lost or mixed records). The CLI runs in-process (``cli.main``); only the
concurrency test starts a second process.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from mindhelper_env.agents import AGENTS, register_agent
from mindhelper_env.agents.simple import SilentAgent
from mindhelper_env.cli import main
from mindhelper_env.evaluation import result_file_name
from mindhelper_env.evaluation.safety import LOCK_FILE, OutputLock, agent_file_stem, cpu_count
from mindhelper_env.scenarios.suites import suite_info, suite_names

DEV = next((n for n in suite_names() if "dev" in n), suite_names()[0])
TEST = next((n for n in suite_names() if "test" in n), suite_names()[-1])
DEV_N = int(suite_info(DEV)["n"]) if isinstance(suite_info(DEV), dict) else 100
AGENTS_ARG = "silent,oracle"
LIMIT = "3"
ENV_ID = "MindHelper-VirtualHome-v0"


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    rc = main(argv)
    captured = capsys.readouterr()
    err = captured.err
    assert rc in (0, 2, 130), (rc, err)
    assert "Traceback" not in err and "Traceback" not in captured.out, err
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith("mindhelper: error: "), err
    return rc, err


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every file under ``folder`` (symlinks as their target path), lock file excluded."""
    out: dict[str, bytes | str] = {}
    for p in sorted(folder.rglob("*")):
        if p.name == LOCK_FILE:
            continue
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes()
    return out


def _evaluate_argv(out: Path | str, *extra: str, agents: str = AGENTS_ARG,
                   limit: str = LIMIT) -> list[str]:
    return ["evaluate", "--suite", DEV, "--agents", agents, "--out", str(out), "--limit", limit,
            "--no-progress", "--no-plots", "--no-timing", *extra]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished evaluation (never modified; tests copy it with ``fresh``)."""
    out = tmp_path_factory.mktemp("hostile") / "run"
    assert main(_evaluate_argv(out)) == 0
    return out


@pytest.fixture()
def fresh(run_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run_dir, out, symlinks=True)
    return out


@pytest.fixture(scope="module")
def good_line(run_dir: Path) -> str:
    return (run_dir / "oracle.jsonl").read_text(encoding="utf-8").splitlines()[0]


# --------------------------------------------------------------------------------------
# evaluate: bad arguments never touch the folder, and name the flag
# --------------------------------------------------------------------------------------

_BIG = "9" * 25
EVAL_BAD: list[tuple[str, str, str]] = [
    ("--seed", "-1", "--seed"), ("--seed", "-" + _BIG, "--seed"), ("--seed", "1e3", "--seed"),
    ("--seed", "abc", "--seed"), ("--seed", "", "--seed"), ("--seed", str(2**32), "--seed"),
    ("--seed", "0x10", "--seed"), ("--seed", "nan", "--seed"), ("--seed", "1" * 60, "--seed"),
    ("--workers", "0", "--workers"), ("--workers", "-1", "--workers"),
    ("--workers", str(cpu_count() + 1), "--workers"), ("--workers", _BIG, "--workers"),
    ("--workers", "1.5", "--workers"), ("--workers", "abc", "--workers"),
    ("--workers", "", "--workers"), ("--workers", "inf", "--workers"),
    ("--limit", "0", "--limit"), ("--limit", "-5", "--limit"), ("--limit", "abc", "--limit"),
    ("--limit", "1.5", "--limit"), ("--limit", "", "--limit"), ("--limit", "9" * 50, "--limit"),
    ("--videos", "-1", "--videos"), ("--videos", "abc", "--videos"),
    ("--videos", "10001", "--videos"), ("--videos", "1e9", "--videos"),
    ("--videos", _BIG, "--videos"),
    ("--window-ticks", "0", "--window-ticks"), ("--window-ticks", "-1", "--window-ticks"),
    ("--window-ticks", "abc", "--window-ticks"), ("--window-ticks", "10001", "--window-ticks"),
    ("--out", "", "--out"), ("--out", "   ", "--out"),
    ("--suite", "nope", "--suite"), ("--suite", "", "--suite"), ("--suite", "../x", "--suite"),
    ("--suite", DEV.upper(), "--suite"),
    ("--agents", "", "--agents"), ("--agents", ",", "--agents"), ("--agents", "nope", "nope"),
    ("--agents", "silent,silent", "twice"), ("--agents", "silent,nope", "nope"),
    ("--agents", "../escaped", "unknown agent"), ("--agents", "/abs/x", "unknown agent"),
    ("--backend", "nope", "--backend"), ("--backend", "", "--backend"),
    ("--address", "auto", "--address"),
    ("--log-level", "nope", "--log-level"),
]


def _replace_flag(argv: list[str], flag: str, value: str) -> list[str]:
    if flag in argv:
        i = argv.index(flag)
        return argv[:i + 1] + [value] + argv[i + 2:]
    return argv + [flag, value]


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "resume"])
@pytest.mark.parametrize(("flag", "value", "needle"), EVAL_BAD)
def test_evaluate_bad_argument_keeps_results(capsys: pytest.CaptureFixture[str], run_dir: Path,
                                             flag: str, value: str, needle: str,
                                             resume: bool) -> None:
    before = _snapshot(run_dir)
    argv = _replace_flag(_evaluate_argv(run_dir, *(["--resume"] if resume else [])), flag, value)
    rc, err = _cli(capsys, argv)
    assert rc == 2 and needle in err, err
    assert _snapshot(run_dir) == before


EVAL_BAD_SHAPES: list[tuple[list[str], str]] = [
    (["--bogus"], "unrecognized"),
    (["--resume=yes"], "--resume"),
    (["--workers"], "--workers"),
    (["--no-timing=1"], "--no-timing"),
    (["--backend", "local", "--address", "auto"], "--address"),
]


@pytest.mark.parametrize(("extra", "needle"), EVAL_BAD_SHAPES)
def test_evaluate_bad_argument_shapes(capsys: pytest.CaptureFixture[str], run_dir: Path,
                                      extra: list[str], needle: str) -> None:
    before = _snapshot(run_dir)
    rc, err = _cli(capsys, _evaluate_argv(run_dir, *extra))
    assert rc == 2 and needle in err, err
    assert _snapshot(run_dir) == before


@pytest.mark.parametrize("missing", ["--suite", "--agents", "--out"])
def test_evaluate_missing_required_flag(capsys: pytest.CaptureFixture[str], run_dir: Path,
                                        missing: str) -> None:
    argv = _evaluate_argv(run_dir)
    i = argv.index(missing)
    rc, err = _cli(capsys, argv[:i] + argv[i + 2:])
    assert rc == 2 and missing in err


def test_evaluate_out_is_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "results.txt"
    target.write_text("keep me")
    rc, err = _cli(capsys, _evaluate_argv(target))
    assert rc == 2 and "--out" in err
    assert target.read_text() == "keep me"


def test_evaluate_workers_beyond_cpus_runs_when_forced(capsys: pytest.CaptureFixture[str],
                                                       run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "forced"
    rc, _ = _cli(capsys, _evaluate_argv(out, "--workers", str(cpu_count() + 1),
                                        "--force-workers", limit="2"))
    assert rc == 0
    for agent in AGENTS_ARG.split(","):
        expected = (run_dir / f"{agent}.jsonl").read_bytes().splitlines(keepends=True)[:2]
        assert (out / f"{agent}.jsonl").read_bytes() == b"".join(expected)


def test_ray_backend_without_ray_names_the_extra(capsys: pytest.CaptureFixture[str],
                                                 run_dir: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    before = _snapshot(run_dir)
    rc, err = _cli(capsys, _evaluate_argv(run_dir, "--backend", "ray"))
    assert rc == 2 and "pip install 'mindhelper-env[ray]'" in err
    assert _snapshot(run_dir) == before


# --------------------------------------------------------------------------------------
# render: bad arguments
# --------------------------------------------------------------------------------------

RENDER_BAD: list[tuple[str, str, str]] = [
    ("--fps", "1e-9", "--fps"), ("--fps", "inf", "--fps"), ("--fps", "-inf", "--fps"),
    ("--fps", "nan", "--fps"), ("--fps", "0", "--fps"), ("--fps", "-1", "--fps"),
    ("--fps", "abc", "--fps"), ("--fps", "121", "--fps"), ("--fps", "1e309", "--fps"),
    ("--size", "0", "--size"), ("--size", "63", "--size"), ("--size", "2049", "--size"),
    ("--size", "abc", "--size"), ("--size", "1e9", "--size"),
    ("--index", "-1", "out of range"), ("--index", "100000", "out of range"),
    ("--index", "abc", "--index"), ("--index", "9" * 50, "--index"),
    ("--out", "", "--out"), ("--out", "x.avi", "extension"), ("--out", "noext", "extension"),
    ("--out", "/nonexistent-dir-mh/x.gif", "does not exist"),
    ("--agent", "nope", "--agent"), ("--suite", "nope", "--suite"),
    ("--seed", "-1", "--seed"), ("--window-ticks", "0", "--window-ticks"),
]


@pytest.mark.parametrize(("flag", "value", "needle"), RENDER_BAD)
def test_render_bad_argument(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch, flag: str, value: str,
                             needle: str) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["render", "--suite", DEV, "--index", "0", "--agent", "oracle", "--out",
            str(tmp_path / "ep.gif")]
    rc, err = _cli(capsys, _replace_flag(argv, flag, value))
    assert rc == 2 and needle in err, err
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------
# score: hostile result files
# --------------------------------------------------------------------------------------


def _rec(line: str) -> dict[str, Any]:
    return json.loads(line)


def _with(line: str, **changes: Any) -> str:
    rec = _rec(line)
    for key, value in changes.items():
        if value is _DROP:
            rec.pop(key, None)
        else:
            rec[key] = value
    return json.dumps(rec)


def _usage(line: str, **changes: Any) -> str:
    rec = _rec(line)
    for key, value in changes.items():
        if value is _DROP:
            rec["usage"].pop(key, None)
        else:
            rec["usage"][key] = value
    return json.dumps(rec)


_DROP = object()

SCORE_BAD: dict[str, Callable[[str], bytes | str]] = {
    "nan_seconds": lambda g: _usage(g, seconds=0.5).replace("0.5", "NaN"),
    "inf_seconds": lambda g: _usage(g, seconds=0.5).replace("0.5", "Infinity"),
    "neg_inf_seconds": lambda g: _usage(g, seconds=0.5).replace("0.5", "-Infinity"),
    "overflow_seconds": lambda g: _usage(g, seconds=0.5).replace("0.5", "1e400"),
    "duplicate_key": lambda g: '{"agent": "x", ' + g[1:],
    "duplicate_nested_key": lambda g: g.replace('"usage": {', '"usage": {"seconds": 1, '),
    "deep_list": lambda g: "[" * 100_000,
    "deep_object": lambda g: '{"a": ' * 50_000 + "1" + "}" * 50_000,
    "deep_in_field": lambda g: g[:-1] + ', "extra": ' + "[" * 5000 + "]" * 5000 + "}",
    "truncated": lambda g: g[: len(g) // 2],
    "list": lambda g: "[1, 2]",
    "number": lambda g: "3",
    "string": lambda g: '"x"',
    "null": lambda g: "null",
    "true": lambda g: "true",
    "invalid_utf8": lambda g: b"\xff\xfe" + g.encode(),
    "bom": lambda g: "\ufeff" + g,
    "nul_prefix": lambda g: "\x00" + g,
    "trailing_garbage": lambda g: g + " xyz",
    "two_objects": lambda g: g + g,
    "no_usage": lambda g: _with(g, usage=_DROP),
    "usage_not_object": lambda g: _with(g, usage=[1]),
    "usage_missing_key": lambda g: _usage(g, decisions=_DROP),
    "usage_negative": lambda g: _usage(g, seconds=-1.0),
    "usage_string": lambda g: _usage(g, seconds="1"),
    "usage_bool": lambda g: _usage(g, model_calls=True),
    "ticks_negative": lambda g: _with(g, ticks=-1),
    "ticks_string": lambda g: _with(g, ticks="3"),
    "ticks_float": lambda g: _with(g, ticks=3.5),
    "episode_id_missing": lambda g: _with(g, episode_id=_DROP),
    "episode_id_empty": lambda g: _with(g, episode_id=""),
    "episode_id_int": lambda g: _with(g, episode_id=7),
    "agent_empty": lambda g: _with(g, agent=""),
    "agent_int": lambda g: _with(g, agent=3),
    "suite_other": lambda g: _with(g, suite="vh-other-v9"),
    "foreign_episode": lambda g: _with(g, episode_id=f"{DEV}-9999"),
    "foreign_suite_id": lambda g: _with(g, episode_id="elsewhere-0001"),
    "index_negative": lambda g: _with(g, index=-1),
    "actions_not_list": lambda g: _with(g, actions="none"),
    "executed_bad_item": lambda g: _with(g, executed=[{"tick": 1}]),
    "focus_success_string": lambda g: _with(g, focus_success="yes"),
    "harm_null": lambda g: _with(g, harm=None),
    "terminated_missing": lambda g: _with(g, terminated=_DROP),
    "duplicate_record": lambda g: g + "\n" + g,
    "empty_file": lambda g: "",
    "only_blank_lines": lambda g: "\n\n\n",
}


@pytest.mark.parametrize("case", sorted(SCORE_BAD))
def test_score_hostile_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, good_line: str,
                            case: str) -> None:
    content = SCORE_BAD[case](good_line)
    path = tmp_path / "oracle.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    before = path.read_bytes()
    t0 = time.perf_counter()
    rc, err = _cli(capsys, ["score", str(path), "--suite", DEV])
    assert rc == 2, err
    assert str(path) in err
    if case not in ("empty_file", "only_blank_lines"):
        assert f"{path}:" in err  # names the line
    assert path.read_bytes() == before
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("case", ["missing", "directory", "wrong_suite", "unknown_suite"])
def test_score_hostile_paths(capsys: pytest.CaptureFixture[str], tmp_path: Path, run_dir: Path,
                             case: str) -> None:
    path = {"missing": tmp_path / "nope.jsonl", "directory": tmp_path}.get(
        case, run_dir / "oracle.jsonl")
    suite = {"wrong_suite": TEST, "unknown_suite": "nope"}.get(case, DEV)
    t0 = time.perf_counter()
    rc, err = _cli(capsys, ["score", str(path), "--suite", suite])
    assert rc == 2, err
    assert time.perf_counter() - t0 < 5  # no suite generation before failing


# --------------------------------------------------------------------------------------
# --resume on tampered folders
# --------------------------------------------------------------------------------------


def _edit_line(path: Path, lineno: int, new: str | None) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    if new is None:
        del lines[lineno - 1]
    else:
        lines[lineno - 1] = new
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _tamper_record(change: Callable[[str], str]) -> Callable[[Path], None]:
    def apply(out: Path) -> None:
        path = out / "oracle.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        _edit_line(path, 2, change(lines[1]))
    return apply


def _tamper_run(text: str | None) -> Callable[[Path], None]:
    def apply(out: Path) -> None:
        if text is None:
            (out / "run.json").unlink()
        else:
            (out / "run.json").write_text(text, encoding="utf-8")
    return apply


def _run_json_with(**changes: Any) -> Callable[[Path], None]:
    def apply(out: Path) -> None:
        settings = json.loads((out / "run.json").read_text())
        settings.update(changes)
        (out / "run.json").write_text(json.dumps(settings))
    return apply


def _append_duplicate(out: Path) -> None:
    path = out / "oracle.jsonl"
    first = path.read_text(encoding="utf-8").splitlines()[0]
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(first + "\n")


RESUME_BAD: dict[str, tuple[Callable[[Path], None], str]] = {
    "record_no_usage": (_tamper_record(lambda g: _with(g, usage=_DROP)), "oracle.jsonl:2"),
    "record_nan": (_tamper_record(lambda g: _usage(g, seconds=0.5).replace("0.5", "NaN")),
                   "oracle.jsonl:2"),
    "record_dup_key": (_tamper_record(lambda g: '{"agent": "x", ' + g[1:]), "oracle.jsonl:2"),
    "record_deep": (_tamper_record(lambda g: "[" * 100_000), "oracle.jsonl:2"),
    "record_truncated_middle": (_tamper_record(lambda g: g[:40]), "oracle.jsonl:2"),
    "record_other_agent": (_tamper_record(lambda g: _with(g, agent="silent")), "oracle.jsonl:2"),
    "record_other_suite": (_tamper_record(lambda g: _with(g, suite=TEST)), "oracle.jsonl:2"),
    "record_bad_index": (_tamper_record(lambda g: _with(g, index=10**6)), "oracle.jsonl:2"),
    "record_index_string": (_tamper_record(lambda g: _with(g, index="1")), "oracle.jsonl:2"),
    "record_wrong_episode": (_tamper_record(lambda g: _with(g, episode_id=f"{DEV}-0000")),
                             "oracle.jsonl:2"),
    "record_ticks_negative": (_tamper_record(lambda g: _with(g, ticks=-3)), "oracle.jsonl:2"),
    "duplicate_line": (_append_duplicate, "duplicate"),
    "run_missing": (_tamper_run(None), "run.json: missing"),
    "run_seed": (_run_json_with(seed=7), "seed: 7 in run.json, now 0"),
    "run_env_kwargs": (_run_json_with(env_kwargs={"window_ticks": 5}), "env_kwargs"),
    "run_suite": (_run_json_with(suite=TEST), "suite"),
    "run_timing": (_run_json_with(timing=True), "timing"),
    "run_format": (_run_json_with(format=99), "format"),
    "run_no_seed_key": (lambda out: (out / "run.json").write_text(
        json.dumps({k: v for k, v in json.loads((out / "run.json").read_text()).items()
                    if k != "seed"})), "seed: missing"),
    "run_not_json": (_tamper_run("{"), "run.json:1"),
    "run_list": (_tamper_run("[]"), "run.json"),
    "run_nan": (_tamper_run('{"seed": NaN}'), "run.json:1"),
    "run_deep": (_tamper_run("[" * 100_000), "run.json:1"),
    "run_empty": (_tamper_run(""), "run.json:1"),
}


@pytest.mark.parametrize("case", sorted(RESUME_BAD))
def test_resume_refuses_tampered_folder(capsys: pytest.CaptureFixture[str], fresh: Path,
                                        case: str) -> None:
    tamper, needle = RESUME_BAD[case]
    tamper(fresh)
    before = _snapshot(fresh)
    rc, err = _cli(capsys, _evaluate_argv(fresh, "--resume"))
    assert rc == 2 and needle in err, err
    assert _snapshot(fresh) == before


def _drop_tail(out: Path) -> None:
    path = out / "oracle.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 30])  # the last record cut short


def _drop_newline(out: Path) -> None:
    path = out / "oracle.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))


def _drop_last_record(out: Path) -> None:
    _edit_line(out / "silent.jsonl", 3, None)


def _delete_agent_file(out: Path) -> None:
    (out / "oracle.jsonl").unlink()


def _delete_summary(out: Path) -> None:
    (out / "summary.json").unlink()


RESUME_OK: dict[str, Callable[[Path], None]] = {
    "truncated_tail": _drop_tail,
    "missing_newline": _drop_newline,
    "missing_record": _drop_last_record,
    "missing_agent_file": _delete_agent_file,
    "missing_summary": _delete_summary,
}


@pytest.mark.parametrize("case", sorted(RESUME_OK))
def test_resume_repairs_to_identical_records(capsys: pytest.CaptureFixture[str], run_dir: Path,
                                             fresh: Path, case: str) -> None:
    RESUME_OK[case](fresh)
    rc, err = _cli(capsys, _evaluate_argv(fresh, "--resume"))
    assert rc == 0, err
    for agent in AGENTS_ARG.split(","):
        assert (fresh / f"{agent}.jsonl").read_bytes() == (run_dir / f"{agent}.jsonl").read_bytes()


# --------------------------------------------------------------------------------------
# symlinks, the lock, agent names
# --------------------------------------------------------------------------------------

SYMLINKED = ["oracle.jsonl", "silent.jsonl", "summary.json", "run.json", LOCK_FILE,
             "metrics.png", "videos"]


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "resume"])
@pytest.mark.parametrize("name", SYMLINKED)
def test_symlinks_in_out_are_never_followed(capsys: pytest.CaptureFixture[str], fresh: Path,
                                            tmp_path: Path, name: str, resume: bool) -> None:
    target = tmp_path / "precious"
    target.write_text("do not overwrite")
    link = fresh / name
    if link.is_dir():
        shutil.rmtree(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(target)
    before = _snapshot(fresh)
    rc, err = _cli(capsys, _evaluate_argv(fresh, *(["--resume"] if resume else [])))
    assert rc == 2 and "symbolic link" in err, err
    assert target.read_text() == "do not overwrite"
    assert _snapshot(fresh) == before


def test_locked_folder_refuses_at_once(capsys: pytest.CaptureFixture[str], fresh: Path) -> None:
    before = _snapshot(fresh)
    with OutputLock(fresh):
        t0 = time.perf_counter()
        rc, err = _cli(capsys, _evaluate_argv(fresh))
        assert time.perf_counter() - t0 < 2
    assert rc == 2 and "another evaluate" in err and f"pid {os.getpid()}" in err, err
    assert _snapshot(fresh) == before
    rc, _ = _cli(capsys, _evaluate_argv(fresh, "--resume"))  # released: works again
    assert rc == 0


def test_two_concurrent_evaluates_second_refuses(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    out = tmp_path / "shared"
    cmd = [sys.executable, "-m", "mindhelper_env.cli", *_evaluate_argv(
        out, agents="silent,random,oracle", limit=str(DEV_N))]
    first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        lock = out / LOCK_FILE
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and first.poll() is None:
            if lock.is_file() and lock.read_text().strip():
                break
            time.sleep(0.01)
        # the first run takes seconds and holds the lock throughout: seeing it end first
        # means it failed before locking (or never locked), which is a failure, not a skip
        assert first.poll() is None, first.communicate(timeout=120)[1].decode(errors="replace")
        assert lock.is_file() and lock.read_text().strip(), "the first run never took the lock"
        t0 = time.perf_counter()
        rc, err = _cli(capsys, _evaluate_argv(out, "--seed", "5"))
        elapsed = time.perf_counter() - t0
    finally:
        _, first_err = first.communicate(timeout=120)
    assert rc == 2 and "another evaluate" in err and f"pid {first.pid}" in err, err
    assert elapsed < 2
    assert first.returncode == 0, first_err
    for agent in ("silent", "random", "oracle"):
        records = [json.loads(x) for x in (out / f"{agent}.jsonl").read_text().splitlines()]
        assert [r["index"] for r in records] == list(range(DEV_N))
    assert json.loads((out / "run.json").read_text())["seed"] == 0


PATH_NAMES = ["../escaped", "/abs/x", "org/model", ".hidden", "..", "a b\tc", "naïve/ü",
              "x" * 300, "CON", "semi;colon|pipe"]


@pytest.fixture()
def path_agents() -> Any:
    for name in PATH_NAMES:
        register_agent(name, lambda **kw: SilentAgent())
    yield PATH_NAMES
    for name in PATH_NAMES:
        AGENTS.pop(name, None)


@pytest.mark.parametrize("name", PATH_NAMES)
def test_agent_names_never_become_paths(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        path_agents: Any, name: str) -> None:
    out = tmp_path / "box" / "out"
    rc, err = _cli(capsys, _evaluate_argv(out, agents=name, limit="2"))
    assert rc == 0, err
    # Nothing outside the output folder; the file is a plain name inside it.
    assert sorted(p.name for p in (tmp_path / "box").iterdir()) == ["out"]
    path = out / result_file_name(name)
    assert path.parent == out and path.is_file() and not path.name.startswith(".")
    assert "/" not in agent_file_stem(name) and len(path.name) < 200
    records = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert [r["agent"] for r in records] == [name, name]
    rc, err = _cli(capsys, ["score", str(path), "--suite", DEV, "--json"])
    assert rc == 0 and name in json.loads(capsys.readouterr().out or "{}") or rc == 0


def test_agent_file_stems_are_distinct() -> None:
    names = PATH_NAMES + ["org%2Fmodel", "org_model", "%2E", ".", "oracle"]
    stems = [agent_file_stem(n) for n in names]
    assert len(set(stems)) == len(stems)


# --------------------------------------------------------------------------------------
# suite validate: hostile exported folders
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("suite") / DEV
    assert main(["suite", "export", DEV, str(out)]) == 0
    return out


def _suite_line(name: str, new: str | bytes, lineno: int = 2) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / name
        lines = path.read_bytes().split(b"\n")
        lines[lineno - 1] = new if isinstance(new, bytes) else new.encode()
        path.write_bytes(b"\n".join(lines))
    return apply


SUITE_BAD: dict[str, tuple[Callable[[Path], None], str]] = {
    "public_deep": (_suite_line("public.jsonl", "[" * 100_000), "public.jsonl:2"),
    "reference_deep": (_suite_line("reference.jsonl", '{"a":' * 50_000), "reference.jsonl:2"),
    "public_nan": (_suite_line("public.jsonl", '{"x": NaN}'), "public.jsonl:2"),
    "public_dup_key": (_suite_line("public.jsonl", '{"x": 1, "x": 2}'), "public.jsonl:2"),
    "public_truncated": (_suite_line("public.jsonl", '{"episode_id": "'), "public.jsonl:2"),
    "public_bad_utf8": (_suite_line("public.jsonl", b"\xff\xfe"), "public.jsonl:2"),
    "manifest_deep": (lambda f: (f / "manifest.json").write_text("[" * 100_000), "manifest.json"),
    "manifest_missing": (lambda f: (f / "manifest.json").unlink(), "manifest.json"),
    "manifest_not_json": (lambda f: (f / "manifest.json").write_text("{"), "manifest.json"),
    "reference_missing": (lambda f: (f / "reference.jsonl").unlink(), "reference.jsonl"),
}


@pytest.mark.parametrize("case", sorted(SUITE_BAD))
def test_suite_validate_hostile_folder(capsys: pytest.CaptureFixture[str], exported: Path,
                                       tmp_path: Path, case: str) -> None:
    folder = tmp_path / "suite"
    shutil.copytree(exported, folder)
    tamper, needle = SUITE_BAD[case]
    tamper(folder)
    rc, err = _cli(capsys, ["suite", "validate", str(folder)])
    assert rc == 2 and needle in err, err


@pytest.mark.parametrize("case", ["missing", "file"])
def test_suite_validate_bad_path(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                 case: str) -> None:
    path = tmp_path / "nope"
    if case == "file":
        path.write_text("x")
    rc, _ = _cli(capsys, ["suite", "validate", str(path)])
    assert rc == 2


# --------------------------------------------------------------------------------------
# the env: constructor arguments, reset options, actions
# --------------------------------------------------------------------------------------

ENV_BAD_KWARGS: list[dict[str, Any]] = [
    {"families": {"routine": math.inf}}, {"families": {"routine": math.nan}},
    {"families": {"routine": -1}}, {"families": {"routine": "1"}}, {"families": {"routine": True}},
    {"families": {}}, {"families": []}, {"families": {"routine": 0}}, {"families": "nope"},
    {"families": 3}, {"families": {None: 1}}, {"families": ["routine", "nope"]},
    {"reward": {"success": math.nan}}, {"reward": {"success": math.inf}},
    {"reward": {"success": "1"}}, {"reward": {"nope": 1}}, {"reward": [1]},
    {"reward": {"harm": None}}, {"reward": {"success": True}},
    {"window_ticks": 0}, {"window_ticks": -1}, {"window_ticks": 1.5}, {"window_ticks": "3"},
    {"window_ticks": True}, {"max_ticks": 0}, {"max_ticks": "x"}, {"observability": "x"},
    {"obs_mode": "x"}, {"frame_size": 1}, {"frame_stack": 0}, {"render_mode": "nope"},
    {"render_size": 10**9},
]


@pytest.mark.filterwarnings("ignore::UserWarning")  # gymnasium's own render_mode warning
@pytest.mark.parametrize("kwargs", ENV_BAD_KWARGS, ids=lambda kw: repr(kw)[:40])
def test_env_rejects_bad_kwargs(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        gym.make(ENV_ID, **kwargs)


ENV_BAD_OPTIONS: list[tuple[dict[str, Any], str]] = [
    ({"suite": "nope"}, "unknown suite"), ({"suite": 3}, "unknown suite"),
    ({"suite": None}, "unknown suite"), ({"suite": "nope", "index": 0}, "unknown suite"),
    ({"index": -1}, "needs options['suite']"), ({"index": 3}, "needs options['suite']"),
    ({"suite": DEV, "index": "3"}, "int"), ({"suite": DEV, "index": 1.5}, "int"),
    ({"suite": DEV, "index": True}, "int"), ({"suite": DEV, "index": None}, "int"),
    ({"suite": DEV, "index": 10**20}, "range"), ({"suite": DEV, "index": -1}, "range"),
    ({"family": "nope"}, "unknown family"), ({"family": 3}, "unknown family"),
    ({"family": ["routine"]}, "unknown family"),
    ({"episode": "x"}, "episode"), ({"episode": {}}, "episode"),
    ({"episode": {"suite": "nope"}}, "unknown suite"),
    ({"episode": {"suite": DEV, "index": -1}}, "range"),
]


@pytest.mark.parametrize(("options", "needle"), ENV_BAD_OPTIONS, ids=lambda x: repr(x)[:40])
def test_env_rejects_bad_reset_options(vh_env: Any, options: dict[str, Any],
                                       needle: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        vh_env.reset(options=options)
    assert needle in str(info.value)


HOSTILE_ACTIONS: list[Any] = [
    b"\xff\xfe", b"none", "", " ", "\x00", "x" * 100_000,
    "[walk] <fridge> (99999999999999999999)", "[walk] <fridge> (-1)", "[tell]", "[give]",
    "[walk] <fridge>", "none; none", "\n\n\n", "[walk] <fridge> (1)" * 1000, "💥",
]


@pytest.mark.parametrize("action", HOSTILE_ACTIONS, ids=lambda a: repr(a)[:30])
def test_env_survives_hostile_actions(vh_env: Any, action: Any) -> None:
    vh_env.reset(seed=0, options={"suite": DEV, "index": 0})
    _obs, _r, term, trunc, info = vh_env.step(action)
    assert isinstance(term, bool) and isinstance(trunc, bool)
    assert "action_error" in info


@pytest.mark.parametrize("action", [123, None, 1.5, ["none"], {"a": 1}], ids=repr)
def test_env_rejects_non_string_actions_clearly(vh_env: Any, action: Any) -> None:
    vh_env.reset(seed=0, options={"suite": DEV, "index": 0})
    with pytest.raises(TypeError, match="action must be a string"):
        vh_env.step(action)
