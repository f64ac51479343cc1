"""MkDocs hooks of the docs site (``mkdocs.yml``: ``hooks``).

The API reference is read from the sources by griffe (mkdocstrings' Python handler), which
finds a package by its folder. ``mindhelper_env.agents`` and ``mindhelper_env.wrappers`` live
in ``agents/`` and ``wrappers/`` (pyproject.toml's ``package-dir``), outside
``mindhelper_env/``, so before each build this hook lays out ``build/api-src/mindhelper_env``:
links to every entry of ``mindhelper_env/`` plus ``agents`` and ``wrappers``, the package as it
installs. Nothing is copied; the links are remade at every build.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
API_SRC = ROOT / "build" / "api-src"
#: Sub-packages that pyproject.toml maps to folders outside ``mindhelper_env/``.
MAPPED = {"agents": ROOT / "agents", "wrappers": ROOT / "wrappers"}


def lay_out_sources() -> Path:
    """(Re)make ``build/api-src/mindhelper_env`` and return ``build/api-src``."""
    pkg = API_SRC / "mindhelper_env"
    if API_SRC.exists():
        shutil.rmtree(API_SRC)
    pkg.mkdir(parents=True)
    for entry in sorted((ROOT / "mindhelper_env").iterdir()):
        if entry.name == "__pycache__" or entry.name in MAPPED:
            continue
        (pkg / entry.name).symlink_to(entry)
    for name, folder in MAPPED.items():
        (pkg / name).symlink_to(folder)
    return API_SRC


def on_startup(**kwargs) -> None:
    lay_out_sources()
