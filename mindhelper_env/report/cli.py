"""The ``mindhelper report`` subcommand and the ``evaluate --report`` hook.

``add_parser(subparsers, parents)`` registers ``report``; ``run(args)`` builds the report;
``check_extra()`` (before ``evaluate`` touches a file) and ``after_evaluate(out, workers)``
are what ``evaluate --report`` calls. Errors are ``ValueError`` with one line (the command
prints ``mindhelper: error: ...`` and exits 2).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run", "check_extra", "after_evaluate", "print_belief", "REPORT_DIR"]

#: Where ``evaluate --report`` writes the report, inside ``--out``.
REPORT_DIR = "report"


def _nonnegative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0 or value > 2**32 - 1:
        raise argparse.ArgumentTypeError(f"expected 0 to {2**32 - 1}, got {value}")
    return value


def _resamples(text: str) -> int:
    value = _nonnegative(text)
    if not 100 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"expected 100 to 100000, got {value}")
    return value


def _workers(text: str) -> int:
    value = _nonnegative(text)
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"expected 1 to 64, got {value}")
    return value


def add_parser(subparsers: Any, parents: list[argparse.ArgumentParser] | None = None) -> Any:
    """Register ``mindhelper report RUN_DIR [RUN_DIR ...] --out DIR``."""
    p = subparsers.add_parser(
        "report", parents=parents or [],
        help="write a static HTML report (leaderboard, intervals, episode viewer) of runs")
    p.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                   help="folders written by mindhelper evaluate (one suite)")
    p.add_argument("--out", required=True, type=Path,
                   help="folder of the report (index.html, episodes.html, episodes/)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the report already in --out (a folder holding anything "
                        "else is refused; without this flag --out must be new or empty)")
    p.add_argument("--seed", type=_nonnegative, default=0,
                   help="seed of the bootstrap intervals (default 0; same seed, same bounds)")
    p.add_argument("--resamples", type=_resamples, default=2000,
                   help="bootstrap resamples (default 2000)")
    p.add_argument("--workers", type=_workers, default=None,
                   help="processes replaying episodes (default: the CPUs)")
    p.set_defaults(func=run)
    return p


def check_extra() -> None:
    """``ValueError`` naming the ``report`` extra when it is not installed."""
    from mindhelper_env.report import check_report_extra

    try:
        check_report_extra()
    except ImportError as exc:
        raise ValueError(str(exc)) from None


def _say(result: dict[str, Any]) -> None:
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in result["timings"].items())
    from mindhelper_env.report.explain import plural

    sys.stderr.write(f"report: {result['index']} ({plural(result['pages'], 'episode page')} in "
                     f"{result['seconds']:.1f} s: {stages})\n")


def run(args: argparse.Namespace) -> int:
    check_extra()
    from mindhelper_env.report.build import ReportError, write_report

    for d in args.run_dirs:
        if not d.is_dir():
            raise ValueError(f"{d}: no such folder")
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"argument --out: {args.out} exists and is not a directory")
    try:
        result = write_report(args.out, args.run_dirs, seed=args.seed,
                              resamples=args.resamples, workers=args.workers,
                              overwrite=args.overwrite)
    except ReportError as exc:
        raise ValueError(str(exc)) from None
    _say(result)
    return 0


def after_evaluate(out: Path, workers: int | None = None) -> dict[str, Any]:
    """``evaluate --report``: the report of ``out`` in ``out/report``, replayed in ``workers``
    processes (default: the CPUs, whatever ``evaluate --workers`` was)."""
    from mindhelper_env.report.build import write_report

    # the run's own report, rebuilt after every (resumed) evaluation
    result = write_report(Path(out) / REPORT_DIR, [Path(out)], workers=workers, overwrite=True)
    _say(result)
    return result


def print_belief(metrics: dict[str, Any]) -> None:
    """``score``'s belief-accuracy lines (agents with a belief table only; nothing else)."""
    for agent, m in metrics.items():
        b = m.get("belief")
        if not b:
            continue

        def fmt(v: Any) -> str:
            return "n/a" if v is None else f"{float(v):.1f} %"

        line = (f"belief accuracy at the intervention, {agent}: {fmt(b.get('accuracy'))}"
                f" of {b.get('pairs')} (person, object) beliefs, task object "
                f"{fmt(b.get('task_accuracy'))} of {b.get('task_pairs')}, over "
                f"{b.get('episodes')} episodes")
        # folded to the terminal (COLUMNS when set), words never cut
        width = shutil.get_terminal_size((100, 24)).columns
        sys.stdout.write(textwrap.fill(line, width=max(40, width), break_long_words=False,
                                       subsequent_indent="  ") + "\n")
