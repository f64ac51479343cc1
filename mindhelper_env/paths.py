"""Where MindHelper-Env keeps files on disk.

The lowest layer of the package (it imports nothing from it), so every layer asks here — the
world's TDW house conversion as well as the scenarios' episode pool.

:func:`cache_dir`: ``$MINDHELPER_CACHE_DIR``, else ``$XDG_CACHE_HOME/mindhelper-env``, else
``~/.cache/mindhelper-env`` (episode pools; converted TDW houses under ``tdw-houses/``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """``$MINDHELPER_CACHE_DIR``, else ``$XDG_CACHE_HOME/mindhelper-env``, else
    ``~/.cache/mindhelper-env``."""
    explicit = os.environ.get("MINDHELPER_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "mindhelper-env"
