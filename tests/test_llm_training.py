"""Trigger decisions as a dataset, the language-model Trigger, and SFT with TRL on a tiny
random-weight model (docs/llm-training.md).

The dataset and SFT tests need ``datasets`` / ``trl`` (the ``sft`` extra): skipped without
them, except when ``MINDHELPER_REQUIRE_SFT=1`` (set by ``.ci/run``, so CI never skips them).
The model-Trigger tests with scripted clients need nothing extra.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import mindhelper_env  # noqa: F401
from mindhelper_env.agents import make_agent
from mindhelper_env.agents.mindclaw.model_trigger import (
    ModelTrigger,
    WindowPlanTrigger,
    parse_operation,
)
from mindhelper_env.agents.mindclaw.trigger import TRIGGER_OPS
from mindhelper_env.metrics import intervention_tick
from mindhelper_env.models.base import Completion, ModelError

ROOT = Path(__file__).resolve().parents[1]


def need(module: str) -> Any:
    """Import a module of the ``sft`` extra; skip without it, but fail when
    ``MINDHELPER_REQUIRE_SFT=1`` (set by ``.ci/run``)."""
    if os.environ.get("MINDHELPER_REQUIRE_SFT") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason="needs the sft extra: pip install -e '.[sft]'")


class Scripted:
    """A model client answering by a function of the user message (and counting calls)."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list[list[dict[str, Any]]] = []

    def complete(self, messages, *, max_tokens, temperature):
        self.requests.append(messages)
        return Completion(self.answer(messages), 10, 2, 0.0)


def tick_of(messages) -> int:
    return int(re.match(r"Tick (\d+)\.", messages[-1]["content"]).group(1))


def play(agent, index: int, suite: str = "vh-dev-v2"):
    env = gym.make("MindHelper-VirtualHome-v0")
    obs, info = env.reset(options={"suite": suite, "index": index})
    agent.reset()
    while True:
        obs, _r, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            env.close()
            return info


@pytest.mark.parametrize("text, op", [
    ("noop", "noop"), ("action_run\n", "action_run"), ("Answer: reasoning_run.", "reasoning_run"),
    ("`belief_update_actor_belief`", "belief_update_actor_belief"), ("NOOP", "noop"),
    ("act now", None), ("", None), (None, None), ("action_run please", None),
])
def test_parse_operation(text, op) -> None:
    assert parse_operation(text) == op


def test_unusable_answers_count_parse_failures_and_never_crash() -> None:
    client = Scripted(lambda m: "I think the robot should help!")
    agent = make_agent("mindclaw", trigger=client)
    info = play(agent, 0)
    assert "episode_record" in info
    assert agent.usage.model_calls == len(client.requests) > 0
    assert agent.usage.parse_failures == agent.usage.model_calls
    assert agent.usage.prompts["mindclaw.trigger"].startswith("mindclaw-trigger.line-")
    # an unusable answer plans noop: the robot never acts
    assert all(w["action"] is None for w in agent.trace)


def test_failed_calls_count_as_fallbacks() -> None:
    class Broken:
        def complete(self, messages, *, max_tokens, temperature):
            raise ModelError("down", kind="connection")

    agent = make_agent("mindclaw", trigger=Broken())
    info = play(agent, 0)
    assert "episode_record" in info
    assert agent.usage.fallbacks == agent.usage.model_calls > 0
    assert agent.usage.errors == {"connection": agent.usage.model_calls}


def test_bad_trigger_argument_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="trigger"):
        make_agent("mindclaw", trigger=3)
    with pytest.raises(ValueError, match="trigger"):
        make_agent("mindclaw", trigger=" ")


def test_model_is_asked_only_where_its_answer_matters() -> None:
    """With ask="cues" the model sees only windows with an unhandled cue; "always" asks
    in every window until the intervention, and both play the same episode alike when the
    model always answers noop."""
    a = Scripted(lambda m: "noop")
    b = Scripted(lambda m: "noop")
    ta, tb = ModelTrigger(a), ModelTrigger(b, ask="always")
    ra, rb = (play(make_agent("mindclaw", trigger=t), 3)["episode_record"] for t in (ta, tb))
    assert len(b.requests) == ra["steps"] == rb["steps"]
    assert 0 < len(a.requests) < len(b.requests)
    assert all("Cues: none" not in m[-1]["content"] for m in a.requests)
    assert ra["actions"] == rb["actions"]


def test_action_run_answers_reach_the_rule_triggers_intervention() -> None:
    """A model that answers action_run wherever a cue is seen acts like the rule Trigger
    (which reasons about every cue and acts on the first need)."""
    rule = make_agent("mindclaw")
    llm = make_agent("mindclaw", trigger=Scripted(lambda m: "action_run"))
    acted = 0
    for index in range(6):
        a, b = play(rule, index)["episode_record"], play(llm, index)["episode_record"]
        assert a["actions"] == b["actions"], index
        acted += intervention_tick(b["actions"]) is not None
    assert acted > 0


