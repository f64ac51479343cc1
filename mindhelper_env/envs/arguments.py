"""Checks of the household env's arguments (``MindHelperEnv``): families, pool, backend,
reward."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mindhelper_env.scenarios.spec import FAMILIES, V3_FAMILIES, family_weights, is_v3

__all__ = ["check_families", "merge_reward", "check_frame_args"]


def check_families(families: Any, generator: str | None = None) -> dict[str, float]:
    """The env's ``families`` argument as ``{family: weight}`` (default: the generator's
    weights); ``ValueError`` naming a family the generator does not build or a bad weight."""
    known = V3_FAMILIES if is_v3(generator) else FAMILIES
    if families is None:
        return family_weights(generator)
    if isinstance(families, str):
        families = [families]
    if not isinstance(families, dict):
        try:
            families = {f: 1.0 for f in families}
        except TypeError:
            raise ValueError("families must be a family name, a list of names or a dict "
                             f"of weights, got {type(families).__name__}") from None
    for f, w in families.items():
        if not isinstance(f, str) or f not in known:
            raise ValueError(f"unknown family {f!r}; expected some of {list(known)}")
        if isinstance(w, bool) or not isinstance(w, (int, float)) \
                or not np.isfinite(w) or w < 0:
            raise ValueError(f"weight of {f!r} must be a finite non-negative number, "
                             f"got {w!r}")
    if not families or sum(families.values()) <= 0:
        raise ValueError("families must contain at least one positive weight")
    return dict(families)


def _check_pool(size: Any, directory: Any) -> tuple[int, str | None]:
    if size is None:
        from mindhelper_env.scenarios.pool import DEFAULT_POOL_SIZE

        size = DEFAULT_POOL_SIZE
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"pool_size must be a non-negative int (0: no pool), got {size!r}")
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise ValueError(f"pool_dir must be a path or None, got {directory!r}")
    return int(size), None if directory is None else os.fspath(directory)


def _check_backend(backend: Any, options: Any) -> dict[str, Any] | None:
    """``None`` for the symbolic backend, else the checked ``backend_options``."""
    if backend not in ("symbolic", "virtualhome-unity", "tdw"):
        raise ValueError(f"backend must be 'symbolic', 'virtualhome-unity' or 'tdw', "
                         f"got {backend!r}")
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"backend_options must be a dict or None, got {type(options).__name__}")
    if backend == "symbolic":
        if options:
            raise ValueError("backend_options are for backend='virtualhome-unity' or 'tdw'")
        return None
    if backend == "tdw":
        from mindhelper_env.backends.tdw_build import BACKEND_OPTIONS as TDW_OPTIONS
        from mindhelper_env.backends.tdw_build import TDWEnvMirror

        unknown = sorted(set(options or {}) - set(TDW_OPTIONS), key=str)
        if unknown:
            raise ValueError(f"unknown backend_options {unknown}; known: {list(TDW_OPTIONS)}")
        TDWEnvMirror(**(options or {}))  # checks the values; connects only at reset
        return dict(options or {})
    from mindhelper_env.backends.virtualhome_unity import BACKEND_OPTIONS, UnityMirror

    unknown = sorted(set(options or {}) - set(BACKEND_OPTIONS), key=str)
    if unknown:
        raise ValueError(f"unknown backend_options {unknown}; known: {list(BACKEND_OPTIONS)}")
    UnityMirror(**(options or {}))  # checks the values; connects only at reset
    return dict(options or {})


def merge_reward(reward: Any, defaults: dict[str, float]) -> dict[str, float]:
    """``defaults`` overridden by ``reward`` (a dict of known terms with finite numbers);
    ``ValueError`` naming the first bad term."""
    if reward is not None and not isinstance(reward, dict):
        raise ValueError(f"reward must be a dict of reward terms, got {type(reward).__name__}")
    unknown = set(reward or {}) - set(defaults)
    if unknown:
        raise ValueError(f"unknown reward terms {sorted(unknown, key=str)}; "
                         f"known: {sorted(defaults)}")
    for term, value in (reward or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                            np.floating)) \
                or not np.isfinite(value):
            raise ValueError(f"reward[{term!r}] must be a finite number, got {value!r}")
    return {**defaults, **{k: float(v) for k, v in (reward or {}).items()}}


def check_frame_args(frame_size: Any, render_size: Any, obs_mode: str, houses: Any,
                     picture: Any) -> tuple[int, int]:
    """``(frame_size, picture)``: ``frame_size`` None is the lossless default for ``rgb``
    (:func:`~mindhelper_env.envs.frame_size.default_frame_size`: the largest picture of the
    houses the env can play) and 128 for the text modes; ``ValueError`` naming a bad
    argument."""
    from mindhelper_env.envs.frame_size import default_frame_size
    from mindhelper_env.render.sprites import check_picture

    if frame_size is None:
        frame_size = default_frame_size(obs_mode, houses)
    for arg, val in (("frame_size", frame_size), ("render_size", render_size)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) \
                or not 64 <= val <= 2048:
            raise ValueError(f"{arg} must be an int between 64 and 2048, got {val!r}")
    return int(frame_size), check_picture(picture)
