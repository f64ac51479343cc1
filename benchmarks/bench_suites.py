"""Time suite generation, export and validation (``python benchmarks/bench_suites.py``).

Each measurement starts from a cold cache (the suite module's caches are cleared). The dev
suite is timed ``--repeat`` times (median reported); the test suite once by default, since
one cold generation takes several seconds.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mindhelper_env.scenarios import suites as S

logger = logging.getLogger("bench_suites")


def _clear() -> None:
    S._episode_json.cache_clear()
    S._references_json.cache_clear()


def _time(fn: Callable[[], object], repeat: int, *, cold: bool = True) -> list[float]:
    out = []
    for _ in range(repeat):
        if cold:
            _clear()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and log a table."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=3, help="runs for the dev suites (median)")
    p.add_argument("--test-repeat", type=int, default=1, help="runs for the test suites")
    p.add_argument("--suites", default="vh-dev-v2,vh-test-v2,vh-dev-v5,vh-test-v5",
                   help="comma-separated suites (a name with 'dev' uses --repeat); the v2 and "
                        "v5 pairs compare the generators mh-gen-2.5 and mh-gen-3.2 in one run")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger(S.__name__).setLevel(logging.WARNING)

    rows: list[tuple[str, str, int, list[float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.suites.split(","):
            repeat = args.repeat if "dev" in name else args.test_repeat
            n = S.SUITES[name]["n"]
            out = Path(tmp) / name
            rows.append((name, "generate (cold)", n, _time(lambda n=name: S.suite_specs(n), repeat)))
            rows.append((name, "generate (cached)", n,
                         _time(lambda n=name: S.suite_specs(n), repeat, cold=False)))
            rows.append((name, "export (cached)", n,
                         _time(lambda n=name, o=out: S.export_suite(n, o), repeat, cold=False)))
            rows.append((name, "validate+replay (cached)", n,
                         _time(lambda o=out: S.validate_suite_dir(o), repeat, cold=False)))
            problems = S.validate_suite_dir(out)
            if problems:
                logger.warning("%s: %d validation problem(s), first: %s", name, len(problems),
                               problems[0])
            rows.append((name, "validate no replay", n,
                         _time(lambda o=out: S.validate_suite_dir(o, replay=False), repeat,
                               cold=False)))
    logger.info("%-11s %-25s %6s %5s %10s %12s", "suite", "step", "eps", "runs", "median s",
                "ms/episode")
    for name, step, n, times in rows:
        med = statistics.median(times)
        logger.info("%-11s %-25s %6d %5d %10.3f %12.2f", name, step, n, len(times), med,
                    1000 * med / n)


if __name__ == "__main__":
    main()
