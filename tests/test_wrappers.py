"""``PrecisionInterventionMetrics`` on the real env and on a tiny stand-in env."""

from __future__ import annotations

import csv
import json
import logging
import pickle
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

from mindhelper_env.agents import make_agent
from mindhelper_env.metrics import compute_metrics
from mindhelper_env.wrappers import EPISODE_FIELDS, PrecisionInterventionMetrics

SUITE = "vh-dev-v2"
N = 8  # the first block of vh-dev-v2 holds every family once


def _play(env: gym.Env, agent: Any, index: int) -> dict[str, Any]:
    obs, info = env.reset(seed=index, options={"suite": SUITE, "index": index})
    agent.reset(seed=index)
    while True:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            return info


# --------------------------------------------------------------------------------------
# Real env
# --------------------------------------------------------------------------------------


def test_oracle_is_precise_on_every_episode_that_needs_help() -> None:
    env = PrecisionInterventionMetrics(gym.make("MindHelper-VirtualHome-v0"))
    agent = make_agent("oracle", env=env)
    for i in range(N):
        info = _play(env, agent, i)
        pi = info["precision_intervention"]
        ref = env.unwrapped.ground_truth
        assert pi["episode_id"] == ref.episode_id and pi["family"] == ref.family
        assert pi["needs_intervention"] is ref.needs_intervention
        if ref.needs_intervention:
            assert pi["precise"] is True and pi["success"] is True
            assert ref.window["onset_tick"] <= pi["t_I"] <= ref.window["deadline_tick"]
            assert pi["t_I"] == info["episode_record"]["actions"][0]["tick"]
            assert pi["silent_correct"] is False and pi["scored"] is True
        else:
            assert pi["silent_correct"] is True and pi["t_I"] == -1 and pi["precise"] is False
            assert pi["onset_tick"] == pi["deadline_tick"] == -1
    m = env.metrics()
    assert (m["episodes"], m["n_help"], m["n_silent"]) == (N, N // 2, N // 2)
    assert m["PIR"] == m["PSR"] == m["PIA"] == m["TA"] == 1.0
    assert m["silent_all"] == 0.5
    env.close()


def test_silent_agent_is_always_correctly_silent_and_never_precise() -> None:
    env = PrecisionInterventionMetrics(gym.make("MindHelper-VirtualHome-v0"))
    agent = make_agent("silent", env=env)
    for i in range(N):
        pi = _play(env, agent, i)["precision_intervention"]
        assert pi["intervened"] is False
        assert pi["missed"] is pi["needs_intervention"]
    m = env.metrics()
    assert m["PSR"] == 1.0 and m["PIR"] == 0.0 and m["PIA"] == 0.5 and m["TA"] == 0.0
    assert m["silent_all"] == 1.0
    env.reset_metrics()
    assert env.metrics()["episodes"] == 0 and env.metrics()["PSR"] is None
    env.close()


def test_wrapper_agrees_with_compute_metrics() -> None:
    env = PrecisionInterventionMetrics(gym.make("MindHelper-VirtualHome-v0"))
    agent = make_agent("random", env=env, p=0.3)
    records, refs = [], {}
    for i in range(2 * N):
        rec = dict(_play(env, agent, i)["episode_record"])
        refs[rec["episode_id"]] = rec.pop("reference")
        records.append(rec)
    expected = compute_metrics(records, refs)
    got = env.metrics()
    for key in ("PIR", "PSR", "PIA", "TA", "silent_all", "premature_rate", "late_rate",
                "false_alarm_rate"):
        assert got[key] == pytest.approx(expected[key]), key
    env.close()


# check_env warns that it was given a wrapped env; checking the wrapper is the point here.
_WRAPPED_WARNING = "ignore:.*different from the unwrapped version"


@pytest.mark.filterwarnings(_WRAPPED_WARNING)
def test_check_env_and_pickle_on_the_real_env() -> None:
    env = PrecisionInterventionMetrics(gym.make("MindHelper-VirtualHome-v0").unwrapped)
    check_env(env)
    agent = make_agent("oracle", env=env)
    _play(env, agent, 2)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.metrics() == env.metrics()
    env.close()


# --------------------------------------------------------------------------------------
# Tiny stand-in env: 5 steps, Discrete(2) actions (1 = intervene), no ground truth API
# --------------------------------------------------------------------------------------


class TinyEnv(gym.Env):
    """Five steps; intervening during steps ``onset..deadline`` of a help episode succeeds."""

    metadata = {"render_modes": []}
    LENGTH = 5

    def __init__(self, needs_help: bool = True, onset: int = 2, deadline: int = 3) -> None:
        self.observation_space = spaces.Discrete(self.LENGTH + 1)
        self.action_space = spaces.Discrete(2)
        self.needs_help, self.onset, self.deadline = needs_help, onset, deadline
        self._t = 0
        self._helped = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._t = 0
        self._helped = False
        return 0, {}

    def step(self, action: Any):
        if int(action) == 1 and self.onset <= self._t <= self.deadline:
            self._helped = True
        self._t += 1
        done = self._t >= self.LENGTH
        info: dict[str, Any] = {}
        if done:
            info["is_success"] = self._helped if self.needs_help else True
        return self._t, 0.0, done, False, info


def tiny_reference(env: gym.Env) -> dict[str, Any]:
    tiny = env.unwrapped
    assert isinstance(tiny, TinyEnv)
    window = {"onset_tick": tiny.onset, "deadline_tick": tiny.deadline} if tiny.needs_help \
        else None
    return {"needs_intervention": tiny.needs_help, "window": window, "family": "tiny"}


def _run_tiny(env: gym.Env, act_at: int | None) -> dict[str, Any]:
    env.reset(seed=0)
    for t in range(TinyEnv.LENGTH):
        # Discrete actions arrive as numpy integers (e.g. from ``action_space.sample()``).
        _, _, term, trunc, info = env.step(np.int64(1 if t == act_at else 0))
        if term or trunc:
            return info
    raise AssertionError("episode did not end")


@pytest.mark.parametrize("act_at, outcome, success", [
    (None, "missed", False),
    (0, "premature", False),
    (1, "premature", False),
    (2, "precise", True),
    (3, "precise", True),
    (4, "late", False),
])
def test_tiny_env_help_episode(act_at: int | None, outcome: str, success: bool) -> None:
    env = PrecisionInterventionMetrics(TinyEnv(), reference_fn=tiny_reference)
    pi = _run_tiny(env, act_at)["precision_intervention"]
    assert set(pi) == set(EPISODE_FIELDS)
    assert pi["t_I"] == (-1 if act_at is None else act_at)
    assert pi["intervened"] is (act_at is not None)
    for key in ("precise", "premature", "late", "missed"):
        assert pi[key] is (key == outcome), key
    assert pi["success"] is success and pi["steps"] == TinyEnv.LENGTH
    assert pi["silent_correct"] is False and pi["family"] == "tiny"
    assert pi["success_known"] is True
    m = env.metrics()
    assert m["PIR"] == (1.0 if outcome == "precise" else 0.0)
    assert m["TA"] == (1.0 if success else 0.0)
    assert m["PSR"] is None and m["PIA"] == m["PIR"]


def test_tiny_env_running_aggregates_over_mixed_episodes() -> None:
    help_env = PrecisionInterventionMetrics(TinyEnv(), reference_fn=tiny_reference)
    for act_at in (2, 3, 0, None):  # 2 precise out of 4
        _run_tiny(help_env, act_at)
    m = help_env.metrics()
    assert m["episodes"] == 4 and m["PIR"] == 0.5 and m["TA"] == 0.5
    assert m["premature_rate"] == 0.25 and m["late_rate"] == 0.0

    silent_env = PrecisionInterventionMetrics(TinyEnv(needs_help=False),
                                              reference_fn=tiny_reference)
    for act_at in (None, None, 1):  # one false alarm
        pi = _run_tiny(silent_env, act_at)["precision_intervention"]
    assert pi["false_alarm"] is True and pi["silent_correct"] is False and pi["precise"] is False
    m = silent_env.metrics()
    assert m["PSR"] == pytest.approx(2 / 3) and m["PIR"] is None
    assert m["PIA"] == pytest.approx(2 / 3) and m["TA"] is None
    assert m["silent_all"] == pytest.approx(2 / 3)


def test_tiny_env_without_reference_is_not_scored(caplog: pytest.LogCaptureFixture) -> None:
    env = PrecisionInterventionMetrics(TinyEnv())
    with caplog.at_level(logging.WARNING, logger="mindhelper_env.wrappers.metrics"):
        pi = _run_tiny(env, 2)["precision_intervention"]
        _run_tiny(env, 2)
    assert pi["scored"] is False and pi["needs_intervention"] is False
    assert pi["precise"] is False and pi["t_I"] == 2
    m = env.metrics()
    assert m["episodes"] == 2 and m["unscored"] == 2 and m["PIR"] is None
    assert sum("no reference" in r.getMessage() for r in caplog.records) == 1  # warned once


def test_string_actions_and_info_ticks() -> None:
    class TextTiny(TinyEnv):
        """Text actions, ``info["tick"]`` = 10 × step (ticks differ from steps)."""

        def __init__(self) -> None:
            super().__init__(onset=20, deadline=30)
            self.action_space = spaces.Text(max_length=16)

        def reset(self, *, seed=None, options=None):
            obs, info = super().reset(seed=seed, options=options)
            return obs, {"tick": 0}

        def step(self, action):
            helped = action != "none" and self.onset <= 10 * self._t <= self.deadline
            self._helped = self._helped or helped
            obs, r, term, trunc, info = super().step(0)
            info["tick"] = 10 * self._t
            return obs, r, term, trunc, info

    env = PrecisionInterventionMetrics(TextTiny(), reference_fn=tiny_reference)
    env.reset()
    actions = ["none", " None ", "help", "none", "help"]
    for a in actions:
        *_, info = env.step(a)
    pi = info["precision_intervention"]
    assert pi["t_I"] == 20 and pi["precise"] is True and pi["success"] is True


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_log_rows(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"log{suffix}"
    env = PrecisionInterventionMetrics(TinyEnv(), reference_fn=tiny_reference, log_path=path)
    for act_at in (2, None, 4):
        _run_tiny(env, act_at)
    if suffix == ".csv":
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert list(rows[0]) == list(EPISODE_FIELDS)
        assert [r["precise"] for r in rows] == ["True", "False", "False"]
        assert [r["t_I"] for r in rows] == ["2", "-1", "4"]
    else:
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        assert [r["precise"] for r in rows] == [True, False, False]
        assert [r["late"] for r in rows] == [False, False, True]
        assert [r["episode"] for r in rows] == [0, 1, 2]


def test_bad_log_extension() -> None:
    with pytest.raises(ValueError, match="log_path"):
        PrecisionInterventionMetrics(TinyEnv(), log_path="metrics.txt")


def test_bad_reference_is_an_error() -> None:
    env = PrecisionInterventionMetrics(
        TinyEnv(), reference_fn=lambda e: {"needs_intervention": True, "window": None})
    with pytest.raises(ValueError, match="window"):
        _run_tiny(env, 2)


@pytest.mark.filterwarnings(_WRAPPED_WARNING)
@pytest.mark.filterwarnings("ignore:.*alternative render modes")
def test_tiny_env_check_env_and_pickle(tmp_path: Path) -> None:
    env = PrecisionInterventionMetrics(TinyEnv(), reference_fn=tiny_reference,
                                       log_path=tmp_path / "m.csv")
    check_env(env)
    _run_tiny(env, 3)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.metrics() == env.metrics()
    _run_tiny(clone, 3)
    assert clone.metrics()["episodes"] == env.metrics()["episodes"] + 1


def test_a_committed_but_unexecuted_act_is_a_false_alarm() -> None:
    # "walk x8, then act" is issued once in an episode that needs no help, then replaced by
    # a walk before the act comes up. The commitment is scored, wherever the episode goes.
    from mindhelper_env.scenarios.suites import suite_episode

    index = next(i for i in range(20)
                 if not suite_episode(SUITE, i)["reference"]["needs_intervention"])
    env = PrecisionInterventionMetrics(gym.make("MindHelper-VirtualHome-v0"))
    obs, info = env.reset(options={"suite": SUITE, "index": index})
    assert not env.unwrapped.ground_truth.needs_intervention
    room = info["robot"]["room"]
    cls = next(r["class"] for r in info["candidates"]["rooms"] if r["id"] == room)
    walk = f"[walk] <{cls}> ({room})"
    loc = info["candidates"]["locations"][0]
    env.step("; ".join([walk] * 8 + [f"[open] <{loc['class']}> ({loc['id']})"]))
    obs, _, term, trunc, info = env.step(walk)
    while not (term or trunc):
        obs, _, term, trunc, info = env.step("none")
    pi = info["precision_intervention"]
    assert pi["intervened"] and pi["false_alarm"] and not pi["silent_correct"]
    assert pi["t_I"] == 0 == info["episode_record"]["intervention_tick"]
    assert all(e["line"] == walk for e in info["episode_record"]["executed"])
    assert env.metrics()["PSR"] == 0.0
