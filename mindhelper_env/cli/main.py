"""The ``mindhelper`` command.

::

    mindhelper evaluate --suite vh-dev-v5 --agents silent,random,oracle --out runs/dev
    mindhelper score runs/dev/*.jsonl --suite vh-dev-v5 [--format markdown|csv|json]
    mindhelper suite export vh-dev-v5 data/vh-dev-v5
    mindhelper suite validate data/vh-dev-v5
    mindhelper list
    mindhelper train-trigger --algo maskable-ppo --timesteps 200000 --envs 2 --out runs/trigger
    mindhelper mine-skills

Bad input (a corrupt or truncated result file, records of another suite, unknown agents or
suites, a tampered suite directory ...) ends with one line on stderr in one style,
``mindhelper: error: <command>: <reason>`` (``<reason>`` starts with ``<file>:<line>:`` where
a file is at fault, with ``argument --flag:`` where a flag is), and exit code 2.
Exit code 1 means an internal error (rerun with ``--log-level debug`` for the traceback),
4 (``evaluate``) a row that is not its agent's score or a run stopped at its budget
(:data:`~mindhelper_env.cli.base.EXIT_CODES_HELP`, printed by ``--help``), 130 an interrupt
(Ctrl-C or SIGTERM; ``evaluate --resume`` continues). Every flag is checked before
``evaluate`` touches its output folder, and errors name the flag.

**Adding a subcommand**: write a module in this package with ``register(sub, common)``
(``sub.add_parser(NAME, parents=[common], ...)``, then ``set_defaults(func=run)`` where
``run(args) -> int``) and add it to :data:`COMMANDS`, one line. Raise
:class:`~mindhelper_env.cli.base.CLIError` (or ``ValueError``) for bad input.
"""

from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
from collections.abc import Sequence
from typing import Any

from mindhelper_env.cli import (
    evaluate,
    export_trigger_data,
    import_inspect,
    listing,
    mine_skills,
    play,
    render,
    report,
    score,
    suite,
    train_trigger,
)
from mindhelper_env.cli.base import (
    EXIT_CODES_HELP,
    EXIT_INTERNAL,
    EXIT_INTERRUPT,
    EXIT_USAGE,
    LOG_LEVELS,
    PROG,
    CLIError,
    Parser,
    epilog,
)

__all__ = ["main", "build_parser", "COMMANDS"]

logger = logging.getLogger("mindhelper_env.cli")

