"""``mindhelper export-trigger-data --episodes N --out DIR``: the Trigger's decisions of
training-seed episodes as a chat dataset (the arguments and handler live in
:mod:`mindhelper_env.llm_training.cli`; docs/llm-training.md)."""

from __future__ import annotations

import argparse
from typing import Any

from mindhelper_env.cli.base import CLIError


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from mindhelper_env.llm_training import cli as llm_cli

    llm_cli.add_export_parser(sub, common, lambda a: llm_cli.run_export(a, CLIError))
