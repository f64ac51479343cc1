"""The vision track's window of frames as one image, for image-based RL libraries.

With ``obs_mode="rgb"`` the household envs observe a ``(window_ticks, H, W, 3)`` uint8 array,
one frame per tick of the window. Gymnasium's image wrappers (``ResizeObservation``,
``GrayscaleObservation``) and stable-baselines3's ``CnnPolicy`` expect one image, ``(H, W,
C)``. :class:`WindowImage` gives them one:

* ``mode="last"``: the last frame of the window, ``(H, W, 3)``: what the robot sees when it
  acts. Stack several windows with ``gymnasium.wrappers.FrameStackObservation``;
* ``mode="channels"``: every frame of the window side by side in the channel axis, ``(H, W,
  3 * window_ticks)`` (frame ``k`` in channels ``3k .. 3k+2``), so a CNN sees the whole
  window (what happened at each tick) in one input.

>>> import gymnasium as gym
>>> from gymnasium.wrappers import GrayscaleObservation, ResizeObservation
>>> from mindhelper_env.wrappers import WindowImage
>>> env = gym.make("MindHelper-VirtualHome-v3", obs_mode="rgb", frame_size=128)
>>> env = GrayscaleObservation(ResizeObservation(WindowImage(env), (84, 84)))
>>> env.observation_space.shape
(84, 84)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["WindowImage", "WINDOW_IMAGE_MODES"]

#: The modes of :class:`WindowImage`.
WINDOW_IMAGE_MODES = ("last", "channels")


class WindowImage(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """A ``(T, H, W, 3)`` window of frames as one ``(H, W, C)`` uint8 image: the last frame
    (``mode="last"``, ``C = 3``) or all frames in the channel axis (``mode="channels"``,
    ``C = 3 T``). The env must observe a ``Box`` of that shape (``obs_mode="rgb"``); anything
    else raises ``ValueError`` at construction."""

    def __init__(self, env: gym.Env, mode: str = "last") -> None:
        if mode not in WINDOW_IMAGE_MODES:
            raise ValueError(f"mode must be one of {list(WINDOW_IMAGE_MODES)}, got {mode!r}")
        space = env.observation_space
        if not (isinstance(space, spaces.Box) and space.dtype == np.uint8
                and len(space.shape) == 4 and space.shape[-1] == 3):
            raise ValueError("WindowImage needs a (window_ticks, H, W, 3) uint8 Box "
                             "observation: make the env with obs_mode='rgb' "
                             f"(got {space})")
        gym.utils.RecordConstructorArgs.__init__(self, mode=mode)
        gym.ObservationWrapper.__init__(self, env)
        self.mode = mode
        t, h, w, _ = space.shape
        channels = 3 if mode == "last" else 3 * t
        self.observation_space = spaces.Box(0, 255, (h, w, channels), np.uint8)

    def observation(self, observation: Any) -> np.ndarray:
        frames = np.asarray(observation)
        if self.mode == "last":
            return np.ascontiguousarray(frames[-1])
        # (T, H, W, 3) -> (H, W, T, 3) -> (H, W, 3T)
        t, h, w, c = frames.shape
        return np.ascontiguousarray(frames.transpose(1, 2, 0, 3)).reshape(h, w, t * c)
