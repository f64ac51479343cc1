"""The event-stream learner on pixels: house-wide timing read off frame differences.

In ``obs_mode="rgb"`` no event list is given; but *something changed* is visible in the
frames. Per window, :func:`~mindhelper_env.agents.event_stream.frame_change_counts` counts,
for every colour of :data:`~mindhelper_env.render.sprites.PALETTE` (read generically: no
sprite, glyph or layout is known to it), how many pixels changed to it and from it between
consecutive frames (the window's frames, and the last frame of the window before), summed
over the window. The same history features as the text stream follow (lag buckets, windows
since each channel was last non-zero, the window index), and the same gradient boosting
(:func:`~mindhelper_env.validity.eventstream.train_stream_model`) learns when to fire. No
parser reads the frames for the decision; the help program, once it fires, is read by the
pixel-perception reference (:class:`~mindhelper_env.agents.event_stream.PixelStreamAgent`).

Frames are drawn at the house's lossless size (:func:`frame_size_for`, docs/vision.md
"Frame size"), given explicitly: the default frame size may change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mindhelper_env.validity.eventstream import (
    LOSSLESS_FRAME_SIZE,
    STREAM_GRID,
    StreamEpisode,
    StreamModel,
    frame_size_for,
    play_specs,
    stream_data,
    train_stream_model,
)

__all__ = ["LOSSLESS_FRAME_SIZE", "frame_size_for", "pixel_stream_data", "train_pixel_model",
           "play_pixels", "PIXEL_GRID"]

#: A smaller grid than the text stream's (the pixel channels are many more).
PIXEL_GRID: dict[str, tuple[Any, ...]] = {"max_depth": (6,), "max_iter": (300,),
                                          "learning_rate": (0.05, 0.1)}


def pixel_stream_data(specs: Sequence[Mapping[str, Any]], *, frame_size: int
                      ) -> list[StreamEpisode]:
    """Silent rollouts in ``obs_mode="rgb"``: per window the colour-change counts."""
    return stream_data(specs, mode="pixels", frame_size=frame_size)


def train_pixel_model(fit: Sequence[StreamEpisode], tune: Sequence[StreamEpisode], *,
                      grid: Mapping[str, Sequence[Any]] = PIXEL_GRID,
                      log: Callable[[str], None] | None = None) -> StreamModel:
    """Gradient boosting on the pixel stream, settings and threshold on ``tune``."""
    from mindhelper_env.agents.event_stream import pixel_channel_names

    return train_stream_model(fit, tune, channels=pixel_channel_names(), grid=grid,
                              transform=np.log1p, log=log)


def play_pixels(episodes: str | Sequence[Mapping[str, Any]], model: Any, *,
                frame_size: int, limit: int | None = None, name: str = "pixel-stream-gbm",
                hedge: str | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play :class:`~mindhelper_env.agents.event_stream.PixelStreamAgent` (firing on
    ``model``) on ``obs_mode="rgb"`` frames of ``frame_size``; returns the records and the
    references (:func:`~mindhelper_env.validity.eventstream.play_specs`)."""
    from mindhelper_env.agents.event_stream import PixelStreamAgent
    from mindhelper_env.validity.eventstream import _hedged

    agent = _hedged(PixelStreamAgent(model, name), hedge)
    return play_specs(episodes, agent, name if not hedge else f"{name}+{hedge}", limit=limit,
                      env_kwargs={"obs_mode": "rgb", "frame_size": frame_size})


__all__ += ["STREAM_GRID"]
