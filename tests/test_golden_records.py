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
# oracle,mindclaw --limit 30 --no-timing`` on main before issue 17 (commit 8b9a6af).
GOLDEN = {
    "silent.jsonl": "6797952e8c51e7cea15574afe6a67005b0cca79313c3374f9b330a7f22e9bfc3",
    "random.jsonl": "74bc242d5d5854eab547e732ef4741972823099ff0045eaeb79f98bc29680413",
    "reactive.jsonl": "0f1c1c3e53a88f89b7ae4da93267f94ab02299010da9262093b880edd218bf29",
    "belief-tracker.jsonl": "44d182d6e41da220180e509d5f4881131b3d51a5186dab37ec5ab64902b61b73",
    "oracle.jsonl": "9dfda8c54282bfcaf0f833ebf84aaa5c8354b4034ca82366d54110df32cbfeeb",
    "mindclaw.jsonl": "28506f2555dbdff2cbef873d78983ad1f3aac46bed17388d950657186e501cae",
}
# run.json of that run: the settings a resume compares (its format must stay readable).
GOLDEN_RUN = {"env_id": "MindHelper-VirtualHome-v0", "env_kwargs": {}, "format": 1,
              "seed": 0, "suite": "vh-dev-v2", "timing": False}


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("golden")
    evaluate("vh-dev-v2", list(AGENTS), out, limit=30, timing=False, progress=False,
             plots=False)
    return out


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_result_file_is_byte_identical(golden_run: Path, name: str) -> None:
    digest = hashlib.sha256((golden_run / name).read_bytes()).hexdigest()
    assert digest == GOLDEN[name], f"{name} changed"


def test_run_file_keeps_the_one_trial_settings(golden_run: Path) -> None:
    assert json.loads((golden_run / "run.json").read_text()) == GOLDEN_RUN
