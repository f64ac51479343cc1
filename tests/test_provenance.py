"""Provenance everywhere: run.json, summary.json and every record say what they were made
with; score, report and --resume refuse records of another generator, suite digest or
reference and edited ones, in one line naming both sides; partial files are noted; score
takes run folders."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import mindhelper_env
from mindhelper_env.cli.main import main
from mindhelper_env.evaluation import evaluate
from mindhelper_env.evaluation.provenance import STAMP_KEYS, record_checksum
from mindhelper_env.scenarios import releases
from mindhelper_env.scenarios.spec import GENERATOR_VERSION
from mindhelper_env.schemas import schema_errors

SUITE = "vh-dev-v5"
LIMIT = 4


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("prov")
    evaluate(SUITE, ["silent", "mindclaw"], out, limit=LIMIT, progress=False, plots=False,
             timing=False)
    return out


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _resign(rec: dict[str, Any]) -> dict[str, Any]:
    """Recompute a record's checksum (an honest record of another setting, not an edit)."""
    rec["provenance"]["checksum"] = record_checksum(rec)
    return rec


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(run_dir, dst)
    return dst


def _one_line(capsys: pytest.CaptureFixture[str], rc: int, *parts: str) -> str:
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.startswith("mindhelper: error:")]
    assert len(lines) == 1, err
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- the files
def test_run_json_carries_the_full_provenance(run_dir: Path) -> None:
    run = json.loads((run_dir / "run.json").read_text())
    prov = run["provenance"]
    rel = releases.release_of(SUITE)
    assert rel is not None
    assert prov["package_version"] == mindhelper_env.__version__
    assert prov["generator"] == GENERATOR_VERSION
    assert prov["suite"]["name"] == SUITE
    assert prov["suite"]["reference_sha256"] == rel.reference_sha256
    assert prov["suite"]["public_sha256"] == rel.public_sha256
    assert prov["suite"]["released"] == rel.released
    assert (prov["env_id"], prov["env_kwargs"], prov["seed"], prov["trials"]) == \
        ("MindHelper-VirtualHome-v3", {}, 0, 1)
    for key in ("python", "platform", "command", "started"):
        assert prov[key], key
    assert set(prov["agents"]) == {"silent", "mindclaw"}
    claw = prov["agents"]["mindclaw"]
    assert claw["spec"] == "mindclaw" and claw["options"] == {} and claw["model"] is None
    skills = claw["data_files"]["skills"]
    assert skills["sha256"] == hashlib.sha256(Path(skills["path"]).read_bytes()).hexdigest()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["provenance"] == prov
    assert not schema_errors("run", run)
    broken = dict(run, provenance=dict(prov, suite=dict(prov["suite"], reference_sha256="x")))
    assert schema_errors("run", broken)
    # the settings a resume compares are unchanged beside it
    assert {k: v for k, v in run.items() if k != "provenance"} == {
        "env_id": "MindHelper-VirtualHome-v3", "env_kwargs": {}, "format": 1, "seed": 0,
        "suite": SUITE, "timing": False}


def test_every_record_carries_a_compact_valid_stamp(run_dir: Path) -> None:
    prov = json.loads((run_dir / "run.json").read_text())["provenance"]
    for agent in ("silent", "mindclaw"):
        for rec in _records(run_dir / f"{agent}.jsonl"):
            stamp = rec["provenance"]
            assert tuple(stamp) == STAMP_KEYS
            assert stamp["key"] == prov["agents"][agent]["key"]
            assert stamp["generator"] == GENERATOR_VERSION
            assert stamp["checksum"] == record_checksum(rec)
            assert len(json.dumps(stamp)) < 220
            assert not schema_errors("result", rec)


def test_records_stay_byte_reproducible(run_dir: Path, tmp_path: Path) -> None:
    evaluate(SUITE, ["silent", "mindclaw"], tmp_path, limit=LIMIT, progress=False,
             plots=False, timing=False)
    for name in ("silent.jsonl", "mindclaw.jsonl"):
        assert (tmp_path / name).read_bytes() == (run_dir / name).read_bytes()


