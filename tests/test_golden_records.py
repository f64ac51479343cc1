"""Golden hashes of evaluation result files.

Refactoring the evaluation runner (issue 17: the ``evaluation`` package, the settings object,
repeated trials) must not change a single byte of what ``evaluate`` writes for one trial.
These tests run six agents on the first 30 episodes of the dev suite without timing (the only
part of a record that is not deterministic) and compare every result file's SHA-256 with the
hash pinned before the refactoring. If one fails, the records changed: that is a bug unless
the change is deliberate (then say so in the changelog and re-pin here).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mindhelper_env.evaluation import evaluate

AGENTS = ("silent", "random", "reactive", "belief-tracker", "oracle", "mindclaw")
# ``mindhelper evaluate --suite vh-dev-v2 --agents silent,random,reactive,belief-tracker,
# oracle,mindclaw --limit 30 --no-timing``: pinned on main before issue 17 (commit 8b9a6af,
# where the refactored runner reproduced them byte for byte), re-pinned deliberately for the
# mh-gen-2.1 content and the belief block of belief-table agents (docs/data-format.md);
# mindclaw re-pinned deliberately for 0.5.0 (its skills re-mined on mh-gen-3.0 episodes).
GOLDEN = {
    "silent.jsonl": "6797952e8c51e7cea15574afe6a67005b0cca79313c3374f9b330a7f22e9bfc3",
    "random.jsonl": "588ce90fc05aa8439f795d422f04cd596a26e1c749a6f7ee8927891f647b8cc6",
    "reactive.jsonl": "b422a50de8d429bd7ab4082a33637c8e9abb3fd33097dbbec77354c1f705b9a1",
    "belief-tracker.jsonl": "cabbbedb45ece03d1ef60720fb4cdb36487cda4c5f37b1c13f18cb0ca112b5b2",
    "oracle.jsonl": "9219cd166a71fccda0e70c86741164c88425b613b76358d63119ba328f86fd1c",
    "mindclaw.jsonl": "5f9d4d5248f12e76bb74010c3664e1c54816085a7956005200113d9623ee3755",
}
# run.json of that run: the settings a resume compares (its format must stay readable).
GOLDEN_RUN = {"env_id": "MindHelper-VirtualHome-v0", "env_kwargs": {}, "format": 1,
              "seed": 0, "suite": "vh-dev-v2", "timing": False}


# The same six agents on the first 30 episodes of vh-dev-v3 (MindHelper-VirtualHome-v1),
# pinned for 0.5.0.
GOLDEN_V3 = {
    "silent.jsonl": "ed577ee9998fa3f3c1fffadf7dafae4db5b9c61b028aedd798b227cac994d436",
    "random.jsonl": "191f908857257cec27801a2f9a9f0f85776a79e32e8e6204e6a9d994869629be",
    "reactive.jsonl": "4e3a7080c5ff6f6adc403af617616884da0e1b150e48ef39700354113e93e0b9",
    "belief-tracker.jsonl": "3be1c347eda6fbab9df17f930ac4d2dc5e0552b7504bb6cf8cb1791701b4b2bf",
    "oracle.jsonl": "f31874849f3ccb163bb02850184b0a3055b1ff19b484fe49902b20dae04ea52d",
    "mindclaw.jsonl": "25951a190e2b3a2a69bfa27998da13db028d39caf9224007c0a11d49c308fc18",
}
GOLDEN_RUN_V3 = {**GOLDEN_RUN, "env_id": "MindHelper-VirtualHome-v1", "suite": "vh-dev-v3"}


def _run(tmp_path_factory: pytest.TempPathFactory, suite: str) -> Path:
    """The six agents on the first 30 episodes of ``suite``, without timing."""
    out = tmp_path_factory.mktemp(f"golden-{suite}")
    evaluate(suite, list(AGENTS), out, limit=30, timing=False, progress=False, plots=False)
    return out


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory, "vh-dev-v2")


def _without_provenance_keys(data: bytes) -> bytes:
    """The file as it was before 0.4 added two keys to every record: the ``provenance``
    stamp (last) and ``usage.agent_errors`` (last in ``usage``; 0 for these agents). Every
    other byte must be unchanged."""
    lines = []
    for line in data.decode("utf-8").splitlines():
        rec = json.loads(line)
        assert set(rec["provenance"]) == {"key", "generator", "suite_digest", "reference",
                                          "checksum"}
        assert list(rec)[-1] == "provenance" and list(rec["usage"])[-1] == "agent_errors"
        del rec["provenance"]
        assert rec["usage"].pop("agent_errors") == 0
        lines.append(json.dumps(rec, ensure_ascii=False) + "\n")
    return "".join(lines).encode("utf-8")


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_result_file_is_byte_identical(golden_run: Path, name: str) -> None:
    data = _without_provenance_keys((golden_run / name).read_bytes())
    digest = hashlib.sha256(data).hexdigest()
    assert digest == GOLDEN[name], f"{name} changed"


def test_run_file_keeps_the_one_trial_settings(golden_run: Path) -> None:
    run = json.loads((golden_run / "run.json").read_text())
    assert set(run.pop("provenance")) >= {"package_version", "generator", "suite", "agents"}
    assert run == GOLDEN_RUN


@pytest.fixture(scope="module")
def golden_run_v3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory, "vh-dev-v3")


@pytest.mark.parametrize("name", sorted(GOLDEN_V3))
def test_v3_result_file_is_byte_identical(golden_run_v3: Path, name: str) -> None:
    data = _without_provenance_keys((golden_run_v3 / name).read_bytes())
    assert hashlib.sha256(data).hexdigest() == GOLDEN_V3[name], f"{name} changed"


def test_v3_run_file_names_the_current_env(golden_run_v3: Path) -> None:
    run = json.loads((golden_run_v3 / "run.json").read_text())
    run.pop("provenance")
    assert run == GOLDEN_RUN_V3