def test_reasoning_run_answers_reason_but_never_act() -> None:
    agent = make_agent("mindclaw", trigger=Scripted(lambda m: "reasoning_run"))
    acted = reasoned = 0
    for index in range(6):
        rec = play(agent, index)["episode_record"]
        acted += intervention_tick(rec["actions"]) is not None
        reasoned += sum(w["ops"].count("reasoning_run") for w in agent.trace)
    assert acted == 0 and reasoned > 0


# --------------------------------------------------------------------------------------
# The dataset
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    need("datasets")
    from mindhelper_env.llm_training.dataset import export_trigger_data

    out = tmp_path_factory.mktemp("trigger-data") / "d"
    sheet = export_trigger_data(4, out, seed=3)
    return out, sheet


def test_export_writes_dataset_jsonl_and_datasheet(small_data) -> None:
    from mindhelper_env.llm_training.dataset import COLUMNS, load_trigger_dataset
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION

    out, sheet = small_data
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    ds = load_trigger_dataset(out)
    assert len(ds) == len(rows) == sheet["examples"] > 0
    assert set(ds.column_names) == set(COLUMNS) == set(rows[0])
    assert ds[0]["messages"] == rows[0]["messages"]
    assert sheet["generator"] == GENERATOR_VERSION and sheet["split"] == "train"
    counts: dict[str, int] = {}
    for r in rows:
        assert [m["role"] for m in r["messages"]] == ["system", "user", "assistant"]
        assert r["messages"][-1]["content"] == r["operation"] in TRIGGER_OPS
        counts[r["operation"]] = counts.get(r["operation"], 0) + 1
    assert counts == sheet["operations"]
    assert sheet["asked"] == sum(r["asked"] for r in rows) > 0
    # the model is asked exactly in the windows that show an unhandled cue
    assert all(r["asked"] == ("Cues: none" not in r["messages"][1]["content"]) for r in rows)
    assert sheet["episodes"] == len(sheet["seeds"]) == 4
    assert sum(sheet["families"].values()) == 4
    assert {r["episode_id"] for r in rows} == {f"{f}-{s}" for f, s in sheet["seeds"]}
    assert "| operation | examples |" in (out / "README.md").read_text()


def test_export_is_deterministic_and_train_never_holds_heldout_episodes(small_data,
                                                                          tmp_path) -> None:
    from mindhelper_env.agents.mindclaw.training import heldout_episodes
    from mindhelper_env.llm_training.dataset import HELDOUT_EPISODES, export_trigger_data
    from mindhelper_env.scenarios.suites import TRAINING_SEED_RANGE

    out, sheet = small_data
    again = export_trigger_data(4, tmp_path / "again", seed=3)
    assert (tmp_path / "again" / "examples.jsonl").read_bytes() == \
        (out / "examples.jsonl").read_bytes()
    assert again == sheet
    held = {s["episode_id"] for s in heldout_episodes(HELDOUT_EPISODES)}
    assert not held & {f"{f}-{s}" for f, s in sheet["seeds"]}
    assert all(s in TRAINING_SEED_RANGE for _f, s in sheet["seeds"])
    h = export_trigger_data(2, tmp_path / "held", split="heldout")
    assert {f"{f}-{s}" for f, s in h["seeds"]} <= held
    with pytest.raises(FileExistsError):
        export_trigger_data(2, tmp_path / "held", split="heldout")


def test_the_model_sees_at_run_time_exactly_the_exported_prompts(small_data) -> None:
    """Answering each window with its label, the model Trigger sends the exported
    prompts, window for window."""
    from mindhelper_env.scenarios.generator import generate_episode

    out, sheet = small_data
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    family, seed = sheet["seeds"][0]
    mine = [r for r in rows if r["episode_id"] == f"{family}-{seed}"]
    labels = {r["tick"]: r["operation"] for r in mine}
    client = Scripted(lambda m: labels[tick_of(m)])
    agent = make_agent("mindclaw", trigger=ModelTrigger(client, ask="always"))
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    obs, info = env.reset(seed=0, options={"episode": generate_episode(family, seed)})
    agent.reset(seed=0)
    while True:
        obs, _r, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            break
    assert client.requests == [r["messages"][:-1] for r in mine]


