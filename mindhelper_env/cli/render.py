"""``mindhelper render``: play one suite episode with an agent; write a video and a
timeline."""

from __future__ import annotations

import argparse
import math
from typing import Any

from mindhelper_env.cli.base import (
    EXIT_OK,
    MAX_FPS,
    MAX_SEED,
    MAX_WINDOW_TICKS,
    MIN_FPS,
    CLIError,
    agents_from_cwd,
    console,
    flag,
    int_between,
    integer,
    number_between,
    path_arg,
    window_kwargs,
)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    rd = sub.add_parser("render", parents=[common],
                        help="play one suite episode with an agent; write a video and a timeline")
    rd.add_argument("--suite", required=True, help="suite name, e.g. vh-dev-v5")
    rd.add_argument("--index", required=True, type=integer,
                    help="episode index in the suite")
    rd.add_argument("--agent", required=True, help="agent name, e.g. oracle")
    rd.add_argument("--out", required=True, type=path_arg,
                    help="video file (.gif or .mp4); the timeline goes to <stem>-timeline.png")
    rd.add_argument("--size", type=int_between(64, 2048), default=256,
                    help="frame size in pixels, 64..2048 (default 256)")
    rd.add_argument("--fps", type=number_between(MIN_FPS, MAX_FPS), default=4.0,
                    help=f"frames per second, {MIN_FPS:g}..{MAX_FPS:g} (default 4)")
    rd.add_argument("--seed", type=int_between(0, MAX_SEED), default=0,
                    help="base seed, as in evaluate (default 0)")
    rd.add_argument("--window-ticks", type=int_between(1, MAX_WINDOW_TICKS), default=None,
                    help="ticks per observation window (env default if omitted)")
    rd.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    from mindhelper_env.agents import agent_label
    from mindhelper_env.evaluation import (
        check_agents,
        check_suite,
        make_env,
        suite_env_id,
        suite_episode_ids,
    )
    from mindhelper_env.evaluation.roster import build_agent
    from mindhelper_env.render.episode import check_video_path, record_episode, save_episode_media

    flag("--suite", check_suite, args.suite)
    agents_from_cwd([args.agent])  # module:Class from the current folder, as evaluate does
    flag("--agent", check_agents, [args.agent])
    n = len(suite_episode_ids(args.suite))
    if not 0 <= args.index < n:
        raise CLIError(f"argument --index: episode index {args.index} is out of range for "
                       f"{args.suite} (0..{n - 1})")
    if not 64 <= args.size <= 2048:
        raise CLIError(f"argument --size: must be between 64 and 2048, got {args.size}")
    if not (math.isfinite(args.fps) and MIN_FPS <= args.fps <= MAX_FPS):
        raise CLIError(f"argument --fps: must be between {MIN_FPS:g} and {MAX_FPS:g}, "
                       f"got {args.fps}")
    try:
        check_video_path(args.out)
    except ValueError as exc:
        raise CLIError(f"argument --out: {exc}") from None
    env = make_env(suite_env_id(args.suite), **window_kwargs(args.window_ticks))
    try:
        agent = build_agent(args.agent, {}, env, args.seed)
    except ValueError as exc:
        env.close()
        raise CLIError(f"argument --agent: {exc}") from None
    label = agent_label(args.agent, agent)
    rec = record_episode(env, agent, seed=args.seed + args.index, size=args.size,
                         agent_name=label,
                         options={"suite": args.suite, "index": args.index})
    video, timeline = save_episode_media(rec, args.out, fps=args.fps)
    env.close()
    trace_note = ""
    trace = getattr(agent, "trace", None)
    if isinstance(trace, list) and trace:
        from mindhelper_env.evaluation.safety import atomic_write_bytes
        from mindhelper_env.render.trace import format_trace

        trace_path = args.out.with_name(args.out.stem + "-trace.txt")
        atomic_write_bytes(trace_path, format_trace(trace).encode())
        trace_note = f"\ntrace: {trace_path}"
    outcome = rec.timeline["outcome"]
    console().print(f"{rec.record['episode_id']} ({rec.timeline['family']}) with {label}: "
                     f"{outcome}, {rec.record['ticks']} ticks, {len(rec.frames)} frames\n"
                     f"video: {video}\ntimeline: {timeline}{trace_note}", soft_wrap=True)
    return EXIT_OK
