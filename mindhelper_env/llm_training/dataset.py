"""Trigger decisions as a chat dataset (``mindhelper export-trigger-data``).

Each example is one observation window of a **training-seed** episode (never a suite
episode): the system and user messages the language-model Trigger
(:class:`~mindhelper_env.agents.mindclaw.model_trigger.ModelTrigger`) would send at that
window, rendered by the same template and the same code, and the ground-truth operation
(:func:`~mindhelper_env.scenarios.trigger_labels.trigger_labels`) as the assistant's
answer. The episode is played by MindClaw whose Trigger carries out the *labels* as its
plan (:class:`LabelTrigger`), so the memory, the recent operations and everything else in
the prompt are what a perfect Trigger would have seen. Windows after the first
intervention are not exported (their labels are undefined: the world no longer follows the
no-help rollout).

Splits: ``train`` draws ``training_episodes(n, seed)`` and leaves out the
:data:`HELDOUT_EPISODES` episodes of ``heldout``; ``heldout`` takes the first ``n`` of
:func:`~mindhelper_env.agents.mindclaw.training.heldout_episodes` (the episodes the MLP Trigger's
training evaluates on). The same arguments give the same files.

Folder layout::

    DIR/hf/             datasets.Dataset.save_to_disk (columns: see COLUMNS)
    DIR/examples.jsonl  the same rows, one JSON object a line
    DIR/datasheet.json  counts per operation and family, the episodes (family, seed),
                        generator and template versions, split, arguments
    DIR/README.md       the datasheet in words

:func:`load_trigger_dataset` refuses a folder written for another generator version (or
another data format) with one line naming both versions.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mindhelper_env.agents.mindclaw.model_trigger import WindowPlanTrigger

__all__ = ["DATA_FORMAT", "HELDOUT_EPISODES", "COLUMNS", "LabelTrigger", "episode_examples",
           "export_trigger_data", "read_datasheet", "load_trigger_dataset", "DatasetVersionError"]

#: Version of this folder layout and row format.
DATA_FORMAT = "mh-trigger-chat-1"
#: Size of the held-out set that the ``train`` split never draws from.
HELDOUT_EPISODES = 200
COLUMNS = ("messages", "operation", "episode_id", "family", "seed", "needs_help", "window",
           "tick", "asked")
ENV_ID = "MindHelper-VirtualHome-v3"


class DatasetVersionError(ValueError):
    """A dataset folder written by another generator version or data format."""


class LabelTrigger(WindowPlanTrigger):
    """A :class:`~mindhelper_env.agents.mindclaw.model_trigger.WindowPlanTrigger` whose plan
    is the window's label (``labels``: tick -> operation, ``noop`` where missing); it
    records every question as ``{"tick", "messages", "label"}`` in ``.examples``."""

    def __init__(self, labels: Mapping[int, str] | None = None) -> None:
        super().__init__()
        self.labels: dict[int, str] = dict(labels or {})
        self.examples: list[dict[str, Any]] = []

    def choose(self, memory: Any, state: Any, messages: list[dict[str, str]],
               asked: bool) -> str:
        label = self.labels.get(state.tick, "noop")
        self.examples.append({"tick": state.tick, "messages": messages, "label": label,
                              "asked": bool(asked)})
        return label


def episode_examples(spec: Mapping[str, Any], env: Any = None,
                     window_ticks: int = 3) -> list[dict[str, Any]]:
    """The rows of one episode (see the module docstring)."""
    import gymnasium as gym

    from mindhelper_env.agents.mindclaw import MindClawAgent
    from mindhelper_env.scenarios.trigger_labels import trigger_labels

    own = env is None
    if own:
        env = gym.make(ENV_ID, pool_size=0, window_ticks=window_ticks)
    labels = {lab["tick"]: lab["label"] for lab in trigger_labels(spec, window_ticks)}
    trig = LabelTrigger(labels)
    agent = MindClawAgent(model="symbolic", trigger=trig)
    try:
        obs, info = env.reset(seed=0, options={"episode": dict(spec)})
        agent.reset(seed=0)
        while True:
            obs, _r, term, trunc, info = env.step(agent.act(obs, info))
            if term or trunc:
                break
    finally:
        if own:
            env.close()
    ref = spec.get("reference") or {}
    rows = []
    for k, ex in enumerate(trig.examples):
        rows.append({
            "messages": ex["messages"] + [{"role": "assistant", "content": ex["label"]}],
            "operation": ex["label"], "episode_id": str(spec["episode_id"]),
            "family": str(spec["family"]), "seed": int(spec["seed"]),
            "needs_help": bool(ref.get("needs_intervention")), "window": k,
            "tick": int(ex["tick"]), "asked": ex["asked"],
        })
    return rows


def _episodes(n: int, split: str, seed: int) -> list[dict[str, Any]]:
    from mindhelper_env.agents.mindclaw.training import heldout_episodes
    from mindhelper_env.validity import training_episodes

    if split == "heldout":
        if n > HELDOUT_EPISODES:
            raise ValueError(f"the heldout split has {HELDOUT_EPISODES} episodes, asked {n}")
        return heldout_episodes(HELDOUT_EPISODES)[:n]
    if split != "train":
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    held = {s["episode_id"] for s in heldout_episodes(HELDOUT_EPISODES)}
    out: list[dict[str, Any]] = []
    want = n
    while len(out) < n:  # training_episodes is prefix-stable: draw more until n are left
        batch = training_episodes(want, seed=seed)
        seen: set[str] = set()
        out = []
        for s in batch:
            if s["episode_id"] in held or s["episode_id"] in seen:
                continue
            seen.add(s["episode_id"])
            out.append(s)
        want += n - len(out)
    return out[:n]


def export_trigger_data(n: int, out: str | os.PathLike[str], *, split: str = "train",
                        seed: int = 0, window_ticks: int = 3,
                        overwrite: bool = False) -> dict[str, Any]:
    """Write ``n`` episodes' examples to ``out`` (see the module docstring); returns the
    datasheet."""
    import gymnasium as gym

    import mindhelper_env  # noqa: F401  (registers the envs)
    from mindhelper_env.agents.mindclaw.model_trigger import TEMPLATE
    from mindhelper_env.models.answers import load_template
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"episodes must be a positive int, got {n!r}")
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} exists and is not empty (pass overwrite=True / "
                              f"--overwrite)")
    specs = _episodes(n, split, seed)
    env = gym.make(ENV_ID, pool_size=0, window_ticks=window_ticks)
    rows: list[dict[str, Any]] = []
    try:
        for spec in specs:
            rows += episode_examples(spec, env, window_ticks)
    finally:
        env.close()
    ops = Counter(r["operation"] for r in rows)
    sheet = {
        "format": DATA_FORMAT, "generator": GENERATOR_VERSION,
        "template": load_template(TEMPLATE).version, "split": split, "seed": int(seed),
        "window_ticks": int(window_ticks), "episodes": len(specs), "examples": len(rows),
        "operations": dict(sorted(ops.items())),
        "operations_excluding_noop": sum(v for k, v in ops.items() if k != "noop"),
        "asked": sum(bool(r["asked"]) for r in rows),
        "families": dict(sorted(Counter(s["family"] for s in specs).items())),
        "help_episodes": sum(bool((s.get("reference") or {}).get("needs_intervention"))
                             for s in specs),
        "seeds": [[s["family"], int(s["seed"])] for s in specs],
        "created_by": f"mindhelper export-trigger-data --episodes {n} --split {split} "
                      f"--seed {seed}",
    }
    _write(out, rows, sheet)
    return sheet


def _write(out: Path, rows: Sequence[Mapping[str, Any]], sheet: Mapping[str, Any]) -> None:
    from datasets import Dataset

    out.mkdir(parents=True, exist_ok=True)
    hf = out / "hf"
    if hf.exists():
        shutil.rmtree(hf)
    Dataset.from_list([dict(r) for r in rows]).save_to_disk(str(hf))
    with open(out / "examples.jsonl", "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    (out / "datasheet.json").write_text(json.dumps(sheet, indent=1, sort_keys=True) + "\n")
    (out / "README.md").write_text(_readme(sheet))


def _readme(sheet: Mapping[str, Any]) -> str:
    ops = "\n".join(f"| `{k}` | {v} |" for k, v in sheet["operations"].items())
    fams = "\n".join(f"| `{k}` | {v} |" for k, v in sheet["families"].items())
    return f"""# MindHelper Trigger decisions ({sheet['split']} split)

