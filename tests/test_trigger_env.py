"""MindHelper-Trigger-v0: spaces, checkers, masks, rewards, equivalence with MindClaw."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from mindhelper_env.agents import make_agent
from mindhelper_env.agents.mindclaw.trigger import OBSERVATION_SIZE, TRIGGER_OPS, rule_policy
from mindhelper_env.envs.trigger import OUTCOMES, TRIGGER_REWARD
from tests.conftest import play

ENV_ID = "MindHelper-Trigger-v0"


def _rule_episode(env, **reset_kwargs):
    """Play one episode choosing the rule policy's operation; returns (return, info)."""
    env.reset(**reset_kwargs)
    u = env.unwrapped
    total = 0.0
    while True:
        op = rule_policy(u.engine.memory, u.engine.state)
        _obs, r, term, trunc, info = env.step(TRIGGER_OPS.index(op))
        total += r
        if term or trunc:
            return total, info


def test_spaces_and_masks():
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=0)
    assert env.observation_space.shape == (OBSERVATION_SIZE,)
    assert env.action_space.n == len(TRIGGER_OPS) == 7
    assert env.observation_space.contains(obs)
    mask = env.unwrapped.action_masks()
    assert mask.dtype == bool and mask[-1] and mask[:-1].any()
    assert np.array_equal(mask, info["action_mask"])


def test_sb3_checker():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env

    check_env(gym.make(ENV_ID).unwrapped, warn=True)


def test_rule_choices_reproduce_the_mindclaw_agent():
    """Choosing the rule policy's operation at every question plays exactly like the
    ``mindclaw`` agent (symbolic)."""
    env = gym.make(ENV_ID)
    vh = gym.make("MindHelper-VirtualHome-v0")
    for index in range(12):
        opts = {"suite": "vh-dev-v2", "index": index}
        _ret, info = _rule_episode(env, seed=index, options=opts)
        ref = play(vh, make_agent("mindclaw", model="symbolic"), seed=index, options=opts)
        a, b = info["episode_record"], ref["episode_record"]
        assert a["actions"] == b["actions"] and a["focus_success"] == b["focus_success"]
        assert set(info["outcome"]) == set(OUTCOMES)


def test_rewards_outcome_and_costs():
    env = gym.make(ENV_ID, reward={"reasoning_cost": -0.5, "action_cost": -0.25})
    seen_help = False
    for index in range(20):
        ret, info = _rule_episode(env, seed=index, options={"suite": "vh-dev-v2",
                                                           "index": index})
        cfg = env.unwrapped.reward_config
        expect = sum(cfg[k] for k, v in info["outcome"].items() if v)
        expect += cfg["reasoning_cost"] * info["reasoning_calls"]
        expect += cfg["action_cost"] * info["action_calls"]
        assert ret == pytest.approx(expect)
        seen_help |= info["outcome"]["precise_help"]
    assert seen_help


def test_noop_always_is_silent_and_never_calls_reasoning():
    env = gym.make(ENV_ID)
    for seed in range(5):
        env.reset(seed=seed)
        while True:
            _o, _r, term, trunc, info = env.step(6)
            if term or trunc:
                break
        assert info["reasoning_calls"] == 0
        assert not info["outcome"]["false_alarm"] and not info["outcome"]["premature"]


