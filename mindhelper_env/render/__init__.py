"""Rendering: top-down RGB frames, episode timelines and videos.

* :class:`TopDownRenderer` — the ``rgb_array`` render mode: a floor plan of the household with
  furniture, visible objects, people, the red robot and the window's captions.
* :func:`plot_timeline` — one lane per actor, the intervention window and the robot's actions.
* :func:`write_video` — frames to ``.gif`` / ``.mp4``.
* :func:`record_episode` / :func:`save_episode_media` — play an episode and save its video and
  timeline (``mindhelper render``).
* :mod:`mindhelper_env.render.text` — the narration of the text observation and ``ansi`` mode.

Importing this package is cheap: Pillow, matplotlib and imageio are imported only when a
function needs them (install them with ``pip install 'mindhelper-env[video]'``).
"""

from __future__ import annotations

from mindhelper_env.render.episode import EpisodeRecording, record_episode, save_episode_media
from mindhelper_env.render.timeline import TIMELINE_FORMATS, plot_timeline, validate_timeline_record
from mindhelper_env.render.topdown import (
    CHARACTER_KINDS,
    ROBOT_COLOR,
    TopDownRenderer,
    actor_labels,
)
from mindhelper_env.render.video import VIDEO_FORMATS, write_video

__all__ = [
    "TopDownRenderer",
    "actor_labels",
    "CHARACTER_KINDS",
    "ROBOT_COLOR",
    "plot_timeline",
    "validate_timeline_record",
    "TIMELINE_FORMATS",
    "write_video",
    "VIDEO_FORMATS",
    "EpisodeRecording",
    "record_episode",
    "save_episode_media",
]
