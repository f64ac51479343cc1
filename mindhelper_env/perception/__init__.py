"""The pixel-perception reference of the vision track (issue 51, docs/vision.md).

It reads only the frames of ``obs_mode="rgb"`` and ``info["candidates"]`` (ids and classes),
with the renderer's picture language (:mod:`mindhelper_env.render.sprites`), and imports
nothing of the world, the actors or the scenarios (``tests/test_layout.py`` checks it):

* :class:`PixelPerception` — ``reset(frames, info)``, then ``observe(frames, info)`` per
  window -> :class:`Perceived` (the window's events in the package's event schema and the
  state the last frame shows);
* :func:`text_view` — a :class:`Perceived` window as the ``(obs, info)`` text mode would have
  given, so an unchanged text agent runs on pixels (the ``observe="pixels"`` agent option,
  :mod:`mindhelper_env.agents.perceive`);
* :class:`EventScore` — per-verb precision and recall of perceived events against the text
  events (``benchmarks/bench_perception.py``).
"""

from mindhelper_env.perception.parser import (
    ARGS_FROM,
    MIN_FRAME_SIZE,
    PerceptionError,
    PixelPerception,
)
from mindhelper_env.perception.score import EventScore, VerbScore, event_key
from mindhelper_env.perception.view import Perceived, SceneState, text_view

__all__ = ["PixelPerception", "PerceptionError", "Perceived", "SceneState", "text_view",
           "EventScore", "VerbScore", "event_key", "ARGS_FROM", "MIN_FRAME_SIZE"]
