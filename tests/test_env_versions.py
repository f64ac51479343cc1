"""The env ids' versions: ``-v3`` is the current content (mh-gen-3.2, narration 1); ``-v2``
keeps what it meant in 0.6.0 (mh-gen-3.1, narration 1), ``-v1`` what it meant in 0.5.0
(mh-gen-3.0, narration 1) and ``-v0`` what it meant in 0.4.0 (mh-gen-2.5, narration 0)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.envs.registration import ENV_SPECS
from mindhelper_env.evaluation import DEFAULT_ENV_ID
from mindhelper_env.scenarios.spec import (
    GENERATOR_V2,
    GENERATOR_V3,
    GENERATOR_V31,
    GENERATOR_V32,
    GENERATOR_VERSION,
)


def test_the_current_ids_build_the_current_generator() -> None:
    assert DEFAULT_ENV_ID == "MindHelper-VirtualHome-v3"
    assert GENERATOR_VERSION == GENERATOR_V32
    env = gym.make("MindHelper-VirtualHome-v3", pool_size=0)
    env.reset(seed=4)
    assert env.unwrapped.generator == GENERATOR_V32 and env.unwrapped.narration == 1
    assert env.unwrapped.episode_spec["generator"] == GENERATOR_V32
    assert env.unwrapped.episode_spec["horizon"] == 96


def test_the_v2_ids_keep_their_meaning() -> None:
    with pytest.warns(DeprecationWarning, match="out of date"):
        env = gym.make("MindHelper-VirtualHome-v2", pool_size=0)
    env.reset(seed=4)
    assert env.unwrapped.generator == GENERATOR_V31 and env.unwrapped.narration == 1
    assert env.unwrapped.episode_spec["generator"] == GENERATOR_V31
    assert env.unwrapped.episode_spec["horizon"] == 84
    for old in ("MindHelper-TDW-v2", "MindHelper-Trigger-v2"):
        assert ENV_SPECS[old][1] == {"generator": GENERATOR_V31, "narration": 1}


@pytest.mark.parametrize("version, generator, horizon", [("v3", GENERATOR_V32, 96),
                                                          ("v2", GENERATOR_V31, 84)])
def test_the_trigger_ids_play_their_households_generator(version, generator, horizon) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # -v2 is out of date
        env = gym.make(f"MindHelper-Trigger-{version}", pool_size=0)
    env.reset(seed=1)
    household = env.unwrapped.household
    assert household.generator == generator
    assert household.episode_spec["generator"] == generator
    assert household.episode_spec["horizon"] == horizon


def test_the_v1_ids_keep_their_meaning() -> None:
    with pytest.warns(DeprecationWarning, match="out of date"):
        env = gym.make("MindHelper-VirtualHome-v1", pool_size=0)
    env.reset(seed=4)
    assert env.unwrapped.generator == GENERATOR_V3 and env.unwrapped.narration == 1
    assert env.unwrapped.episode_spec["generator"] == GENERATOR_V3
    for old in ("MindHelper-TDW-v1", "MindHelper-Trigger-v1"):
        assert ENV_SPECS[old][1] == {"generator": GENERATOR_V3, "narration": 1}


def test_the_v0_ids_keep_their_meaning() -> None:
    with pytest.warns(DeprecationWarning, match="out of date"):
        env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    env.reset(seed=4)
    assert env.unwrapped.generator == GENERATOR_V2 and env.unwrapped.narration == 0
    assert env.unwrapped.episode_spec["generator"] == GENERATOR_V2
    for old in ("MindHelper-TDW-v0", "MindHelper-Trigger-v0"):
        assert ENV_SPECS[old][1] == {"generator": GENERATOR_V2, "narration": 0}
    for new in ("MindHelper-VirtualHome-v3", "MindHelper-TDW-v3", "MindHelper-Trigger-v3"):
        assert ENV_SPECS[new][1] == {}
    # a keyword still overrides the registered default
    with pytest.warns(DeprecationWarning):
        env = gym.make("MindHelper-VirtualHome-v0", generator=GENERATOR_V3, pool_size=0)
    assert env.unwrapped.generator == GENERATOR_V3


@pytest.mark.parametrize("bad", [2, -1, True, "1", None])
def test_a_bad_narration_is_refused(bad) -> None:
    with pytest.raises(ValueError, match="narration must be one of"):
        gym.make("MindHelper-VirtualHome-v3", narration=bad)


def _robot_lines(narration: int) -> list[str]:
    """The narration of suite episodes in which the robot walks to every candidate place."""
    env = gym.make("MindHelper-VirtualHome-v3", narration=narration)
    lines: list[str] = []
    for index in range(6):
        obs, info = env.reset(options={"suite": "vh-dev-v5", "index": index})
        places = info["candidates"]["locations"]
        k = 0
        while True:
            place = places[k % len(places)]
            k += 1
            obs, _, term, trunc, info = env.step(f"[walk] <{place['class']}> ({place['id']})")
            lines += [ln for ln in obs["narration"].splitlines() if "Robot" in ln]
            if term or trunc:
                break
    return lines


def test_v1_narrates_the_robots_moves_as_a_machines() -> None:
    new, old = _robot_lines(1), _robot_lines(0)
    assert len(new) == len(old) > 20
    assert any("Robot made their way" in ln for ln in old)
    assert not any("their way" in ln for ln in new if "Robot" in ln.split("]", 1)[1][:7])
    assert any("Robot made its way" in ln for ln in new)
    # the wording is the only difference: the same phrase is chosen at the same event
    assert [ln.replace("Robot made its way", "Robot made their way") for ln in new] == old


def test_a_suite_is_played_on_the_id_it_was_released_on(tmp_path) -> None:
    import json

    from mindhelper_env.evaluation import EvalSettings, evaluate, suite_env_id

    assert suite_env_id("vh-test-v2") == suite_env_id("tdw-dev-v2") == "MindHelper-VirtualHome-v0"
    assert suite_env_id("vh-test-v3") == suite_env_id("tdw-dev-v3") == "MindHelper-VirtualHome-v1"
    assert suite_env_id("vh-test-v4") == suite_env_id("tdw-dev-v4") == "MindHelper-VirtualHome-v2"
    assert suite_env_id("vh-test-v5") == suite_env_id(None) == "MindHelper-VirtualHome-v3"
    assert EvalSettings("vh-dev-v2", ["silent"], tmp_path).env_id == "MindHelper-VirtualHome-v0"
    assert EvalSettings("vh-dev-v3", ["silent"], tmp_path,
                        env_id="MindHelper-VirtualHome-v0").env_id == "MindHelper-VirtualHome-v0"
    for suite, env_id in (("vh-dev-v2", "MindHelper-VirtualHome-v0"),
                          ("vh-dev-v3", "MindHelper-VirtualHome-v1"),
                          ("vh-dev-v4", "MindHelper-VirtualHome-v2"),
                          ("vh-dev-v5", "MindHelper-VirtualHome-v3")):
        evaluate(EvalSettings(suite, ["reactive"], tmp_path / suite, limit=2, plots=False,
                              progress=False))
        run = json.loads((tmp_path / suite / "run.json").read_text())
        assert run["env_id"] == env_id
