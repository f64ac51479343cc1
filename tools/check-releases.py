#!/usr/bin/env python3
"""Regenerate released suites whole and compare them with the release ledger.

    python tools/check-releases.py                 # every current suite (about 15 minutes
                                                   # on two cores)
    python tools/check-releases.py vh-test-v5 ...  # the suites named

For each suite: the suite is exported from the generator (the shipped pre-built files turned
off) and the sha256 of its ``public.jsonl`` and ``reference.jsonl`` must equal the ledger's
``public_sha256`` and ``reference_sha256``; where the ledger records a ``spec_sha256`` (v4 on),
the digest of every episode spec must equal it too. Prints one line per suite and exits 1
when any differs (2 for an unknown suite name). Run it before a release and after any change
to the generator or the houses (docs/data-format.md, docs/contributing.md); the test suite
checks the dev suites whole and a sample of each 1,000-episode suite
(tests/test_releases.py), which this script completes.

Suites set in TDW houses need the tdw extra, those in VirtualHome's TrimmedTestScene1
virtualhome-eval: a suite whose houses are missing is reported and fails the run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path


def check_suite(name: str, out: Path) -> list[str]:
    """The differences between suite ``name`` regenerated whole and its ledger entry (empty
    when it reproduces its release). ``out``: a scratch folder for the export."""
    from mindhelper_env.scenarios import releases, shipped
    from mindhelper_env.scenarios import suites as S

    rel = releases.release_of(name)
    if rel is None:
        return [f"{name}: not in the release ledger"]
    previous = os.environ.get(shipped.OFF_VARIABLE)
    os.environ[shipped.OFF_VARIABLE] = "1"
    S._episode_json.cache_clear()
    try:
        folder = S.export_suite(name, out / name)
        got = {f: hashlib.sha256((folder / f).read_bytes()).hexdigest()
               for f in (S.PUBLIC_FILE, S.REFERENCE_FILE)}
        spec = S.spec_digest(name) if rel.spec_sha256 is not None else None
    finally:
        if previous is None:
            os.environ.pop(shipped.OFF_VARIABLE, None)
        else:
            os.environ[shipped.OFF_VARIABLE] = previous
        S._episode_json.cache_clear()
    problems = [f"{name}: {f} has sha256 {got[f]}, the release {want}"
                for f, want in rel.digests().items() if got.get(f) != want]
    if spec is not None and spec != rel.spec_sha256:
        problems.append(f"{name}: the episode specs have sha256 {spec}, the release "
                        f"{rel.spec_sha256}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="*", help="suite names (default: every current suite)")
    args = parser.parse_args(argv)
    from mindhelper_env.scenarios import releases
    from mindhelper_env.scenarios import suites as S

    names = args.suites or [r.name for r in releases.releases() if r.current]
    unknown = [n for n in names if n not in S.SUITES]
    if unknown:
        print(f"check-releases: unknown or withdrawn suite(s): {', '.join(unknown)}",
              file=sys.stderr)
        return 2
    failed = 0
    with tempfile.TemporaryDirectory(prefix="mindhelper-releases-") as tmp:
        for name in names:
            t0 = time.perf_counter()
            try:
                problems = check_suite(name, Path(tmp))
            except (ImportError, RuntimeError, ValueError) as err:
                problems = [f"{name}: cannot regenerate ({type(err).__name__}: {err})"]
            seconds = time.perf_counter() - t0
            if problems:
                failed += 1
                print(f"FAIL {name} ({seconds:.0f} s)")
                for line in problems:
                    print(f"     {line}")
            else:
                print(f"ok   {name} ({seconds:.0f} s)")
            sys.stdout.flush()
    print(f"{len(names) - failed} of {len(names)} suites reproduce their release")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
