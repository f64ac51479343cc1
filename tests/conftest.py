from __future__ import annotations

import gymnasium as gym
import pytest

import mindhelper_env  # noqa: F401  (registers the envs)

ENV_IDS = sorted(e for e in gym.registry if e.startswith("MindHelper-"))


def play(env, agent, *, seed=None, options=None):
    """Run one episode; returns the final info."""
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(seed=seed)
    while True:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            return info


@pytest.fixture(autouse=True, scope="session")
def _episode_pool_cache(tmp_path_factory):
    """Episode pools go to a temporary directory, never the user's cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MINDHELPER_CACHE_DIR", str(tmp_path_factory.mktemp("mindhelper-cache")))
    yield
    mp.undo()


@pytest.fixture()
def vh_env():
    env = gym.make("MindHelper-VirtualHome-v0")
    yield env
    env.close()
