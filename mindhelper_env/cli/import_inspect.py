"""``mindhelper import-inspect``: an Inspect AI log of the ``mindhelper`` task as result
records (``<agent>.jsonl``, ``run.json``, ``summary.json``), so ``score`` and ``report`` work
on it (``inspect`` extra)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mindhelper_env.cli.base import EXIT_OK, CLIError, console, path_arg


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    ip = sub.add_parser("import-inspect", parents=[common],
                        help="convert an Inspect AI log of the mindhelper task to result "
                             "records")
    ip.add_argument("log", type=path_arg, help="the Inspect log (.eval or .json)")
    ip.add_argument("--out", required=True, type=path_arg,
                    help="output directory (must hold no results, unless --overwrite)")
    ip.add_argument("--overwrite", action="store_true",
                    help="replace results already in --out")
    ip.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from mindhelper_env.inspect_task import records_from_log
    except ImportError as err:
        raise CLIError(str(err)) from None
    from mindhelper_env.evaluation import safety
    from mindhelper_env.evaluation.episode import suite_env_id
    from mindhelper_env.evaluation.results import result_file_name, rewrite_sorted
    from mindhelper_env.evaluation.run import RUN_FILE, SUMMARY_FILE, holds_results
    from mindhelper_env.evaluation.settings import (
        RUN_FORMAT,
        check_suite,
        suite_episode_ids,
        suite_reference,
    )
    from mindhelper_env.evaluation.summary import summarize, summarize_trials

    if args.out.exists() and not args.out.is_dir():
        raise CLIError(f"argument --out: {args.out} exists and is not a directory")
    found = holds_results(args.out)
    if found and not args.overwrite:
        raise CLIError(f"argument --out: {args.out} holds results ({', '.join(found[:3])}); "
                       "add --overwrite or choose a new directory")
    try:
        content = records_from_log(args.log)
    except ImportError as err:
        raise CLIError(str(err)) from None
    suite, by_agent, missing = content["suite"], content["records"], content["unscored"]
    try:
        check_suite(suite)
    except ValueError as err:
        raise CLIError(f"{args.log}: {err}") from None
    ids = set(suite_episode_ids(suite))
    for agent, records in by_agent.items():
        bad = [r for r in records if r.get("suite") != suite or r.get("episode_id") not in ids]
        if bad:
            raise CLIError(f"{args.log}: a record of {agent} ({bad[0].get('episode_id')!r}) "
                           f"is not an episode of {suite}")
    refs = {str(r["episode_id"]): suite_reference(suite, int(r["index"]))
            for records in by_agent.values() for r in records}
    from mindhelper_env.evaluation.provenance import agent_provenance, run_provenance, stamp

    # the provenance evaluate gives the same agent: the same stamps, byte for byte
    provenance = run_provenance(
        suite=suite, env_id=suite_env_id(suite), env_kwargs=content["env_kwargs"],
        seed=content["seed"], trials=int(content.get("trials", 1)),
        agents={a: agent_provenance(a, a, {}) for a in by_agent})
    provenance["source"] = str(args.log)
    for agent, records in by_agent.items():
        for r in records:
            stamp(r, provenance, agent, refs[str(r["episode_id"])])
    summary: dict[str, Any] = {"suite": suite, "source": str(args.log),
                               "episodes": {a: len(r) for a, r in by_agent.items()},
                               "unscored_samples": missing}
    trials = int(content.get("trials", 1))
    summary.update(summarize_trials(by_agent, refs, trials) if trials > 1
                   else summarize(by_agent, refs))
    summary["provenance"] = provenance
    args.out.mkdir(parents=True, exist_ok=True)
    lock = safety.OutputLock(args.out).acquire()
    try:
        for agent, records in by_agent.items():
            rewrite_sorted(args.out / result_file_name(agent), records)
        run_record = {"format": RUN_FORMAT, "suite": suite, "env_id": suite_env_id(suite),
                      "env_kwargs": content["env_kwargs"], "seed": content["seed"],
                      "timing": False, **({"trials": trials} if trials > 1 else {}),
                      "provenance": provenance}
        safety.atomic_write_bytes(args.out / RUN_FILE,
                                  (json.dumps(run_record, indent=2) + "\n").encode())
        safety.atomic_write_bytes(args.out / SUMMARY_FILE,
                                  (json.dumps(summary, indent=2) + "\n").encode())
    finally:
        lock.release()
    counts = ", ".join(f"{a}: {len(r)}" for a, r in by_agent.items())
    console().print(f"{args.out}: {counts} records of {suite}"
                    + (f" ({missing} samples without a score left out)" if missing else ""),
                    soft_wrap=True)
    return EXIT_OK
