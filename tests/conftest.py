from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

#: Under pytest-xdist (the README's ``-n 2``: a process per core) torch and the BLAS libraries
#: get one thread each, set before any of them is imported here (and inherited by the
#: commands the tests start): two processes each spinning a thread per core are slower than
#: one thread each. A value already set wins.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mindhelper_env  # noqa: E402, F401  (registers the envs)


def _logging_state() -> tuple[list, int, bool, int]:
    import logging

    pkg = logging.getLogger("mindhelper_env")
    return list(pkg.handlers), pkg.level, pkg.propagate, logging.getLogger().level


#: The package logger (handlers, level, propagate) and the root logger's level as importing
#: the package leaves them, before any test ran.
_IMPORTED_LOGGING = _logging_state()


@pytest.fixture(autouse=True)
def _package_logger_as_imported():
    """The ``mindhelper`` command, run in-process by a test or a module-scoped fixture
    (set up before this fixture), sends the package's log to stderr and stops it
    propagating (``cli.main._setup_logging``); a library may switch existing loggers off or
    raise the root logger's level. Before and after every test, put the package's loggers
    and the root level back as an import leaves them, so that ``caplog`` sees the records."""
    import logging

    def restore() -> None:
        # a library's logging.config.dictConfig (disable_existing_loggers) switches every
        # logger it finds off, the package's included
        for name, lg in list(logging.root.manager.loggerDict.items()):
            if name.startswith("mindhelper_env") and isinstance(lg, logging.Logger):
                lg.disabled = False
        handlers, level, propagate, root_level = _IMPORTED_LOGGING
        pkg = logging.getLogger("mindhelper_env")
        pkg.handlers[:] = handlers
        pkg.setLevel(level)
        pkg.propagate = propagate
        logging.getLogger().setLevel(root_level)

    restore()
    yield
    restore()


def _tdw_available() -> bool:
    """The tdw extra is installed; ``MINDHELPER_REQUIRE_TDW=1`` (set by ``.ci/run``) makes a
    missing one fail the TDW env's tests instead of leaving them out."""
    if os.environ.get("MINDHELPER_REQUIRE_TDW") == "1":
        return True
    return importlib.util.find_spec("tdw") is not None


#: Every registered env (``MindHelper-TDW-v0`` only where the tdw extra is installed or
#: required).
ENV_IDS = sorted(e for e in gym.registry if e.startswith("MindHelper-")
                 and (e != "MindHelper-TDW-v0" or _tdw_available()))
#: The envs whose actions are text programs and observations text (not the Trigger env).
TEXT_ENV_IDS = [e for e in ENV_IDS
                if isinstance(gym.make(e).unwrapped.action_space, gym.spaces.Text)]


class RandomActions:
    """Random valid actions for any registered env: text programs (the ``random`` agent)
    or a masked ``Discrete`` index (``action_masks()``)."""

    def __init__(self, env, seed):
        from mindhelper_env.agents import make_agent

        self.env = env.unwrapped
        self.rng = np.random.default_rng(seed)
        self.text = isinstance(self.env.action_space, gym.spaces.Text)
        self.agent = make_agent("random", p=0.3, seed=seed) if self.text else None
        if self.agent is not None:
            self.agent.reset(seed=seed)

    def __call__(self, obs, info):
        if self.text:
            return self.agent.act(obs, info)
        return int(self.rng.choice(np.flatnonzero(self.env.action_masks())))


def episode_steps(env, suite: str, index: int, agent_name: str = "oracle"):
    """Play suite episode ``index`` with a registry agent; every ``(obs, info)``, reset
    included."""
    from mindhelper_env.agents import make_agent

    agent = make_agent(agent_name, env=env)
    obs, info = env.reset(options={"suite": suite, "index": index})
    agent.reset()
    steps = [(obs, info)]
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        steps.append((obs, info))
        done = term or trunc
    return steps


def play(env, agent, *, seed=None, options=None):
    """Run one episode; returns the final info."""
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(seed=seed)
    while True:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            return info


def require_tdw() -> Any:
    """Import ``tdw`` (the tdw extra); skip without it, but fail when
    ``MINDHELPER_REQUIRE_TDW=1`` (set by ``.ci/run``, so CI never skips the TDW tests)."""
    if os.environ.get("MINDHELPER_REQUIRE_TDW") == "1":
        return importlib.import_module("tdw")
    return pytest.importorskip("tdw", reason='needs the tdw extra: pip install -e ".[tdw]"')


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
