"""Gymnasium environments and their registration table."""

from __future__ import annotations

from mindhelper_env.envs.registration import ENV_SPECS, register_envs
from mindhelper_env.envs.vector import CompleteEpisodeRecord, make_vec_env
from mindhelper_env.envs.virtualhome import DEFAULT_REWARD, MindHelperEnv

__all__ = ["MindHelperEnv", "DEFAULT_REWARD", "ENV_SPECS", "register_envs", "make_vec_env",
           "CompleteEpisodeRecord"]
