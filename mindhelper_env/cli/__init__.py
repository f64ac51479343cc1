"""The ``mindhelper`` command: one module per subcommand (:data:`~mindhelper_env.cli.main.
COMMANDS` lists them), shared parts in :mod:`~mindhelper_env.cli.base` and the result tables
in :mod:`~mindhelper_env.cli.tables`. See :mod:`mindhelper_env.cli.main`."""

from __future__ import annotations

from mindhelper_env.cli.base import CLIError
from mindhelper_env.cli.main import COMMANDS, build_parser, main

__all__ = ["main", "build_parser", "CLIError", "COMMANDS"]
