"""The RLlib example trains on MindHelper-Trigger-v0 in a local Ray (needs the rllib extra).

Skipped without RLlib, except when ``MINDHELPER_REQUIRE_RLLIB=1`` (set by ``.ci/run``, which
installs the extra): then a missing RLlib fails the test.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _need_rllib() -> None:
    if os.environ.get("MINDHELPER_REQUIRE_RLLIB") == "1":
        importlib.import_module("ray.rllib")
        importlib.import_module("torch")
        return
    pytest.importorskip("torch", reason="needs the rllib extra: pip install -e '.[rllib]'")
    pytest.importorskip("ray.rllib", reason="needs the rllib extra: pip install -e '.[rllib]'")


def test_masked_observation_wrapper_without_ray():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import rllib_trigger
    finally:
        sys.path.remove(str(EXAMPLES))
    env = rllib_trigger.make_env({"pool_size": 0})
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["action_mask"][-1] == 1.0


def test_one_training_iteration_in_a_local_ray(tmp_path):
    _need_rllib()
    sys.path.insert(0, str(EXAMPLES))
    try:
        import rllib_trigger
    finally:
        sys.path.remove(str(EXAMPLES))
    out = rllib_trigger.main(["--iterations", "1", "--batch", "128", "--minibatch", "64",
                              "--epochs", "1", "--eval-episodes", "4", "--num-cpus", "1"])
    assert len(out["results"]) == 1
    assert out["scores"]["rllib"]["episodes"] == 4.0
    assert 0.0 <= out["scores"]["rllib"]["PHA"] <= 100.0