#: The subcommands, in ``--help`` order: modules with ``register(sub, common)``.
COMMANDS: tuple[Any, ...] = (
    evaluate,
    score,
    suite,
    render,
    play,
    train_trigger,
    export_trigger_data,
    listing,
    mine_skills,
    report,
    import_inspect,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``mindhelper`` command."""
    from mindhelper_env import __version__

    parser = Parser(prog=PROG, description="MindHelper-Env: evaluate robot helpers on "
                    "closed-loop precision\nintervention, score results, manage suites.",
                    **epilog(EXIT_CODES_HELP))
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                        help="logging verbosity on stderr (default: warning)")
    # Also accepted after the command (``mindhelper evaluate ... --log-level info``).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--log-level", choices=LOG_LEVELS, default=argparse.SUPPRESS,
                        help="logging verbosity on stderr (default: warning)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.register(sub, common)
    return parser



class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at emit time (captured streams in tests)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def _setup_logging(level_name: str) -> None:
    level = getattr(logging, level_name.upper())
    pkg = logging.getLogger("mindhelper_env")
    for h in list(pkg.handlers):
        if isinstance(h, _StderrHandler):
            pkg.removeHandler(h)
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s: %(message)s"))
    pkg.addHandler(handler)
    pkg.setLevel(level)
    pkg.propagate = False


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


#: A library message's keyword spelling beside its flag: "--resume (resume=True)" and
#: "--resume / resume=True" read "--resume" at the command line.
_KEYWORD_BESIDE_FLAG = re.compile(r"(--([a-z][a-z-]*)) (?:\(([a-z_]+)=True\)|/ ([a-z_]+)=True)")


def _cli_words(message: str) -> str:
    def flag_only(m: re.Match[str]) -> str:
        keyword = m.group(3) or m.group(4)
        return m.group(1) if keyword == m.group(2).replace("-", "_") else m.group(0)

    return _KEYWORD_BESIDE_FLAG.sub(flag_only, message)


def _error(message: str, code: int, command: str | None = None) -> int:
    """``mindhelper: error: [<command>: ]<message>`` on one line: every error of the command
    names the subcommand once, whether argparse or the command itself found it."""
    text = _cli_words(_one_line(message))
    if command and not text.startswith(f"{command}: "):
        text = f"{command}: {text}"
    sys.stderr.write(f"{PROG}: error: {text}\n")
    sys.stderr.flush()
    return code


def _command_of(args: argparse.Namespace) -> str:
    """``evaluate``, ``suite export``: the subcommand words of parsed ``args``."""
    words = [getattr(args, "command", None)]
    words += [v for k, v in sorted(vars(args).items()) if k.endswith("_command") and k != "command"]
    return " ".join(w for w in words if isinstance(w, str) and w)


def _interrupted(exc: BaseException, console: bool) -> int:
    from mindhelper_env.evaluation.safety import Terminated

    if console:
        # The process is about to exit: a second Ctrl-C/SIGTERM must not print a traceback
        # from interpreter shutdown.
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                signal.signal(sig, signal.SIG_IGN)
            except (ValueError, OSError):  # pragma: no cover - not the main thread
                pass
    what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    return _error(f"{what}; finished episodes are saved (rerun evaluate with --resume to "
                  "continue)", EXIT_INTERRUPT)


class _ReaderMayLeave:
    """Standard output for a reader that may stop reading (``mindhelper score | head``):
    once the pipe is closed, what is left to print goes to ``/dev/null``, without an error
    or a traceback, and the command ends with its own exit code (rich would exit 1)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _reader_left(self) -> None:
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            self._reader_left()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_left()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer ...
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mindhelper`` command with ``argv`` (default ``sys.argv[1:]``); return the
    exit code (0 ok, 1 internal error, 2 bad input, 4 see ``--help``, 130 interrupted by
    Ctrl-C or SIGTERM). At the console, a reader that stops reading (``| head``) ends
    nothing: the rest of the output is dropped and the exit code is the command's (SIGPIPE
    stays ignored, as Python sets it)."""
    console = argv is None
    streams = (sys.stdout, sys.stderr)
    if console:  # stderr too: ``2>&1 | head``
        sys.stdout, sys.stderr = (s if s is None else _ReaderMayLeave(s) for s in streams)
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:  # also while parsing, logging or reporting an error
        return _interrupted(exc, console)
    finally:
        if console:
            for wrapped in (sys.stdout, sys.stderr):
                if wrapped is not None:
                    wrapped.flush()
            sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None) -> int:
    from mindhelper_env.evaluation.safety import sigterm_as_interrupt

    with sigterm_as_interrupt():
        return _run(argv)


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except CLIError as exc:
        return _error(str(exc), EXIT_USAGE)
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    _setup_logging(args.log_level)
    args.argv = list(argv) if argv is not None else sys.argv[1:]  # to print a resume command
    func = getattr(args, "func", None)
    if func is None:
        sub = getattr(args, "_subparser", parser)
        sub.print_help(sys.stderr)
        return EXIT_USAGE
    command = _command_of(args)
    try:
        return int(func(args))
    except CLIError as exc:
        return _error(str(exc), EXIT_USAGE, command)
    except ValueError as exc:
        logger.debug("bad input", exc_info=True)
        return _error(str(exc), EXIT_USAGE, command)
    except ImportError as exc:  # the messages of our checks name the extra to install
        return _error(str(exc) if "extra" in str(exc) or "pip install" in str(exc)
                      else f"{exc} (a package is missing: install the extra that provides it, "
                      "see the README's install section)", EXIT_USAGE, command)
    except OSError as exc:
        logger.debug("I/O error", exc_info=True)
        where = exc.filename if exc.filename is not None else ""
        reason = exc.strerror or str(exc)
        return _error(f"{where}: {reason}" if where else reason, EXIT_USAGE, command)
    except RecursionError:
        logger.debug("recursion", exc_info=True)
        return _error("input nested too deeply", EXIT_USAGE, command)
    except Exception as exc:  # an internal bug: one line, traceback with --log-level debug
        logger.debug("internal error", exc_info=True)
        return _error(f"internal error: {type(exc).__name__}: {exc} "
                      "(rerun with --log-level debug for the traceback)", EXIT_INTERNAL, command)
