"""Maintainers: rebuild the shipped files of released suites
(:mod:`mindhelper_env.scenarios.shipped`) after a release::

    python -m mindhelper_env.scenarios.ship vh-dev-v5 vh-test-v5 tdw-dev-v5 tdw-test-v5 \\
        vh-scene1-dev-v5 --episodes vh-dev-v5,vh-test-v5

What ships: the references of every current released suite (the v2 to v5 ones) and
the episodes of vh-dev-v5 and vh-test-v5. Every suite is generated (the shipped files
turned off) and its reference checked against
the ledger's digest before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mindhelper_env.scenarios import releases as _releases
from mindhelper_env.scenarios import suites as _suites
from mindhelper_env.scenarios.shipped import (
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    OFF_VARIABLE,
    SHIPPED_DIR,
    clear_cache,
)

__all__ = ["build", "main"]


def _write_xz(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    os.replace(tmp, path)


def build(names: Sequence[str], *, episodes: Sequence[str] = (),
          folder: Path | None = None) -> dict[str, dict[str, Any]]:
    """Generate the released suites ``names`` (the shipped files turned off) and write their
    ``<name>.reference.jsonl.xz``, and for those also in ``episodes`` their
    ``<name>.episodes.jsonl.xz`` with its manifest entry. ``ValueError`` when a generated
    reference does not hash to the ledger's digest (the generator changed: release new
    names). Returns the manifest entries written."""
    folder = Path(folder or SHIPPED_DIR)
    saved = os.environ.get(OFF_VARIABLE)
    os.environ[OFF_VARIABLE] = "1"
    written: dict[str, dict[str, Any]] = {}
    try:
        for name in names:
            rel = _releases.release_of(name)
            if rel is None or not rel.current:
                raise ValueError(f"{name!r} is not a current released suite")
            _suites._episode_json.cache_clear()
            texts = [_suites._episode_json(name, i) for i in range(rel.episodes)]
            specs = [json.loads(t) for t in texts]
            reference = "".join(json.dumps(_suites.reference_record(s), sort_keys=True,
                                           separators=(",", ":")) + "\n"
                                for s in specs).encode()
            if hashlib.sha256(reference).hexdigest() != rel.reference_sha256:
                raise ValueError(f"{name}: the generated reference.jsonl does not hash to "
                                 "the ledger's reference_sha256")
            _write_xz(folder / f"{name}.reference.jsonl.xz", reference)
            if name in episodes:
                lines = "".join(t + "\n" for t in texts).encode()
                _write_xz(folder / f"{name}.episodes.jsonl.xz", lines)
                written[name] = {"generator": rel.generator, "episodes": rel.episodes,
                                 "episodes_sha256": hashlib.sha256(lines).hexdigest()}
    finally:
        if saved is None:
            os.environ.pop(OFF_VARIABLE, None)
        else:
            os.environ[OFF_VARIABLE] = saved
    if written:
        path = folder / MANIFEST_FILE
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        suites = {**(data.get("suites") or {}), **written}
        path.write_text(json.dumps({"format": MANIFEST_FORMAT, "suites": dict(sorted(
            suites.items()))}, indent=1) + "\n", encoding="utf-8")
    clear_cache()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Rebuild the shipped files of released suites.")
    ap.add_argument("names", nargs="+", help="released suite names")
    ap.add_argument("--episodes", default="", help="comma-separated: also ship their specs")
    args = ap.parse_args(argv)
    build(args.names, episodes=[n for n in args.episodes.split(",") if n])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