def test_a_skills_file_of_the_user_is_read_and_its_digest_recorded(tmp_path: Path) -> None:
    from mindhelper_env.agents.mindclaw.skills import default_skills_path

    book = json.loads(default_skills_path().read_text())
    book["skills"] = []
    path = tmp_path / "my-skills.json"
    path.write_text(json.dumps(book))
    out = tmp_path / "run"
    evaluate(SUITE, ["mindclaw"], out, limit=1, progress=False, plots=False,
             agent_kwargs={"mindclaw": {"skills": str(path)}})
    block = json.loads((out / "run.json").read_text())["provenance"]["agents"]["mindclaw"]
    assert block["options"] == {"skills": str(path)}
    assert block["data_files"]["skills"] == {
        "path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


# ------------------------------------------------------------------------------ refusals
def _edit(run: Path, index: int, change: Any, resign: bool = True) -> Path:
    path = run / "silent.jsonl"
    recs = _records(path)
    change(recs[index])
    if resign:
        _resign(recs[index])
    _write(path, recs)
    return path


def test_score_refuses_a_record_of_another_generator(run_dir: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    run = _copy(run_dir, tmp_path)
    path = _edit(run, 1, lambda r: r["provenance"].update(generator="mh-gen-2.4"))
    rc = main(["score", str(path), "--suite", SUITE])
    _one_line(capsys, rc, f"{path}:2:", "mh-gen-2.4", GENERATOR_VERSION)


def test_score_refuses_a_record_of_another_suite_digest(run_dir: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    run = _copy(run_dir, tmp_path)
    path = _edit(run, 0, lambda r: r["provenance"].update(suite_digest="0123456789abcdef"))
    rc = main(["score", str(run)])
    rel = releases.release_of(SUITE)
    assert rel is not None and rel.reference_sha256
    _one_line(capsys, rc, f"{path}:1:", "0123456789abcdef", rel.reference_sha256[:16])


def test_score_refuses_a_record_that_disagrees_with_the_reference(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _copy(run_dir, tmp_path)
    recs = _records(run / "silent.jsonl")
    was = recs[2]["family"]
    path = _edit(run, 2, lambda r: r.update(family="routine" if was != "routine" else "reach"))
    rc = main(["score", str(path), "--suite", SUITE])
    _one_line(capsys, rc, f"{path}:3:", "family", repr(was))


def test_score_refuses_a_record_made_against_another_reference(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _copy(run_dir, tmp_path)
    path = _edit(run, 3, lambda r: r["provenance"].update(reference="fedcba9876543210"))
    rc = main(["score", str(path), "--suite", SUITE])
    _one_line(capsys, rc, f"{path}:4:", "fedcba9876543210")


def test_score_and_report_refuse_a_tampered_record(run_dir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = _copy(run_dir, tmp_path)
    path = _edit(run, 1, lambda r: r.update(focus_success=not r["focus_success"]),
                 resign=False)
    rc = main(["score", str(path), "--suite", SUITE])
    _one_line(capsys, rc, f"{path}:2:", "edited after it was written")
    pytest.importorskip("jinja2")
    rc = main(["report", str(run), "--out", str(tmp_path / "report")])
    _one_line(capsys, rc, "silent.jsonl:2", "edited after it was written")
    assert not (tmp_path / "report").exists()


def test_report_refuses_a_record_of_another_generator(run_dir: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("jinja2")
    run = _copy(run_dir, tmp_path)
    _edit(run, 0, lambda r: r["provenance"].update(generator="mh-gen-2.4"))
    rc = main(["report", str(run), "--out", str(tmp_path / "report")])
    _one_line(capsys, rc, "mh-gen-2.4", GENERATOR_VERSION)


def test_resume_refuses_a_run_of_another_generator(run_dir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = _copy(run_dir, tmp_path)
    run_json = json.loads((run / "run.json").read_text())
    run_json["provenance"]["generator"] = "mh-gen-2.4"
    (run / "run.json").write_text(json.dumps(run_json))
    before = (run / "silent.jsonl").read_bytes()
    rc = main(["evaluate", "--suite", SUITE, "--agents", "silent,mindclaw", "--out", str(run),
               "--limit", str(LIMIT + 1), "--resume", "--no-progress", "--no-plots",
               "--no-timing"])
    _one_line(capsys, rc, "mh-gen-2.4", GENERATOR_VERSION, "cannot resume")
    assert (run / "silent.jsonl").read_bytes() == before


def test_resume_refuses_a_record_of_another_suite_digest(run_dir: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    run = _copy(run_dir, tmp_path)
    _edit(run, 0, lambda r: r["provenance"].update(suite_digest="0123456789abcdef"))
    rc = main(["evaluate", "--suite", SUITE, "--agents", "silent,mindclaw", "--out", str(run),
               "--limit", str(LIMIT + 1), "--resume", "--no-progress", "--no-plots",
               "--no-timing"])
    _one_line(capsys, rc, "0123456789abcdef", "cannot resume")


# ------------------------------------------------------------------ partial files, folders
def test_a_partial_file_is_scored_with_a_visible_note(run_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert main(["score", str(run_dir / "silent.jsonl"), "--suite", SUITE, "--json"]) == 0
    captured = capsys.readouterr()
    assert f"silent: {LIMIT} of 100 episodes" in captured.err
    assert json.loads(captured.out)["silent"]["PSR"] is not None


def test_score_takes_a_run_folder_and_reads_the_suite(run_dir: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(run_dir), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert scored == summary["table"]


def test_score_refuses_records_of_two_suites_without_suite(run_dir: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    run = _copy(run_dir, tmp_path)
    path = run / "silent.jsonl"
    recs = _records(path)
    recs[1]["suite"] = "vh-test-v2"
    _write(path, recs)
    rc = main(["score", str(run)])
    _one_line(capsys, rc, "vh-test-v2", SUITE)


def test_records_without_a_stamp_are_scored_with_a_note(run_dir: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    run = _copy(run_dir, tmp_path)
    path = run / "silent.jsonl"
    recs = _records(path)
    for r in recs:
        del r["provenance"]
    _write(path, recs)
    assert main(["score", str(path), "--json"]) == 0
    assert f"{LIMIT} record(s) carry no provenance" in capsys.readouterr().err


def test_secret_options_never_reach_a_file() -> None:
    from mindhelper_env.evaluation.provenance import agent_provenance

    block = agent_provenance("direct-vlm", "direct-vlm",
                             {"model": "openai:m", "api_key": "sk-secret", "env": object()})
    assert block["options"] == {"api_key": "<redacted>", "model": "openai:m"}
    assert "sk-secret" not in json.dumps(block)
