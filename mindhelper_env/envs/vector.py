"""Vector envs whose sub-envs know their rank, so suite episodes can be spread over them.

Gymnasium's ``SyncVectorEnv``/``AsyncVectorEnv`` pass the same ``reset(options=...)`` to every
sub-env, so ``options={"suite": s, "index": i}`` gives every sub-env episode ``i``.
:func:`make_vec_env` sets ``env.unwrapped.vector_index = k`` on sub-env ``k``; then

>>> envs = make_vec_env(4)                                        # doctest: +SKIP
>>> obs, info = envs.reset(options={"suite": "vh-dev-v5", "indices": [0, 1, 2, 3]})  # doctest: +SKIP

gives sub-env ``k`` episode ``indices[k]``. Autoresets (no options) sample training episodes.
Plain ``gym.make_vec("MindHelper-VirtualHome-v3", num_envs=n)`` works too (every ``info``
value keeps one type, see :mod:`mindhelper_env.envs.records`), only without ranks; with
``vectorization_mode="async"`` pass ``vector_kwargs={"shared_memory": False}``: shared
memory cannot carry ``Text`` observations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import gymnasium as gym

from mindhelper_env.envs.records import complete_final_info

__all__ = ["make_vec_env", "CompleteEpisodeRecord"]

DEFAULT_ENV_ID = "MindHelper-VirtualHome-v3"


class CompleteEpisodeRecord(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Adds ``info["episode_record"]`` (and ``"episode_record_json"``) when an outer wrapper
    such as ``TimeLimit`` ends the episode before the env does. Put it outside the
    ``TimeLimit``; the record is marked ``truncated``."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info = complete_final_info(self.env, info)
        return obs, reward, terminated, truncated, info


def _make_ranked(env_id: str, rank: int, max_episode_steps: int | None,
                 wrappers: tuple[Callable[[gym.Env], gym.Env], ...],
                 env_kwargs: dict[str, Any]) -> gym.Env:
    import mindhelper_env  # noqa: F401  (registers the envs in spawned workers)

    env = gym.make(env_id, max_episode_steps=max_episode_steps, **env_kwargs)
    env.unwrapped.vector_index = rank  # type: ignore[attr-defined]
    if max_episode_steps is not None:
        env = CompleteEpisodeRecord(env)
    for wrapper in wrappers:
        env = wrapper(env)
    return env


def make_vec_env(
    num_envs: int,
    *,
    env_id: str = DEFAULT_ENV_ID,
    vectorization_mode: str = "sync",
    autoreset_mode: gym.vector.AutoresetMode | str = gym.vector.AutoresetMode.NEXT_STEP,
    max_episode_steps: int | None = None,
    wrappers: Sequence[Callable[[gym.Env], gym.Env]] = (),
    vector_kwargs: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> gym.vector.VectorEnv:
    """A ``SyncVectorEnv`` (``"sync"``) or ``AsyncVectorEnv`` (``"async"``, no shared memory)
    of ``num_envs`` envs ``gym.make(env_id, **env_kwargs)``, sub-env ``k`` with
    ``vector_index = k``.

    ``max_episode_steps`` adds a ``TimeLimit`` and :class:`CompleteEpisodeRecord` (the final
    ``info`` always has the episode record); prefer the env's own ``max_ticks``.
    ``wrappers`` are applied to each sub-env, outermost last (e.g.
    ``[PrecisionInterventionMetrics]``). For ``"async"``, ``wrappers`` must pickle.
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    if vectorization_mode not in ("sync", "async"):
        raise ValueError(f"vectorization_mode must be 'sync' or 'async', got {vectorization_mode!r}")
    fns = [partial(_make_ranked, env_id, k, max_episode_steps, tuple(wrappers), dict(env_kwargs))
           for k in range(num_envs)]
    kwargs = dict(vector_kwargs or {})
    kwargs["autoreset_mode"] = gym.vector.AutoresetMode(autoreset_mode)
    if vectorization_mode == "sync":
        return gym.vector.SyncVectorEnv(fns, **kwargs)
    kwargs.setdefault("shared_memory", False)
    return gym.vector.AsyncVectorEnv(fns, **kwargs)
