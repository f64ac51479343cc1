"""Scenario families, episode generation with validation, ground truth and suites."""

from __future__ import annotations

from mindhelper_env.scenarios.generator import generate_episode, sample_episode
from mindhelper_env.scenarios.spec import (
    FAMILIES,
    GENERATOR_VERSION,
    HELP_FAMILIES,
    SILENT_FAMILIES,
    Reference,
)

__all__ = [
    "FAMILIES",
    "HELP_FAMILIES",
    "SILENT_FAMILIES",
    "GENERATOR_VERSION",
    "Reference",
    "generate_episode",
    "sample_episode",
]
