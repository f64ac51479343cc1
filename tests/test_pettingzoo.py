"""The PettingZoo view (``mindhelper_env.envs.parallel_env``): the robot equals the
single-agent env, people observe their own room, person policies and their bad actions,
PettingZoo's API and seed tests, and the example."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.agents import make_agent


def _require_pettingzoo():
    """Import ``pettingzoo`` (the pettingzoo extra); skip without it, but fail when
    ``MINDHELPER_REQUIRE_PETTINGZOO=1`` (set by ``.ci/run``, so CI never skips these)."""
    if os.environ.get("MINDHELPER_REQUIRE_PETTINGZOO") == "1":
        return importlib.import_module("pettingzoo")
    return pytest.importorskip("pettingzoo",
                               reason='needs the pettingzoo extra: pip install -e ".[pettingzoo]"')


pettingzoo = _require_pettingzoo()
from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402

from mindhelper_env.envs import parallel_env  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ALL_EXTERNAL = {f"person_{i}": "external" for i in range(8)}


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("agent_name,seed,options", [
    ("random", 3, None),
    ("random", 11, None),
    ("oracle", 0, {"suite": "vh-dev-v5", "index": 3}),  # a help episode (the oracle acts)
    ("oracle", 0, {"suite": "vh-dev-v4", "index": 2}),
    ("oracle", 0, {"suite": "vh-dev-v3", "index": 1}),
    ("belief-tracker", 0, {"suite": "vh-dev-v5", "index": 4}),
    ("oracle", 0, {"suite": "vh-dev-v2", "index": 1}),
])
def test_robot_equals_single_agent_env(agent_name, seed, options):
    single = gym.make("MindHelper-VirtualHome-v3")
    par = parallel_env()
    agent = make_agent(agent_name, env=single, seed=seed,
                       **({"p": 0.3} if agent_name == "random" else {}))
    obs, info = single.reset(seed=seed, options=options)
    pobs, pinfos = par.reset(seed=seed, options=options)
    agent.reset(seed=seed)
    assert par.agents == ["robot"] + [f"person_{i}" for i in range(len(par.agents) - 1)]
    assert len(par.agents) == 1 + len(single.unwrapped.simulation.actors)
    assert _same(obs, pobs["robot"]) and _same(info, pinfos["robot"])
    steps = 0
    while True:
        action = agent.act(obs, info)
        obs, reward, term, trunc, info = single.step(action)
        pobs, prew, pterm, ptrunc, pinfos = par.step({"robot": action})
        steps += 1
        assert _same(obs, pobs["robot"]), f"robot observation differs at step {steps}"
        assert prew["robot"] == reward and pterm["robot"] == term and ptrunc["robot"] == trunc
        assert _same(info, pinfos["robot"]), f"robot info differs at step {steps}"
        assert set(prew) == set(pobs) == set(pterm) == set(pinfos)
        if term or trunc:
            break
    assert par.agents == []
    assert "episode_record" in pinfos["robot"]
    assert par.episode_record() == single.unwrapped.episode_record()
    if agent_name == "oracle":
        assert info["episode_record"]["actions"], "the oracle should have intervened"
    single.close()
    par.close()


def test_people_observe_their_own_room():
    # one tick per window: the room a person ends the window in is where it saw it from
    par = parallel_env(window_ticks=1)
    obs, infos = par.reset(seed=5)
    sim = par.simulation
    for name in par.agents[1:]:
        actor = par.person(name)
        room = sim.world.chars[actor.id].room
        assert infos[name]["id"] == actor.id and infos[name]["room"] == room
        assert obs[name]["narration"].endswith(
            f"You ({actor.name}, {actor.id}) are in the {par.household._labels.room(room)}.")
        assert par.observation_space(name).contains(obs[name])
    seen_any = hidden_any = False
    while par.agents:
        start = len(sim.log)
        obs, _r, _t, _tr, infos = par.step({"robot": "none"})
        window = sim.log[start:]
        for name in obs:
            if name == "robot":
                continue
            me = par.person(name).id
            room = sim.world.chars[me].room
            seen = [ev for ev in window if ev.actor == me or ev.room == room]
            hidden_any |= len(seen) < len(window)
            text = obs[name]["narration"]
            assert par.observation_space(name).contains(obs[name])
            if not seen:
                assert text == "Nothing happened that you could see."
                continue
            seen_any = True
            assert text.count("[t=") == len(seen)
            assert obs[name]["events"].count('"tick"') == len(seen)
            assert obs[name]["events"].count(f'"actor": {me},') == sum(
                ev.actor == me for ev in seen)
    assert seen_any and hidden_any


def _policy(actions):
    it = iter(actions)

    def policy(observation, info):
        return next(it, "none")
    return policy


def test_invalid_person_actions_are_skipped_and_counted():
    par = parallel_env()
    obs, infos = par.reset(seed=2)
    rooms = infos["person_0"]["candidates"]["rooms"]
    here = infos["person_0"]["room"]
    dest = next(r for r in rooms if r["id"] != here)
    bad = [42, None, "[fly] <kitchen> (1)", "[walk] <kitchen> (999999)",
           f"[tell] <character> (1) <{dest['class']}> ({dest['id']}) <{dest['class']}> "
           f"({dest['id']})", b"[walk] <nothing> (3)", "x" * 5000,
           f"[walk] <{dest['class']}> ({dest['id']})"]
    par = parallel_env({"person_0": _policy(bad)})
    obs, infos = par.reset(seed=2)
    counts = []
    errors = []
    while par.agents:
        obs, _r, _t, _tr, infos = par.step({"robot": "none"})
        counts.append(infos["person_0"]["invalid_actions"])
        errors.append(infos["person_0"]["action_error"])
        if len(counts) == len(bad) + 3:
            break
    # one each: not a string (twice), unknown verb, unknown node, robot-only verb (run),
    # the bytes line naming a node of another class, the overlong action, then nothing more
    assert counts[0] == 1 and "must be a string" in errors[0]
    assert counts[1] == 2
    assert counts[2] == 3 and "fly" in errors[2]
    assert counts[3] == 4 and "999999" in errors[3]
    assert counts[4] == 5 and "only the robot" in errors[4]
    assert counts[5] == 6
    assert counts[6] >= 7 and "longer than" in errors[6]
    assert counts[-1] == counts[6], "the valid walk must not be counted"
    assert errors[-1] is None
    actor = par.person("person_0")
    assert par.simulation.world.chars[actor.id].room == dest["id"], "the walk was executed"
    assert infos["person_0"]["controller"] == "policy"


def test_external_people_take_step_actions():
    par = parallel_env({"person_0": "external"})
    obs, infos = par.reset(seed=2)
    here = infos["person_0"]["room"]
    dest = next(r for r in infos["person_0"]["candidates"]["rooms"] if r["id"] != here)
    obs, _r, _t, _tr, infos = par.step({"robot": "none", "person_0":
                                        f"[walk] <{dest['class']}> ({dest['id']})"})
    assert infos["person_0"]["invalid_actions"] == 0
    for _ in range(3):
        obs, _r, _t, _tr, infos = par.step({"robot": "none"})  # missing: counted, no crash
    assert infos["person_0"]["invalid_actions"] == 3
    assert "no action given" in infos["person_0"]["action_error"]
    assert par.simulation.world.chars[par.person("person_0").id].room == dest["id"]
    # the scripted people ignore what step() gives them
    assert infos.get("person_1", {"controller": "scripted"})["controller"] == "scripted"


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown person"):
        parallel_env({"person_99": "external"})
    with pytest.raises(ValueError, match="controller"):
        parallel_env({"person_0": "llm"})
    with pytest.raises(ValueError, match="max_people"):
        parallel_env(max_people=0)
    par = parallel_env(max_people=1)
    with pytest.raises(ValueError, match="max_people=1"):
        for seed in range(50):
            par.reset(seed=seed)
    with pytest.raises(ValueError, match="robot"):
        par = parallel_env()
        par.reset(seed=0)
        par.step({"person_0": "none"})


@pytest.mark.filterwarnings("ignore:No agents present but not all possible_agents")
@pytest.mark.parametrize("people", [None, ALL_EXTERNAL], ids=["scripted", "external"])
def test_pettingzoo_api(people):
    assert isinstance(parallel_env(), pettingzoo.ParallelEnv)
    parallel_api_test(parallel_env(people), num_cycles=1000)


@pytest.mark.filterwarnings("ignore:No agents present but not all possible_agents")
def test_pettingzoo_aec_conversion():
    from pettingzoo.test import api_test
    from pettingzoo.utils.conversions import parallel_to_aec

    api_test(parallel_to_aec(parallel_env()), num_cycles=300)


@pytest.mark.parametrize("people", [None, ALL_EXTERNAL], ids=["scripted", "external"])
def test_pettingzoo_seed(people):
    parallel_seed_test(lambda: parallel_env(people))


def test_import_stays_light():
    code = "import sys, mindhelper_env, mindhelper_env.envs; print('pettingzoo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_example_runs():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "pettingzoo_people.py"),
                          "--episodes", "6"], capture_output=True, text=True, check=True,
                         timeout=600)
    lines = [__import__("json").loads(x) for x in out.stdout.splitlines()]
    assert [x["run"] for x in lines] == ["scripted people", "person_0 random"]
    for x in lines:
        assert x["episodes"] == 6
        assert 0.0 <= x["PHA"] <= 1.0 and 0.0 <= x["PSR"] <= 1.0
    assert lines[0]["invalid_actions"]["person_0"] == 0
