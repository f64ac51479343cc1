"""One table of every registered environment id."""

from __future__ import annotations

import gymnasium as gym

__all__ = ["ENV_SPECS", "register_envs"]

#: id -> (entry point, default kwargs, max_episode_steps)
ENV_SPECS: dict[str, tuple[str, dict, int | None]] = {
    "MindHelper-VirtualHome-v0": ("mindhelper_env.envs.virtualhome:MindHelperEnv", {}, None),
    "MindHelper-TDW-v0": ("mindhelper_env.envs.tdw:MindHelperTDWEnv", {}, None),
    "MindHelper-Trigger-v0": ("mindhelper_env.envs.trigger:MindHelperTriggerEnv", {}, None),
}


def register_envs() -> None:
    for env_id, (entry, kwargs, max_steps) in ENV_SPECS.items():
        if env_id in gym.registry:
            continue
        gym.register(id=env_id, entry_point=entry, kwargs=dict(kwargs),
                     max_episode_steps=max_steps)
