"""The learned Trigger: numpy policy files, the learned-trigger agent, train-trigger."""

from __future__ import annotations

import importlib
import json
import os
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from mindhelper_env.agents import make_agent
from mindhelper_env.agents.mindclaw.learned import (
    DEFAULT_POLICY_PATH,
    NumpyTriggerPolicy,
    save_policy,
)
from mindhelper_env.agents.mindclaw.trigger import OBSERVATION_SIZE, TRIGGER_OPS
from mindhelper_env.cli import main
from tests.conftest import play


def need(module: str) -> Any:
    """Import an ``rl``-extra module; skip without it, but fail when
    ``MINDHELPER_REQUIRE_RL=1`` (set by ``.ci/run``)."""
    if os.environ.get("MINDHELPER_REQUIRE_RL") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason="needs the rl extra: pip install -e '.[rl]'")


def _tiny(path, bias):
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(4, OBSERVATION_SIZE))
    save_policy(path, [(w0, np.zeros(4)), (np.zeros((7, 4)), np.asarray(bias, float))], "tanh")


def test_numpy_policy_picks_the_best_valid_operation(tmp_path):
    path = tmp_path / "p.npz"
    _tiny(path, [0, 0, 0, 0, 5, 9, 1])
    pol = NumpyTriggerPolicy(path)
    x = np.zeros(OBSERVATION_SIZE, np.float32)
    assert pol(x, np.ones(7, bool)) == 5
    assert pol(x, np.array([1, 0, 0, 0, 1, 0, 1], bool)) == 4
    assert pol(x, np.array([0, 0, 0, 0, 0, 0, 1], bool)) == 6


@pytest.mark.parametrize("content", [b"", b"not a zip", None])
def test_bad_policy_files_are_value_errors(tmp_path, content):
    path = tmp_path / "bad.npz"
    if content is None:
        np.savez(path, W0=np.zeros((2, 2)))
    else:
        path.write_bytes(content)
    with pytest.raises(ValueError):
        NumpyTriggerPolicy(path)
    with pytest.raises(ValueError):
        NumpyTriggerPolicy(tmp_path / "missing.npz")


def test_shipped_policy_loads_and_plays_with_numpy_only():
    assert DEFAULT_POLICY_PATH.is_file() and DEFAULT_POLICY_PATH.stat().st_size < 64_000
    env = gym.make("MindHelper-VirtualHome-v0")
    agent = make_agent("learned-trigger")
    assert agent.name == "learned-trigger"
    for index in range(6):
        info = play(env, agent, seed=index, options={"suite": "vh-dev-v2", "index": index})
        assert "episode_record" in info
        assert agent.engine.trigger.policy_errors == 0


def test_learned_trigger_takes_another_policy(tmp_path):
    path = tmp_path / "noop.npz"
    _tiny(path, [0, 0, 0, 0, 0, 0, 9])  # always noop: never reasons, never acts
    env = gym.make("MindHelper-VirtualHome-v0")
    agent = make_agent("learned-trigger", trigger=str(path))
    for index in range(4):
        info = play(env, agent, seed=index, options={"suite": "vh-dev-v2", "index": index})
        ops = [op for w in agent.trace for op in w["ops"]]
        assert "reasoning_run" not in ops
        assert not any(a["program"] != "none" for a in info["episode_record"]["actions"]
                       if a["tick"] < 0)


def test_learned_trigger_matches_the_trigger_env():
    """The agent and the env play the same policy identically."""
    from mindhelper_env.agents.mindclaw.training import play_trigger

    pol = NumpyTriggerPolicy()
    opts = [{"suite": "vh-dev-v2", "index": i} for i in range(10)]
    results = play_trigger(None, pol, options=opts)
    env = gym.make("MindHelper-VirtualHome-v0")
    for opt, res in zip(opts, results, strict=True):
        agent = make_agent("learned-trigger")
        info = play(env, agent, seed=0, options=opt)
        calls = sum(w["ops"].count("reasoning_run") for w in agent.trace
                    if w["reasoning"] or "reasoning_run" in w["ops"])
        assert calls == res["reasoning_calls"]
        acted = any(a["program"] != "none" for a in info["episode_record"]["actions"])
        assert acted == (res["action_calls"] > 0)


def test_train_trigger_cli_writes_a_run(tmp_path, capsys):
    need("sb3_contrib")
    out = tmp_path / "run"
    rc = main(["train-trigger", "--algo", "maskable-ppo", "--timesteps", "300", "--envs", "1",
               "--out", str(out), "--eval-episodes", "4", "--eval-freq", "200",
               "--bc-episodes", "3", "--checkpoint-freq", "1024", "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["timesteps"] >= 300 and summary["bc_accuracy"] is not None
    assert (out / "policy.npz").is_file() and (out / "final_model.zip").is_file()
    assert (out / "learning_curve.png").is_file()
    assert len(json.loads((out / "history.json").read_text())) >= 2
    assert list((out / "checkpoints").glob("*.zip"))
    pol = NumpyTriggerPolicy(out / "policy.npz")
    assert 0 <= pol(np.zeros(OBSERVATION_SIZE), np.ones(len(TRIGGER_OPS), bool)) < 7
    assert "learned-trigger:trigger=" in capsys.readouterr().out


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_other_algorithms_export(tmp_path, algo):
    need("stable_baselines3")
    from mindhelper_env.agents.mindclaw.training import train

    s = train(algo, 200, 1, tmp_path / algo, eval_episodes=2, eval_freq=200,
              checkpoint_freq=0, progress=False)
    assert s["best"] is not None
    NumpyTriggerPolicy(tmp_path / algo / "policy.npz")


@pytest.mark.parametrize("args,flag", [
    (["--algo", "a2c"], "--algo"), (["--timesteps", "0"], "--timesteps"),
    (["--envs", "0"], "--envs"), (["--bc-episodes", "x"], "--bc-episodes"),
    (["--timesteps", "10", "--eval-freq", "100"], "--eval-freq"),
    (["--target-gap", "-1"], "--target-gap"), (["--eval-episodes", "1"], "--eval-episodes"),
])
def test_train_trigger_bad_arguments_exit_2_naming_the_flag(tmp_path, capsys, args, flag):
    rc = main(["train-trigger", "--out", str(tmp_path / "x"), *args])
    err = capsys.readouterr().err
    assert rc == 2 and flag in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_shipped_policy_reproduces_its_dev_scores(tmp_path):
    """The figures reported for the shipped policy (0.8.0, trained on MindHelper-Trigger-v3)
    on vh-dev-v5: PHA 100.0 as the rule Trigger's, with 71 instead of 95 reasoning_run
    operations."""
    from mindhelper_env.evaluation import evaluate

    summary = evaluate("vh-dev-v5", ["mindclaw", "learned-trigger"], tmp_path,
                       progress=False, plots=False, timing=False,
                       agent_kwargs={"mindclaw": {"model": "symbolic"},
                                     "learned-trigger": {"model": "symbolic"}})
    calls = {}
    for agent in ("mindclaw", "learned-trigger"):
        with open(tmp_path / f"{agent}.jsonl") as fh:
            calls[agent] = sum(w["ops"].count("reasoning_run")
                               for line in fh for w in json.loads(line).get("trace", []))
    assert summary["metrics"]["mindclaw"]["PHA"] == pytest.approx(100.0)
    assert summary["metrics"]["learned-trigger"]["PHA"] == pytest.approx(100.0)
    assert calls == {"mindclaw": 95, "learned-trigger": 71}
