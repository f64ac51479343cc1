"""Gymnasium wrappers for the MindHelper envs (installed as ``mindhelper_env.wrappers``).

>>> import gymnasium as gym
>>> from mindhelper_env.wrappers import PrecisionInterventionMetrics
>>> env = PrecisionInterventionMetrics(gym.make("MindHelper-VirtualHome-v3"))

For RL libraries: :class:`BagOfWordsObs` (text -> ``Box``) and :class:`CandidateActions`
(``Discrete`` with action masks); :func:`make_rl_env` applies both. :class:`WindowImage`
turns the vision track's window of frames (``obs_mode="rgb"``) into one image for image
wrappers and CNN policies.
"""

from __future__ import annotations

from mindhelper_env.wrappers.frames import WINDOW_IMAGE_MODES, WindowImage
from mindhelper_env.wrappers.metrics import EPISODE_FIELDS, PrecisionInterventionMetrics
from mindhelper_env.wrappers.rl import BagOfWordsObs, CandidateActions, make_rl_env

__all__ = ["PrecisionInterventionMetrics", "EPISODE_FIELDS", "BagOfWordsObs",
           "CandidateActions", "make_rl_env", "WindowImage", "WINDOW_IMAGE_MODES"]
