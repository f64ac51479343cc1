"""Released suites shipped pre-built, so that scoring a record is a lookup.

A released suite's episodes never change (:mod:`~mindhelper_env.scenarios.releases`), yet
rebuilding one costs the generator's full validation, ~0.1 s an episode: ``score`` of a
1,000-episode suite spent most of a minute rebuilding the references it checks each record
against, and ``report`` as long again replaying the episodes. The package therefore ships,
in ``scenarios/suites/``:

* ``<name>.reference.jsonl.xz``: the suite's ``reference.jsonl`` exactly as
  :func:`~mindhelper_env.scenarios.suites.export_suite` writes it. It is used only when the
  sha256 of its bytes equals the ``reference_sha256`` the release ledger froze for the
  suite, so a shipped reference is the released one or is not used at all.
* ``<name>.episodes.jsonl.xz`` (some suites): every episode spec, line ``i`` the canonical
  JSON of episode ``i`` as the generator builds it. It is used only when the sha256 of its
  bytes equals the one in ``shipped.json`` (the manifest beside it, which also names the
  generator that built the file: it must be the ledger's), and its line count is the
  suite's.

A file that is missing or fails its check is not used: the suite is generated as before, and
a file that fails is logged once (a warning naming the file). ``MINDHELPER_GENERATE_SUITES=1``
turns the shipped files off (the release tests regenerate every suite). Maintainers rebuild
the files after releasing suites with ``python -m mindhelper_env.scenarios.ship NAME ...``
(:func:`mindhelper_env.scenarios.ship.build`); ``tests/test_releases_shipped.py`` checks
them against the generator.
"""

from __future__ import annotations

import hashlib
import json
import logging
import lzma
import os
from functools import cache
from pathlib import Path
from typing import Any

from mindhelper_env.scenarios import releases as _releases

__all__ = ["SHIPPED_DIR", "MANIFEST_FILE", "MANIFEST_FORMAT", "OFF_VARIABLE", "enabled",
           "reference_lines", "episode_lines", "shipped_suites", "clear_cache"]

#: Where the files ship (beside the release ledger).
SHIPPED_DIR = Path(__file__).with_name("suites")
#: The manifest of the episode files.
MANIFEST_FILE = "shipped.json"
MANIFEST_FORMAT = "mindhelper-shipped-suites-1"
#: ``MINDHELPER_GENERATE_SUITES=1``: never use the shipped files.
OFF_VARIABLE = "MINDHELPER_GENERATE_SUITES"

logger = logging.getLogger(__name__)


def enabled() -> bool:
    """Whether the shipped files are used (``$MINDHELPER_GENERATE_SUITES`` is not ``1``)."""
    return os.environ.get(OFF_VARIABLE) != "1"


def _read(path: Path) -> bytes | None:
    if not path.is_file():
        return None
    try:
        return lzma.decompress(path.read_bytes())
    except (OSError, lzma.LZMAError) as err:
        logger.warning("%s does not decompress (%s): the suite is generated instead", path, err)
        return None


def _lines(data: bytes, n: int, path: Path) -> tuple[str, ...] | None:
    lines = tuple(data.decode("utf-8").splitlines())
    if len(lines) != n:
        logger.warning("%s holds %d lines, the suite %d episodes: the suite is generated "
                       "instead", path, len(lines), n)
        return None
    return lines


@cache
def _reference_lines(name: str, folder: str) -> tuple[str, ...] | None:
    rel = _releases.release_of(name)
    path = Path(folder) / f"{name}.reference.jsonl.xz"
    if rel is None or not rel.reference_sha256:
        return None
    data = _read(path)
    if data is None:
        return None
    digest = hashlib.sha256(data).hexdigest()
    if digest != rel.reference_sha256:
        logger.warning("%s has sha256 %s, the release ledger %s for %s: the suite is "
                       "generated instead", path, digest[:12], rel.reference_sha256[:12], name)
        return None
    return _lines(data, rel.episodes, path)


def reference_lines(name: str) -> tuple[str, ...] | None:
    """The lines of released suite ``name``'s ``reference.jsonl`` (episode ``i`` on line
    ``i``), from the shipped file whose bytes hash to the ledger's ``reference_sha256``;
    ``None`` when there is none, it fails that check, or the files are turned off."""
    return _reference_lines(name, str(SHIPPED_DIR)) if enabled() else None


@cache
def _manifest(folder: str) -> dict[str, Any]:
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        logger.warning("%s is not JSON (%s): no shipped episodes are used", path, err)
        return {}
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT \
            or not isinstance(data.get("suites"), dict):
        logger.warning("%s is not a %s manifest: no shipped episodes are used", path,
                       MANIFEST_FORMAT)
        return {}
    return dict(data["suites"])


@cache
def _episode_lines(name: str, folder: str) -> tuple[str, ...] | None:
    rel = _releases.release_of(name)
    entry = _manifest(folder).get(name)
    path = Path(folder) / f"{name}.episodes.jsonl.xz"
    if rel is None or not isinstance(entry, dict):
        return None
    if entry.get("generator") != rel.generator:
        logger.warning("%s was built by generator %s, the suite was released with %s: the "
                       "suite is generated instead", path, entry.get("generator"), rel.generator)
        return None
    data = _read(path)
    if data is None:
        return None
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.get("episodes_sha256"):
        logger.warning("%s has sha256 %s, its manifest %s: the suite is generated instead",
                       path, digest[:12], str(entry.get("episodes_sha256"))[:12])
        return None
    return _lines(data, rel.episodes, path)


def episode_lines(name: str) -> tuple[str, ...] | None:
    """The canonical JSON of every episode spec of released suite ``name`` (episode ``i`` on
    line ``i``), from the shipped file that passes its checks (module docstring); ``None``
    otherwise or when the files are turned off."""
    return _episode_lines(name, str(SHIPPED_DIR)) if enabled() else None


def shipped_suites() -> dict[str, tuple[str, ...]]:
    """``{name: ("reference", "episodes"...)}``: what ships and passes its checks."""
    out: dict[str, tuple[str, ...]] = {}
    for rel in _releases.releases():
        kinds = tuple(k for k, f in (("reference", reference_lines),
                                     ("episodes", episode_lines)) if f(rel.name) is not None)
        if kinds:
            out[rel.name] = kinds
    return out


def clear_cache() -> None:
    """Forget what was read (after the files or the ledger changed)."""
    _reference_lines.cache_clear()
    _episode_lines.cache_clear()
    _manifest.cache_clear()
