"""The command-line pieces of LLM training: ``mindhelper export-trigger-data`` and the
``sft`` algorithm of ``mindhelper train-trigger``.

``mindhelper_env.cli`` registers them with :func:`add_export_parser` /
:func:`add_sft_arguments` and calls :func:`run_export` / :func:`run_sft`; this module
imports nothing heavy at import time.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

__all__ = ["add_export_parser", "add_sft_arguments", "run_export", "run_sft", "SFT_ALGO"]

SFT_ALGO = "sft"
MAX_EPISODES = 100_000


def _positive_int(hi: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if not 1 <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer between 1 and {hi}, "
                                             f"got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _folder(text: str) -> Path:
    if not text.strip() or "\0" in text:
        raise argparse.ArgumentTypeError(f"expected a folder path, got {text!r}")
    return Path(text)


def add_export_parser(sub: Any, common: argparse.ArgumentParser, func: Any) -> Any:
    """Add ``export-trigger-data`` to the ``mindhelper`` subparsers ``sub``."""
    ex = sub.add_parser("export-trigger-data", parents=[common],
                        help="write Trigger decisions of training-seed episodes as a chat "
                             "dataset (Hugging Face datasets folder + JSONL + datasheet; "
                             "needs datasets)")
    ex.add_argument("--episodes", type=_positive_int(MAX_EPISODES), required=True,
                    help="training-seed episodes to play (one example per window)")
    ex.add_argument("--out", type=_folder, required=True, help="output folder")
    ex.add_argument("--split", choices=("train", "heldout"), default="train",
                    help="train (default): training episodes outside the held-out set; "
                         "heldout: the held-out training episodes (at most 200)")
    ex.add_argument("--seed", type=int, default=0,
                    help="seed of the train split's episode stream (default 0)")
    ex.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    ex.set_defaults(func=func)
    return ex


def add_sft_arguments(tt: argparse.ArgumentParser) -> None:
    """The ``--algo sft`` options of ``train-trigger``."""
    g = tt.add_argument_group("--algo sft (a language-model Trigger; needs the sft extra)")
    g.add_argument("--model", default=None,
                   help="base model: hf:PATH (a transformers folder) or hf:FILE.gguf")
    g.add_argument("--data", type=_folder, default=None,
                   help="dataset folder written by mindhelper export-trigger-data")
    g.add_argument("--epochs", type=_positive_float, default=1.0,
                   help="passes over the data (default 1)")
    g.add_argument("--max-steps", type=_positive_int(10**7), default=None,
                   help="stop after this many optimizer steps (default: --epochs)")
    g.add_argument("--batch-size", type=_positive_int(4096), default=4,
                   help="examples per step (default 4)")
    g.add_argument("--learning-rate", type=_positive_float, default=5e-5,
                   help="default 5e-5 (1e-4 or more with --lora)")
    g.add_argument("--lora", action="store_true", help="train a LoRA adapter (peft), merged "
                   "into the saved checkpoint")
    g.add_argument("--lora-rank", type=_positive_int(1024), default=16, help="default 16")
    g.add_argument("--max-examples", type=_positive_int(10**8), default=None,
                   help="train on a random subset of this many examples")
    g.add_argument("--oversample", type=_positive_int(10**6), default=None,
                   help="repeat the examples of rarer operations up to about this many each "
                   "(at most 8 copies)")
    g.add_argument("--asked-only", action="store_true", help="train only on the examples "
                   "where the run-time Trigger asks the model (an unhandled cue)")
    g.add_argument("--device", choices=("cpu", "cuda"), default=None,
                   help="default: cuda when available, else cpu")


def run_export(args: argparse.Namespace, error: type[Exception]) -> int:
    if importlib.util.find_spec("datasets") is None:
        raise error("export-trigger-data needs datasets: pip install 'mindhelper-env[sft]'")
    if args.out.exists() and not args.out.is_dir():
        raise error(f"argument --out: {args.out} is not a folder")
    from mindhelper_env.llm_training.dataset import HELDOUT_EPISODES, export_trigger_data

    if args.split == "heldout" and args.episodes > HELDOUT_EPISODES:
        raise error(f"argument --episodes: the heldout split has {HELDOUT_EPISODES} "
                    f"episodes, got {args.episodes}")
    try:
        sheet = export_trigger_data(args.episodes, args.out, split=args.split,
                                    seed=args.seed, overwrite=args.overwrite)
    except FileExistsError as err:
        raise error(f"argument --out: {err}") from None
    ops = ", ".join(f"{k} {v}" for k, v in sheet["operations"].items())
    print(f"{sheet['examples']} examples from {sheet['episodes']} episodes "
          f"({sheet['split']}, generator {sheet['generator']}) in {args.out}: {ops}")
    return 0


def run_sft(args: argparse.Namespace, error: type[Exception]) -> int:
    missing = [m for m in ("torch", "transformers", "trl", "datasets")
               + (("peft",) if args.lora else ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise error(f"argument --algo: sft needs {', '.join(missing)}; install the sft "
                    "extra: pip install torch==2.13.0 && pip install 'mindhelper-env[sft]'")
    if not args.model:
        raise error("argument --model: --algo sft needs a base model, e.g. hf:PATH")
    if args.data is None:
        raise error("argument --data: --algo sft needs a dataset folder (mindhelper "
                    "export-trigger-data)")
    if args.out.is_symlink() or (args.out.exists() and not args.out.is_dir()):
        raise error(f"argument --out: {args.out} is not a folder")
    from mindhelper_env.llm_training.dataset import read_datasheet
    from mindhelper_env.llm_training.sft import train_sft

    try:
        sheet = read_datasheet(args.data)
    except ValueError as err:
        raise error(f"argument --data: {err}") from None
    if args.asked_only and not sheet.get("asked"):
        raise error(f"argument --asked-only: {args.data} has no example the run-time "
                    "Trigger asks (an unhandled cue); export more episodes")
    try:
        summary = train_sft(args.data, args.model, args.out, epochs=args.epochs,
                            max_steps=args.max_steps or -1, batch_size=args.batch_size,
                            learning_rate=args.learning_rate, lora=args.lora,
                            lora_rank=args.lora_rank, max_examples=args.max_examples,
                            seed=args.seed, device=args.device,
                            oversample=args.oversample or 0,
                            asked_only=args.asked_only)
    except ValueError as err:
        raise error(f"argument --model: {err}") from None
    losses = summary["losses"]
    trend = (f"loss {losses[0]:.3f} -> {losses[-1]:.3f}" if losses
             else f"mean training loss {summary['train_loss']:.3f}")
    print(f"{summary['steps']} steps on {summary['examples']} examples in "
          f"{summary['train_seconds']:.0f} s ({summary['device']}); {trend}")
    print(f"checkpoint: {summary['checkpoint']} (use with --agent "
          f"mindclaw:trigger={summary['trigger_spec']})")
    return 0
