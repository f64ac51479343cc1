"""Simulation backends. ``symbolic`` (default) needs no display and no GPU.

:mod:`mindhelper_env.backends.virtualhome_unity` mirrors symbolic episodes in a running
VirtualHome Unity executable (``MindHelperEnv(backend="virtualhome-unity")``); it is imported
only when used.
"""

from __future__ import annotations

from mindhelper_env.backends.symbolic import ROBOT_ID, Simulation

__all__ = ["Simulation", "ROBOT_ID"]
