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
    sc.add_argument("files", nargs="+", type=path_arg,
                    help="result JSONL files (<agent>.jsonl) or run folders (every result "
                         "file in them); the same agent from two folders gets one row each, "
                         "labelled by folder")
    sc.add_argument("--suite", default=None,
                    help="the suite the records belong to (default: read from the records)")
    sc.add_argument("--format", choices=FORMATS, default="rich", dest="format",
                    help="rich tables (default), markdown, csv or json")
    sc.add_argument("--json", action="store_const", const="json", dest="format",
                    help="print {agent: {metric: percentage}} (same as --format json)")
    sc.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    files = expand_paths(args.files)
    suite = args.suite or suite_of_files(files)
    result = score_files(files, suite)
    print_results(args.format, f"{suite}: scored from {len(files)} file(s)", result)
    print_notes(result)
    if args.format == "rich":
        from mindhelper_env.report.cli import print_belief

        print_belief(result["metrics"])
        model_warnings(result.get("models"))
        print_efficiency(result["metrics"], result.get("models"))
    return EXIT_OK


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given; a folder becomes the result files in it (``summary.json``'s
    ``files`` when present, else every ``*.jsonl``)."""
    import json

    out: list[Path] = []
    for path in paths:
        if not path.is_dir():
            out.append(path)
            continue
        names: list[str] = []
        summary = path / "summary.json"
        if summary.is_file():
            try:
                files = json.loads(summary.read_text(encoding="utf-8")).get("files") or {}
                names = [str(n) for n in files.values()] if isinstance(files, dict) else []
            except (ValueError, AttributeError):
                names = []
        found = [path / n for n in names if (path / n).is_file()] or sorted(
            p for p in path.glob("*.jsonl") if p.is_file() and not p.name.startswith("."))
        if not found:
            raise CLIError(f"{path}: no result files (*.jsonl) in this folder")
        out.extend(found)
    return out


def suite_of_files(files: Sequence[Path]) -> str:
    """The one suite named by the records of ``files`` (``CLIError`` when none or several)."""
    seen: dict[str, str] = {}
    for path in files:
        for lineno, rec in _load_records(path):
            name = rec.get("suite")
            if isinstance(name, str) and name not in seen:
                seen[name] = f"{path}:{lineno}"
    if not seen:
        raise CLIError(f"{files[0]}: the records name no suite; give --suite")
    if len(seen) > 1:
        (a, at), (b, bt) = list(seen.items())[:2]
        raise CLIError(f"{bt}: record of suite {b!r}, but {at} is of suite {a!r} (score one "
                       "suite at a time)")
    return next(iter(seen))


def print_notes(result: dict[str, Any]) -> None:
    """One stderr line per partial agent, unstamped records and agents whose code raised."""
    import sys

    for agent, cov in (result.get("coverage") or {}).items():
        if cov["episodes"] < cov["suite_episodes"]:
            sys.stderr.write(f"note: {agent}: {cov['episodes']} of {cov['suite_episodes']} "
                             "episodes (a partial run: not the suite's score)\n")
    unstamped = result.get("unstamped") or 0
    if unstamped:
        sys.stderr.write(f"note: {unstamped} record(s) carry no provenance (written before "
                         "0.4): their generator and suite digest are unchecked\n")
    for agent, counts in (result.get("agent_errors") or {}).items():
        if counts.get("errors"):
            sys.stderr.write(f"warning: {agent}: its act/reset raised {counts['errors']} time(s) "
                             f"in {counts['episodes']} episode(s) ({counts['decisions']} "
                             "decisions); those decisions were 'none'\n")


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


def _folder_labels(loaded: Sequence[tuple[Path, list[tuple[int, dict[str, Any]]]]]
                   ) -> dict[tuple[str, Path], str]:
    """Row label of each (agent, folder): the agent's name, or ``name (folder)`` when the
    agent comes from several folders."""
    folders: dict[str, list[Path]] = {}
    for path, records in loaded:
        for _, rec in records[:1]:
            agent = rec.get("agent") if isinstance(rec.get("agent"), str) else path.stem
            d = path.parent
            if d not in folders.setdefault(str(agent), []):
                folders[str(agent)].append(d)
    labels: dict[tuple[str, Path], str] = {}
    for agent, dirs in folders.items():
        names = [d.name or str(d) for d in dirs]
        unique = len(set(names)) == len(names)
        for d, name in zip(dirs, names, strict=True):
            labels[(agent, d)] = agent if len(dirs) == 1 else \
                f"{agent} ({name if unique else d})"
    return labels


def score_files(files: Sequence[Path], suite: str) -> dict[str, Any]:
    """Read, check and score result files against a suite's references.

    Refused, in one line naming both sides: a record of another suite, an episode id not in
    the suite, a duplicate within one folder, and (:func:`~mindhelper_env.evaluation.
    provenance.check_record`) a record made by another generator, on another suite digest or
    against another reference, or edited after it was written. Records of one agent from two
    folders are scored as two rows, labelled by folder. The result adds ``coverage`` (episodes
    scored per agent of the suite's), ``agent_errors`` and ``unstamped`` (records without
    provenance)."""
    from mindhelper_env.evaluation import check_suite, suite_episode_ids, summarize
    from mindhelper_env.evaluation.provenance import verify_records
    from mindhelper_env.evaluation.summary import (
        agent_errors,
        coverage,
        summarize_trials,
        trials_of,
    )
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
    labels = _folder_labels(loaded)
    by_agent: dict[str, list[dict[str, Any]]] = {}
    where: list[tuple[str, dict[str, Any]]] = []
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
            agent = labels.get((agent, path.parent), agent)
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
            by_agent.setdefault(agent, []).append(rec if rec.get("agent") == agent
                                                  else {**rec, "agent": agent})
            where.append((loc, rec))
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
    try:
        unstamped = verify_records(suite, where)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    references = refs.load()
    trials = max(trials_of(recs) for recs in by_agent.values())
    if trials > 1:
        out = summarize_trials(by_agent, references, trials)
    else:
        out = summarize(by_agent, references)
    out["coverage"] = coverage(by_agent, len(known_ids))
    out["agent_errors"] = agent_errors(by_agent)
    out["unstamped"] = unstamped
    return out


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
