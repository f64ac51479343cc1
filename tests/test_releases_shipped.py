"""The released suites shipped pre-built (:mod:`mindhelper_env.scenarios.shipped`): what ships
is the release (references hash to the ledger, specs to their manifest and equal what the
generator builds), a damaged file is never used, and records are still checked against the
references: an edited or foreign record is refused as before."""

from __future__ import annotations

import json
import logging
import lzma
import shutil
from pathlib import Path

import pytest

from mindhelper_env.cli.main import main
from mindhelper_env.evaluation import evaluate
from mindhelper_env.scenarios import releases, shipped
from mindhelper_env.scenarios import suites as S
from mindhelper_env.scenarios.spec import GENERATOR_VERSION

#: the suites whose every episode spec ships (those `score` and `report` run on most)
EPISODE_SUITES = ("vh-dev-v5", "vh-test-v5")


@pytest.fixture()
def shipped_copy(tmp_path, monkeypatch):
    """The shipped files copied into a folder the test may damage."""
    folder = tmp_path / "suites"
    shutil.copytree(shipped.SHIPPED_DIR, folder)
    monkeypatch.setattr(shipped, "SHIPPED_DIR", folder)
    shipped.clear_cache()
    yield folder
    shipped.clear_cache()


def _rewrite(path: Path, edit) -> None:
    path.write_bytes(lzma.compress(edit(lzma.decompress(path.read_bytes()))))


def test_every_current_suite_ships_its_references():
    names = [r.name for r in releases.releases() if r.current]
    assert any(releases.release_of(n).generator == GENERATOR_VERSION for n in names)
    ok = shipped.shipped_suites()
    assert [n for n in names if "reference" not in ok.get(n, ())] == []
    assert [n for n in EPISODE_SUITES if "episodes" not in ok.get(n, ())] == []


def test_shipped_references_are_the_generated_ones(monkeypatch):
    """What ``score`` reads equals what the generator builds (vh-dev-v5, every episode)."""
    from_files = S.suite_references("vh-dev-v5")
    monkeypatch.setenv(shipped.OFF_VARIABLE, "1")
    assert shipped.reference_lines("vh-dev-v5") is None
    assert S.suite_references("vh-dev-v5") == from_files


@pytest.mark.parametrize("name, indices", [("vh-dev-v5", range(0, 100, 9)),
                                           ("vh-test-v5", (0, 1, 313, 998, 999))])
def test_shipped_specs_are_the_generated_ones(name, indices, monkeypatch):
    lines = shipped.episode_lines(name)
    assert lines is not None
    monkeypatch.setenv(shipped.OFF_VARIABLE, "1")
    S._episode_json.cache_clear()
    try:
        for i in indices:
            assert S._episode_json(name, i) == lines[i], f"{name} episode {i}"
    finally:
        S._episode_json.cache_clear()


def test_a_damaged_reference_file_is_not_used(shipped_copy, caplog):
    path = shipped_copy / "vh-dev-v5.reference.jsonl.xz"
    _rewrite(path, lambda b: b.replace(b'"family":"false_belief_relocation"',
                                       b'"family":"routine"', 1))
    with caplog.at_level(logging.WARNING, logger=shipped.__name__):
        assert shipped.reference_lines("vh-dev-v5") is None
    assert "release ledger" in caplog.text and "vh-dev-v5.reference.jsonl.xz" in caplog.text
    path.write_bytes(b"not xz")
    shipped.clear_cache()
    assert shipped.reference_lines("vh-dev-v5") is None
    assert shipped.reference_lines("vh-test-v5") is not None  # the others still serve


def test_a_damaged_or_foreign_episode_file_is_not_used(shipped_copy, caplog):
    path = shipped_copy / "vh-dev-v5.episodes.jsonl.xz"
    _rewrite(path, lambda b: b.replace(b'"horizon":', b'"horizon": ', 1))
    with caplog.at_level(logging.WARNING, logger=shipped.__name__):
        assert shipped.episode_lines("vh-dev-v5") is None
    assert "manifest" in caplog.text
    manifest = json.loads((shipped_copy / shipped.MANIFEST_FILE).read_text())
    manifest["suites"]["vh-test-v5"]["generator"] = "mh-gen-9.9"
    (shipped_copy / shipped.MANIFEST_FILE).write_text(json.dumps(manifest))
    shipped.clear_cache()
    assert shipped.episode_lines("vh-test-v5") is None
    assert "mh-gen-9.9" in caplog.text


def test_the_files_can_be_turned_off(monkeypatch):
    assert shipped.episode_lines("vh-test-v5") is not None
    monkeypatch.setenv(shipped.OFF_VARIABLE, "1")
    assert shipped.episode_lines("vh-test-v5") is None
    assert shipped.reference_lines("vh-test-v5") is None


def _restamped(record):
    from mindhelper_env.evaluation.provenance import record_checksum

    out = {**record, "provenance": dict(record["provenance"])}
    out["provenance"]["checksum"] = record_checksum(out)
    return out


def test_score_still_refuses_edited_and_foreign_records(tmp_path, capsys):
    evaluate("vh-test-v5", ["silent"], tmp_path / "run", limit=3, progress=False,
             plots=False, timing=False)
    path = tmp_path / "run" / "silent.jsonl"
    good = path.read_text().splitlines()
    assert main(["score", str(path), "--suite", "vh-test-v5"]) == 0
    capsys.readouterr()
    cases = {
        # an edited record: its checksum no longer matches
        "checksum": lambda r: {**r, "harm": not r["harm"]},
        # a forged record (re-stamped checksum) of another ground truth: the reference says
        "reference": lambda r: _restamped({**r, "family": "routine" if r["family"] !=
                                           "routine" else "implicit_goal_reach"}),
        # an episode the suite does not have
        "not in suite": lambda r: {**r, "episode_id": "vh-test-v5-5000"},
    }
    for words, edit in cases.items():
        bad = tmp_path / f"bad-{words.split()[0]}.jsonl"
        bad.write_text("\n".join([json.dumps(edit(json.loads(good[0]))), *good[1:]]) + "\n")
        assert main(["score", str(bad), "--suite", "vh-test-v5"]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