Chat examples for a language-model Trigger: one per observation window of
{sheet['episodes']} training-seed episodes ({sheet['help_episodes']} need help), up to the
first intervention. System and user messages are the `{sheet['template']}` prompt the
MindClaw model Trigger sends; the assistant's answer is the ground-truth operation.

* generator `{sheet['generator']}`, data format `{sheet['format']}`, window of
  {sheet['window_ticks']} ticks, episode stream seed {sheet['seed']}
* {sheet['examples']} examples, {sheet['operations_excluding_noop']} of them not `noop`;
  in {sheet['asked']} the run-time Trigger asks the model (an unhandled cue)
* made by `{sheet['created_by']}`
* files: `hf/` (`datasets.load_from_disk`), `examples.jsonl`, `datasheet.json` (also the
  episodes as `[family, seed]`)

| operation | examples |
|---|---|
{ops}

| family | episodes |
|---|---|
{fams}
"""


def read_datasheet(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The datasheet of a dataset folder, checked against this package: a folder of another
    generator version or data format raises :class:`DatasetVersionError` (one line)."""
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION

    path = Path(path)
    try:
        sheet = json.loads((path / "datasheet.json").read_text())
    except FileNotFoundError:
        raise ValueError(f"{path}: no datasheet.json (not a folder written by mindhelper "
                         f"export-trigger-data)") from None
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: unreadable datasheet.json ({err})") from None
    if not isinstance(sheet, dict):
        raise ValueError(f"{path}: datasheet.json is not an object")
    theirs = sheet.get("generator")
    if theirs != GENERATOR_VERSION:
        raise DatasetVersionError(
            f"{path}: dataset made by generator {theirs!r}, this package's generator is "
            f"{GENERATOR_VERSION!r}; export it again with mindhelper export-trigger-data")
    if sheet.get("format") != DATA_FORMAT:
        raise DatasetVersionError(f"{path}: data format {sheet.get('format')!r}, this package "
                                  f"reads {DATA_FORMAT!r}")
    return sheet


def load_trigger_dataset(path: str | os.PathLike[str]) -> Any:
    """The ``datasets.Dataset`` of a folder (after :func:`read_datasheet`'s checks)."""
    from datasets import load_from_disk

    read_datasheet(path)
    return load_from_disk(str(Path(path) / "hf"))
