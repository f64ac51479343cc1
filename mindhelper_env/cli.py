"""The ``mindhelper`` command.

::

    mindhelper evaluate --suite vh-dev-v2 --agents silent,random,oracle --out runs/dev
    mindhelper score runs/dev/*.jsonl --suite vh-dev-v2 [--json]
    mindhelper suite export vh-dev-v2 data/vh-dev-v2
    mindhelper suite validate data/vh-dev-v2
    mindhelper list
    mindhelper train-trigger --algo maskable-ppo --timesteps 200000 --envs 2 --out runs/trigger

Bad input (a corrupt or truncated result file, records of another suite, unknown agents or
suites, a tampered suite directory ...) ends with one line on stderr,
``mindhelper: error: <file>:<line>: <reason>`` where a file is at fault, and exit code 2.
Exit code 1 means an internal error (rerun with ``--log-level debug`` for the traceback),
130 an interrupt (Ctrl-C or SIGTERM; ``evaluate --resume`` continues). Every flag is checked
before ``evaluate`` touches its output folder, and errors name the flag.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["main", "build_parser", "CLIError"]

logger = logging.getLogger(__name__)

PROG = "mindhelper"
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INTERRUPT = 0, 1, 2, 130
#: ``evaluate --strict``: most of an agent's model calls failed.
EXIT_MODEL_FAILED = 3
_LOG_LEVELS = ("debug", "info", "warning", "error")

# Bounds of numeric flags (the evaluation module checks the same limits).
MAX_WORKERS = 512
MAX_SEED = 2**32 - 1
MAX_VIDEOS = 10_000
MAX_WINDOW_TICKS = 10_000
MIN_FPS, MAX_FPS = 0.1, 120.0
BACKENDS = ("local", "ray")
TRAIN_ALGOS = ("maskable-ppo", "ppo", "dqn")
MAX_TIMESTEPS = 10**9
MAX_BC_EPISODES = 100_000


class CLIError(Exception):
    """Bad input: reported as one line on stderr with exit code 2."""


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors become :class:`CLIError` (one line, code 2)."""

    def error(self, message: str) -> NoReturn:
        raise CLIError(f"{self.prog}: {message}" if self.prog != PROG else message)


# --------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------


_MAX_INT_DIGITS = 40


def _parse_int(text: str) -> int | None:
    text = text.strip()
    if not text or len(text) > _MAX_INT_DIGITS:
        return None
    try:
        return int(text, 10)
    except ValueError:
        return None


