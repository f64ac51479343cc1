"""The TRL adapter (:mod:`mindhelper_env.llm_training.trl`): the environment_factory class
by itself, and GRPO for two steps on a tiny random-weight model on the CPU.

Needs the ``trl`` extra; skipped without it, except when ``MINDHELPER_REQUIRE_TRL=1`` (set
by ``.ci/run``, so CI never skips these tests).
"""

from __future__ import annotations

import importlib
import os
import random
from typing import Any

import numpy as np
import pytest

from mindhelper_env.llm_training.trl import MindHelperToolEnv, episode_score
from mindhelper_env.scenarios.generator import episode_ticks

#: windows of a sampled episode of the default env (mh-gen-3.2: 96 ticks) at the default 3
#: ticks each
WINDOWS = episode_ticks() // 3


def need(module: str) -> Any:
    if os.environ.get("MINDHELPER_REQUIRE_TRL") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason="needs the trl extra: pip install -e '.[trl]'")


def _rows(n: int) -> list[dict[str, Any]]:
    from mindhelper_env.validity import training_episodes

    return [{"family": s["family"], "seed": s["seed"]} for s in training_episodes(n, seed=5)]


def test_tool_env_plays_an_episode_and_keeps_the_reward() -> None:
    rows = _rows(4)
    np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
    env = MindHelperToolEnv()
    for row in rows:
        first = env.reset(**row)
        assert first.startswith("Tick 0.") and "People:" in first
        assert env.reset(**row) == first  # the same row gives the same episode
        seen = env.wait()
        assert seen.startswith("Tick 3.")
        reward = env.get_reward()  # the rest of the episode is played silently
        assert env.windows == WINDOWS and env.wait() == "The episode is over."
        needs = env.outcome["needs_help"]
        # silence is right exactly when no help is needed
        assert reward == env.reward == (0.0 if needs else 1.0)
        assert env.outcome["precise_silence"] == float(not needs)
    # seeding is explicit: the process-global random state is untouched
    assert (np.random.get_state()[1] == np_state).all() and random.getstate() == py_state


def test_tool_env_act_issues_a_program_and_bad_programs_are_reported() -> None:
    env = MindHelperToolEnv()
    env.reset(**_rows(1)[0])
    reply = env.act("[fly] <moon> (1)")
    assert reply.startswith("Not run:")
    assert env.get_reward() in (0.0, 1.0, -1.0)
    with pytest.raises(ValueError, match="family"):
        env.reset(seed=3)


def test_episode_score_components() -> None:
    import gymnasium as gym

    from mindhelper_env.agents import make_agent
    from tests.conftest import play

    env = gym.make("MindHelper-VirtualHome-v0")
    oracle = make_agent("oracle", env=env)
    import json

    for index in range(4):
        info = play(env, oracle, options={"suite": "vh-dev-v2", "index": index})
        full = json.loads(info["episode_record_json"])
        s = episode_score(full, full["reference"])
        if s["needs_help"]:
            assert s["precise_intervention"] == s["helpful"] == s["reward"] == 1.0
        else:
            assert s["precise_silence"] == s["reward"] == 1.0 and s["helpful"] == 0.0
        assert s["harm"] == 0.0
    env.close()


def test_grpo_runs_a_few_steps_on_a_tiny_model(tmp_path) -> None:
    need("trl")
    need("datasets")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from llm_tiny import tiny_chat_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from mindhelper_env.llm_training.trl import SYSTEM_PROMPT, seed_dataset

    texts = [SYSTEM_PROMPT, "Tick 0. Sam walked to the fridge (12). People: Sam (3).",
             '<tool_call>\n{"name": "wait", "arguments": {}}\n</tool_call>']
    path = tiny_chat_model(tmp_path / "tiny", texts * 20, vocab_size=400)
    data = seed_dataset(4)
    args = GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=2,
                      per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=24, max_tool_calling_iterations=2, use_cpu=True,
                      bf16=False,
                      report_to=[], logging_steps=1, save_strategy="no", seed=0,
                      disable_tqdm=True, learning_rate=1e-3)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(path), args=args,
                          train_dataset=data, processing_class=AutoTokenizer.from_pretrained(path),
                          environment_factory=MindHelperToolEnv)
    assert {t.__name__ for t in trainer.tools} == {"act", "wait"}
    trainer.train()
    logs = [h for h in trainer.state.log_history if "rewards/MindHelperToolEnv/mean" in h]
    assert len(logs) == 2
    # each rollout's reward came from its own episode, played to the end
    pool = trainer._environment_pool[None]
    assert pool and all(e.windows == WINDOWS and e.outcome for e in pool)
    assert {e.reward for e in pool} <= {-1.0, 0.0, 1.0}
    for h in logs:
        assert 0.0 <= h["rewards/MindHelperToolEnv/mean"] <= 1.0
