"""``mindhelper train-trigger``: train a MindClaw Trigger policy on MindHelper-Trigger-v3
(needs the rl extra)."""

from __future__ import annotations

import argparse
from typing import Any

from mindhelper_env.cli.base import (
    EXIT_OK,
    MAX_BC_EPISODES,
    MAX_SEED,
    MAX_TIMESTEPS,
    MAX_WORKERS,
    TRAIN_ALGOS,
    CLIError,
    console,
    int_between,
    number_between,
    path_arg,
)

#: ``--eval-freq`` when not given.
DEFAULT_EVAL_FREQ = 10_000


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    tt = sub.add_parser("train-trigger", parents=[common],
                        help="train a MindClaw Trigger policy on MindHelper-Trigger-v3 "
                             "(needs the rl extra)")
    tt.add_argument("--algo", choices=TRAIN_ALGOS + ("sft",), default="maskable-ppo",
                    help="maskable-ppo (default; sb3-contrib), ppo or dqn (Stable-Baselines3); "
                         "sft: fine-tune a language-model Trigger (TRL)")
    tt.add_argument("--timesteps", type=int_between(1, MAX_TIMESTEPS), default=200_000,
                    help="env steps (Trigger decisions) to train for (default 200000)")
    tt.add_argument("--envs", type=int_between(1, MAX_WORKERS), default=2,
                    help="parallel training envs (default 2)")
    tt.add_argument("--out", required=True, type=path_arg,
                    help="output folder: policy.npz, models, checkpoints, history, curve")
    tt.add_argument("--seed", type=int_between(0, MAX_SEED), default=0,
                    help="training seed (default 0)")
    tt.add_argument("--bc-episodes", type=int_between(0, MAX_BC_EPISODES), default=0,
                    metavar="N", help="behaviour-cloning warm start from the ground-truth "
                    "Trigger labels of N training episodes (default 0: none)")
    tt.add_argument("--eval-episodes", type=int_between(2, 10_000), default=200,
                    help="held-out training episodes per evaluation (default 200)")
    tt.add_argument("--eval-freq", type=int_between(1, MAX_TIMESTEPS), default=None,
                    help=f"evaluate every this many env steps (default {DEFAULT_EVAL_FREQ})")
    tt.add_argument("--checkpoint-freq", type=int_between(0, MAX_TIMESTEPS), default=50_000,
                    help="save a checkpoint every this many env steps (0: never; default "
                         "50000)")
    tt.add_argument("--target-gap", type=number_between(0.0, 100.0), default=1.0,
                    help="target: held-out PHA at most this many points below the rule "
                         "Trigger's, with fewer reasoning calls (default 1)")
    tt.add_argument("--reasoning-cost", type=number_between(0.0, 10.0), default=None,
                    help="cost per reasoning_run in the training reward (env default 0.02)")
    tt.add_argument("--action-cost", type=number_between(0.0, 10.0), default=None,
                    help="cost per action_run in the training reward (env default 0.02)")
    tt.add_argument("--stop-at-target", action="store_true",
                    help="stop training at the first evaluation that reaches the target")
    tt.add_argument("--subproc", action="store_true",
                    help="run the training envs in subprocesses (default: in this process)")
    tt.add_argument("--no-progress", action="store_true", help="no progress bar")
    tt.set_defaults(func=run)
    from mindhelper_env.llm_training import cli as llm_cli  # --algo sft (docs/llm-training.md)

    llm_cli.add_sft_arguments(tt)


def run(args: argparse.Namespace) -> int:
    import importlib.util

    from mindhelper_env.evaluation.safety import cpu_count

    if args.algo == "sft":
        from mindhelper_env.llm_training.cli import run_sft

        return run_sft(args, CLIError)

    if args.envs > cpu_count() * 8:
        raise CLIError(f"argument --envs: {args.envs} envs on {cpu_count()} CPUs is too many "
                       f"(at most {cpu_count() * 8})")
    if args.eval_freq is None:
        args.eval_freq = DEFAULT_EVAL_FREQ
        if args.timesteps < args.eval_freq:
            raise CLIError(f"argument --timesteps: {args.timesteps} is fewer steps than one "
                           f"evaluation period ({DEFAULT_EVAL_FREQ}, the default --eval-freq); "
                           f"give --timesteps {DEFAULT_EVAL_FREQ} or more, or a smaller "
                           "--eval-freq")
    if args.eval_freq > args.timesteps:
        raise CLIError(f"argument --eval-freq: {args.eval_freq} is more than --timesteps "
                       f"{args.timesteps}")
    needed = ["torch", "stable_baselines3"] + (["sb3_contrib"] if args.algo == "maskable-ppo"
                                               else [])
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        raise CLIError(f"argument --algo: {args.algo} needs {', '.join(missing)}; install the "
                       "rl extra: pip install torch==2.13.0 && pip install 'mindhelper-env[rl]'")
    if args.out.is_symlink() or (args.out.exists() and not args.out.is_dir()):
        raise CLIError(f"argument --out: {args.out} is not a folder")
    from mindhelper_env.agents.mindclaw.training import train

    reward = {}
    if args.reasoning_cost is not None:
        reward["reasoning_cost"] = -args.reasoning_cost
    if args.action_cost is not None:
        reward["action_cost"] = -args.action_cost
    summary = train(args.algo, args.timesteps, args.envs, args.out, seed=args.seed,
                    bc_episodes=args.bc_episodes, eval_episodes=args.eval_episodes,
                    eval_freq=args.eval_freq, checkpoint_freq=args.checkpoint_freq,
                    target_gap=args.target_gap, progress=not args.no_progress,
                    subproc=args.subproc, stop_at_target=args.stop_at_target, reward=reward)
    rule, best = summary["rule"], summary["best"] or {}
    out = console()
    out.print(f"rule Trigger (held-out): PHA {rule['PHA']:.2f}, reasoning_run/episode "
                  f"{rule['reasoning_calls']:.3f}")
    out.print(f"best learned policy at {best.get('timesteps')} steps: PHA "
                  f"{best.get('PHA', 0):.2f}, reasoning_run/episode "
                  f"{best.get('reasoning_calls', 0):.3f}")
    reached = summary["target_seconds"]
    out.print("target " + (f"reached after {reached:.0f} s ({summary['target_timesteps']} "
                               "steps)" if reached is not None else "not reached"))
    out.print(f"{summary['env_steps_per_second']:.0f} env steps/s while learning; "
                  f"policy: {args.out / 'policy.npz'} (use with --agent "
                  f"learned-trigger:trigger={args.out / 'policy.npz'})")
    return EXIT_OK
