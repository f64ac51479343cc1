"""The verifiers adapter (:mod:`mindhelper_env.llm_training.vf_env`): rollouts end to end
through verifiers' OpenAI chat-completions client against a scripted server on 127.0.0.1
(no model, nothing leaves the machine), scored by the package's metrics.

Needs the ``verifiers`` extra; skipped without it, except when
``MINDHELPER_REQUIRE_VERIFIERS=1`` (set by ``.ci/run``, so CI never skips these tests).
"""

from __future__ import annotations

import importlib
import json
import os
import random
import re
import signal
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from mindhelper_env.llm_training.vf_env import REWARD_WEIGHTS, parse_reply
from mindhelper_env.scenarios.generator import episode_ticks
from tests.fake_openai_server import Reply, ScriptedServer

#: windows of a sampled episode of the default env (mh-gen-3.2: 96 ticks) at the default 3
#: ticks each
WINDOWS = episode_ticks() // 3


def need(module: str) -> Any:
    if os.environ.get("MINDHELPER_REQUIRE_VERIFIERS") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(
        module, reason="needs the verifiers extra: pip install -e '.[verifiers]'")


N = 4  # episodes: half need help (training_episodes alternates)
TICK = re.compile(r"Tick (\d+)\. ")


def _content(message: Any) -> str:
    if isinstance(message, dict):
        return str(message.get("content") or "")
    return str(getattr(message, "content", "") or "")


def _messages(body: dict[str, Any]) -> tuple[str, int]:
    """The first user message (names the episode) and the tick of the last observation."""
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return users[0], int(TICK.search(users[-1]).group(1))