def test_each_cue_in_a_prompt_carries_the_mlp_triggers_cue_flags(small_data) -> None:
    """The clues after a cue are the flags of the MLP Trigger's observation for it."""
    from mindhelper_env.agents.mindclaw.model_trigger import CLUES, cue_clues
    from mindhelper_env.agents.mindclaw.trigger import (
        OBSERVATION_NAMES,
        policy_observation,
    )

    out, _ = small_data
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    asked = [r["messages"][1]["content"] for r in rows if r["asked"]]
    assert asked
    for text in asked:
        cues = text.split("\nCues: ")[1].split("\nRecent: ")[0]
        clues = re.findall(r"Clues: ([^.]*)\.", cues)
        assert clues and all(len(c.split(", ")) == len(CLUES) for c in clues)
        assert all(w.rsplit(" ", 1)[1] in ("yes", "no") for c in clues for w in c.split(", "))
    # against the observation: play one episode with the rule Trigger and compare
    agent = make_agent("mindclaw")
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    obs, info = env.reset(seed=5)
    agent.reset(seed=5)
    engine, compared = agent.engine, 0
    for _ in range(40):
        state = engine.begin_window(obs, info)
        ctx = state.next_cue()
        if ctx is not None:
            x = policy_observation(engine.memory, state)
            flags = dict(zip(OBSERVATION_NAMES, x.tolist(), strict=True))
            said = dict(w.rsplit(" ", 1) for w in
                        cue_clues(engine.memory, ctx)[len("Clues: "):-1].split(", "))
            for key in CLUES:
                assert (said[key.replace("_", " ")] == "yes") == bool(flags[f"cue_{key}"]), key
                compared += 1
        while not engine.execute(engine.trigger.dispatch(engine.memory, state)):
            pass
        obs, _r, term, trunc, info = env.step(engine.end_window())
        if term or trunc:
            break
    assert compared > 0


