"""``mindhelper suite export|validate``: write an episode suite's files, or check them."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from mindhelper_env.cli.base import EXIT_OK, CLIError, Parser, console, path_arg

logger = logging.getLogger("mindhelper_env.cli")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    su = sub.add_parser("suite", help="export or validate an episode suite")
    su_sub = su.add_subparsers(dest="suite_command", metavar="SUITE_COMMAND",
                               parser_class=Parser)
    ex = su_sub.add_parser("export", parents=[common],
                           help="write public.jsonl, reference.jsonl and a manifest")
    ex.add_argument("name", help="suite name, e.g. vh-dev-v5")
    ex.add_argument("dir", type=path_arg, help="output directory")
    ex.set_defaults(func=run_export)
    va = su_sub.add_parser("validate", parents=[common], help="check an exported suite directory")
    va.add_argument("dir", type=path_arg, help="suite directory")
    va.set_defaults(func=run_validate)
    su.set_defaults(func=None, _subparser=su)


def run_export(args: argparse.Namespace) -> int:
    from mindhelper_env.evaluation import check_suite
    from mindhelper_env.scenarios.suites import export_suite

    check_suite(args.name)
    folder = Path(export_suite(args.name, args.dir))
    out = console()
    out.print(f"exported suite {args.name} to {folder}")
    for item in sorted(folder.iterdir()):
        if item.is_file():
            out.print(f"  {item.name}  ({item.stat().st_size:,} bytes)")
    return EXIT_OK


def run_validate(args: argparse.Namespace) -> int:
    from mindhelper_env.scenarios.suites import validate_suite_dir

    if not args.dir.is_dir():
        raise CLIError(f"{args.dir}: no such directory")
    _check_nesting(args.dir)
    try:
        problems = [str(p) for p in validate_suite_dir(args.dir)]
    except RecursionError:
        raise CLIError(f"{args.dir}: a file is nested too deeply to validate") from None
    if problems:
        for extra in problems[1:]:
            logger.info("also: %s", extra)
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise CLIError(problems[0] + more)
    console().print(f"{args.dir}: valid")
    return EXIT_OK


def _check_nesting(folder: Path) -> None:
    """``CLIError("<file>:<line>: ...")`` for a line of an exported suite's files nested
    deeper than the result reader allows (it would exhaust the JSON parser's recursion)."""
    from mindhelper_env.evaluation.results import MAX_DEPTH, nesting_depth
    from mindhelper_env.scenarios.suites import MANIFEST_FILE, PUBLIC_FILE, REFERENCE_FILE

    for name in (MANIFEST_FILE, PUBLIC_FILE, REFERENCE_FILE):
        path = folder / name
        if not path.is_file():
            continue
        whole = name == MANIFEST_FILE
        text = path.read_bytes().decode("utf-8", "replace")
        for lineno, line in enumerate([text] if whole else text.split("\n"), start=1):
            if line.count("[") + line.count("{") > MAX_DEPTH \
                    and nesting_depth(line) > MAX_DEPTH:
                raise CLIError(f"{path}:{lineno}: JSON nested deeper than {MAX_DEPTH} levels")
