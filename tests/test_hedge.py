"""The movement-prefix hedge (agents/hedge.py) and why it cannot pay (docs/metrics.md).

Under the old rule (the intervention is the first *executed* acting line, and an episode ends
when the focus person succeeds or gives up) ``+prefix8`` raised the PSR of every agent that
acts in silent episodes — the act was still eight walks away when a silent twin ended — while
its help in help episodes was still scored precise. Checked against that rule (this test
fails there): on vh-dev-v2 reactive PHA 22 -> 43 (PSR 10 -> 62), random 22 -> 31 (PSR 44
-> 62), prior 18 -> 23 (PSR 36 -> 46); on vh-dev-v2 reactive 31 -> 60. Now the
intervention is the issue of the program and every episode runs to its horizon, so the
prefix changes no agent's PIR or PSR, and PHA can only lose: the help comes eight ticks
later, and a person who gave up in the meantime is not helped (on vh-dev-v2 that costs the
belief tracker 23 PHA points and the oracle 16: its people give up soon after the
deadline).
"""

from __future__ import annotations

import gymnasium as gym
import pytest

from mindhelper_env.agents import MovementPrefix, make_agent
from mindhelper_env.agents.hedge import split_prefix_suffix
from mindhelper_env.evaluation import check_agents, evaluate

SUITE = "vh-dev-v2"
AGENTS = ("silent", "random", "reactive", "moved-absent", "prior", "belief-tracker", "oracle")


class _Scripted:
    name = "scripted"

    def __init__(self, answers):
        self.answers = list(answers)
        self.usage = object()
        self.resets = []
        self.trigger_ops = [{"predicted": "noop"}]

    def reset(self, *, seed=None):
        self.resets.append(seed)

    def act(self, obs, info):
        return self.answers.pop(0)


INFO = {"robot": {"id": 1, "room": 7, "holding": []},
        "candidates": {"rooms": [{"id": 5, "class": "bedroom"}, {"id": 7, "class": "kitchen"}],
                       "locations": [{"id": 30, "class": "fridge", "room": 7, "open": False}],
                       "objects": [], "actors": []}}


def test_prefix_walks_to_the_robots_room_before_every_program():
    inner = _Scripted(["none", "[open] <fridge> (30)", "[walk] <fridge> (30)", " None "])
    agent = MovementPrefix(inner, lines=3)
    assert agent.name == "scripted+prefix3" and agent.usage is inner.usage
    assert agent.trigger_ops is inner.trigger_ops  # other attributes are the agent's
    agent.reset(seed=4)
    assert inner.resets == [4]
    assert agent.act({}, INFO) == "none"
    assert agent.act({}, INFO).split("\n") == ["[walk] <kitchen> (7)"] * 3 + ["[open] <fridge> (30)"]
    assert agent.act({}, INFO).split("\n") == ["[walk] <kitchen> (7)"] * 3 + ["[walk] <fridge> (30)"]
    assert agent.act({}, INFO) == " None "
    # without a room, a location in view
    info = {**INFO, "robot": {"id": 1, "room": None, "holding": []}}
    assert MovementPrefix(_Scripted(["[open] <fridge> (30)"]), lines=1).act({}, info) \
        == "[walk] <fridge> (30)\n[open] <fridge> (30)"


@pytest.mark.parametrize("lines", [-1, 64, 2.0, True])
def test_prefix_length_is_checked(lines):
    with pytest.raises(ValueError, match="lines"):
        MovementPrefix(_Scripted([]), lines=lines)


def test_registry_names_take_the_prefix_suffix():
    assert split_prefix_suffix("reactive+prefix10") == ("reactive", 10)
    assert split_prefix_suffix("reactive") == ("reactive", None)
    agent = make_agent("reactive+prefix10")
    assert isinstance(agent, MovementPrefix) and agent.lines == 10
    assert agent.name == "reactive+prefix10" and type(agent.agent).__name__ == "ReactiveAgent"
    assert make_agent("random+prefix2", p=1.0).agent.p == 1.0  # options reach the agent
    check_agents(["reactive+prefix10", "tests.user_agents:WalkOnlyAgent+prefix3"])
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("nobody+prefix8")


def test_prefixed_walks_execute_as_free_movement():
    env = gym.make("MindHelper-VirtualHome-v0")
    agent = make_agent("oracle+prefix8", env=env)
    from mindhelper_env.scenarios.suites import suite_episode

    index = next(i for i in range(20)
                 if suite_episode(SUITE, i)["reference"]["needs_intervention"])
    obs, info = env.reset(options={"suite": SUITE, "index": index})
    agent.reset()
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        done = term or trunc
    rec = info["episode_record"]
    first = rec["actions"][0]
    assert first["acts"] and rec["intervention_tick"] == first["tick"]
    walks = [e for e in rec["executed"] if e["issued"] == first["tick"]][:8]
    assert len(walks) == 8 and all(e["line"].startswith("[walk]") and e["ok"] for e in walks)
    assert rec["first_move_tick"] == first["tick"]


def test_the_movement_prefix_hedge_does_not_pay(tmp_path):
    names = list(AGENTS) + [f"{a}+prefix8" for a in AGENTS]
    metrics = evaluate(SUITE, names, tmp_path, workers=1, progress=False, plots=False,
                       timing=False)["metrics"]
    assert metrics["silent"]["n_help"] == 50 and metrics["silent"]["n_silent"] == 50
    acting = 0
    for a in AGENTS:
        plain, hedged = metrics[a], metrics[f"{a}+prefix8"]
        # when and whether the robot intervened is scored the same: the hedge changes no
        # intervention's timing and no silence
        for key in ("PIR", "PSR", "PIA", "premature_rate", "late_rate", "false_alarm_rate"):
            assert hedged[key] == pytest.approx(plain[key], abs=1.0), (a, key)
        # so PHA cannot rise; and since a help episode's person stays stuck long enough
        # for help issued at the deadline behind 8 free moves (the generator checks it),
        # it does not fall by more than a point either
        assert abs(hedged["PHA"] - plain["PHA"]) <= 1.0, (a, plain["PHA"], hedged["PHA"])
        assert plain["PHR"] - hedged["PHR"] <= plain["TA"] - hedged["TA"] + 0.01, a
        acting += plain["silent_all"] < 100
    assert acting >= 5  # the hedge had something to change in most agents


def test_cli_evaluates_prefixed_agents(tmp_path, capsys):
    import json

    from mindhelper_env.cli import main

    rc = main(["evaluate", "--suite", SUITE, "--agents", "oracle,oracle+prefix3", "--out",
               str(tmp_path), "--limit", "2", "--no-plots", "--json"])
    assert rc == 0
    table = json.loads(capsys.readouterr().out)
    assert set(table) == {"oracle", "oracle+prefix3"}
    records = [json.loads(line) for line in (tmp_path / "oracle+prefix3.jsonl").open()]
    assert [r["agent"] for r in records] == ["oracle+prefix3"] * 2
    assert all(r["actions"][0]["program"].count("[walk]") >= 3 for r in records if r["actions"])
