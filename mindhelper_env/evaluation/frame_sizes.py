"""Frame sizes of vision-track runs (``obs_mode="rgb"``): the lossless size of a suite, the
default of ``evaluate``, Inspect and ``play``, and the refusal of pixel-reading agents at a
lossy size.

A suite's episodes carry their own houses, so the size that shows every pixel of every
episode is a property of the suite: :func:`suite_frame_size` (pinned for the released suites
in :data:`SUITE_FRAME_SIZES`, which never change; measured episode by episode for any other).
An rgb run without ``frame_size`` is played at that size (:func:`rgb_env_kwargs`; run.json
records it). An agent that reads the pixels (:func:`pixel_agents`: ``observe="pixels"``,
``mindclaw-pixels``) cannot read a sampled-down frame, so a smaller ``frame_size`` is refused
before any file is written (:func:`check_frame_size`); for the other agents it is warned
about once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SUITE_FRAME_SIZES", "suite_frame_size", "rgb_env_kwargs", "pixel_agents",
           "check_frame_size", "PIXEL_AGENTS"]

#: The smallest frame size lossless for every episode of each released suite (the largest
#: canvas over its episodes; ``tests/test_frame_size.py`` remeasures the dev suites and
#: ``benchmarks/bench_frames.py`` every one).
SUITE_FRAME_SIZES: dict[str, int] = {
    "vh-dev-v5": 512, "vh-test-v5": 520, "tdw-dev-v5": 708, "tdw-test-v5": 716,
    "vh-scene1-dev-v5": 432, "vh-dev-v4": 504, "tdw-dev-v4": 708, "vh-scene1-dev-v4": 432,
    "vh-test-v4": 512, "tdw-test-v4": 716,
}
#: Registered agents that read the frames' pixels whatever their options.
PIXEL_AGENTS = frozenset({"mindclaw-pixels"})


def suite_frame_size(suite: str) -> int:
    """The smallest frame size that shows every episode of ``suite`` without losing a pixel
    (:data:`SUITE_FRAME_SIZES`, else measured: every episode laid out from its candidates)."""
    pinned = SUITE_FRAME_SIZES.get(suite)
    if pinned is not None:
        return pinned
    return measure_suite_frame_size(suite)


_MEASURED: dict[tuple[str, int | None], int] = {}


def measure_suite_frame_size(suite: str, limit: int | None = None) -> int:
    """The largest canvas (``layout.lossless_size``) over the episodes of ``suite`` (the
    first ``limit``), each reset in ``rgb`` mode on the suite's env."""
    key = (suite, limit)
    if key in _MEASURED:
        return _MEASURED[key]
    import warnings

    from mindhelper_env.envs.frame_size import LossyFrameWarning
    from mindhelper_env.evaluation.episode import make_env, suite_env_id
    from mindhelper_env.scenarios.suites import SUITES

    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}")
    n = int(SUITES[suite]["n"])
    n = n if limit is None else min(n, int(limit))
    env = make_env(suite_env_id(suite), obs_mode="rgb", frame_size=64,
                   disable_env_checker=True).unwrapped
    best = 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LossyFrameWarning)
            for i in range(n):
                env.reset(options={"suite": suite, "index": i})
                best = max(best, env.vision.renderer.layout.lossless_size)
    finally:
        env.close()
    _MEASURED[key] = best
    return best


def rgb_env_kwargs(suite: str, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``env_kwargs`` with ``frame_size`` set to :func:`suite_frame_size` for an ``rgb`` run
    that gives none (other runs unchanged)."""
    out = dict(env_kwargs)
    if out.get("obs_mode") == "rgb" and out.get("frame_size") is None:
        try:
            out["frame_size"] = suite_frame_size(suite)
        except ValueError:  # an unknown suite: refused by check_suite
            pass
    return out


def pixel_agents(agents: Sequence[str],
                 agent_kwargs: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """The agents of a run that read the frames' pixels: ``observe="pixels"`` in their
    options (:class:`~mindhelper_env.agents.perceive.PixelFed`, MindClaw's pixel eyes) or a
    registered pixel reader (:data:`PIXEL_AGENTS`), hedged or not."""
    from mindhelper_env.agents.hedge import strip_hedges

    out = []
    for name in agents:
        opts = (agent_kwargs or {}).get(name) or {}
        if opts.get("observe") == "pixels" or strip_hedges(str(name))[0] in PIXEL_AGENTS:
            out.append(str(name))
    return out


def check_frame_size(suite: str, env_kwargs: Mapping[str, Any], agents: Sequence[str],
                     agent_kwargs: Mapping[str, Mapping[str, Any]] | None) -> None:
    """For an ``rgb`` run: ``ValueError`` (one line) when an agent reads pixels and
    ``frame_size`` is below the suite's lossless size; a warning (once per run) when another
    agent plays at such a size."""
    if env_kwargs.get("obs_mode") != "rgb":
        return
    size = env_kwargs.get("frame_size")
    need = suite_frame_size(suite)
    if size is None or not isinstance(size, int) or size >= need:
        return
    readers = pixel_agents(agents, agent_kwargs)
    if readers:
        raise ValueError(
            f"frame_size={size} is below {suite}'s lossless size ({need} px): {readers[0]} "
            f"reads pixels and cannot read sampled-down frames; use a frame size of {need} "
            "px or more (--frame-size), or leave it out (the lossless default)")
    from mindhelper_env.envs.frame_size import warn_lossy

    warn_lossy(size, need)
