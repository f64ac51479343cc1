"""``mindhelper score``: recompute every metric from result records (several trials: the
mean, a 95 % interval over trials and PHR's pass^k)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mindhelper_env.cli.base import EXIT_OK, CLIError, flag, path_arg
from mindhelper_env.cli.tables import FORMATS, model_warnings, print_efficiency, print_results


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    sc = sub.add_parser("score", parents=[common],
                        help="recompute every metric from result records")
    sc.add_argument("files", nargs="+", type=path_arg, help="result JSONL files (<agent>.jsonl)")
    sc.add_argument("--suite", required=True, help="the suite the records belong to")
    sc.add_argument("--format", choices=FORMATS, default="rich", dest="format",
                    help="rich tables (default), markdown, csv or json")
    sc.add_argument("--json", action="store_const", const="json", dest="format",
                    help="print {agent: {metric: percentage}} (same as --format json)")
    sc.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = score_files(args.files, args.suite)
    print_results(args.format, f"{args.suite}: scored from {len(args.files)} file(s)", result)
    if args.format == "rich":
        from mindhelper_env.report.cli import print_belief

        print_belief(result["metrics"])
        model_warnings(result.get("models"))
        print_efficiency(result["metrics"], result.get("models"))
    return EXIT_OK


def _load_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``[(line, record)]`` of a result file; ``ValueError`` ``"<file>:<line>: <reason>"``."""
    from mindhelper_env.evaluation import read_result_file

    if not path.is_file():
        raise CLIError(f"{path}: no such file")
    return read_result_file(path)


def _validate_record(rec: dict[str, Any]) -> str | None:
    """The first problem the suites' record validator finds, or ``None``."""
    from mindhelper_env.scenarios.suites import validate_result_record

    try:
        problems = validate_result_record(rec)
    except ValueError as exc:
        return str(exc)
    if isinstance(problems, str):
        return problems or None
    if problems:
        return str(list(problems)[0])
    return None


def score_files(files: Sequence[Path], suite: str) -> dict[str, Any]:
    """Read, check and score result files against a suite's references."""
    from mindhelper_env.evaluation import check_suite, suite_episode_ids, summarize
    from mindhelper_env.evaluation.summary import summarize_trials, trials_of

    flag("--suite", check_suite, suite)
    loaded = [(path, _load_records(path)) for path in files]
    # Cheap checks first: the references of a big suite take a while to build.
    known_ids = set(suite_episode_ids(suite))
    for path, records in loaded:
        for lineno, rec in records:
            rec_suite = rec.get("suite")
            if rec_suite is not None and rec_suite != suite:
                raise CLIError(f"{path}:{lineno}: record of suite {rec_suite!r}, not {suite!r}")
            if rec.get("episode_id") not in known_ids:
                break
        else:
            continue
        break
    refs = _LazyReferences(suite, known_ids)
    by_agent: dict[str, list[dict[str, Any]]] = {}
    seen: dict[tuple[str, str, int], str] = {}
    foreign: list[tuple[str, str]] = []
    duplicates: list[tuple[str, str, str]] = []
    for path, records in loaded:
        for lineno, rec in records:
            loc = f"{path}:{lineno}"
            problem = _validate_record(rec)
            if problem:
                raise CLIError(f"{loc}: {problem}")
            rec_suite = rec.get("suite")
            if rec_suite is not None and rec_suite != suite:
                raise CLIError(f"{loc}: record of suite {rec_suite!r}, not {suite!r}")
            agent = rec.get("agent")
            if not isinstance(agent, str) or not agent:
                agent = path.stem
            eid = str(rec.get("episode_id"))
            if eid not in refs:
                foreign.append((loc, eid))
                continue
            key = (agent, eid, int(rec.get("trial", 0)))
            if key in seen:
                duplicates.append((loc, eid if key[2] == 0 else f"{eid} trial {key[2]}",
                                   seen[key]))
                continue
            seen[key] = loc
            by_agent.setdefault(agent, []).append(rec)
    if foreign:
        ids = ", ".join(repr(e) for _, e in foreign[:5])
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise CLIError(f"{foreign[0][0]}: episode ids not in suite {suite!r}: {ids}{more} "
                       f"({len(foreign)} foreign records)")
    if duplicates:
        ids = ", ".join(f"{e!r} (first at {first})" for _, e, first in duplicates[:5])
        more = f" and {len(duplicates) - 5} more" if len(duplicates) > 5 else ""
        raise CLIError(f"{duplicates[0][0]}: duplicate episode ids: {ids}{more}")
    if not by_agent:
        raise CLIError(f"{files[0]}: no result records")
    trials = max(trials_of(recs) for recs in by_agent.values())
    if trials > 1:
        return summarize_trials(by_agent, refs.load(), trials)
    return summarize(by_agent, refs.load())


class _LazyReferences:
    """Membership of a suite's episode ids without building the references; ``load()``
    builds them (once every record has been checked)."""

    def __init__(self, suite: str, ids: set[str]) -> None:
        self.suite = suite
        self.ids = ids

    def __contains__(self, eid: object) -> bool:
        return eid in self.ids

    def load(self) -> dict[str, dict[str, Any]]:
        from mindhelper_env.scenarios.suites import suite_references

        return suite_references(self.suite)
