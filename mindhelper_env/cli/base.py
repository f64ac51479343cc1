"""What every ``mindhelper`` subcommand shares: exit codes, bounds, :class:`CLIError`, the
argument parser class and argument types, and the console."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, NoReturn

from mindhelper_env.evaluation.settings import MAX_SEED, MAX_VIDEOS, MAX_WORKERS

__all__ = ["CLIError", "Parser", "PROG", "EXIT_OK", "EXIT_INTERNAL", "EXIT_USAGE",
           "EXIT_INTERRUPT", "EXIT_MODEL_FAILED", "EXIT_AGENT_ERRORS", "EXIT_NOT_MEASURED",
           "EXIT_CODES_HELP", "epilog", "agents_from_cwd", "flag", "console", "print_json", "MAX_SEED",
           "MAX_VIDEOS", "MAX_WORKERS"]

PROG = "mindhelper"
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INTERRUPT = 0, 1, 2, 130
#: ``evaluate``: a row that is not its agent's score, because most of the agent's decisions
#: raised or most of its model calls failed or did not parse (with ``--strict``: any act or
#: reset raised, any model call failed); also a run stopped at its budget.
EXIT_NOT_MEASURED = 4
EXIT_AGENT_ERRORS = EXIT_NOT_MEASURED
#: The same code (earlier releases gave 3, and only with ``--strict``); 3 is no longer used.
EXIT_MODEL_FAILED = EXIT_NOT_MEASURED
#: The exit codes, for ``--help`` (docs/evaluation.md, "Exit codes", says the same).
EXIT_CODES_HELP = (
    "exit codes: 0 done; 1 an internal error (--log-level debug prints its traceback); 2 bad "
    "input (one line naming the flag or file; evaluate writes nothing); 4 (evaluate) a row "
    "is not its agent's score: most of an agent's decisions raised, or most of its model "
    "calls failed or did not parse (with --strict: any act/reset raised, any model call "
    "failed), or the run stopped at its budget (--resume continues); 130 interrupted "
    "(Ctrl-C or SIGTERM; evaluate --resume continues). 3 is no longer used.")
LOG_LEVELS = ("debug", "info", "warning", "error")

# Bounds of numeric flags (MAX_WORKERS, MAX_SEED, MAX_VIDEOS, MAX_TRIALS: the evaluation's own).
MAX_WINDOW_TICKS = 10_000
MIN_FPS, MAX_FPS = 0.1, 120.0
TRAIN_ALGOS = ("maskable-ppo", "ppo", "dqn")
MAX_TIMESTEPS = 10**9
MAX_BC_EPISODES = 100_000


def epilog(*paragraphs: str) -> dict[str, Any]:
    """``add_parser``/``ArgumentParser`` keywords for a ``--help`` epilog of ``paragraphs``,
    each wrapped, a blank line between them."""
    import textwrap

    return {"epilog": "\n\n".join(textwrap.fill(p, 79) for p in paragraphs),
            "formatter_class": argparse.RawDescriptionHelpFormatter}


class CLIError(Exception):
    """Bad input: reported as one line on stderr with exit code 2."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors become :class:`CLIError` (one line, code 2)."""

    def error(self, message: str) -> NoReturn:
        # "mindhelper evaluate" -> "evaluate: ...": main prints "mindhelper: error: " once
        command = self.prog.removeprefix(PROG).strip()
        raise CLIError(f"{command}: {message}" if command else message)


MAX_INT_DIGITS = 40


def parse_int(text: str) -> int | None:
    text = text.strip()
    if not text or len(text) > MAX_INT_DIGITS:
        return None
    try:
        return int(text, 10)
    except ValueError:
        return None


def positive_int(text: str) -> int:
    value = parse_int(text)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def integer(text: str) -> int:
    value = parse_int(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return value


def int_between(lo: int, hi: int) -> Any:
    """An argparse type: an integer in ``[lo, hi]`` (argparse prefixes the flag name)."""

    def parse(text: str) -> int:
        value = parse_int(text)
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(
                f"expected an integer between {lo} and {hi}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


def number_between(lo: float, hi: float) -> Any:
    """An argparse type: a finite number in ``[lo, hi]``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(
                f"expected a number between {lo:g} and {hi:g}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def path_arg(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    if "\0" in text:
        raise argparse.ArgumentTypeError("path contains a NUL character")
    return Path(text)


def agent_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of agent names")
    return names


#: Agents that take a ``model`` spec (``--model`` applies to them).
MODEL_AGENTS = ("direct-vlm", "mindclaw", "learned-trigger")


def agent_option(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME:key=value[,key=value...]`` (values read as JSON when they parse, else text)."""
    # the first '=' ends NAME:key (model specs and import paths contain ':' themselves)
    head, eq, _ = text.partition("=")
    name, colon, key = head.rpartition(":")
    if not eq or not colon or not name or not key:
        raise argparse.ArgumentTypeError(
            f"expected NAME:key=value[,key=value], e.g. mindclaw:model=openai:m, got {text!r}")
    pairs = text[len(name) + 1:]
    out: dict[str, Any] = {}
    for item in split_pairs(pairs):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise argparse.ArgumentTypeError(f"expected key=value in {text!r}, got {item!r}")
        try:
            out[k.strip()] = json.loads(v)
        except ValueError:
            out[k.strip()] = v
    if not name:
        raise argparse.ArgumentTypeError(f"expected an agent name before ':' in {text!r}")
    return name, out


def split_pairs(text: str) -> list[str]:
    """Split ``a=1,b=openai:m@http://h:1/v1`` on the commas that start a new ``key=``."""
    parts: list[str] = []
    for chunk in text.split(","):
        if parts and "=" not in chunk.split(":")[0]:
            parts[-1] += "," + chunk
        else:
            parts.append(chunk)
    return parts


def flag(name: str, check: Any, value: Any) -> None:
    """Run ``check(value)``; a ``ValueError`` becomes a :class:`CLIError` naming ``name``."""
    try:
        check(value)
    except ValueError as exc:
        raise CLIError(f"argument {name}: {exc}") from None


def console() -> Any:
    """A rich console on stdout, looked up at call time so that redirected or captured
    stdout is honoured (120 columns when stdout is not a terminal)."""
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, width=None if sys.stdout.isatty() else 120)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    sys.stdout.flush()


def window_kwargs(window_ticks: int | None) -> dict[str, Any]:
    return {} if window_ticks is None else {"window_ticks": window_ticks}


def agents_from_cwd(agents: Any) -> None:
    """``module:Class`` agents are looked up from the current folder too (as ``python -m``
    does), so ``--agents mypkg.agents:MyAgent`` works without ``PYTHONPATH=.`` in every
    command (``evaluate``, ``render``, ``play`` ...); worker processes inherit ``sys.path``."""
    import os

    names = [agents] if isinstance(agents, str) else list(agents or [])
    if any(isinstance(a, str) and ":" in a for a in names):
        cwd = os.getcwd()
        if cwd not in sys.path and "" not in sys.path:
            sys.path.insert(0, cwd)
