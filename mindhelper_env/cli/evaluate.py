"""``mindhelper evaluate``: run agents on a suite and write result records."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mindhelper_env.cli.base import (
    EXIT_CODES_HELP,
    EXIT_NOT_MEASURED,
    EXIT_OK,
    MAX_WINDOW_TICKS,
    CLIError,
    agent_list,
    agent_option,
    agents_from_cwd,
    console,
    epilog,
    flag,
    int_between,
    path_arg,
    positive_int,
    window_kwargs,
)
from mindhelper_env.cli.tables import (
    FORMATS,
    model_warnings,
    print_efficiency,
    print_results,
    unmeasured,
)
from mindhelper_env.evaluation.settings import (
    BACKENDS,
    MAX_CONCURRENCY,
    MAX_ESTIMATE_EPISODES,
    MAX_SEED,
    MAX_TRIALS,
    MAX_VIDEOS,
    MAX_WORKERS,
)

#: Values of ``--obs`` (the env's ``obs_mode``; ``rgb`` is the vision track).
OBS_CHOICES = ("text", "text+rgb", "rgb")

#: Agents that take a ``model`` spec (``--model`` applies to them).
MODEL_AGENTS = ("direct-vlm", "mindclaw", "mindclaw-vlm", "mindclaw-pixels", "learned-trigger")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    ev = sub.add_parser("evaluate", parents=[common],
                        help="run agents on a suite and write result records",
                        **epilog(SMALL_MODEL_HELP, EXIT_CODES_HELP))
    ev.add_argument("--suite", required=True, help="suite name, e.g. vh-dev-v5")
    ev.add_argument("--agents", required=True, type=agent_list,
                    help="comma-separated agents: built-in names (mindhelper list), e.g. "
                         "silent,random,oracle, or your own class as module:Class (imported "
                         "from the current folder, e.g. myagent:MyAgent)")
    ev.add_argument("--out", required=True, type=path_arg,
                    help="output directory (locked while the run writes to it)")
    ev.add_argument("--workers", type=int_between(1, MAX_WORKERS), default=1,
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
    ev.add_argument("--overwrite", action="store_true",
                    help="replace the results already in --out (without it, a folder that "
                         "holds results needs --resume)")
    ev.add_argument("--trials", type=int_between(1, MAX_TRIALS), default=1, metavar="K",
                    help="play every episode K times with different agent seeds (default 1); "
                         "the tables add the mean, a 95%% interval and PHR's pass^k")
    ev.add_argument("--limit", type=positive_int, default=None,
                    help="run only the first N episodes of the suite")
    ev.add_argument("--window-ticks", type=int_between(1, MAX_WINDOW_TICKS), default=None,
                    help="ticks per observation window (env default: 3)")
    ev.add_argument("--obs", choices=OBS_CHOICES, default="text",
                    help="what the robot gets: text (narration and events, default), text+rgb "
                         "(text and a captioned frame) or rgb (the vision track: the window's "
                         "frames only, no text; recorded in run.json and every record, never "
                         "scored together with the text track)")
    ev.add_argument("--frame-size", type=int_between(32, 1024), default=None, metavar="PX",
                    help="frame size in pixels with --obs rgb or text+rgb (default: with rgb, the "
                         "smallest size that shows every pixel of every episode of the "
                         "suite; with text+rgb, 128)")
    ev.add_argument("--seed", type=int_between(0, MAX_SEED), default=0,
                    help="base seed: episode i is played with seed + i (default 0)")
    ev.add_argument("--no-progress", action="store_true", help="no progress bar")
    ev.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    ev.add_argument("--no-timing", action="store_true",
                    help="record usage.seconds as 0 (byte-reproducible result files)")
    ev.add_argument("--videos", type=int_between(0, MAX_VIDEOS), default=0, metavar="K",
                    help="also save a GIF and a timeline PNG of the first K episodes per agent "
                         "in OUT/videos (needs the video extra)")
    ev.add_argument("--strict", action="store_true",
                    help="exit with code 4 when an agent's act/reset raised at all or any "
                         "model call failed (without --strict: code 4 when most of an "
                         "agent's decisions raised or most of its model calls failed or did "
                         "not parse: its row is marked, it measures the fallback)")
    ev.add_argument("--format", choices=FORMATS, default="rich", dest="format",
                    help="rich tables (default), markdown, csv or json")
    ev.add_argument("--json", action="store_const", const="json", dest="format",
                    help="print {agent: {metric: percentage}} (same as --format json)")
    ev.add_argument("--model", default=None, metavar="SPEC",
                    help="model for the model-backed agents (direct-vlm, mindclaw): "
                         "openai:MODEL[@URL], inspect:PROVIDER/MODEL (inspect extra), "
                         "hf:NAME_OR_PATH, replay:FILE; a small model needs the compact "
                         "answer formats (see below)")
    ev.add_argument("--agent", action="append", default=[], type=agent_option,
                    metavar="NAME:KEY=VALUE",
                    help="options of one agent, e.g. --agent mindclaw:model=openai:m@http://"
                         "127.0.0.1:8000/v1 (repeatable)")
    ev.add_argument("--record", type=path_arg, default=None, metavar="FILE",
                    help="record every model request and answer to this cassette")
    ev.add_argument("--replay", type=path_arg, default=None, metavar="FILE",
                    help="answer model requests from this cassette (no server, no cost)")
    ev.add_argument("--report", action="store_true",
                    help="also write the HTML report to OUT/report (needs the report extra)")
    scale = ev.add_argument_group("hosted models: episodes in flight and budget")
    scale.add_argument("--concurrency", type=int_between(1, MAX_CONCURRENCY), default=1,
                       metavar="N",
                       help="episodes in flight per worker (threads; default 1): model-bound "
                            "agents wait on their answers in parallel; the model's "
                            "concurrency option still caps requests in flight; records do "
                            "not depend on it")
    scale.add_argument("--max-cost", type=_usd, default=None, metavar="USD",
                       help="this run's model spend never passes USD (needs --price for "
                            "every live model): an episode starts only when what is left "
                            "covers its worst case (learned from what the server bills); "
                            "once one does not fit, none starts after it, those in flight "
                            "finish, summary.json (marked partial) is written, and --resume "
                            "continues (exit code 4); refused up front when one episode's "
                            "estimate is over USD (unless --allow-partial)")
    scale.add_argument("--max-tokens", type=positive_int, default=None, metavar="N",
                       help="this run's model tokens (input + output) never pass N (like "
                            "--max-cost)")
    scale.add_argument("--allow-partial", action="store_true",
                       help="start even when the estimate of one episode is over the budget "
                            "(the episodes the budget cuts are not recorded)")
    scale.add_argument("--price", action="append", default=[], type=_price,
                       metavar="SPEC=INPUT,OUTPUT",
                       help="US dollars per million input and output tokens of a model spec "
                            "or model name, e.g. --price gpt-4o-mini=0.15,0.60 (repeatable)")
    scale.add_argument("--estimate-episodes", type=int_between(0, MAX_ESTIMATE_EPISODES),
                       default=2, metavar="K",
                       help="with a budget: estimate the run's cost first from a dry pass "
                            "(no request sent) over the first K episodes (default 2; 0: none)")
    ev.set_defaults(func=run)


#: Exit code of a run stopped at its budget (``--resume`` continues it).
EXIT_BUDGET = EXIT_NOT_MEASURED

#: What ``evaluate --help`` says of small models (docs/models.md, "Answer formats").
SMALL_MODEL_HELP = (
    "small models (a few hundred million parameters, e.g. SmolLM2-135M): the default json "
    "answer formats mostly fail to parse, and an unparsed answer is silence; give them the "
    "compact formats: --agent direct-vlm:answer_format=line, --agent mindclaw:formats=compact "
    "(plus structured=gbnf where the server supports a grammar).")


def _usd(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive number of US dollars, got "
                                         f"{text!r}")
    return value


def _price(text: str) -> tuple[str, Any]:
    from mindhelper_env.evaluation.budget import parse_price

    spec, eq, pair = text.rpartition("=")
    if not eq or not spec.strip():
        raise argparse.ArgumentTypeError(f"expected SPEC=INPUT,OUTPUT (US dollars per million "
                                         f"tokens), got {text!r}")
    try:
        return spec.strip(), parse_price(pair)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def obs_kwargs(args: argparse.Namespace, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``env_kwargs`` with ``--obs`` and ``--frame-size`` (nothing added for the text
    default, so a text run's run.json is as before)."""
    out = dict(env_kwargs)
    if args.obs != "text":
        out["obs_mode"] = args.obs
    if args.frame_size is not None:
        if args.obs == "text":
            raise CLIError("argument --frame-size: only with --obs rgb or text+rgb")
        out["frame_size"] = args.frame_size
    return out


