"""``MindHelper-TDW-v3``: the household env in ThreeDWorld's floorplan houses."""

from __future__ import annotations

from typing import Any

from mindhelper_env.envs.virtualhome import MindHelperEnv

__all__ = ["MindHelperTDWEnv"]


class MindHelperTDWEnv(MindHelperEnv):
    """
    ## Description

    :class:`~mindhelper_env.envs.virtualhome.MindHelperEnv` with its episodes set in the
    houses built from the data that ships in the ``tdw`` package: TDW's four floorplan
    scenes, each with its three object layouts (twelve houses; rooms from the floorplans'
    floor sections, doors between adjacent sections, furniture from the layouts' models with
    their TDW model names in ``prefab_name`` and their real positions and bounds;
    :mod:`mindhelper_env.world.tdw_house`). Families, ground truth, observations, actions,
    rewards, metrics and rendering are those of ``MindHelper-VirtualHome-v3``; it runs on the
    symbolic backend, with no TDW build. Suites: ``tdw-dev-v5`` (100 episodes) and
    ``tdw-test-v5`` (1,000); the frozen ``tdw-dev-v4``/``tdw-test-v4`` (``mh-gen-3.1``),
    ``tdw-dev-v3``/``tdw-test-v3`` (``mh-gen-3.0``) and ``tdw-dev-v2``/``tdw-test-v2``
    (``mh-gen-2.5``) stay playable.

    Needs the ``tdw`` extra (``pip install "mindhelper-env[tdw]"``); without it ``gym.make``
    raises ``ImportError`` saying so. Converted houses are cached under the package's cache
    directory (``$MINDHELPER_CACHE_DIR``, see :func:`mindhelper_env.paths.cache_dir`).

    ## Arguments

    Those of ``MindHelper-VirtualHome-v3``; ``house`` defaults to ``"tdw"`` (any other value
    of :func:`~mindhelper_env.world.houses.resolve_houses` works too).

    ## Version History

    * v3 (0.8.0): ``mh-gen-3.2`` episodes (timings drawn in the base, 96 ticks), as
      ``MindHelper-VirtualHome-v3``; v2 keeps ``mh-gen-3.1``.
    * v2 (0.6.0): ``mh-gen-3.1`` episodes (sight perception), as
      ``MindHelper-VirtualHome-v2``; v1 keeps ``mh-gen-3.0``.
    * v1 (0.5.0): ``mh-gen-3.0`` episodes and narration 1, as ``MindHelper-VirtualHome-v1``;
      v0 keeps ``mh-gen-2.5`` and narration 0.
    * v0 (0.3.0): initial release.
    """

    def __init__(self, *args: Any, house: Any = "tdw", **kwargs: Any) -> None:
        super().__init__(*args, house=house, **kwargs)
