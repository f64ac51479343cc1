"""Any text-reading agent on the vision track: ``observe="pixels"``.

:class:`PixelFed` wraps an agent written for ``obs_mode="text"`` (the belief tracker, the
validity instruments, a user's agent) so that it plays an env made with ``obs_mode="rgb"``:
each window's frames go through the pixel-perception reference
(:class:`~mindhelper_env.perception.PixelPerception`), and the inner agent gets the ``obs``
and ``info`` text mode would have given it, rebuilt from what the frames show
(:func:`~mindhelper_env.perception.text_view`: the events, and the rooms, holdings,
locations and open states of ``info["candidates"]``; no narration).

>>> from mindhelper_env.agents import make_agent
>>> agent = make_agent("belief-tracker", observe="pixels")    # doctest: +SKIP

Every registered agent whose factory has no ``observe`` option of its own takes
``observe="pixels"`` this way (CLI: ``--agent belief-tracker:observe=pixels``); MindClaw
reads its ``observe`` itself and reuses :class:`PixelFed`'s perception.

The wrapper forwards every other attribute (``usage``, ``trace``, ``belief_snapshot``...) to
the inner agent; ``perception_stats`` counts windows and unreadable marks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mindhelper_env.perception import PixelPerception, text_view

__all__ = ["PixelFed", "OBSERVE_MODES", "wrap_observe"]

#: The values of the ``observe`` option: the env's text as it is, or perception of pixels.
OBSERVE_MODES = ("text", "pixels")


class PixelFed:
    """``inner`` fed from pixels (see the module docstring)."""

    observe = "pixels"

    def __init__(self, inner: Any, perception: PixelPerception | None = None) -> None:
        self.inner = inner
        self.perception = perception if perception is not None else PixelPerception()
        self._first = True
        #: the last window's perceived (obs, info), as the inner agent got them
        self.last_view: tuple[dict[str, Any], dict[str, Any]] | None = None

    @property
    def name(self) -> str:
        return str(getattr(self.inner, "name", type(self.inner).__name__))

    def __getattr__(self, attr: str) -> Any:
        # only called for what the wrapper lacks; "inner" itself must exist (unpickling)
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    @property
    def perception_stats(self) -> dict[str, int]:
        return dict(self.perception.stats)

    def reset(self, *, seed: int | None = None) -> None:
        self._first = True
        self.last_view = None
        self.inner.reset(seed=seed)

    def perceive(self, observation: Any, info: dict[str, Any]) -> tuple[dict[str, Any],
                                                                         dict[str, Any]]:
        """The text-mode ``(obs, info)`` of this window, read from its frames."""
        frames = observation.get("rgb") if isinstance(observation, dict) else observation
        if not isinstance(frames, np.ndarray) or frames.ndim != 4 or frames.shape[-1] != 3:
            raise ValueError(
                "observe='pixels' needs the frames of an env made with obs_mode='rgb' "
                f"(an array (ticks, H, W, 3)); got {type(observation).__name__}")
        if self._first:
            perceived = self.perception.reset(frames, info)
            self._first = False
        else:
            perceived = self.perception.observe(frames, info)
        view = text_view(perceived, info)
        self.last_view = view
        return view

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        obs, text_info = self.perceive(observation, info)
        return self.inner.act(obs, text_info)


def wrap_observe(agent: Any, observe: Any) -> Any:
    """``agent`` itself for ``observe="text"``, :class:`PixelFed` for ``"pixels"``;
    ``ValueError`` for anything else."""
    if observe in (None, "text"):
        return agent
    if observe == "pixels":
        return PixelFed(agent)
    raise ValueError(f"observe must be one of {', '.join(map(repr, OBSERVE_MODES))}, "
                     f"got {observe!r}")
