"""``mindhelper play``: be the robot yourself at the terminal; recorded and scored
(:mod:`mindhelper_env.cli.play_session`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mindhelper_env.cli.base import (
    EXIT_INTERRUPT,
    EXIT_OK,
    MAX_WINDOW_TICKS,
    PROG,
    CLIError,
    flag,
    int_between,
    integer,
    path_arg,
    window_kwargs,
)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    pl = sub.add_parser("play", parents=[common],
                        help="be the robot yourself at the terminal; recorded and scored")
    pl.add_argument("--suite", default="vh-dev-v5", help="suite (default vh-dev-v5)")
    pl.add_argument("--index", type=integer, default=0, help="episode index (default 0)")
    pl.add_argument("--out", type=path_arg, default=Path("runs/play"),
                    help="folder for human.jsonl (default runs/play): a new episode is "
                         "added, one played again replaces its earlier record; Ctrl-C stops "
                         "without recording")
    pl.add_argument("--window-ticks", type=int_between(1, MAX_WINDOW_TICKS), default=None,
                    help="ticks per observation window (env default: 3)")
    pl.add_argument("--legend", action="store_true",
                    help="write the vision track's picture legend (legend.png: every glyph, "
                         "pose and icon of the rgb frames with its name) into --out first")
    pl.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mindhelper_env.cli.play_session import play
    from mindhelper_env.evaluation import check_suite, suite_episode_ids

    flag("--suite", check_suite, args.suite)
    n = len(suite_episode_ids(args.suite))
    if not 0 <= args.index < n:  # before the banner
        raise CLIError(f"argument --index: episode index {args.index} is out of range for "
                       f"{args.suite} (0..{n - 1})")
    from mindhelper_env.cli.play_session import check_out_file

    flag("--out", lambda out: check_out_file(out, args.suite), args.out)
    try:
        play(suite=args.suite, index=args.index, out_dir=args.out,
             env_kwargs=window_kwargs(args.window_ticks), legend=args.legend)
    except ValueError as err:
        raise CLIError(f"argument --index: {err}") from None
    except KeyboardInterrupt:  # Ctrl-C: the episode stops and is not recorded
        sys.stderr.write(f"{PROG}: play: interrupted; the episode was not recorded "
                         f"({args.out / 'human.jsonl'} is unchanged)\n")
        return EXIT_INTERRUPT
    return EXIT_OK