def _positive_int(text: str) -> int:
    value = _parse_int(text)
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _integer(text: str) -> int:
    value = _parse_int(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return value


def _int_between(lo: int, hi: int) -> Any:
    """An argparse type: an integer in ``[lo, hi]`` (argparse prefixes the flag name)."""

    def parse(text: str) -> int:
        value = _parse_int(text)
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(
                f"expected an integer between {lo} and {hi}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


def _number_between(lo: float, hi: float) -> Any:
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


def _path(text: str) -> Path:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    if "\0" in text:
        raise argparse.ArgumentTypeError("path contains a NUL character")
    return Path(text)


def _agent_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of agent names")
    return names


#: Agents that take a ``model`` spec (``--model`` applies to them).
MODEL_AGENTS = ("direct-vlm", "mindclaw", "learned-trigger")


def _agent_option(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME:key=value[,key=value...]`` (values read as JSON when they parse, else text)."""
    # the first '=' ends NAME:key (model specs and import paths contain ':' themselves)
    head, eq, _ = text.partition("=")
    name, colon, key = head.rpartition(":")
    if not eq or not colon or not name or not key:
        raise argparse.ArgumentTypeError(
            f"expected NAME:key=value[,key=value], e.g. mindclaw:model=openai:m, got {text!r}")
    pairs = text[len(name) + 1:]
    out: dict[str, Any] = {}
    for item in _split_pairs(pairs):
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


def _split_pairs(text: str) -> list[str]:
    """Split ``a=1,b=openai:m@http://h:1/v1`` on the commas that start a new ``key=``."""
    parts: list[str] = []
    for chunk in text.split(","):
        if parts and "=" not in chunk.split(":")[0]:
            parts[-1] += "," + chunk
        else:
            parts.append(chunk)
    return parts


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``mindhelper`` command."""
    parser = _Parser(prog=PROG, description="MindHelper-Env: evaluate robot helpers on "
                     "closed-loop precision intervention, score results, manage suites.")
    parser.add_argument("--log-level", choices=_LOG_LEVELS, default="warning",
                        help="logging verbosity on stderr (default: warning)")
    # Also accepted after the command (``mindhelper evaluate ... --log-level info``).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--log-level", choices=_LOG_LEVELS, default=argparse.SUPPRESS,
                        help="logging verbosity on stderr (default: warning)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    ev = sub.add_parser("evaluate", parents=[common],
                        help="run agents on a suite and write result records")
    ev.add_argument("--suite", required=True, help="suite name, e.g. vh-dev-v2")
    ev.add_argument("--agents", required=True, type=_agent_list,
                    help="comma-separated agent names, e.g. silent,random,oracle")
    ev.add_argument("--out", required=True, type=_path,
                    help="output directory (locked while the run writes to it)")
    ev.add_argument("--workers", type=_int_between(1, MAX_WORKERS), default=1,
                    help="worker processes, at most the number of CPUs (default 1; results "
                         "do not depend on it); with --backend ray, the CPUs of a local Ray")
    ev.add_argument("--force-workers", action="store_true",
                    help="allow more --workers than CPUs")
    ev.add_argument("--backend", choices=BACKENDS, default="local",
                    help="local process pool (default) or ray (needs the ray extra)")
    ev.add_argument("--address", default=None,
                    help="with --backend ray: address of a running Ray cluster (e.g. auto); "
                         "default: start a local Ray")
    ev.add_argument("--resume", action="store_true",
                    help="keep finished episodes in --out (each rechecked) and run only the "
                         "missing ones; refuses a folder whose run.json is missing or differs")
    ev.add_argument("--limit", type=_positive_int, default=None,
                    help="run only the first N episodes of the suite")
    ev.add_argument("--window-ticks", type=_int_between(1, MAX_WINDOW_TICKS), default=None,
                    help="ticks per observation window (env default: 3)")
    ev.add_argument("--seed", type=_int_between(0, MAX_SEED), default=0,
                    help="base seed: episode i is played with seed + i (default 0)")
    ev.add_argument("--no-progress", action="store_true", help="no progress bar")
    ev.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    ev.add_argument("--no-timing", action="store_true",
                    help="record usage.seconds as 0 (byte-reproducible result files)")
    ev.add_argument("--videos", type=_int_between(0, MAX_VIDEOS), default=0, metavar="K",
                    help="also save a GIF and a timeline PNG of the first K episodes per agent "
                         "in OUT/videos (needs the video extra)")
    ev.add_argument("--strict", action="store_true",
                    help="exit with code 3 when most of an agent's model calls failed")
    ev.add_argument("--json", action="store_true",
                    help="print {agent: {metric: percentage}} instead of the table")
    ev.add_argument("--model", default=None, metavar="SPEC",
                    help="model for the model-backed agents (direct-vlm, mindclaw): "
                         "openai:MODEL[@URL], hf:NAME_OR_PATH, replay:FILE")
    ev.add_argument("--agent", action="append", default=[], type=_agent_option,
                    metavar="NAME:KEY=VALUE",
                    help="options of one agent, e.g. --agent mindclaw:model=openai:m@http://"
                         "127.0.0.1:8000/v1 (repeatable)")
    ev.add_argument("--record", type=_path, default=None, metavar="FILE",
                    help="record every model request and answer to this cassette")
    ev.add_argument("--replay", type=_path, default=None, metavar="FILE",
                    help="answer model requests from this cassette (no server, no cost)")
    ev.set_defaults(func=_cmd_evaluate)

    sc = sub.add_parser("score", parents=[common],
                        help="recompute every metric from result records")
    sc.add_argument("files", nargs="+", type=_path, help="result JSONL files (<agent>.jsonl)")
    sc.add_argument("--suite", required=True, help="the suite the records belong to")
    sc.add_argument("--json", action="store_true", help="print {agent: {metric: percentage}}")
    sc.set_defaults(func=_cmd_score)

    su = sub.add_parser("suite", help="export or validate an episode suite")
    su_sub = su.add_subparsers(dest="suite_command", metavar="SUITE_COMMAND",
                               parser_class=_Parser)
    ex = su_sub.add_parser("export", parents=[common],
                           help="write public.jsonl, reference.jsonl and a manifest")
    ex.add_argument("name", help="suite name, e.g. vh-dev-v2")
    ex.add_argument("dir", type=_path, help="output directory")
    ex.set_defaults(func=_cmd_suite_export)
    va = su_sub.add_parser("validate", parents=[common], help="check an exported suite directory")
    va.add_argument("dir", type=_path, help="suite directory")
    va.set_defaults(func=_cmd_suite_validate)
    su.set_defaults(func=None, _subparser=su)

    rd = sub.add_parser("render", parents=[common],
                        help="play one suite episode with an agent; write a video and a timeline")
    rd.add_argument("--suite", required=True, help="suite name, e.g. vh-dev-v2")
    rd.add_argument("--index", required=True, type=_integer,
                    help="episode index in the suite")
    rd.add_argument("--agent", required=True, help="agent name, e.g. oracle")
    rd.add_argument("--out", required=True, type=_path,
                    help="video file (.gif or .mp4); the timeline goes to <stem>-timeline.png")
    rd.add_argument("--size", type=_int_between(64, 2048), default=256,
                    help="frame size in pixels, 64..2048 (default 256)")
    rd.add_argument("--fps", type=_number_between(MIN_FPS, MAX_FPS), default=4.0,
                    help=f"frames per second, {MIN_FPS:g}..{MAX_FPS:g} (default 4)")
    rd.add_argument("--seed", type=_int_between(0, MAX_SEED), default=0,
                    help="base seed, as in evaluate (default 0)")
    rd.add_argument("--window-ticks", type=_int_between(1, MAX_WINDOW_TICKS), default=None,
                    help="ticks per observation window (env default if omitted)")
    rd.set_defaults(func=_cmd_render)

    pl = sub.add_parser("play", parents=[common],
                        help="be the robot yourself at the terminal; recorded and scored")
    pl.add_argument("--suite", default="vh-dev-v2", help="suite (default vh-dev-v2)")
    pl.add_argument("--index", type=_integer, default=0, help="episode index (default 0)")
    pl.add_argument("--out", type=_path, default=Path("runs/play"),
                    help="folder for human.jsonl (default runs/play)")
    pl.add_argument("--window-ticks", type=_int_between(1, MAX_WINDOW_TICKS), default=None,
                    help="ticks per observation window (env default: 3)")
    pl.set_defaults(func=_cmd_play)

    tt = sub.add_parser("train-trigger", parents=[common],
                        help="train a MindClaw Trigger policy on MindHelper-Trigger-v0 "
                             "(needs the rl extra)")
    tt.add_argument("--algo", choices=TRAIN_ALGOS + ("sft",), default="maskable-ppo",
                    help="maskable-ppo (default; sb3-contrib), ppo or dqn (Stable-Baselines3); "
                         "sft: fine-tune a language-model Trigger (TRL)")
    tt.add_argument("--timesteps", type=_int_between(1, MAX_TIMESTEPS), default=200_000,
                    help="env steps (Trigger decisions) to train for (default 200000)")
    tt.add_argument("--envs", type=_int_between(1, MAX_WORKERS), default=2,
                    help="parallel training envs (default 2)")
    tt.add_argument("--out", required=True, type=_path,
                    help="output folder: policy.npz, models, checkpoints, history, curve")
    tt.add_argument("--seed", type=_int_between(0, MAX_SEED), default=0,
                    help="training seed (default 0)")
    tt.add_argument("--bc-episodes", type=_int_between(0, MAX_BC_EPISODES), default=0,
                    metavar="N", help="behaviour-cloning warm start from the ground-truth "
                    "Trigger labels of N training episodes (default 0: none)")
    tt.add_argument("--eval-episodes", type=_int_between(2, 10_000), default=200,
                    help="held-out training episodes per evaluation (default 200)")
    tt.add_argument("--eval-freq", type=_int_between(1, MAX_TIMESTEPS), default=10_000,
                    help="evaluate every this many env steps (default 10000)")
    tt.add_argument("--checkpoint-freq", type=_int_between(0, MAX_TIMESTEPS), default=50_000,
                    help="save a checkpoint every this many env steps (0: never; default "
                         "50000)")
    tt.add_argument("--target-gap", type=_number_between(0.0, 100.0), default=1.0,
                    help="target: held-out PHA at most this many points below the rule "
                         "Trigger's, with fewer reasoning calls (default 1)")
    tt.add_argument("--reasoning-cost", type=_number_between(0.0, 10.0), default=None,
                    help="cost per reasoning_run in the training reward (env default 0.02)")
    tt.add_argument("--action-cost", type=_number_between(0.0, 10.0), default=None,
                    help="cost per action_run in the training reward (env default 0.02)")
    tt.add_argument("--stop-at-target", action="store_true",
                    help="stop training at the first evaluation that reaches the target")
    tt.add_argument("--subproc", action="store_true",
                    help="run the training envs in subprocesses (default: in this process)")
    tt.add_argument("--no-progress", action="store_true", help="no progress bar")
    tt.set_defaults(func=_cmd_train_trigger)
    from mindhelper_env.llm_training import cli as llm_cli  # LLM training (issue 18)

    llm_cli.add_sft_arguments(tt)
    llm_cli.add_export_parser(sub, common, lambda a: llm_cli.run_export(a, CLIError))

    ls = sub.add_parser("list", parents=[common],
                        help="list environments, families, agents and suites")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=_cmd_list)
    return parser


# --------------------------------------------------------------------------------------
# Output helpers
# --------------------------------------------------------------------------------------


def _console() -> Any:
    from rich.console import Console

    # Looked up at call time so that redirected/captured stdout is honoured.
    return Console(file=sys.stdout, highlight=False, width=None if sys.stdout.isatty() else 120)


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.2f}"


def _print_table(title: str, table: Mapping[str, Mapping[str, Any]],
                 metrics: Mapping[str, Mapping[str, Any]]) -> None:
    """A rich table: the headline PHA and PHR, the paper's Table II, silent-all and harm."""
    from rich.table import Table

    t = Table(title=title, caption="percentages; PHA = (PHR + PSR) / 2, PHR = precise, "
              "successful and harmless help; TA SR AC = action evaluation, PIR PSR PIA = "
              "precision intervention; n/a: no episode to measure")
    t.add_column("Agent", style="bold")
    for col in ("PHA ↑", "PHR ↑", "TA ↑", "SR ↑", "AC ↑", "PIR ↑", "PSR ↑", "PIA ↑",
                "Silent-all", "Harm ↓", "Episodes (help/silent)"):
        t.add_column(col, justify="right")
    for agent, row in table.items():
        m = metrics.get(agent, {})
        t.add_row(agent, *(_fmt(row.get(k)) for k in ("PHA", "PHR", "TA", "SR", "AC", "PIR",
                                                        "PSR", "PIA", "silent_all", "harm_rate")),
                  f"{m.get('episodes', 0)} ({m.get('n_help', 0)}/{m.get('n_silent', 0)})")
    _console().print(t)


_BREAKDOWN_SECTIONS = (("task_type", "type"), ("ability", "ability"), ("twin_group", "group"))


def _fmt1(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.1f}"


def _breakdown_cell(block: Mapping[str, Any], counts: tuple[int, int] | None) -> str:
    cell = f"{_fmt1(block.get('PHA'))} ({_fmt1(block.get('PHR'))}/{_fmt1(block.get('PSR'))})"
    own = (block.get("n_help", 0), block.get("n_silent", 0))
    return cell if own == counts else f"{cell} \\[{own[0]}/{own[1]}]"


def _print_breakdown(metrics: Mapping[str, Mapping[str, Any]]) -> None:
    """The ability breakdown: PHA (PHR / PSR) per task type, ability and twin group."""
    blocks = {a: m.get("breakdown") for a, m in metrics.items() if m.get("breakdown")}
    if not blocks:
        return
    from rich.table import Table

    t = Table(title="ability breakdown", caption="PHA (PHR / PSR), percentages; PHA = (PHR over "
              "the group's help episodes + PSR over its silent ones) / 2, n/a when a side is "
              "empty; a silent twin counts toward its help family's groups; \\[help/silent] "
              "where an agent's episodes differ from the row's")
    t.add_column("Group", style="bold", no_wrap=True)
    t.add_column("Episodes (help/silent)", justify="right")
    for agent in blocks:
        t.add_column(agent, justify="right")
    first = next(iter(blocks.values()))
    for section, label in _BREAKDOWN_SECTIONS:
        names = list(first.get(section, {}))
        for other in blocks.values():
            names += [n for n in other.get(section, {}) if n not in names]
        for k, name in enumerate(names):
            ref = first.get(section, {}).get(name) or {"episodes": 0, "n_help": 0, "n_silent": 0}
            counts = (ref.get("n_help", 0), ref.get("n_silent", 0))
            cells = [_breakdown_cell(b.get(section, {}).get(name) or {}, counts)
                     for b in blocks.values()]
            t.add_row(f"{label} {name}", f"{ref.get('episodes', 0)} ({counts[0]}/{counts[1]})",
                      *cells, end_section=k == len(names) - 1)
    _console().print(t)


def _print_efficiency(metrics: Mapping[str, Mapping[str, Any]],
                      models: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """The efficiency table (model calls, tokens, time, reduction against direct-vlm,
    decisions by source), when any agent called a model."""
    from mindhelper_env.models.report import efficiency_rows

    eff = {a: (m.get("efficiency") or {}) for a, m in metrics.items()}
    if not any((e.get("model_calls_per_episode") or 0) > 0 for e in eff.values()):
        return
    from rich.table import Table

    models = models or {}
    reduction = {r["agent"]: r["reduction_vs_baseline"] for r in efficiency_rows(metrics)}
    t = Table(title="efficiency", caption="per episode unless noted; (est.) = token counts "
              "estimated because the server sent no usage; vs direct-vlm = reduction of "
              "tokens per episode")
    t.add_column("Agent", style="bold")
    cols = (("calls", "model_calls_per_episode", 2), ("tok / ep", "tokens_per_episode", 0),
            ("tok / call", "tokens_per_call", 0),
            ("prompt tok", "prompt_tokens_per_episode", 0),
            ("compl. tok", "completion_tokens_per_episode", 0),
            ("s / decision", "seconds_per_decision", 3),
            ("parse failures", "parse_failures", 0))
    for title, _, _ in cols:
        t.add_column(title, justify="right")
    t.add_column("vs direct-vlm", justify="right")
    t.add_column("decisions by source")
    for agent, e in eff.items():
        cells = []
        for _, key, digits in cols:
            v = e.get(key)
            cells.append("n/a" if v is None else f"{float(v):,.{digits}f}")
        if e.get("tokens_estimated_episodes"):
            cells[1] += " (est.)"
        red = reduction.get(agent)
        cells.append("" if red is None else f"{red:.1f} %")
        share = (models.get(agent) or {}).get("share_by_source") or {}
        cells.append(", ".join(f"{k} {v:.0f} %" for k, v in share.items()))
        t.add_row(agent, *cells)
    _console().print(t)


def _model_warnings(models: Mapping[str, Mapping[str, Any]] | None) -> bool:
    """Print one warning line per agent and model error kind; True when most of some agent's
    calls failed."""
    from mindhelper_env.models.report import mostly_failed, warning_lines

    for line in warning_lines(models or {}):
        sys.stderr.write(f"warning: {line}\n")
    return any(mostly_failed(r) for r in (models or {}).values())


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------


def _agent_kwargs(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Per-agent options from --model, --agent, --record and --replay (checked here)."""
    if args.record is not None and args.replay is not None:
        raise CLIError("arguments --record and --replay: give one of them, not both")
    out: dict[str, dict[str, Any]] = {}
    for name, opts in args.agent:
        if name not in args.agents:
            raise CLIError(f"argument --agent: {name!r} is not in --agents "
                           f"({', '.join(args.agents)})")
        out.setdefault(name, {}).update(opts)
    from mindhelper_env.agents.hedge import split_prefix_suffix

    wants_model = [a for a in args.agents if split_prefix_suffix(a)[0] in MODEL_AGENTS]
    if args.model is not None:
        if not args.model.strip():
            raise CLIError("argument --model: expected a model spec, got an empty string")
        if not wants_model:
            raise CLIError(f"argument --model: none of --agents takes a model "
                           f"({', '.join(MODEL_AGENTS)} do)")
        for a in wants_model:
            out.setdefault(a, {}).setdefault("model", args.model)
    for a in wants_model:
        spec = out.get(a, {}).get("model")
        if args.replay is not None:
            out.setdefault(a, {})["model"] = f"replay:{args.replay}"
        elif args.record is not None:
            if spec is None:
                raise CLIError(f"argument --record: agent {a!r} has no --model to record")
            out[a]["model"] = f"record:{args.record}={spec}"
    if (args.record or args.replay) and not wants_model:
        raise CLIError("arguments --record/--replay: none of --agents uses a model")
    if "model" in str(out):
        from mindhelper_env.models import parse_spec

        for a, opts in out.items():
            if isinstance(opts.get("model"), str):
                try:
                    parse_spec(opts["model"])
                except ValueError as err:
                    raise CLIError(f"argument --model/--agent ({a}): {err}") from None
    return out


def _cmd_play(args: argparse.Namespace) -> int:
    from mindhelper_env.evaluation import check_suite
    from mindhelper_env.play import play

    _flag("--suite", check_suite, args.suite)
    env_kwargs = {} if args.window_ticks is None else {"window_ticks": args.window_ticks}
    try:
        play(suite=args.suite, index=args.index, out_dir=args.out, env_kwargs=env_kwargs)
    except ValueError as err:
        raise CLIError(f"argument --index: {err}") from None
    return EXIT_OK


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from mindhelper_env.evaluation import check_agents, check_suite, evaluate
    from mindhelper_env.runner_safety import cpu_count

    _flag("--suite", check_suite, args.suite)
    _flag("--agents", check_agents, args.agents)
    cpus = cpu_count()
    if args.workers > cpus and not args.force_workers and args.address is None:
        raise CLIError(f"argument --workers: {args.workers} exceeds the {cpus} CPUs available "
                       "(more workers than CPUs only slow the run down; add --force-workers "
                       "to insist)")
    if args.address is not None:
        if args.backend != "ray":
            raise CLIError("argument --address: only used with --backend ray")
        if not args.address.strip():
            raise CLIError("argument --address: expected a Ray address, got an empty string")
    if args.out.exists() and not args.out.is_dir():
        raise CLIError(f"argument --out: {args.out} exists and is not a directory")
    if args.backend == "ray":
        from mindhelper_env.ray_backend import INSTALL_HINT, require_ray

        try:
            require_ray()
        except ImportError:
            raise CLIError(INSTALL_HINT) from None
    env_kwargs = {} if args.window_ticks is None else {"window_ticks": args.window_ticks}
    agent_kwargs = _agent_kwargs(args)
    summary = evaluate(
        args.suite,
        args.agents,
        args.out,
        agent_kwargs=agent_kwargs,
        workers=args.workers,
        resume=args.resume,
        limit=args.limit,
        env_kwargs=env_kwargs,
        progress=not args.no_progress,
        seed=args.seed,
        timing=not args.no_timing,
        plots=not args.no_plots,
        videos=args.videos,
        force_workers=args.force_workers or args.address is not None,
        backend=args.backend,
        address=args.address,
    )
    failed = _model_warnings(summary.get("models"))
    code = EXIT_MODEL_FAILED if failed and args.strict else EXIT_OK
    if args.json:
        _print_json(summary["table"])
        return code
    _print_table(f"{args.suite}: {args.out}", summary["table"], summary["metrics"])
    _print_breakdown(summary["metrics"])
    _print_efficiency(summary["metrics"], summary.get("models"))
    extras = ", ".join(summary.get("plots") or [])
    _console().print(f"results: {args.out}/<agent>.jsonl, summary.json"
                     + (f", {extras}" if extras else "")
                     + f"  ({summary['played']} episodes played in "
                       f"{summary['wall_seconds']:.1f} s)", soft_wrap=True)
    return code


def _flag(flag: str, check: Any, value: Any) -> None:
    """Run ``check(value)``; a ``ValueError`` becomes a :class:`CLIError` naming ``flag``."""
    try:
        check(value)
    except ValueError as exc:
        raise CLIError(f"argument {flag}: {exc}") from None


def _cmd_render(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from mindhelper_env.agents import make_agent
    from mindhelper_env.evaluation import (
        DEFAULT_ENV_ID,
        check_agents,
        check_suite,
        suite_episode_ids,
    )
    from mindhelper_env.render.episode import check_video_path, record_episode, save_episode_media

    _flag("--suite", check_suite, args.suite)
    _flag("--agent", check_agents, [args.agent])
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
    env_kwargs = {} if args.window_ticks is None else {"window_ticks": args.window_ticks}
    env = gym.make(DEFAULT_ENV_ID, **env_kwargs)
    agent = make_agent(args.agent, env=env, seed=args.seed)
    rec = record_episode(env, agent, seed=args.seed + args.index, size=args.size,
                         agent_name=args.agent,
                         options={"suite": args.suite, "index": args.index})
    video, timeline = save_episode_media(rec, args.out, fps=args.fps)
    env.close()
    trace_note = ""
    trace = getattr(agent, "trace", None)
    if isinstance(trace, list) and trace:
        from mindhelper_env.render.trace import format_trace
        from mindhelper_env.runner_safety import atomic_write_bytes

        trace_path = args.out.with_name(args.out.stem + "-trace.txt")
        atomic_write_bytes(trace_path, format_trace(trace).encode())
        trace_note = f"\ntrace: {trace_path}"
    outcome = rec.timeline["outcome"]
    _console().print(f"{rec.record['episode_id']} ({rec.timeline['family']}) with {args.agent}: "
                     f"{outcome}, {rec.record['ticks']} ticks, {len(rec.frames)} frames\n"
                     f"video: {video}\ntimeline: {timeline}{trace_note}", soft_wrap=True)
    return EXIT_OK


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


def _score(files: Sequence[Path], suite: str) -> dict[str, Any]:
    """Read, check and score result files against a suite's references."""
    from mindhelper_env.evaluation import check_suite, suite_episode_ids, summarize

    _flag("--suite", check_suite, suite)
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
    by_agent: dict[str, list[dict[str, Any]]] = {}
    seen: dict[tuple[str, str], str] = {}
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
            eid = str(rec.get("episode_id"))
            if eid not in refs:
                foreign.append((loc, eid))
                continue
            key = (agent, eid)
            if key in seen:
                duplicates.append((loc, eid, seen[key]))
                continue
            seen[key] = loc
            by_agent.setdefault(agent, []).append(rec)
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
    return summarize(by_agent, refs.load())


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


def _cmd_score(args: argparse.Namespace) -> int:
    result = _score(args.files, args.suite)
    if args.json:
        _print_json(result["table"])
    else:
        _print_table(f"{args.suite}: scored from {len(args.files)} file(s)", result["table"],
                     result["metrics"])
        _print_breakdown(result["metrics"])
        _model_warnings(result.get("models"))
        _print_efficiency(result["metrics"], result.get("models"))
    return EXIT_OK


def _cmd_suite_export(args: argparse.Namespace) -> int:
    from mindhelper_env.evaluation import check_suite
    from mindhelper_env.scenarios.suites import export_suite

    check_suite(args.name)
    out = Path(export_suite(args.name, args.dir))
    console = _console()
    console.print(f"exported suite {args.name} to {out}")
    for item in sorted(out.iterdir()):
        if item.is_file():
            console.print(f"  {item.name}  ({item.stat().st_size:,} bytes)")
    return EXIT_OK


def _cmd_suite_validate(args: argparse.Namespace) -> int:
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
    _console().print(f"{args.dir}: valid")
    return EXIT_OK


def _check_nesting(folder: Path) -> None:
    """``CLIError("<file>:<line>: ...")`` for a line of an exported suite's files nested
    deeper than the result reader allows (it would exhaust the JSON parser's recursion)."""
    from mindhelper_env.evaluation import _MAX_DEPTH, _nesting_depth
    from mindhelper_env.scenarios.suites import MANIFEST_FILE, PUBLIC_FILE, REFERENCE_FILE

    for name in (MANIFEST_FILE, PUBLIC_FILE, REFERENCE_FILE):
        path = folder / name
        if not path.is_file():
            continue
        whole = name == MANIFEST_FILE
        text = path.read_bytes().decode("utf-8", "replace")
        for lineno, line in enumerate([text] if whole else text.split("\n"), start=1):
            if line.count("[") + line.count("{") > _MAX_DEPTH \
                    and _nesting_depth(line) > _MAX_DEPTH:
                raise CLIError(f"{path}:{lineno}: JSON nested deeper than {_MAX_DEPTH} levels")


def _listing() -> dict[str, Any]:
    from mindhelper_env.agents import AGENTS
    from mindhelper_env.envs.registration import ENV_SPECS
    from mindhelper_env.scenarios import FAMILIES, HELP_FAMILIES

    suites: dict[str, Any] = {}
    try:
        from mindhelper_env.scenarios import suites as suites_mod

        for name in suites_mod.SUITES:
            info: Any
            try:
                info = suites_mod.suite_info(name)
            except Exception as exc:  # listing must not fail because one suite is broken
                info = {"error": f"{type(exc).__name__}: {exc}"}
            suites[name] = info if isinstance(info, Mapping) else {"info": str(info)}
    except ImportError as exc:
        logger.warning("suites unavailable: %s", exc)
    return {
        "envs": list(ENV_SPECS),
        "families": {f: {"needs_intervention": f in HELP_FAMILIES} for f in FAMILIES},
        "agents": sorted(AGENTS),
        "suites": suites,
    }


def _cmd_train_trigger(args: argparse.Namespace) -> int:
    import importlib.util

    if args.algo == "sft":
        from mindhelper_env.llm_training.cli import run_sft

        return run_sft(args, CLIError)
    from mindhelper_env.runner_safety import cpu_count

    if args.envs > cpu_count() * 8:
        raise CLIError(f"argument --envs: {args.envs} envs on {cpu_count()} CPUs is too many "
                       f"(at most {cpu_count() * 8})")
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
    from mindhelper_env.trigger_training import train

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
    console = _console()
    console.print(f"rule Trigger (held-out): PHA {rule['PHA']:.2f}, reasoning_run/episode "
                  f"{rule['reasoning_calls']:.3f}")
    console.print(f"best learned policy at {best.get('timesteps')} steps: PHA "
                  f"{best.get('PHA', 0):.2f}, reasoning_run/episode "
                  f"{best.get('reasoning_calls', 0):.3f}")
    reached = summary["target_seconds"]
    console.print("target " + (f"reached after {reached:.0f} s ({summary['target_timesteps']} "
                               "steps)" if reached is not None else "not reached"))
    console.print(f"{summary['env_steps_per_second']:.0f} env steps/s while learning; "
                  f"policy: {args.out / 'policy.npz'} (use with --agent "
                  f"learned-trigger:trigger={args.out / 'policy.npz'})")
    return EXIT_OK


def _cmd_list(args: argparse.Namespace) -> int:
    listing = _listing()
    if args.json:
        _print_json(listing)
        return EXIT_OK
    from rich.table import Table

    console = _console()
    console.print("[bold]Environments[/bold]: " + ", ".join(listing["envs"]))
    fam = Table(title="Scenario families")
    fam.add_column("family")
    fam.add_column("needs help")
    for name, f in listing["families"].items():
        fam.add_row(name, "yes" if f["needs_intervention"] else "no")
    console.print(fam)
    console.print("[bold]Agents[/bold]: " + ", ".join(listing["agents"]))
    st = Table(title="Suites")
    st.add_column("suite")
    st.add_column("info")
    for name, info in listing["suites"].items():
        brief = ", ".join(f"{k}={v}" for k, v in info.items()
                          if isinstance(v, (str, int, float, bool)))
        st.add_row(name, brief)
    console.print(st)
    return EXIT_OK


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


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


def _error(message: str, code: int) -> int:
    sys.stderr.write(f"{PROG}: error: {_one_line(message)}\n")
    sys.stderr.flush()
    return code


def _interrupted(exc: BaseException, console: bool) -> int:
    from mindhelper_env.runner_safety import Terminated

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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mindhelper`` command with ``argv`` (default ``sys.argv[1:]``); return the
    exit code (0 ok, 1 internal error, 2 bad input, 130 interrupted by Ctrl-C or SIGTERM)."""
    console = argv is None
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:  # also while parsing, logging or reporting an error
        return _interrupted(exc, console)


def _main(argv: Sequence[str] | None) -> int:
    from mindhelper_env.runner_safety import sigterm_as_interrupt

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
    func = getattr(args, "func", None)
    if func is None:
        sub = getattr(args, "_subparser", parser)
        sub.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(func(args))
    except CLIError as exc:
        return _error(str(exc), EXIT_USAGE)
    except ValueError as exc:
        logger.debug("bad input", exc_info=True)
        return _error(str(exc), EXIT_USAGE)
    except ImportError as exc:
        return _error(f"{exc} (install the video extra: pip install 'mindhelper-env[video]')"
                      if "video extra" not in str(exc) else str(exc), EXIT_USAGE)
    except OSError as exc:
        logger.debug("I/O error", exc_info=True)
        where = exc.filename if exc.filename is not None else ""
        reason = exc.strerror or str(exc)
        return _error(f"{where}: {reason}" if where else reason, EXIT_USAGE)
    except RecursionError:
        logger.debug("recursion", exc_info=True)
        return _error("input nested too deeply", EXIT_USAGE)
    except Exception as exc:  # an internal bug: one line, traceback with --log-level debug
        logger.debug("internal error", exc_info=True)
        return _error(f"internal error: {type(exc).__name__}: {exc} "
                      "(rerun with --log-level debug for the traceback)", EXIT_INTERNAL)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
