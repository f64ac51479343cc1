"""Gymnasium environments and their registration table."""

from __future__ import annotations

from typing import Any

from mindhelper_env.envs.registration import ENV_SPECS, register_envs
from mindhelper_env.envs.vector import CompleteEpisodeRecord, make_vec_env
from mindhelper_env.envs.virtualhome import DEFAULT_REWARD, MindHelperEnv

__all__ = ["MindHelperEnv", "DEFAULT_REWARD", "ENV_SPECS", "register_envs", "make_vec_env",
           "CompleteEpisodeRecord", "parallel_env"]


def parallel_env(people: Any = None, **kwargs: Any) -> Any:
    """The household as a PettingZoo ``ParallelEnv`` (agents ``robot``, ``person_0`` ..):
    :class:`mindhelper_env.envs.parallel.MindHelperParallelEnv` (needs the ``pettingzoo``
    extra; imported on first use)."""
    from mindhelper_env.envs.parallel import MindHelperParallelEnv

    return MindHelperParallelEnv(people, **kwargs)
