"""RGB observations and rgb_array rendering of the env (needs the video extra)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from mindhelper_env.agents import make_agent
from tests.conftest import TEXT_ENV_IDS, play


@pytest.mark.parametrize("env_id", TEXT_ENV_IDS)
@pytest.mark.parametrize("kwargs", [{"obs_mode": "text+rgb"},
                                    {"obs_mode": "text+rgb", "frame_stack": 3, "frame_size": 64},
                                    {"render_mode": "rgb_array"}])
def test_check_env_in_every_mode(env_id, kwargs):
    check_env(gym.make(env_id, **kwargs).unwrapped)


@pytest.mark.parametrize("stack", [1, 2, 4])
def test_rgb_observations_stay_in_space(stack):
    env = gym.make("MindHelper-VirtualHome-v0", obs_mode="text+rgb", frame_stack=stack,
                   frame_size=96)
    agent = make_agent("random", p=0.3, seed=1)
    obs, info = env.reset(seed=1)
    agent.reset(seed=1)
    assert env.observation_space.contains(obs)
    frames = [obs["rgb"]]
    for _ in range(8):
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        assert env.observation_space.contains(obs)
        frames.append(obs["rgb"])
        if term or trunc:
            break
    assert obs["rgb"].dtype == np.uint8
    assert any(not np.array_equal(frames[0], f) for f in frames[1:])


def test_frames_are_deterministic():
    def run():
        env = gym.make("MindHelper-VirtualHome-v0", render_mode="rgb_array")
        env.reset(seed=6)
        out = [env.render()]
        for _ in range(3):
            env.step("none")
            out.append(env.render())
        return out
    a, b = run(), run()
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert a[0].shape == (256, 256, 3) and a[0].dtype == np.uint8


def test_record_video_writes_a_file(tmp_path):
    env = gym.make("MindHelper-VirtualHome-v0", render_mode="rgb_array")
    env = gym.wrappers.RecordVideo(env, str(tmp_path / "videos"), episode_trigger=lambda i: True,
                                   disable_logger=True)
    play(env, make_agent("oracle", env=env), seed=2)
    env.close()
    videos = list((tmp_path / "videos").glob("*.mp4"))
    assert videos and videos[0].stat().st_size > 1000


def test_room_observability_hides_other_rooms_in_frames():
    from mindhelper_env.render.topdown import ROBOT_COLOR

    home = gym.make("MindHelper-VirtualHome-v0", obs_mode="text+rgb", frame_size=256)
    room = gym.make("MindHelper-VirtualHome-v0", obs_mode="text+rgb", frame_size=256,
                    observability="room")
    oh, _ = home.reset(seed=4)
    orr, _ = room.reset(seed=4)
    grey = np.all(orr["rgb"] == (150, 150, 150), axis=-1).mean()
    assert grey > 0.2 and np.all(oh["rgb"] == (150, 150, 150), axis=-1).mean() < 0.01
    # the robot is in its own room, so it is still drawn
    red = np.all(orr["rgb"] == ROBOT_COLOR, axis=-1).sum()
    assert red > 0
