"""Vector envs: every info value keeps one type, suite indices spread over sub-envs,
episode records survive an outer TimeLimit."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from mindhelper_env.envs import CompleteEpisodeRecord, make_vec_env
from mindhelper_env.envs.records import stable_record
from mindhelper_env.scenarios.suites import suite_episode_id
from mindhelper_env.wrappers import PrecisionInterventionMetrics

ENV_ID = "MindHelper-VirtualHome-v0"
MODES = [gym.vector.AutoresetMode.NEXT_STEP, gym.vector.AutoresetMode.SAME_STEP,
         gym.vector.AutoresetMode.DISABLED]


def _actions(rng: np.random.Generator, infos: dict, n: int) -> tuple[str, ...]:
    """Mostly silence; sometimes grab the first visible object (an intervention)."""
    out = []
    objects = infos.get("candidates", {}).get("objects")
    for k in range(n):
        objs = objects[k] if objects is not None else None
        if objs and rng.random() < 0.15:
            o = objs[0]
            out.append(f"[walk] <{o['class']}> ({o['id']}); [grab] <{o['class']}> ({o['id']})")
        else:
            out.append("none")
    return tuple(out)


def _final_infos(infos: dict, mode: gym.vector.AutoresetMode, done: np.ndarray):
    """(env index, precision_intervention, episode_record) of every episode that ended."""
    src = infos.get("final_info", {}) if mode == gym.vector.AutoresetMode.SAME_STEP else infos
    pis, recs = src.get("precision_intervention"), src.get("episode_record_json")
    for k in np.flatnonzero(done):
        yield k, {key: val[k] for key, val in pis.items() if not key.startswith("_")}, \
            json.loads(recs[k])


@pytest.mark.parametrize("vectorization_mode", ["sync", "async"])
@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
def test_make_vec_with_metrics_runs_and_closes(vectorization_mode, mode) -> None:
    vector_kwargs = {"autoreset_mode": mode}
    if vectorization_mode == "async":
        vector_kwargs["shared_memory"] = False
    envs = gym.make_vec(ENV_ID, num_envs=3, vectorization_mode=vectorization_mode,
                        vector_kwargs=vector_kwargs, wrappers=[PrecisionInterventionMetrics])
    rng = np.random.default_rng(0)
    try:
        obs, infos = envs.reset(seed=11)
        assert len(obs["narration"]) == 3 and all(isinstance(t, str) and t for t in obs["narration"])
        finished = 0
        done = np.zeros(3, bool)
        for _ in range(240):  # every episode runs to its horizon (50 windows of vh-dev-v2's)
            if finished >= 12:
                break
            if mode == gym.vector.AutoresetMode.DISABLED and done.any():
                obs, infos = envs.reset(options={"reset_mask": done})
            obs, rew, term, trunc, infos = envs.step(_actions(rng, infos, 3))
            done = term | trunc
            assert rew.dtype == np.float64 and infos["tick"].dtype.kind == "i"
            for _k, pi, rec in _final_infos(infos, mode, done):
                finished += 1
                assert pi["scored"] and isinstance(pi["t_I"], (int, np.integer))
                assert pi["needs_intervention"] == rec["reference"]["needs_intervention"]
                if rec["reference"]["window"] is None:
                    assert pi["onset_tick"] == -1
                else:
                    assert pi["onset_tick"] == rec["reference"]["window"]["onset_tick"]
                assert pi["t_I"] == rec["intervention_tick"]
        assert finished >= 12
    finally:
        envs.close()


@pytest.mark.parametrize("vectorization_mode", ["sync", "async"])
def test_suite_indices_spread_over_ranked_sub_envs(vectorization_mode) -> None:
    envs = make_vec_env(3, vectorization_mode=vectorization_mode)
    try:
        _, infos = envs.reset(options={"suite": "vh-dev-v2", "indices": [4, 0, 7]})
        ids = []
        done = np.zeros(3, bool)
        recs: dict[int, str] = {}
        for _ in range(80):
            _, _, term, trunc, infos = envs.step(("none",) * 3)
            done_now = (term | trunc) & ~done
            for k in np.flatnonzero(done_now):
                recs[int(k)] = json.loads(infos["episode_record_json"][k])["episode_id"]
            done |= term | trunc
            if done.all():
                break
        ids = [recs[k] for k in range(3)]
        assert ids == [suite_episode_id("vh-dev-v2", i) for i in (4, 0, 7)]
    finally:
        envs.close()


def test_indices_without_rank_is_an_error() -> None:
    env = gym.make(ENV_ID)
    with pytest.raises(ValueError, match="vector_index"):
        env.reset(options={"suite": "vh-dev-v2", "indices": [0, 1]})
    env.unwrapped.vector_index = 1
    _, info = env.reset(options={"suite": "vh-dev-v2", "indices": [0, 2]})
    assert env.unwrapped.ground_truth.episode_id == suite_episode_id("vh-dev-v2", 2)
    with pytest.raises(ValueError, match="not both"):
        env.reset(options={"suite": "vh-dev-v2", "indices": [0, 2], "index": 1})
    env.close()


def test_record_in_info_is_stable_and_json_is_complete() -> None:
    env = gym.make(ENV_ID)
    seen_silent = False
    for seed in range(6):
        env.reset(seed=seed)
        while True:
            *_, term, trunc, info = env.step("none")
            if term or trunc:
                break
        full = env.unwrapped.episode_record()
        assert json.loads(info["episode_record_json"]) == json.loads(json.dumps(full))
        assert info["episode_record"] == stable_record(full)
        ref = info["episode_record"]["reference"]
        if not ref["needs_intervention"]:
            seen_silent = True
            assert "window" not in ref and ref.get("window") is None
            assert full["reference"]["window"] is None
    assert seen_silent
    env.close()


def test_outer_time_limit_still_gives_the_record() -> None:
    env = CompleteEpisodeRecord(gym.make(ENV_ID, max_episode_steps=2))
    env.reset(seed=3)
    env.step("none")
    *_, term, trunc, info = env.step("none")
    assert trunc and not term
    rec = info["episode_record"]
    assert rec["truncated"] is True and rec["steps"] == 2
    assert json.loads(info["episode_record_json"])["truncated"] is True

    metered = PrecisionInterventionMetrics(gym.make(ENV_ID, max_episode_steps=1))
    metered.reset(seed=3)
    *_, trunc, info = metered.step("none")
    assert trunc and info["episode_record"]["steps"] == 1
    assert info["precision_intervention"]["scored"] is True


def test_make_vec_env_time_limit_and_bad_args() -> None:
    envs = make_vec_env(2, max_episode_steps=1)
    envs.reset(seed=0)
    *_, trunc, infos = envs.step(("none", "none"))
    assert trunc.all() and infos["_episode_record"].all()
    envs.close()
    with pytest.raises(ValueError):
        make_vec_env(0)
    with pytest.raises(ValueError):
        make_vec_env(2, vectorization_mode="ray")


def _leaf_types(value, path, out) -> None:
    """Record the kind of every value Gymnasium stacks (dict leaves; lists are opaque)."""
    if isinstance(value, dict):
        out.setdefault(path, set()).add("dict")
        for k, v in value.items():
            _leaf_types(v, f"{path}/{k}", out)
    elif value is None:
        out.setdefault(path, set()).add("none")
    elif isinstance(value, (bool, np.bool_)):
        out.setdefault(path, set()).add("bool")
    elif isinstance(value, (int, np.integer)):
        out.setdefault(path, set()).add("int")
    elif isinstance(value, (float, np.floating)):
        out.setdefault(path, set()).add("float")
    else:
        out.setdefault(path, set()).add("object")


def test_every_info_key_keeps_its_kind_across_families() -> None:
    from mindhelper_env.scenarios.spec import FAMILIES

    env = PrecisionInterventionMetrics(gym.make(ENV_ID))
    kinds: dict[str, set[str]] = {}
    rng = np.random.default_rng(1)
    for i, family in enumerate(FAMILIES * 2):
        _, info = env.reset(seed=i, options={"family": family})
        _leaf_types(info, "", kinds)
        while True:
            action = _actions(rng, {"candidates": {"objects": [info["candidates"]["objects"]]}},
                              1)[0]
            *_, term, trunc, info = env.step(action)
            _leaf_types(info, "", kinds)
            if term or trunc:
                break
    assert "/episode_record/reference/mental_state" in kinds
    for path, seen in kinds.items():
        typed = seen & {"dict", "int", "float", "bool"}
        # a typed array (or a dict) must never meet None or another kind
        assert len(typed) <= 1 and not (typed and seen - typed), (path, seen)
