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
# mindclaw re-pinned deliberately for 0.5.0 and 0.6.0 (its skills re-mined on mh-gen-3.0,
# then mh-gen-3.1 episodes).
GOLDEN = {
    "silent.jsonl": "6797952e8c51e7cea15574afe6a67005b0cca79313c3374f9b330a7f22e9bfc3",
    "random.jsonl": "588ce90fc05aa8439f795d422f04cd596a26e1c749a6f7ee8927891f647b8cc6",
    "reactive.jsonl": "b422a50de8d429bd7ab4082a33637c8e9abb3fd33097dbbec77354c1f705b9a1",
    "belief-tracker.jsonl": "cabbbedb45ece03d1ef60720fb4cdb36487cda4c5f37b1c13f18cb0ca112b5b2",
    "oracle.jsonl": "9219cd166a71fccda0e70c86741164c88425b613b76358d63119ba328f86fd1c",
    "mindclaw.jsonl": "40b1af73245d770d7c726ed0b315cf219c663bba47ae16e723ec73540ffefa99",
}
# run.json of that run: the settings a resume compares (its format must stay readable).
GOLDEN_RUN = {"env_id": "MindHelper-VirtualHome-v0", "env_kwargs": {}, "format": 1,
              "seed": 0, "suite": "vh-dev-v2", "timing": False}


# The same six agents on the first 30 episodes of vh-dev-v3 (MindHelper-VirtualHome-v1),
# pinned for 0.5.0 (mindclaw re-pinned for 0.6.0's skills), of vh-dev-v4
# (MindHelper-VirtualHome-v2), pinned for 0.6.0, and of vh-dev-v5 (MindHelper-VirtualHome-v3),
# pinned for 0.8.0 (0.8.0's skills, re-mined on mh-gen-3.2, left every older pin as it was).
GOLDEN_V3 = {
    "silent.jsonl": "ed577ee9998fa3f3c1fffadf7dafae4db5b9c61b028aedd798b227cac994d436",
    "random.jsonl": "191f908857257cec27801a2f9a9f0f85776a79e32e8e6204e6a9d994869629be",
    "reactive.jsonl": "4e3a7080c5ff6f6adc403af617616884da0e1b150e48ef39700354113e93e0b9",
    "belief-tracker.jsonl": "3be1c347eda6fbab9df17f930ac4d2dc5e0552b7504bb6cf8cb1791701b4b2bf",
    "oracle.jsonl": "f31874849f3ccb163bb02850184b0a3055b1ff19b484fe49902b20dae04ea52d",
    "mindclaw.jsonl": "913b9ab244d352dc67adaeef9d7ac02cfcc15a955eb35c6f3296a7c425600784",
}
GOLDEN_V4 = {
    "silent.jsonl": "fe0563017b95d1fb80af8cd975104570c44803b5e1e8e6e2cc968f66b9bb23ba",
    "random.jsonl": "b15e8712ce84e6b88a75c1611deda1ec5645f6014bd08bfbf6a778cbb2b30fb9",
    "reactive.jsonl": "0629a2cb26b12ca7dac50f737898d0d7c5bd34106bc9af5dd27ed91bb21ecf4c",
    "belief-tracker.jsonl": "e0914b281378c77dc7965b6b462ac9ba32d0c2c42d39948c315ae5f0bf517b37",
    "oracle.jsonl": "56e2f56b5e81f15d46d38fc271bcec9f28f9fefc2a941148f30aeed6e05db0a8",
    "mindclaw.jsonl": "1cf2cd871fd022566d283dee09fa034cd75f88b422e15873c34eb5efc753f972",
}
GOLDEN_V5 = {
    "silent.jsonl": "a550ab48c35f3845c43d6a99a8ed688728643fec3faec44df679740cb735ec5d",
    "random.jsonl": "8005706185ee91cd4df82e7ec393f3114dbf13bda7e79fe11aa8d1a4ad887db7",
    "reactive.jsonl": "151306962b7655b7f088740996252d9841c55619d00f10cef93d7fa7327b01e2",
    "belief-tracker.jsonl": "f27f1a2f3e5023deea4d8e09e995e83c9c6c0a7161101efe7a4a7ca207dcaa89",
    "oracle.jsonl": "e0006ea931cc32fdaab859789387fbd16d34698c1fd6980a6a7ef1bd11288d89",
    "mindclaw.jsonl": "831a81b4f5099f6efa736e31f44594e1c4fa0a71f34dfe60748f31a358cf332e",
}
#: suite -> (its pins, its run.json)
GOLDEN_3X = {
    "vh-dev-v3": (GOLDEN_V3, {**GOLDEN_RUN, "env_id": "MindHelper-VirtualHome-v1",
                              "suite": "vh-dev-v3"}),
    "vh-dev-v4": (GOLDEN_V4, {**GOLDEN_RUN, "env_id": "MindHelper-VirtualHome-v2",
                              "suite": "vh-dev-v4"}),
    "vh-dev-v5": (GOLDEN_V5, {**GOLDEN_RUN, "env_id": "MindHelper-VirtualHome-v3",
                              "suite": "vh-dev-v5"}),
}


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


@pytest.fixture(scope="module", params=sorted(GOLDEN_3X))
def golden_run_3x(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    return request.param, _run(tmp_path_factory, request.param)


def test_v3_to_v5_result_files_are_byte_identical(golden_run_3x: tuple[str, Path]) -> None:
    suite, out = golden_run_3x
    pins = GOLDEN_3X[suite][0]
    got = {name: hashlib.sha256(_without_provenance_keys((out / name).read_bytes())).hexdigest()
           for name in pins}
    assert got == pins, f"{suite}: {sorted(n for n in pins if got[n] != pins[n])} changed"


def test_v3_to_v5_run_files_name_their_env(golden_run_3x: tuple[str, Path]) -> None:
    suite, out = golden_run_3x
    run = json.loads((out / "run.json").read_text())
    run.pop("provenance")
    assert run == GOLDEN_3X[suite][1]