def _direct(row: dict[str, Any], policy: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Play one episode on the Gymnasium env itself (outside verifiers) with
    ``policy(obs, info, env) -> program``; returns the metrics' outcome
    (:func:`mindhelper_env.metrics.episode_outcome`) and the non-silent programs by tick."""
    import gymnasium as gym

    from mindhelper_env.metrics import episode_outcome
    from mindhelper_env.scenarios.generator import generate_episode

    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    spec = generate_episode(row["family"], row["seed"])
    obs, info = env.reset(seed=row["env_seed"], options={"episode": spec})
    programs = {}
    while True:
        program = policy(obs, info, env)
        if program != "none":
            programs[int(info["tick"])] = program
        obs, _r, term, trunc, info = env.step(program)
        if term or trunc:
            break
    env.close()
    full = json.loads(info["episode_record_json"])
    return episode_outcome(full, full["reference"]), programs


def _oracle_policy() -> Any:
    from mindhelper_env.agents import make_agent

    agents: dict[int, Any] = {}

    def policy(obs: Any, info: Any, env: Any) -> str:
        if id(env) not in agents:
            agents[id(env)] = make_agent("oracle", env=env)
            agents[id(env)].reset()
        return agents[id(env)].act(obs, info)

    return policy


def _evaluate(env: Any, script: Any) -> tuple[list[dict[str, Any]], ScriptedServer]:
    need("openai")
    vf = need("verifiers")
    from openai import AsyncOpenAI

    with ScriptedServer(script) as server:
        client = vf.OpenAIChatCompletionsClient(
            AsyncOpenAI(base_url=server.url, api_key="none", max_retries=0))
        results = env.evaluate_sync(client=client, model="scripted", num_examples=N,
                                    state_columns=["mindhelper"])
    return sorted(results["outputs"], key=lambda o: o["example_id"]), server


@pytest.fixture(autouse=True, scope="module")
def _keep_signal_handlers() -> Any:
    """verifiers' Environment installs SIGINT/SIGTERM handlers when built; give the test
    process its own back afterwards."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.fixture(scope="module")
def vf_env() -> Any:
    need("verifiers")
    need("datasets")
    from mindhelper_env.llm_training.vf_env import load_environment

    return load_environment(num_train_examples=N, seed=5)


def _rows(env: Any) -> list[dict[str, Any]]:
    return [dict(r["info"]) for r in env.get_dataset()]


def _check_total(out: dict[str, Any]) -> None:
    m = out["metrics"]
    total = sum(w * m[k] for k, w in REWARD_WEIGHTS.items())
    assert out["reward"] == pytest.approx(total)
    assert out["reward"] == out["mindhelper"]["outcome"]["reward"]


def test_dataset_is_training_seeds_only(vf_env) -> None:
    from mindhelper_env.scenarios.suites import TRAINING_SEED_RANGE
    from mindhelper_env.validity import training_episodes

    rows = _rows(vf_env)
    want = [(s["family"], s["seed"]) for s in training_episodes(N, seed=5)]
    assert [(r["family"], r["seed"]) for r in rows] == want
    assert all(r["seed"] in TRAINING_SEED_RANGE and r["env_seed"] == r["seed"] for r in rows)
    assert [m["role"] for m in vf_env.get_dataset()[0]["prompt"]] == ["system", "user"]


def test_silent_policy_scores_as_the_metrics_say(vf_env) -> None:
    np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
    outputs, server = _evaluate(vf_env, [Reply(text="none")])
    # seeding is explicit: the process-global random state is untouched
    assert (np.random.get_state()[1] == np_state).all() and random.getstate() == py_state
    assert len(outputs) == N and len(server.requests) == WINDOWS * N
    rows = _rows(vf_env)
    needs = []
    for out in outputs:
        row = rows[out["example_id"]]
        assert out["mindhelper"]["seed"] == row["seed"]
        expect, _ = _direct(row, lambda obs, info, env: "none")
        m = out["metrics"]
        needs.append(expect["needs_help"])
        assert m["needs_help"] == float(expect["needs_help"])
        # silent in a needs-help episode: missed, so no PIR/PHR event; silent in one that
        # does not need help: PSR's event
        assert m["helpful"] == m["precise_intervention"] == 0.0
        assert m["precise_silence"] == float(expect["silent"] and not expect["needs_help"])
        assert m["precise_silence"] == float(not expect["needs_help"])
        assert m["harm"] == float(expect["harm"]) == 0.0
        assert m["windows"] == m["num_turns"] == WINDOWS and m["fallbacks"] == m["action_errors"] == 0
        assert out["reward"] == (0.0 if expect["needs_help"] else 1.0)
        _check_total(out)
        # the prompt is the first observation, rendered as the TRL adapter renders it
        first = _content(out["prompt"][-1])
        assert first.startswith("The episode begins. Tick 0.") and "People:" in first
        assert _content(out["completion"][-1]) == "The episode is over."
    assert sorted(needs) == [False, False, True, True]


def test_oracle_program_policy_is_helpful(vf_env) -> None:
    """A scripted model that answers, in the window the oracle acts in, the oracle's program
    (ground truth obtained outside the env, by the test only), and `none` otherwise."""
    rows = _rows(vf_env)
    expected, programs = {}, {}
    for i, row in enumerate(rows):
        expected[i], programs[i] = _direct(row, _oracle_policy())
    # which first observation belongs to which row: a silent pass tells
    outputs, _ = _evaluate(vf_env, [Reply(text="none")])
    by_first = {_content(o["prompt"][-1]): o["example_id"] for o in outputs}
    assert len(by_first) == N  # the first observations tell the episodes apart

    def oracle(body: dict[str, Any], n: int) -> Reply:
        first, tick = _messages(body)
        return Reply(text=programs[by_first[first]].get(tick, "none"))

    outputs, server = _evaluate(vf_env, oracle)
    assert len(server.requests) == WINDOWS * N
    helped = 0
    for out in outputs:
        exp, m = expected[out["example_id"]], out["metrics"]
        if exp["needs_help"]:
            assert exp["helpful_precise"]  # the oracle is helpful on these episodes
            assert m["precise_intervention"] == m["helpful"] == out["reward"] == 1.0
            assert m["precise_silence"] == 0.0
            helped += 1
        else:
            assert m["precise_silence"] == out["reward"] == 1.0 and m["helpful"] == 0.0
        assert m["harm"] == 0.0 and m["fallbacks"] == 0
        _check_total(out)
    assert helped == 2


def test_same_seed_same_rollout_and_a_meddler_is_scored(vf_env) -> None:
    """A model that acts at once in every episode (an acting line on an object that is not
    there): a false alarm where no help is needed, premature where it is; twice, with the
    same result."""
    meddle = "[open] <fridge> (9999)"

    def script(body: dict[str, Any], n: int) -> Reply:
        _first, tick = _messages(body)
        return Reply(text=meddle if tick == 0 else "none")

    runs = [_evaluate(vf_env, script)[0] for _ in range(2)]
    for a, b in zip(*runs, strict=True):
        assert a["example_id"] == b["example_id"]
        assert [_content(m) for m in a["completion"]] == [_content(m) for m in b["completion"]]
        assert a["metrics"] == b["metrics"] and a["reward"] == b["reward"]
    rows = _rows(vf_env)
    for out in runs[0]:
        row = rows[out["example_id"]]
        exp, _ = _direct(row, lambda obs, info, env: meddle if info["tick"] == 0 else "none")
        m = out["metrics"]
        assert exp["intervened"] and exp["t_I"] == 0
        assert m["precise_intervention"] == float(exp["precise"]) == 0.0
        assert m["precise_silence"] == 0.0  # acted: never PSR's event
        assert m["helpful"] == float(exp["helpful_precise"]) == 0.0
        assert out["reward"] == 0.0 and m["action_errors"] == 1
        assert _content(out["completion"][1]).startswith("Not run: ")
        _check_total(out)


def test_garbage_output_is_a_counted_fallback(vf_env) -> None:
    replies = [Reply(text="I think everyone is fine, maybe?"), Reply(text="```\nnone\n```"),
               Reply(text="<think>Sam looks lost</think>[fly] <moon> (1)")]

    def script(body: dict[str, Any], n: int) -> Reply:
        _first, tick = _messages(body)
        return replies[(tick // 3) % 3]

    outputs, _ = _evaluate(vf_env, script)
    for out in outputs:
        m = out["metrics"]
        # two of every three replies are unusable: only windows 1, 4, 7, ... get a usable one
        assert m["fallbacks"] == WINDOWS - len(range(1, WINDOWS, 3))
        assert m["action_errors"] == 0 and m["windows"] == WINDOWS
        # unusable replies are silence: scored as the silent policy
        assert out["reward"] == (0.0 if m["needs_help"] else 1.0)
        assert _content(out["completion"][1]).startswith("Not understood")
        _check_total(out)


def test_parse_reply() -> None:
    assert parse_reply("none") == ("none", False)
    assert parse_reply(" None. ") == ("none", False)
    assert parse_reply("```\nnone\n```") == ("none", False)
    assert parse_reply("<think>[walk] <sofa> (3)</think>none") == ("none", False)
    assert parse_reply("[walk] <fridge> (1); [open] <fridge> (1)") == (
        "[walk] <fridge> (1); [open] <fridge> (1)", False)
    assert parse_reply("Sure!\n[grab] <mug> (4)") == ("Sure!\n[grab] <mug> (4)", False)
    for garbage in ("", None, "help them", "[fly] <moon> (1)", "<think>none"):
        assert parse_reply(garbage) == ("none", True)


def test_max_turns_plays_the_rest_silently() -> None:
    need("verifiers")
    need("datasets")
    from mindhelper_env.llm_training.vf_env import load_environment

    env = load_environment(num_train_examples=N, seed=5, max_turns=2)
    outputs, server = _evaluate(env, [Reply(text="none")])
    assert len(server.requests) == 2 * N
    for out in outputs:
        m = out["metrics"]
        assert m["num_turns"] == 2 and m["windows"] == WINDOWS
        assert out["reward"] == (0.0 if m["needs_help"] else 1.0)


def test_verifiers_loads_it_by_module_name() -> None:
    vf = need("verifiers")
    need("datasets")
    env = vf.load_environment("mindhelper_env.llm_training.vf_env", num_train_examples=2,
                              num_eval_examples=3, system_prompt="Be kind.")
    assert isinstance(env, vf.MultiTurnEnv) and len(env.get_dataset()) == 2
    assert len(env.get_eval_dataset()) == 3
    assert env.get_dataset()[0]["prompt"][0] == {"role": "system", "content": "Be kind."}
    with pytest.raises(ValueError, match="family"):
        import asyncio

        asyncio.run(env.setup_state({"info": {"seed": 3}, "prompt": []}))


def test_importing_the_package_does_not_import_verifiers() -> None:
    code = ("import sys, mindhelper_env, mindhelper_env.llm_training, "
            "mindhelper_env.llm_training.vf_env; "
            "print(sorted(m for m in ('verifiers', 'datasets', 'trl', 'torch') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"
