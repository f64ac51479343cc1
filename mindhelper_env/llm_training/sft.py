"""Fine-tuning a language-model Trigger (``mindhelper train-trigger --algo sft``).

:func:`train_sft` fine-tunes a causal language model on a folder written by
``mindhelper export-trigger-data`` with TRL's ``SFTTrainer``: the system and user messages
are the prompt, the operation (the assistant's message) the completion, and the loss is
taken on the completion only. On the CPU by default, on a CUDA GPU when there is one
(``device=``). ``lora=True`` trains a LoRA adapter (peft) and merges it into the weights
before saving, so the checkpoint is a plain ``transformers`` folder that
``make_agent("mindclaw", trigger="hf:CKPT")`` loads. The base model is a spec ``hf:PATH``
(a model folder) or ``hf:FILE.gguf`` (``transformers`` dequantizes it; the ``gguf``
extra), as :func:`mindhelper_env.models.make_client` takes them.

Written to ``out``: ``checkpoint/`` (weights, tokenizer with its chat template,
``mindhelper_trigger.json``: base model, data folder's datasheet, template and generator
versions, steps, losses) and ``summary.json``. :func:`operation_accuracy` scores a
checkpoint (or any model spec) on a dataset folder: accuracy over all examples and over
those whose answer is not ``noop`` (as the MindClaw paper reports), and the parse failures.

Needs the ``sft`` extra (``trl``, ``peft``, ``datasets``, with ``torch`` and
``transformers``); importing this module imports none of them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["train_sft", "operation_accuracy", "asked_examples", "CHECKPOINT_META"]

logger = logging.getLogger(__name__)

#: The file in a checkpoint folder that says how it was trained.
CHECKPOINT_META = "mindhelper_trigger.json"


def _base_path(model: str) -> str:
    if not isinstance(model, str) or not model.startswith("hf:") or not model[3:].strip():
        raise ValueError(f"model: expected 'hf:PATH' or 'hf:FILE.gguf', got {model!r}")
    return model[3:]


def _split(example: dict[str, Any]) -> dict[str, Any]:
    msgs = example["messages"]
    return {"prompt": msgs[:-1], "completion": msgs[-1:]}


def oversample_rare(dataset: Any, min_count: int, max_repeat: int = 8, seed: int = 0) -> Any:
    """``dataset`` with the examples of every operation that has fewer than ``min_count``
    repeated until it has about that many (at most ``max_repeat`` copies of each), then
    shuffled: the rare operations (``action_run``: a few in a hundred decisions) are the ones
    a fine-tune otherwise learns never to answer."""
    from collections import Counter as _Counter

    from datasets import concatenate_datasets

    counts = _Counter(dataset["operation"])
    parts = [dataset]
    for op, n in sorted(counts.items()):
        if 0 < n < min_count:
            extra = min(max_repeat, -(-int(min_count) // n)) - 1
            if extra > 0:
                rows = dataset.filter(lambda r, op=op: r["operation"] == op)
                parts += [rows] * extra
    return concatenate_datasets(parts).shuffle(seed=seed) if len(parts) > 1 else dataset


def asked_examples(dataset: Any) -> Any:
    """The examples of ``dataset`` where the run-time Trigger asks the model (``asked``):
    elsewhere every answer runs the same operations, so only these decide what the robot
    does. In them the choice is between ``action_run`` (the person is stuck and help is
    timely) and ``reasoning_run`` (a cue to judge, nothing to issue yet); in all examples
    ``noop`` and the belief operations, answers that change nothing at run time, are
    most."""
    return dataset.filter(lambda r: bool(r["asked"]))


def train_sft(data: str | os.PathLike[str], model: str, out: str | os.PathLike[str], *,
              epochs: float = 1.0, max_steps: int = -1, batch_size: int = 4,
              learning_rate: float = 5e-5, lora: bool = False, lora_rank: int = 16,
              max_examples: int | None = None, max_length: int = 1024, seed: int = 0,
              device: str | None = None, threads: int | None = None,
              logging_steps: int = 5, gradient_checkpointing: bool = False,
              oversample: int = 0, asked_only: bool = False) -> dict[str, Any]:
    """Fine-tune ``model`` on the dataset folder ``data``; write the run to ``out`` (see
    the module docstring). Returns the summary (also ``out/summary.json``).
    ``asked_only`` trains only on the examples where the run-time Trigger asks the model
    (column ``asked``: an unhandled cue before the intervention; see
    :func:`asked_examples`).
    ``gradient_checkpointing`` (off by default: small models fit, and recomputing the
    forward pass costs a third more time) trades time for memory. ``oversample`` > 0 repeats
    the examples of rarer operations up to about that many each (:func:`oversample_rare`)."""
    import torch
    from trl import SFTConfig, SFTTrainer

    from mindhelper_env.llm_training.dataset import load_trigger_dataset, read_datasheet
    from mindhelper_env.models.hf_client import HFClient

    sheet = read_datasheet(data)  # refuses another generator version, in one line
    dataset = load_trigger_dataset(data)
    if asked_only:
        dataset = asked_examples(dataset)
        if len(dataset) == 0:
            raise ValueError(f"{data}: no example is asked at run time (column 'asked'); "
                             "export more episodes")
    if max_examples is not None and max_examples < len(dataset):
        dataset = dataset.shuffle(seed=seed).select(range(int(max_examples)))
    if oversample:
        dataset = oversample_rare(dataset, int(oversample), seed=seed)
    dataset = dataset.map(_split, remove_columns=dataset.column_names)
    if threads:
        torch.set_num_threads(int(threads))
    cuda = torch.cuda.is_available() if device is None else device.startswith("cuda")
    # a private copy: training changes the weights that other clients would share
    base = HFClient(_base_path(model), device="cuda" if cuda else "cpu", seed=seed,
                    shared=False)
    net, tok = base.model, base.tokenizer
    quantizer = getattr(net, "hf_quantizer", None)
    if quantizer is not None and "gguf" in str(quantizer.quantization_config.quant_method).lower():
        # transformers dequantized the GGUF file to plain float weights on loading; only the
        # marker is left, and the Trainer refuses to train a model so marked
        quantizer.remove_quantization_config(net)
    net.train()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    peft_config = None
    if lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=int(lora_rank), lora_alpha=2 * int(lora_rank),
                                 lora_dropout=0.0, target_modules="all-linear",
                                 task_type="CAUSAL_LM")
    # transformers 5.x renamed the switch (the old name warns, and goes in v6)
    names = {f.name for f in dataclasses.fields(SFTConfig)}
    checkpointing = ("activation_checkpointing" if "activation_checkpointing" in names
                     else "gradient_checkpointing")
    args = SFTConfig(
        output_dir=str(out / "trainer"), num_train_epochs=float(epochs),
        max_steps=int(max_steps), per_device_train_batch_size=int(batch_size),
        learning_rate=float(learning_rate), lr_scheduler_type="constant",
        logging_steps=int(logging_steps), save_strategy="no", report_to=[], seed=int(seed),
        data_seed=int(seed), use_cpu=not cuda, max_length=int(max_length),
        completion_only_loss=True, dataloader_num_workers=0, disable_tqdm=True,
        **{checkpointing: bool(gradient_checkpointing)},
        # TRL's SFTConfig turns bf16 on by default; on a CPU without bf16 matrix units that
        # falls back to scalar kernels, some fifty times slower than float32
        bf16=bool(cuda and torch.cuda.is_bf16_supported()), fp16=False,
    )
    trainer = SFTTrainer(model=net, args=args, train_dataset=dataset, processing_class=tok,
                         peft_config=peft_config)
    t0 = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - t0
    losses = [round(float(h["loss"]), 5) for h in trainer.state.log_history if "loss" in h]
    trained = trainer.model
    if lora:
        trained = trained.merge_and_unload()
    ckpt = out / "checkpoint"
    trained.save_pretrained(str(ckpt))
    tok.save_pretrained(str(ckpt))
    meta = {
        "base_model": model, "data": str(data), "generator": sheet["generator"],
        "template": sheet["template"], "data_format": sheet["format"],
        "examples": len(dataset), "epochs": epochs, "max_steps": max_steps,
        "steps": int(trainer.state.global_step), "batch_size": batch_size,
        "learning_rate": learning_rate, "lora": bool(lora), "oversample": int(oversample),
        "asked_only": bool(asked_only), "lora_rank": int(lora_rank) if lora else None,
        "seed": seed,
        "device": "cuda" if cuda else "cpu", "train_seconds": round(seconds, 2),
        "train_loss": round(float(result.training_loss), 5), "losses": losses,
        "torch_threads": torch.get_num_threads(),
    }
    (ckpt / CHECKPOINT_META).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    summary = {**meta, "checkpoint": str(ckpt), "trigger_spec": f"hf:{ckpt}"}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary


def operation_accuracy(model: str | Any, data: str | os.PathLike[str], *,
                       limit: int | None = None, device: str | None = None
                       ) -> dict[str, Any]:
    """Operation accuracy of ``model`` (a spec such as ``"hf:CKPT"`` or a model client) on
    the dataset folder ``data``: ``accuracy`` (all examples), ``accuracy_excluding_noop``
    (examples whose answer is not ``noop``), ``accuracy_asked`` (examples where the run-time
    Trigger asks the model: the answers that decide what it does), ``parse_failures``,
    per-operation counts and hits, ``seconds``."""
    from mindhelper_env.agents.mindclaw.model_trigger import parse_operation
    from mindhelper_env.llm_training.dataset import load_trigger_dataset
    from mindhelper_env.models import make_client

    ds = load_trigger_dataset(data)
    if limit is not None:
        ds = ds.select(range(min(int(limit), len(ds))))
    client = make_client(model, **({"device": device} if device else {})) \
        if isinstance(model, str) else model
    hits: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    predicted: Counter[str] = Counter()
    asked = asked_hits = failures = 0
    t0 = time.perf_counter()
    for row in ds:
        truth = row["operation"]
        counts[truth] += 1
        is_asked = bool(row.get("asked"))
        asked += is_asked
        text = client.complete(row["messages"][:-1], max_tokens=16, temperature=0.0).text
        op = parse_operation(text)
        if op is None:
            failures += 1
            predicted["(unparsed)"] += 1
            continue
        predicted[op] += 1
        hits[truth] += op == truth
        if is_asked:
            asked_hits += op == truth
    n = sum(counts.values())
    n_act = n - counts["noop"]
    return {
        "examples": n, "examples_excluding_noop": n_act,
        "accuracy": round(100.0 * sum(hits.values()) / n, 2) if n else 0.0,
        "accuracy_excluding_noop": round(100.0 * (sum(hits.values()) - hits["noop"]) / n_act,
                                         2) if n_act else 0.0,
        "examples_asked": asked,
        "accuracy_asked": round(100.0 * asked_hits / asked, 2) if asked else 0.0,
        "parse_failures": failures, "per_operation": {
            k: {"examples": counts[k], "correct": hits[k]} for k in sorted(counts)},
        "predicted": dict(sorted(predicted.items())),
        "seconds": round(time.perf_counter() - t0, 2),
    }