def agent_kwargs_of(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
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



def run(args: argparse.Namespace) -> int:
    from mindhelper_env.evaluation import EvalSettings, evaluate
    from mindhelper_env.evaluation.safety import cpu_count
    from mindhelper_env.evaluation.settings import (
        NEEDS_MODEL,
        agents_without_model,
        check_agents,
        check_extras,
        check_suite,
    )

    agents_from_cwd(args.agents)
    flag("--suite", check_suite, args.suite)
    flag("--agents", check_agents, args.agents)
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
    if args.resume and args.overwrite:
        raise CLIError("arguments --resume and --overwrite: give one of them, not both")
    agent_kwargs = agent_kwargs_of(args)
    missing = agents_without_model(args.agents, agent_kwargs)
    if missing:
        raise CLIError(f"argument --agents: {missing[0]} needs a model: add --model SPEC "
                       "(e.g. --model openai:MODEL@http://127.0.0.1:8000/v1, or hf:NAME_OR_PATH), "
                       f"--agent {missing[0]}:model=SPEC, or set $MINDHELPER_MODEL "
                       f"({', '.join(NEEDS_MODEL)} cannot run without one)")
    settings = EvalSettings(
        args.suite,
        args.agents,
        args.out,
        agent_kwargs=agent_kwargs,
        workers=args.workers,
        resume=args.resume,
        overwrite=args.overwrite,
        limit=args.limit,
        env_kwargs=obs_kwargs(args, window_kwargs(args.window_ticks)),
        progress=not args.no_progress,
        seed=args.seed,
        timing=not args.no_timing,
        trials=args.trials,
        plots=not args.no_plots,
        videos=args.videos,
        force_workers=args.force_workers or args.address is not None,
        backend=args.backend,
        address=args.address,
        concurrency=args.concurrency,
        max_cost=args.max_cost,
        max_tokens=args.max_tokens,
        prices=dict(args.price) or None,
        estimate_episodes=args.estimate_episodes,
        allow_partial=args.allow_partial,
    )
    if args.concurrency > 1 and args.backend == "ray":
        raise CLIError("argument --concurrency: only with --backend local (Ray plays one "
                       "episode per task; give it more --workers)")
    try:
        check_extras(settings)
    except ImportError as exc:
        raise CLIError(str(exc)) from None
    _check_budget_and_models(settings)
    if args.report:  # the report extra is checked before any file is written
        from mindhelper_env.report.cli import check_extra

        check_extra()
    if args.resume and not (args.out / "run.json").is_file():
        raise CLIError(f"argument --resume: {args.out / 'run.json'}: missing, so there is no "
                       f"run in {args.out} to resume (drop --resume to start one)")
    from mindhelper_env.evaluation.budget import BudgetExhausted

    try:
        summary = evaluate(settings, on_estimate=_print_estimate if args.max_cost is not None
                           or args.max_tokens is not None else None)
    except BudgetExhausted as exc:
        if exc.summary is not None:
            print_results(args.format, f"{args.suite}: {args.out} (PARTIAL: stopped at the "
                          "budget)", exc.summary)
            if args.format == "rich":
                _print_spend_line(exc.summary)
        print(f"mindhelper: {exc}; continue with: {resume_command(args)}", file=sys.stderr)
        return EXIT_BUDGET
    model_warnings(summary.get("models"))
    if args.report:  # the HTML report of this run, in OUT/report
        from mindhelper_env.report.cli import after_evaluate

        after_evaluate(args.out)
    print_results(args.format, f"{args.suite}: {args.out}", summary)
    if args.format == "rich":
        print_efficiency(summary["metrics"], summary.get("models"))
        _print_spend_line(summary)
        extras = ", ".join(summary.get("plots") or [])
        console().print(f"results: {args.out}/<agent>.jsonl, summary.json"
                        + (f", {extras}" if extras else "")
                        + f"  ({summary['played']} episodes played in "
                          f"{summary['wall_seconds']:.1f} s)", soft_wrap=True)
    agent_error_lines(summary.get("agent_errors") or {})
    return exit_code(summary, strict=args.strict)


def exit_code(summary: dict[str, Any], *, strict: bool = False) -> int:
    """:data:`EXIT_NOT_MEASURED` when a row measures its agent's fallback, not the agent
    (:func:`~mindhelper_env.cli.tables.unmeasured`), or, with ``strict``, when any act or
    reset raised or any model call failed; else :data:`EXIT_OK`."""
    if unmeasured(summary):
        return EXIT_NOT_MEASURED
    if strict:
        raised = any(c.get("errors") for c in (summary.get("agent_errors") or {}).values())
        failed = any(r.get("failed_calls") for r in (summary.get("models") or {}).values())
        if raised or failed:
            return EXIT_NOT_MEASURED
    return EXIT_OK


def _print_spend_line(summary: dict[str, Any]) -> None:
    """The model spend of a run (tokens, US dollars, the ledger's figure with a budget, the
    rate-limit answers retried), one line."""
    spend = summary.get("spend")
    if not spend:
        return
    usd = spend.get("usd")
    tokens = sum(r["prompt_tokens"] + r["completion_tokens"]
                 for r in spend["by_agent"].values())
    text = f"model spend: {tokens:,} tokens" + (f", ${usd:.4f}" if usd is not None
                                                 else " (no --price given)")
    ledger = spend.get("ledger")
    if ledger is not None:
        limit = (f" of --max-cost ${spend['max_cost']:g}" if spend.get("max_cost") is not None
                 else f" of --max-tokens {spend['max_tokens']:,}")
        paid = spend.get("spent_usd", ledger["spent_usd"])
        text += (f"; this run paid ${paid:.4f} for {ledger['spent_tokens']:,} tokens{limit} "
                 f"(${spend.get('written_usd', 0.0):.4f} on the episodes written, "
                 f"${spend.get('unwritten_usd', 0.0):.4f} on episodes cut)")
    retried = spend.get("rate_limited_retries") or 0
    if retried:
        text += f"; {retried:,} rate-limited (429) answers retried"
    console().print(text, soft_wrap=True)


def resume_command(args: argparse.Namespace) -> str:
    """The command that continues a run stopped at its budget: this one, with ``--resume``
    instead of ``--overwrite``."""
    import shlex

    argv = [a for a in getattr(args, "argv", None) or [] if a != "--overwrite"]
    if not argv:
        return "the same command with --resume"
    if "--resume" not in argv:
        argv.append("--resume")
    return shlex.join(["mindhelper", *argv])


def agent_error_lines(errors: dict[str, Any]) -> list[tuple[str, bool]]:
    """One stderr line per agent whose act/reset raised (its first traceback was logged in
    full during the run); ``[(agent, loud)]`` where ``loud``: most of its decisions raised
    (its numbers are a silent agent's)."""
    from mindhelper_env.evaluation.summary import mostly_raised

    out = []
    for agent, counts in errors.items():
        if not counts.get("errors"):
            continue
        loud = mostly_raised(counts)
        what = (f"{agent}: its act/reset raised in {counts['errors']} of {counts['decisions']} "
                f"decisions ({counts['episodes']} episode(s)), each played as 'none' (its "
                "first traceback was printed when it was raised)")
        if loud:
            sys.stderr.write(f"mindhelper: error: {what}: most of its decisions raised, so its "
                             "row measures a silent agent, not this agent\n")
        else:
            sys.stderr.write(f"mindhelper: warning: {what}\n")
        out.append((agent, loud))
    return out


def _check_budget_and_models(settings: Any) -> None:
    """Prices for a budget, and every live model spec built once (a provider that is not
    installed, a missing key, an unknown model): one line, before --out is touched."""
    from mindhelper_env.evaluation.budget import check_prices, model_spec_of, price_of

    try:
        table = check_prices(settings.prices)
    except ValueError as err:
        raise CLIError(f"argument --price: {err}") from None
    kwargs = settings.agent_kwargs or {}
    for agent in settings.agents:
        spec = model_spec_of(agent, kwargs)
        if settings.max_cost is not None and price_of(spec, table) is None:
            raise CLIError(f"argument --max-cost: no price for agent {agent}'s model {spec}: "
                           f"add --price {spec}=INPUT,OUTPUT (US dollars per million tokens)")
        if spec is not None and spec.startswith("inspect:"):
            from mindhelper_env.models.inspect_client import check_inspect_spec

            opts = {k: v for k, v in (kwargs.get(agent) or {}).items() if k != "model"}
            try:
                check_inspect_spec(spec, **opts)
            except (ImportError, ValueError) as err:
                raise CLIError(f"argument --model ({agent}): {err}") from None


def _print_estimate(estimate: dict[str, Any]) -> None:
    """The dry pass's estimate, before the run starts (stderr)."""
    for agent, row in estimate["agents"].items():
        usd = f", at most ${row['usd']:.4f}" if row.get("usd") is not None else ""
        print(f"mindhelper: estimate for {agent}: at most {row['calls_per_episode']:g} calls "
              f"and {row['prompt_tokens_per_episode'] + row['completion_tokens_per_episode']:,.0f}"
              f" tokens an episode; {row['episodes']} episodes: at most {row['tokens']:,} "
              f"tokens{usd} (dry pass over {estimate['episodes_sampled']} episodes)",
              file=sys.stderr)
