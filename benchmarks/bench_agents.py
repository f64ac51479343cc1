"""Model use of direct-vlm vs MindClaw, and symbolic MindClaw's scores
(``python benchmarks/bench_agents.py``).

Part 1 runs ``direct-vlm`` and ``mindclaw`` (model backend: default, and with Action
Generation on the model too) on the same episodes
(``vh-dev-v5`` by default) against one scripted OpenAI-compatible server on 127.0.0.1
(``tests/scripted_models.py``: answers as a model with perfect judgement would, from the
episode's reference, so direct-vlm makes as few calls as it can; replies carry no usage,
so both agents' tokens are the client's ``ceil(chars / 4)`` estimate). It prints model
calls, prompt and completion tokens per episode and per decision, seconds per decision
(wall time inside ``act``, HTTP round trips included), parse failures, PHA and PIA side by
side, and MindClaw / direct-vlm ratios. Part 2 plays symbolic MindClaw (no model) on
``vh-test-v5`` with ``--workers`` processes and prints PHA, PIA, TA, harm, Trigger operation
accuracy and wall time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
from rich.console import Console
from rich.table import Table

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.agents import make_agent
from mindhelper_env.evaluation import evaluate, run_episode
from mindhelper_env.metrics import as_percentages, compute_metrics, trigger_accuracy
from mindhelper_env.scenarios.suites import suite_episode
from mindhelper_env.scenarios.trigger_labels import attach_trigger_labels

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai_server import ScriptedServer  # noqa: E402
from scripted_models import ReferenceScript  # noqa: E402

#: (column, agent, options): MindClaw's default (model for Mental Reasoning, planner for the
#: program) and with Action Generation on the model too.
VARIANTS = (("direct-vlm", "direct-vlm", {}), ("mindclaw", "mindclaw", {}),
            ("mindclaw+action", "mindclaw", {"backends": {"action": "model"}}))
COUNTERS = ("model_calls", "prompt_tokens", "completion_tokens", "parse_failures",
            "fallbacks", "decisions")


def play(agent: Any, script: ReferenceScript, suite: str, n: int) -> dict[str, Any]:
    env = gym.make("MindHelper-VirtualHome-v3")
    totals = dict.fromkeys(COUNTERS, 0)
    seconds = 0.0
    records, refs = [], []
    try:
        for i in range(n):
            spec = suite_episode(suite, i)
            script.reference = spec["reference"]
            rec = run_episode(env, agent, options={"suite": suite, "index": i})
            for k in COUNTERS:
                totals[k] += int(getattr(agent.usage, k))
            seconds += rec["usage"]["seconds"]  # the runner's wall time inside act
            if "trigger_ops" in rec:
                attach_trigger_labels(rec, spec)
            records.append(rec)
            refs.append({**spec["reference"], "episode_id": spec["episode_id"]})
    finally:
        env.close()
    metrics = as_percentages(compute_metrics(records, refs))
    return {"n": n, "totals": totals, "seconds": seconds, "metrics": metrics,
            "trigger": trigger_accuracy(records)}


def part1(console: Console, suite: str, limit: int | None) -> None:
    from mindhelper_env.scenarios.suites import SUITES

    n = int(SUITES[suite]["n"]) if limit is None else limit
    script = ReferenceScript()
    results = {}
    with ScriptedServer(script) as server:
        spec = f"openai:scripted@{server.url}"
        for label, name, kw in VARIANTS:
            t0 = time.perf_counter()
            results[label] = play(make_agent(name, model=spec, **kw), script, suite, n)
            results[label]["wall"] = time.perf_counter() - t0
    table = Table(title=f"{suite}, {n} episodes, scripted model (reference-driven) on 127.0.0.1")
    table.add_column("per episode / per decision", style="bold")
    for name in results:
        table.add_column(name, justify="right")
    for name in list(results)[1:]:
        table.add_column(f"{name} / direct", justify="right")

    def row(label: str, fn: Any, fmt: str = "{:.2f}") -> None:
        vals = [fn(r) for r in results.values()]
        ratios = [f"{v / vals[0]:.3f}" if vals[0] else "n/a" for v in vals[1:]]
        table.add_row(label, *(fmt.format(v) for v in vals), *ratios)

    def per_ep(key: str) -> Any:
        return lambda r: r["totals"][key] / r["n"]

    def per_dec(key: str) -> Any:
        return lambda r: r["totals"][key] / max(r["totals"]["decisions"], 1)

    row("model calls / episode", per_ep("model_calls"))
    row("prompt tokens / episode", per_ep("prompt_tokens"), "{:.0f}")
    row("completion tokens / episode", per_ep("completion_tokens"), "{:.1f}")
    row("tokens / episode", lambda r: (r["totals"]["prompt_tokens"]
                                       + r["totals"]["completion_tokens"]) / r["n"], "{:.0f}")
    row("model calls / decision", per_dec("model_calls"), "{:.3f}")
    row("prompt tokens / decision", per_dec("prompt_tokens"), "{:.1f}")
    row("completion tokens / decision", per_dec("completion_tokens"), "{:.2f}")
    row("prompt tokens / call", lambda r: r["totals"]["prompt_tokens"]
        / max(r["totals"]["model_calls"], 1), "{:.0f}")
    row("ms / decision", lambda r: 1000 * r["seconds"] / max(r["totals"]["decisions"], 1))
    row("decisions / episode", per_ep("decisions"))
    row("parse failures (total)", lambda r: r["totals"]["parse_failures"], "{:.0f}")
    row("PHA", lambda r: r["metrics"]["PHA"] or 0.0, "{:.1f}")
    row("PIA", lambda r: r["metrics"]["PIA"] or 0.0, "{:.1f}")
    console.print(table)
    trig = results["mindclaw"]["trigger"]
    if trig:
        console.print(f"mindclaw Trigger op accuracy (labels attached by the bench) "
                      f"{100 * trig['op_accuracy']:.1f}% "
                      f"({trig['ops']} windows), without noop labels "
                      f"{100 * trig['op_accuracy_no_noop']:.1f}%")
    for name, r in results.items():
        console.print(f"{name}: {r['wall']:.1f} s wall")


def part2(console: Console, suite: str, workers: int, limit: int | None) -> None:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        summary = evaluate(suite, ["mindclaw"], tmp, workers=workers, limit=limit,
                           progress=False, plots=False, agent_kwargs={"mindclaw": {"model":
                                                                                   "symbolic"}})
    wall = time.perf_counter() - t0
    m = summary["metrics"]["mindclaw"]
    console.print(f"symbolic mindclaw on {suite} ({summary['episodes']['mindclaw']} episodes, "
                  f"{workers} workers): PHA {m['PHA']:.1f}  PIA {m['PIA']:.1f}  "
                  f"TA {m['TA']:.1f}  harm {m['harm_rate']:.1f}  "
                  f"model calls/episode {m['efficiency']['model_calls_per_episode']:.0f}  "
                  f"wall {wall:.1f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="vh-dev-v5", help="suite of part 1")
    ap.add_argument("--limit", type=int, default=None, help="first N episodes of part 1")
    ap.add_argument("--test-suite", default="vh-test-v5", help="suite of part 2")
    ap.add_argument("--test-limit", type=int, default=None)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    console = Console(width=140)
    part1(console, args.suite, args.limit)
    part2(console, args.test_suite, args.workers, args.test_limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
