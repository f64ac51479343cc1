"""Every registered env: API conformance, determinism, pickling, render modes, bad actions."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from mindhelper_env.agents import make_agent
from tests.conftest import ENV_IDS, RandomActions, play


def test_registered():
    assert "MindHelper-VirtualHome-v0" in ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("render_mode", [None, "ansi", "rgb_array"])
def test_check_env_without_warnings(env_id, render_mode):
    env = gym.make(env_id, render_mode=render_mode).unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=False)
    assert [str(w.message) for w in caught] == []


def _key(obs):
    return obs["narration"] if isinstance(obs, dict) else obs.tobytes()


def _trajectory(env_id, seed, n_steps=40):
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    actor = RandomActions(env, seed)
    obs, info = env.reset(seed=seed)
    out = [_key(obs)]
    for _ in range(n_steps):
        obs, r, term, trunc, info = env.step(actor(obs, info))
        out.append((_key(obs), obs.get("events") if isinstance(obs, dict) else None, r, term,
                    trunc, info.get("action_error"), info.get("tick")))
        if term or trunc:
            obs, info = env.reset(seed=int(rng.integers(1 << 30)))
            out.append((_key(obs), info.get("tick")))
    return out


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_seed_determinism_of_whole_trajectories(env_id):
    assert _trajectory(env_id, 11) == _trajectory(env_id, 11)
    assert _trajectory(env_id, 11) != _trajectory(env_id, 12)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickling_mid_episode_continues_identically(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=5)
    actor = RandomActions(env, 5)
    text = isinstance(env.unwrapped.action_space, gym.spaces.Text)
    env.step("none" if text else actor(obs, info))
    clone = pickle.loads(pickle.dumps(env))
    actions = ["none", "[walk] <character> (2)", "none", "none"] if text else range(12)
    for action in actions:
        if not text:
            action = actor(None, None)
            assert np.array_equal(env.unwrapped.action_masks(), clone.unwrapped.action_masks())
        a = env.step(action)
        b = clone.step(action)
        assert _key(a[0]) == _key(b[0]) and a[1:4] == b[1:4]
        if a[2] or a[3]:
            break


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_ansi_render(env_id):
    env = gym.make(env_id, render_mode="ansi")
    env.reset(seed=1)
    text = isinstance(env.unwrapped.action_space, gym.spaces.Text)
    env.step("none" if text else len(env.unwrapped.action_masks()) - 1)  # silence / noop
    text = env.render()
    assert isinstance(text, str) and "tick" in text and "robot program" in text


def test_replay_spec_exactly(vh_env):
    vh_env.reset(seed=9)
    spec = vh_env.unwrapped.episode_spec
    first = [vh_env.step("none")[0]["narration"] for _ in range(3)]
    vh_env.reset(seed=123, options={"episode": spec})
    again = [vh_env.step("none")[0]["narration"] for _ in range(3)]
    assert first == again
    assert vh_env.unwrapped.ground_truth.episode_id == spec["episode_id"]


@pytest.mark.parametrize(
    "action",
    ["x" * 100_000, "\x00\xff\u2603", "[fly] <apple> (3)", "[grab] <apple> (999999)",
     "[putin] <apple> (1)", "[grab] <apple>", "[walk] <fridge> (12) <x> (3)",
     "[give] <apple> (1) <character> (2);;;;", b"\x89PNG\r\n".decode("latin-1")],
)
def test_bad_actions_never_raise_and_count_as_attempts(vh_env, action):
    obs, info = vh_env.reset(seed=2)
    obs, r, term, trunc, info = vh_env.step(action)
    assert info["action_error"]
    assert vh_env.unwrapped.simulation.actions, "a non-none action is an intervention attempt"
    assert vh_env.observation_space.contains(obs)


@pytest.mark.parametrize("env_id", ["MindHelper-VirtualHome-v0", "MindHelper-VirtualHome-v3"])
@pytest.mark.parametrize("silence", ["", "   ", "\n\t"])
def test_an_empty_string_is_silence_exactly_as_none(env_id, silence):
    """``step("")`` is ``step("none")``: nothing issued, no action_error, and the robot's
    program runs on (it used to be an "empty program" that cancelled it)."""
    def play(action):
        env = gym.make(env_id)
        try:
            obs, info = env.reset(seed=3)
            walks = "; ".join(f"[walk] <{loc['class']}> ({loc['id']})"
                              for loc in info["candidates"]["locations"][:6])
            seen = [env.step(walks)[-1]["robot"]]
            for _ in range(3):
                obs, _r, _t, _tr, info = env.step(action)
                seen.append((obs["narration"], info.get("action_error"), info["robot"]))
            return seen, list(env.unwrapped.simulation.actions)
        finally:
            env.close()

    quiet, quiet_actions = play("none")
    empty, empty_actions = play(silence)
    assert empty == quiet and empty_actions == quiet_actions and len(quiet_actions) == 1
    assert all(not err for _n, err, _r in empty[1:])


def test_unreachable_line_is_reported(vh_env):
    obs, info = vh_env.reset(seed=2)
    holders = {a["id"] for a in info["candidates"]["actors"]} | {info["robot"]["id"]}
    far = max((o for o in info["candidates"]["objects"] if o["location"] not in holders),
              key=lambda o: o["id"])
    obs, r, term, trunc, info = vh_env.step(f"[grab] <{far['class']}> ({far['id']})")
    assert "not close" in info["action_error"] or "closed container" in info["action_error"]


def test_stepping_before_reset_or_after_end_raises():
    env = gym.make("MindHelper-VirtualHome-v0").unwrapped
    with pytest.raises(gym.error.ResetNeeded):
        env.step("none")
    play(env, make_agent("silent"), seed=0)
    with pytest.raises(gym.error.ResetNeeded):
        env.step("none")


def test_non_string_action_is_a_type_error(vh_env):
    vh_env.reset(seed=0)
    with pytest.raises(TypeError):
        vh_env.unwrapped.step(3)


@pytest.mark.parametrize("kwargs", [{"window_ticks": 0}, {"observability": "god"},
                                    {"families": ["nope"]}, {"reward": {"bonus": 1.0}},
                                    {"max_ticks": -1}])
def test_bad_constructor_arguments(kwargs):
    with pytest.raises(ValueError):
        gym.make("MindHelper-VirtualHome-v0", **kwargs)


def test_room_observability_sees_less():
    home = gym.make("MindHelper-VirtualHome-v0", observability="home")
    room = gym.make("MindHelper-VirtualHome-v0", observability="room")
    _, ih = home.reset(seed=4)
    _, ir = room.reset(seed=4)
    assert len(ir["candidates"]["objects"]) < len(ih["candidates"]["objects"])


def test_final_info_has_episode_record(vh_env):
    info = play(vh_env, make_agent("silent"), seed=3)
    rec = info["episode_record"]
    assert set(rec) >= {"episode_id", "actions", "executed", "focus_success", "reference"}
    assert rec["reference"]["episode_id"] == rec["episode_id"]


def test_ground_truth_not_in_step_info(vh_env):
    obs, info = vh_env.reset(seed=3)
    obs, r, term, trunc, info = vh_env.step("none")
    flat = repr(info) + repr(obs)
    ref = vh_env.unwrapped.ground_truth
    assert ref.family not in flat and "needs_intervention" not in flat


@pytest.mark.parametrize("spec, message", [
    ({"graph": {"nodes": []}}, "no 'actors'"),
    ({"actors": []}, "no 'graph'"),
    ({"graph": {"nodes": [{"id": 1}]}, "actors": []}, "class_name"),
    ({"graph": {"nodes": []}, "actors": [{"id": 2}]}, "actors"),
])
def test_malformed_episode_spec_is_a_value_error(vh_env, spec, message):
    with pytest.raises(ValueError, match=message):
        vh_env.reset(options={"episode": spec})


@pytest.mark.parametrize("activity, message", [
    ({"type": "dance"}, "unknown type 'dance'"),
    ({"type": "fetch"}, "needs object"),
])
def test_malformed_activity_is_a_value_error(vh_env, activity, message):
    vh_env.reset(seed=0)
    spec = vh_env.unwrapped.episode_spec
    spec["actors"][0]["activities"].append(activity)
    with pytest.raises(ValueError, match=message):
        vh_env.reset(options={"episode": spec})


def _walk_here(info) -> str:
    room = info["robot"]["room"]
    cls = next(r["class"] for r in info["candidates"]["rooms"] if r["id"] == room)
    return f"[walk] <{cls}> ({room})"


def test_intervention_is_the_issue_of_an_acting_program(vh_env):
    obs, info = vh_env.reset(options={"suite": "vh-dev-v2", "index": 0})
    sim = vh_env.unwrapped.simulation
    walk = _walk_here(info)
    vh_env.step(walk)  # movement only: free
    assert sim.intervention_tick is None and not sim.intervened
    loc = info["candidates"]["locations"][0]
    tick = int(info["tick"]) + vh_env.unwrapped.window_ticks
    # eight free moves, then an act that has not come up when the next program replaces it
    _, _, _, _, info = vh_env.step("; ".join([walk] * 8 + [f"[open] <{loc['class']}> ({loc['id']})"]))
    assert sim.intervention_tick == tick and sim.intervened
    assert all(ln.line == walk for ln in sim.robot_lines)  # the act was never executed
    _, _, term, trunc, info = vh_env.step(walk)
    assert sim.intervention_tick == tick  # a new program does not undo the commitment
    while not (term or trunc):
        _, _, term, trunc, info = vh_env.step("none")
    rec = info["episode_record"]
    assert rec["intervention_tick"] == tick and rec["first_move_tick"] == 0
    assert [a["acts"] for a in rec["actions"]] == [False, True, False]


def test_an_act_past_the_line_limit_is_no_intervention(vh_env):
    from mindhelper_env.envs.virtualhome import MAX_PROGRAM_LINES

    obs, info = vh_env.reset(options={"suite": "vh-dev-v2", "index": 0})
    loc = info["candidates"]["locations"][0]
    walk = _walk_here(info)
    act = f"[open] <{loc['class']}> ({loc['id']})"
    _, _, _, _, info = vh_env.step("\n".join([walk] * MAX_PROGRAM_LINES + [act]))
    assert "longer than" in info["action_error"]
    assert vh_env.unwrapped.simulation.intervention_tick is None  # the act was cut: never run
    vh_env.step("\n".join([walk] * (MAX_PROGRAM_LINES - 1) + [act]))
    assert vh_env.unwrapped.simulation.intervention_tick == vh_env.unwrapped.window_ticks


def _silent_run(env, index):
    obs, info = env.reset(options={"suite": "vh-dev-v2", "index": index})
    flags, keys = [], []
    while True:
        obs, _, term, trunc, info = env.step("none")
        flags.append((term, trunc))
        if term or trunc:
            return flags, keys, info
        keys.append(tuple(tuple(sorted(d)) for d in (obs, info, info["candidates"], info["robot"])))


def test_every_episode_runs_to_its_horizon_whatever_happened():
    from mindhelper_env.backends.symbolic import Simulation
    from mindhelper_env.scenarios.suites import suite_episode

    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    seen = set()
    for index in range(6):  # help and silent episodes: the focus person gives up or succeeds
        spec = suite_episode("vh-dev-v2", index)
        sim = Simulation(spec)
        sim.run()  # validation rollouts still stop once the episode settles
        assert sim.settled and sim.tick < spec["horizon"]
        flags, keys, info = _silent_run(env, index)
        n = -(-spec["horizon"] // env.unwrapped.window_ticks)
        assert flags == [(False, False)] * (n - 1) + [(True, False)]
        rec = info["episode_record"]
        assert rec["ticks"] == spec["horizon"] and rec["terminated"] and not rec["truncated"]
        assert rec["focus_success"] is (not spec["reference"]["needs_intervention"])
        seen.add(rec["focus_success"])
        assert len(set(keys)) == 1  # the same fields, step after step
    assert seen == {True, False}


def test_max_ticks_below_the_horizon_truncates():
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0, max_ticks=20)
    flags, _keys, info = _silent_run(env, 1)
    assert flags[-1] == (False, True) and not any(t for t, _ in flags)
    rec = info["episode_record"]
    assert rec["ticks"] == 20 and rec["truncated"] and not rec["terminated"]
