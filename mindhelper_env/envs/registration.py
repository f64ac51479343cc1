"""One table of every registered environment id, and of the ids that were retired.

Env ids follow Gymnasium's versioning rule: a change of an env's dynamics, observations or
rewards gets a new ``-vN`` id; the old id either stays registered (:data:`ENV_SPECS`) or is
retired (:data:`RETIRED_ENV_IDS`) and then refused on ``gym.make`` with one line naming its
replacement. ``MindHelper-VirtualHome-v3`` is the current id of the VirtualHome env
(``mh-gen-3.2`` episodes: timings drawn in the base, 96 ticks; narration 1);
``MindHelper-VirtualHome-v2``, ``-v1`` and ``-v0`` stay registered with what they always
meant (``mh-gen-3.1`` episodes, narration 1; ``mh-gen-3.0`` episodes, narration 1;
``mh-gen-2.5`` episodes, narration 0), and so do the TDW and Trigger ids.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

__all__ = ["ENV_SPECS", "RETIRED_ENV_IDS", "RetiredEnvError", "register_envs", "check_env_id"]

_V0 = {"generator": "mh-gen-2.5", "narration": 0}  # the v0 ids, as released in 0.4.0
_V1 = {"generator": "mh-gen-3.0", "narration": 1}  # the v1 ids, as released in 0.5.0
_V2 = {"generator": "mh-gen-3.1", "narration": 1}  # the v2 ids, as released in 0.6.0
_VH = "mindhelper_env.envs.virtualhome:MindHelperEnv"
_TDW = "mindhelper_env.envs.tdw:MindHelperTDWEnv"
_TRIGGER = "mindhelper_env.envs.trigger:MindHelperTriggerEnv"

#: id -> (entry point, default kwargs, max_episode_steps)
ENV_SPECS: dict[str, tuple[str, dict, int | None]] = {
    "MindHelper-VirtualHome-v3": (_VH, {}, None),
    "MindHelper-TDW-v3": (_TDW, {}, None),
    "MindHelper-Trigger-v3": (_TRIGGER, {}, None),
    "MindHelper-VirtualHome-v2": (_VH, dict(_V2), None),
    "MindHelper-TDW-v2": (_TDW, dict(_V2), None),
    "MindHelper-Trigger-v2": (_TRIGGER, dict(_V2), None),
    "MindHelper-VirtualHome-v1": (_VH, dict(_V1), None),
    "MindHelper-TDW-v1": (_TDW, dict(_V1), None),
    "MindHelper-Trigger-v1": (_TRIGGER, dict(_V1), None),
    "MindHelper-VirtualHome-v0": (_VH, dict(_V0), None),
    "MindHelper-TDW-v0": (_TDW, dict(_V0), None),
    "MindHelper-Trigger-v0": (_TRIGGER, dict(_V0), None),
}

#: Retired id -> (the id that replaces it, why it was retired). Append only: an id, once
#: registered, is never reused for other dynamics, observations or rewards.
RETIRED_ENV_IDS: dict[str, tuple[str, str]] = {}


class RetiredEnvError(gym.error.Error):
    """A retired env id was asked for; the message names its replacement."""


def check_env_id(env_id: str) -> None:
    """Raise :class:`RetiredEnvError` (one line naming the replacement) for a retired id."""
    if isinstance(env_id, str) and env_id in RETIRED_ENV_IDS:
        new, why = RETIRED_ENV_IDS[env_id]
        raise RetiredEnvError(f"env id {env_id!r} was retired ({why}); use {new!r}")


def _refuse_retired(env_id: str) -> Any:
    """The entry point of every retired id: ``gym.make`` of one raises at once."""

    def entry(**_kwargs: Any) -> Any:
        check_env_id(env_id)
        raise RetiredEnvError(f"env id {env_id!r} is not available")  # pragma: no cover

    return entry


def register_envs() -> None:
    """Register :data:`ENV_SPECS` and, so that ``gym.make`` refuses them with a pointer
    instead of Gymnasium's generic "not found", every id of :data:`RETIRED_ENV_IDS`."""
    for env_id, (entry, kwargs, max_steps) in ENV_SPECS.items():
        if env_id in gym.registry:
            continue
        gym.register(id=env_id, entry_point=entry, kwargs=dict(kwargs),
                     max_episode_steps=max_steps)
    for env_id in RETIRED_ENV_IDS:
        if env_id in gym.registry or env_id in ENV_SPECS:
            continue
        gym.register(id=env_id, entry_point=_refuse_retired(env_id))