def test_masked_action_falls_back_to_the_rule_policy():
    env = gym.make(ENV_ID)
    env.reset(seed=3)
    mask = env.unwrapped.action_masks()
    bad = int(np.flatnonzero(~mask)[0])
    *_, info = env.step(bad)
    assert info["masked_actions"] == 1


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"reward": {"bonus": 1}}, r"unknown reward terms \['bonus'\]"),
    ({"reward": {"late": "x"}}, r"reward\['late'\] must be a finite number"),
    ({"window_ticks": 0}, "window_ticks must be a positive int"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make(ENV_ID, **kwargs)


def test_unknown_render_mode_is_refused_after_gymnasiums_warning():
    # gym.make warns about a render mode outside metadata before the constructor refuses it
    with pytest.warns(UserWarning, match="render_mode='video'"), \
            pytest.raises(ValueError, match=r"render_mode must be one of \['ansi', 'rgb_array'\]"):
        gym.make(ENV_ID, render_mode="video")


def test_unknown_argument_is_a_type_error():
    with pytest.raises(TypeError):
        gym.make(ENV_ID, obs_mode="text+rgb")


def test_importing_the_package_and_env_imports_no_heavy_library():
    code = ("import sys, gymnasium as gym, mindhelper_env; e = gym.make('MindHelper-Trigger-v0');"
            " e.reset(seed=0); e.step(6);"
            " from mindhelper_env.agents import make_agent; make_agent('learned-trigger');"
            " print(sorted(m for m in ('torch', 'stable_baselines3', 'sb3_contrib', 'ray')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ}, check=True)
    assert out.stdout.strip() == "[]"


def test_defaults_are_documented():
    doc = gym.make(ENV_ID).unwrapped.__doc__
    for section in ("## Description", "## Action Space", "## Observation Space", "## Rewards",
                    "## Episode End", "## Arguments", "## Version History"):
        assert section in doc
    assert set(TRIGGER_REWARD) >= set(OUTCOMES)


def test_vector_env_stacks_infos():
    v = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync", pool_size=16)
    obs, info = v.reset(seed=0)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(60):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        obs, _r, term, _trunc, info = v.step(acts)
        ends += int(term.sum())
        assert obs.shape == (2, OBSERVATION_SIZE) and info["action_mask"].shape == (2, 7)
    assert ends > 0
    v.close()


def test_household_episodes_run_to_the_horizon():
    from mindhelper_env.scenarios.suites import suite_episode

    env = gym.make(ENV_ID)
    needs = set()
    for index in range(2):
        _ret, info = _rule_episode(env, options={"suite": "vh-dev-v2", "index": index})
        rec = info["episode_record"]
        assert rec["ticks"] == suite_episode("vh-dev-v2", index)["horizon"]
        assert rec["terminated"] and not rec["truncated"]
        needs.add(rec["reference"]["needs_intervention"])
    assert needs == {True, False}  # a help episode and a silent one


def _masked_random_run(env, steps: int) -> list:
    """``steps`` masked random steps from seed 0 (resetting at episode ends): what the
    learner sees at each, and the household's narration after it."""
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    seen = []
    for _ in range(steps):
        mask = env.unwrapped.action_masks()
        obs, r, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        seen.append((obs.tobytes(), r, term, trunc, mask.tobytes(), repr(sorted(info.items())),
                     env.unwrapped.household._window, env.unwrapped.household._last_text))
        if term or trunc:
            env.reset()
    return seen


def test_unread_narration_is_skipped_and_changes_nothing():
    """With a symbolic agent and no render mode the Trigger env's household writes no
    narration (nothing reads it there); every observation, reward, mask and info is the
    same as with it written."""
    quiet, told = gym.make(ENV_ID, pool_size=16), gym.make(ENV_ID, pool_size=16)
    assert quiet.unwrapped.household._quiet is True
    told.unwrapped.household._quiet = False
    a, b = _masked_random_run(quiet, 150), _masked_random_run(told, 150)
    assert [x[:-1] for x in a] == [x[:-1] for x in b]
    # windows with events seen, and the description of the home at a reset (window 0):
    # narrated only when told to; the rest (nothing seen) is the same
    seen = [k for k, x in enumerate(b) if "[t=" in x[-1]]
    at_reset = [k for k, x in enumerate(b) if x[-2] == 0]
    assert len(seen) > 10 and len(at_reset) > 3
    assert all(a[k][-1] == "" for k in seen + at_reset)
    assert all(b[k][-1].strip() for k in at_reset)
    assert all(a[k][-1] == b[k][-1] for k in range(len(b)) if k not in seen + at_reset)
    assert gym.make(ENV_ID, render_mode="ansi").unwrapped.household._quiet is False
