"""RL wrappers: Box features, Discrete candidate actions with masks, SB3 compatibility."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

from mindhelper_env.wrappers import BagOfWordsObs, CandidateActions, make_rl_env
from mindhelper_env.wrappers.rl import CLASSES, VERBS, VOCABULARY

ENV_ID = "MindHelper-VirtualHome-v0"


def need(module: str) -> Any:
    """Import an ``rl``-extra module; skip without it, but fail when
    ``MINDHELPER_REQUIRE_RL=1`` (set by ``.ci/run``, so CI never skips these tests)."""
    if os.environ.get("MINDHELPER_REQUIRE_RL") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason="needs the rl extra: pip install -e '.[rl]'")


def test_spaces_and_documented_sizes() -> None:
    env = make_rl_env()
    assert (len(VOCABULARY), len(VERBS), len(CLASSES)) == (52, 20, 49)
    assert env.observation_space == gym.spaces.Box(0, np.inf, (243,), np.float32)
    assert env.action_space == gym.spaces.Discrete(41)
    obs, info = env.reset(seed=0)
    assert obs.shape == (243,) and obs.dtype == np.float32 and obs.sum() > 0
    assert obs[-1] == 0.0  # tick 0
    small = CandidateActions(gym.make(ENV_ID), max_people=2, max_objects=3, max_containers=1)
    assert small.action_space.n == 2 * 2 * 3 + 1 + 1
    with pytest.raises(ValueError):
        CandidateActions(gym.make(ENV_ID), max_people=0)
    with pytest.raises(ValueError):
        BagOfWordsObs(gym.make(ENV_ID), decay=1.0)
    with pytest.raises(ValueError, match="text observation"):
        BagOfWordsObs(gym.wrappers.FlattenObservation(gym.make("CartPole-v1")))


def test_checkers_pass() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "a wrapped env" note from gymnasium's checker
        gym_check_env(make_rl_env(), skip_render_check=True)
    sb3_checker = need("stable_baselines3.common.env_checker")
    sb3_checker.check_env(make_rl_env(), warn=True)


def test_masks_programs_and_invalid_actions() -> None:
    env = make_rl_env(families=["implicit_goal_reach", "false_belief_relocation"])
    cand = env.get_wrapper_attr("program")
    masks_fn = env.get_wrapper_attr("action_masks")
    rng = np.random.default_rng(0)
    steps = 0
    for seed in range(4):
        env.reset(seed=seed)
        while True:
            mask = masks_fn()
            assert mask.dtype == bool and mask.shape == (41,) and mask[0]
            assert mask[1:].any()
            for a in np.flatnonzero(mask):
                assert isinstance(cand(int(a)), str)
            for a in np.flatnonzero(~mask):
                assert cand(int(a)) is None
            valid = np.flatnonzero(mask)
            a = int(rng.choice(valid)) if rng.random() < 0.3 else 0
            program = cand(a)
            _, r, term, trunc, info = env.step(a)
            steps += 1
            assert info["invalid_action"] is False and info["program"] == program
            # a proposed program always parses (failures are world preconditions only)
            assert "malformed" not in (info["action_error"] or "")
            if term or trunc:
                break
    assert steps > 8
    env = make_rl_env(max_people=8)  # more person slots than people: some are masked
    env.reset(seed=1)
    masked = np.flatnonzero(~env.get_wrapper_attr("action_masks")())
    assert masked.size
    *_, info = env.step(int(masked[0]))
    assert info["invalid_action"] is True and info["program"] == "none"
    with pytest.raises(ValueError):
        env.step(env.action_space.n)


def test_slots_rank_the_latest_struggle_first() -> None:
    inner = CandidateActions(gym.make(ENV_ID, families=["implicit_goal_reach"]))
    _, info = inner.reset(seed=3)
    while True:
        _, _, term, trunc, info = inner.step(0)
        struggles = [ev for ev in info["events"] if ev["verb"] in ("look", "stretch", "stand")]
        if struggles or term or trunc:
            break
    assert struggles, "a reach episode shows a stretch"
    person = struggles[-1]["actor"]
    assert f"<character> ({person})" in inner.program(1)
    # what lies at the place that struggle names is among the first objects offered
    place = struggles[-1]["args"][0]["id"]
    named = {o["id"] for o in info["candidates"]["objects"] if o.get("location") == place}
    assert named
    offered = [inner.program(k) for k in range(1, inner.max_objects + 1)]
    assert any(p and any(f"({o})" in p.splitlines()[0] for o in named) for p in offered)


def test_features_are_deterministic_and_remember() -> None:
    a, b = make_rl_env(), make_rl_env()
    oa, _ = a.reset(seed=5)
    ob, _ = b.reset(seed=5)
    assert np.array_equal(oa, ob)
    f = a.get_wrapper_attr("n_features")
    for _ in range(3):
        oa, *_ = a.step(0)
        ob, *_ = b.step(0)
        assert np.array_equal(oa, ob)
    assert (oa[f:2 * f] >= oa[:f] - 1e-6).all()  # the memory holds at least this window
    events = json.dumps([{"verb": "look", "args": [{"id": 3, "class": "fridge"}]}])
    x = a.get_wrapper_attr("window_features")(
        {"narration": "Anna, a child, opened the fridge (3).", "events": events, "tick": 3})
    assert x[VOCABULARY.index("fridge")] == 1 and x[VOCABULARY.index("child")] == 1
    assert x[len(VOCABULARY) + VERBS.index("look")] == 1
    assert x[len(VOCABULARY) + len(VERBS) + CLASSES.index("fridge")] == 1


def test_maskable_ppo_learns_a_few_steps() -> None:
    need("torch")
    sb3_contrib = need("sb3_contrib")
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(make_rl_env, n_envs=2, seed=0)
    model = sb3_contrib.MaskablePPO("MlpPolicy", vec, n_steps=32, batch_size=32, n_epochs=1,
                                    seed=0, device="cpu")
    model.learn(total_timesteps=64)
    obs = vec.reset()
    masks = np.array(vec.env_method("action_masks"))
    actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert all(masks[k][a] for k, a in enumerate(actions))
    vec.close()


def test_importing_the_package_does_not_import_torch_or_sb3() -> None:
    code = ("import sys, mindhelper_env, mindhelper_env.wrappers, mindhelper_env.envs; "
            "bad = [m for m in ('torch', 'stable_baselines3', 'sb3_contrib') if m in sys.modules];"
            " assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