def test_a_dataset_of_another_generator_is_refused_in_one_line(small_data, tmp_path) -> None:
    import shutil

    from mindhelper_env.llm_training.dataset import (
        DatasetVersionError,
        load_trigger_dataset,
    )
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION

    out, _ = small_data
    old = tmp_path / "old"
    shutil.copytree(out, old)
    sheet = json.loads((old / "datasheet.json").read_text())
    sheet["generator"] = "mh-gen-1.0"
    (old / "datasheet.json").write_text(json.dumps(sheet))
    with pytest.raises(DatasetVersionError) as err:
        load_trigger_dataset(old)
    msg = str(err.value)
    assert "mh-gen-1.0" in msg and GENERATOR_VERSION in msg and "\n" not in msg
    proc = subprocess.run([sys.executable, "-m", "mindhelper_env.cli", "train-trigger",
                           "--algo", "sft", "--model", "hf:/nowhere", "--data", str(old),
                           "--out", str(tmp_path / "run")], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "mh-gen-1.0" in lines[0] and GENERATOR_VERSION in lines[0]
    assert not (tmp_path / "run").exists()


def test_export_cli(tmp_path) -> None:
    need("datasets")
    out = tmp_path / "cli"
    proc = subprocess.run([sys.executable, "-m", "mindhelper_env.cli", "export-trigger-data",
                           "--episodes", "2", "--out", str(out)], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    sheet = json.loads((out / "datasheet.json").read_text())
    assert sheet["episodes"] == 2 and f"{sheet['examples']} examples" in proc.stdout
    bad = subprocess.run([sys.executable, "-m", "mindhelper_env.cli", "export-trigger-data",
                          "--episodes", "0", "--out", str(tmp_path / "x")],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "--episodes" in bad.stderr


# --------------------------------------------------------------------------------------
# SFT on a tiny random-weight model
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_sft(small_data, tmp_path_factory):
    need("trl")
    need("peft")
    from llm_tiny import tiny_chat_model

    from mindhelper_env.llm_training.sft import train_sft

    out, _ = small_data
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    base = tmp_path_factory.mktemp("tiny") / "base"
    tiny_chat_model(base, [m["content"] for r in rows for m in r["messages"]])
    run = tmp_path_factory.mktemp("sft")
    summary = train_sft(out, f"hf:{base}", run, max_steps=12, batch_size=4,
                        learning_rate=3e-3, logging_steps=3, max_examples=48)
    return summary, base


def test_sft_loss_falls_and_the_checkpoint_says_how_it_was_made(tiny_sft) -> None:
    from mindhelper_env.llm_training.sft import CHECKPOINT_META
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION

    summary, base = tiny_sft
    losses = summary["losses"]
    assert summary["steps"] == 12 and len(losses) == 4
    assert losses[-1] < 0.8 * losses[0]
    meta = json.loads((Path(summary["checkpoint"]) / CHECKPOINT_META).read_text())
    assert meta["generator"] == GENERATOR_VERSION and meta["base_model"] == f"hf:{base}"
    assert meta["device"] == "cpu" and meta["examples"] == 48


def test_the_checkpoint_loads_as_a_trigger_and_plays(tiny_sft) -> None:
    summary, _ = tiny_sft
    agent = make_agent("mindclaw", trigger=summary["trigger_spec"])
    assert isinstance(agent.engine.trigger, WindowPlanTrigger)
    info = play(agent, 1)
    rec = info["episode_record"]
    assert rec["steps"] == 24
    u = agent.usage
    assert u.model_calls > 0 and u.fallbacks == 0
    assert 0 <= u.parse_failures <= u.model_calls
    # every answer is counted: a valid operation, or a parse failure


def test_operation_accuracy_of_a_scripted_model(small_data) -> None:
    from mindhelper_env.llm_training.sft import operation_accuracy

    out, sheet = small_data
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    always_noop = operation_accuracy(Scripted(lambda m: "noop"), out)
    n, noops = len(rows), sheet["operations"].get("noop", 0)
    assert always_noop["accuracy"] == round(100 * noops / n, 2)
    assert always_noop["accuracy_excluding_noop"] == 0.0
    garbage = operation_accuracy(Scripted(lambda m: "hmm"), out)
    assert garbage["parse_failures"] == n and garbage["accuracy"] == 0.0
    # the asked examples: where the run-time Trigger asks, the answers that decide
    asked = [r["operation"] for r in rows if r["asked"]]
    assert asked and always_noop["examples_asked"] == len(asked) == sheet["asked"]
    reason = operation_accuracy(Scripted(lambda m: "reasoning_run"), out)
    assert reason["accuracy_asked"] == round(100 * asked.count("reasoning_run") / len(asked), 2)


def test_train_trigger_sft_cli(tiny_sft, small_data, tmp_path) -> None:
    _, base = tiny_sft
    data, _ = small_data
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "mindhelper_env.cli", "train-trigger",
                           "--algo", "sft", "--model", f"hf:{base}", "--data", str(data),
                           "--out", str(out), "--max-steps", "2", "--batch-size", "2"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 steps on" in proc.stdout and f"trigger=hf:{out / 'checkpoint'}" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and (out / "checkpoint" / "config.json").exists()
    missing = subprocess.run([sys.executable, "-m", "mindhelper_env.cli", "train-trigger",
                              "--algo", "sft", "--data", str(data), "--out", str(out)],
                             capture_output=True, text=True, cwd=ROOT)
    assert missing.returncode == 2 and "--model" in missing.stderr


def test_asked_only_trains_on_the_examples_the_trigger_asks(tiny_sft, small_data,
                                                            tmp_path) -> None:
    from mindhelper_env.llm_training.dataset import load_trigger_dataset
    from mindhelper_env.llm_training.sft import asked_examples

    _, base = tiny_sft
    data, sheet = small_data
    ds = asked_examples(load_trigger_dataset(data))
    assert len(ds) == sheet["asked"] > 0 and all(ds["asked"])
    out = tmp_path / "asked"
    proc = subprocess.run([sys.executable, "-m", "mindhelper_env.cli", "train-trigger",
                           "--algo", "sft", "--model", f"hf:{base}", "--data", str(data),
                           "--out", str(out), "--max-steps", "1", "--batch-size", "2",
                           "--asked-only"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["asked_only"] is True and summary["examples"] == sheet["asked"]
    # a folder without an asked example: one line naming the flag, nothing trained
    empty = tmp_path / "none-asked"
    shutil.copytree(data, empty)
    meta = json.loads((empty / "datasheet.json").read_text())
    (empty / "datasheet.json").write_text(json.dumps({**meta, "asked": 0}))
    bad = subprocess.run([sys.executable, "-m", "mindhelper_env.cli", "train-trigger",
                          "--algo", "sft", "--model", f"hf:{base}", "--data", str(empty),
                          "--out", str(tmp_path / "never"), "--asked-only"],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "--asked-only" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "never").exists()


def test_oversampling_repeats_only_the_rare_operations(small_data) -> None:
    from collections import Counter

    need("datasets")
    from mindhelper_env.llm_training.dataset import load_trigger_dataset
    from mindhelper_env.llm_training.sft import oversample_rare

    ds = load_trigger_dataset(small_data[0])
    before = Counter(ds["operation"])
    top = max(before.values())
    out = oversample_rare(ds, top, max_repeat=3)
    after = Counter(out["operation"])
    assert set(after) == set(before)
    for op, n in before.items():
        # the most frequent one is left alone; each rarer one gets ceil(top / n) copies,
        # at most 3
        assert after[op] == n * min(3, -(-top // n)), op
    assert oversample_rare(ds, 1) is ds  # nothing rarer than 1: the same dataset
