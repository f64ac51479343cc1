"""MindHelper-Env: Gymnasium environments for closed-loop precision intervention.

Importing the package registers the environments (``MindHelper-VirtualHome-v3`` ...).
Heavy dependencies (torch, stable-baselines3, openai, matplotlib, imageio) are only imported
by the modules that need them.
"""

from __future__ import annotations

from importlib import metadata as _metadata

try:  # the installed distribution's version (semantic versioning; pyproject.toml)
    __version__: str = _metadata.version("mindhelper-env")
except _metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

from mindhelper_env.envs.registration import register_envs as _register_envs

_register_envs()

__all__ = ["__version__"]
