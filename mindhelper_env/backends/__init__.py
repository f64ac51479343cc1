"""Simulation backends. ``symbolic`` (default) needs no display and no GPU."""

from __future__ import annotations

from mindhelper_env.backends.symbolic import ROBOT_ID, Simulation

__all__ = ["Simulation", "ROBOT_ID"]
