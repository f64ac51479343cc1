"""``mindhelper report RUN_DIR [RUN_DIR ...] --out DIR``: the static HTML report of runs
(the command's arguments and handler live in :mod:`mindhelper_env.report.cli`)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from mindhelper_env.report import cli as report_cli

    report_cli.add_parser(sub, [common])
