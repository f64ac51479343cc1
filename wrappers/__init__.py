"""Gymnasium wrappers for the MindHelper envs (installed as ``mindhelper_env.wrappers``).

>>> import gymnasium as gym
>>> from mindhelper_env.wrappers import PrecisionInterventionMetrics
>>> env = PrecisionInterventionMetrics(gym.make("MindHelper-VirtualHome-v0"))
"""

from __future__ import annotations

from mindhelper_env.wrappers.metrics import EPISODE_FIELDS, PrecisionInterventionMetrics

__all__ = ["PrecisionInterventionMetrics", "EPISODE_FIELDS"]
