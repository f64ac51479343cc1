"""Validity of the benchmark (docs/validity.md): surface cues must not pass it.

Bounds are checked on the dev suite (``validity.DEV_SUITE``) with looser margins than the
1,000-episode figures promised in mindhelper_env.validity.BOUNDS (reported by
benchmarks/bench_validity.py), so that a change that reopens a leak fails here.

The guards of :class:`TestV2Bounds` hold the scenarios v2 bounds; the instruments
themselves (ablations, classifiers, feature scan, bounds check) are unit-tested on
hand-built and synthetic data so that they can fail.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest

from mindhelper_env import validity
from mindhelper_env.agents import make_agent
from mindhelper_env.render.text import EVENT_VERBS
from mindhelper_env.scenarios import suites as S
from mindhelper_env.scenarios.spec import HELP_FAMILIES
from mindhelper_env.validity import SHORTCUTS, agent_scores, bag_of_words_accuracy
from mindhelper_env.world.house import OBJECT_CATALOG
from mindhelper_env.world.world import World

DEV = validity.DEV_SUITE
#: the v2 guards run once the dev suite is a v2 suite (the lead removes this gate with v2)

#: Phrases that state a conclusion only a mind-reader could draw (or an outcome/reason).
CONCLUSIONS = re.compile(
    r"looking for|did not find|didn't find|could not|couldn't|fail|because|wants?\b|"
    r"needs?\b|trying|tried|frustrat|gave up|give up|out of reach|hands are full|"
    r"full hands|search", re.IGNORECASE)

OBS_KEYS = {"narration", "events", "tick"}
EVENT_KEYS = {"tick", "actor", "actor_name", "verb", "args", "room"}
INFO_KEYS = {"tick", "window", "pending_program", "action_error", "events", "candidates", "robot"}
CANDIDATE_KEYS = {"actors", "objects", "locations", "rooms"}


@pytest.fixture(scope="module")
def scores():
    return agent_scores(DEV, ("oracle", "belief-tracker", *SHORTCUTS, *validity.ABLATION_AGENTS,
                              "perspective-free"), workers=1)


def test_oracle_is_perfect(scores):
    for key in ("PHA", "PHR", "PIR", "PSR", "PIA", "TA", "SR", "AC"):
        assert scores["oracle"][key] == 100.0, key


def test_belief_tracker_passes(scores):
    assert scores["belief-tracker"]["PHA"] >= 85.0
    assert scores["belief-tracker"]["PIA"] >= 85.0


@pytest.mark.parametrize("agent", SHORTCUTS)
def test_shortcut_baselines_fail(scores, agent):
    assert scores[agent]["PIA"] <= 72.0
    assert scores[agent]["PHA"] <= 62.0


def test_reset_observation_does_not_predict_the_need():
    r = bag_of_words_accuracy(DEV, windows=0, n_train=300)
    assert r["accuracy"] <= 0.68


def _play(index: int, agent_name: str = "random"):
    env = gym.make("MindHelper-VirtualHome-v0")
    agent = make_agent(agent_name, p=0.3, seed=index) if agent_name == "random" \
        else make_agent(agent_name)
    obs, info = env.reset(options={"suite": DEV, "index": index}, seed=index)
    agent.reset(seed=index)
    steps = [(obs, info, env.unwrapped.simulation.world)]
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        steps.append((obs, info, env.unwrapped.simulation.world))
        done = term or trunc
    return env, steps


@pytest.mark.parametrize("index", range(0, 100, 7))
def test_every_observation_field_is_perceptual(index):
    """Enumerate every field of obs and info and check it against what the robot sees."""
    env, steps = _play(index)
    sim = env.unwrapped.simulation
    world: World = sim.world
    people = {a.id for a in sim.actors}
    for k, (obs, info, _) in enumerate(steps):
        last = k == len(steps) - 1
        assert set(obs) == OBS_KEYS
        assert isinstance(obs["tick"], (int, np.integer))
        assert not CONCLUSIONS.search(obs["narration"]), obs["narration"]
        events = json.loads(obs["events"])
        for ev in events:
            extra = set(ev) - EVENT_KEYS
            assert extra <= {"contents"}, extra
            assert "contents" not in ev or ev["verb"] == "open"
            assert ev["verb"] in EVENT_VERBS
            assert not {"ok", "reason"} & set(ev)
            assert ev["actor"] in people | {1}
            for arg in ev["args"]:
                assert set(arg) == {"id", "class"}
                assert world.graph.nodes[arg["id"]].class_name == arg["class"]
            if ev["verb"] == "walk" and ev["args"]:
                # a named destination is where the walker now stands (no hidden intent)
                assert ev["args"][0]["id"] in world.graph.nodes
        # the scoring record (with the ground truth) comes only with the episode's end
        assert set(info) == INFO_KEYS | ({"episode_record", "episode_record_json"} if last
                                         else set())
        assert set(info["candidates"]) == CANDIDATE_KEYS
        for a in info["candidates"]["actors"]:
            assert set(a) == {"id", "name", "kind", "room", "holding"}
            assert a["id"] in people
        ids = [o["id"] for o in info["candidates"]["objects"]]
        assert ids == sorted(ids)
        for o in info["candidates"]["objects"]:
            assert set(o) == {"id", "class", "location", "room"}
        for loc in info["candidates"]["locations"]:
            assert set(loc) == {"id", "class", "room", "open"}
        assert set(info["robot"]) == {"id", "room", "holding"}


def test_candidates_never_list_hidden_objects():
    env = gym.make("MindHelper-VirtualHome-v0")
    for index in range(0, 100, 9):
        obs, info = env.reset(options={"suite": DEV, "index": index})
        world = env.unwrapped.simulation.world
        listed = {o["id"] for o in info["candidates"]["objects"]}
        hidden = {n for n in world.graph.nodes if world.is_hidden(n)}
        assert not listed & hidden
        for o in info["candidates"]["objects"]:
            assert str(o["id"]) in obs["narration"]


def test_public_file_lists_only_what_is_perceived():
    for index in range(0, 100, 11):
        spec = S.suite_episode(DEV, index)
        rec = S.public_record(spec)
        assert set(rec) == {"episode_id", "suite", "index", "graph", "robot_id", "people",
                            "horizon"}
        world = World(spec["graph"])
        hidden = {n for n in world.graph.nodes if world.is_hidden(n)}
        assert not hidden & {n["id"] for n in rec["graph"]["nodes"]}
        for p in rec["people"]:
            assert set(p) == {"id", "name", "kind"}


def test_ids_names_and_order_do_not_reveal_roles():
    specs = S.suite_specs(DEV)
    focus_first = target_max = 0
    for spec in specs:
        ref = spec["reference"]
        ids = sorted(a["id"] for a in spec["actors"])
        focus_first += ref["focus_actor"] == ids[0]
        objects = [n["id"] for n in spec["graph"]["nodes"] if n["category"] == "Props"]
        if ref["target_object"] in objects:
            target_max += ref["target_object"] == max(objects)
    # the focus person is first by id about as often as chance (2-3 people) allows
    assert 0.2 <= focus_first / len(specs) <= 0.65
    assert target_max / len(specs) <= 0.2


def _reset_cues(spec):
    world = World(spec["graph"])
    kinds = {a["id"]: a["kind"] for a in spec["actors"]}
    holds = any(world.held_by(a) for a in kinds)
    small = any(k != "adult" for k in kinds.values())
    high = any(world.graph.nodes[world.anchor(n)].key == "wallshelf"
               for n in world.graph.nodes if "GRABBABLE" in world.graph.nodes[n].properties
               and world.holder(n) is None)
    unusual = False
    for n, node in world.graph.nodes.items():
        if "GRABBABLE" in node.properties and world.holder(n) is None and not world.is_hidden(n):
            place = world.graph.nodes[world.anchor(n)].key
            if node.key in OBJECT_CATALOG and place not in OBJECT_CATALOG[node.key][1]:
                unusual = True
    return {"holding": holds, "child_or_wheelchair": small, "object_on_high_shelf": high,
            "unusual_placement": unusual}


def test_set_up_cues_occur_on_both_sides():
    counts = {True: Counter(), False: Counter()}
    n = Counter()
    for spec in S.suite_specs(DEV):
        side = spec["family"] in HELP_FAMILIES
        n[side] += 1
        counts[side].update(k for k, v in _reset_cues(spec).items() if v)
    for cue in ("holding", "child_or_wheelchair", "object_on_high_shelf", "unusual_placement"):
        rate_help = counts[True][cue] / n[True]
        rate_silent = counts[False][cue] / n[False]
        assert rate_help > 0.2 and rate_silent > 0.2, cue
        assert abs(rate_help - rate_silent) < 0.35, (cue, rate_help, rate_silent)


def test_room_observability_shows_only_the_robots_room():
    env = gym.make("MindHelper-VirtualHome-v0", observability="room")
    for index in range(0, 100, 13):
        obs, info = env.reset(options={"suite": DEV, "index": index})
        sim = env.unwrapped.simulation
        done = False
        while not done:
            room = sim.world.chars[1].room
            shown_rooms = {a["room"] for a in info["candidates"]["actors"]}
            shown_rooms |= {o["room"] for o in info["candidates"]["objects"]}
            assert shown_rooms <= {room}
            obs, _, term, trunc, info = env.step("none")
            done = term or trunc
            for ev in json.loads(obs["events"]):
                assert ev["room"] == room or ev["actor"] == 1


@pytest.mark.parametrize("index", range(0, 100, 3))
def test_tracker_rebuilds_every_persons_beliefs_from_observations(index):
    """Everyone's beliefs come from what they perceive, so obs and info suffice to rebuild
    them exactly (window by window) — the premise of a perception-only benchmark."""
    env = gym.make("MindHelper-VirtualHome-v0")
    agent = make_agent("belief-tracker")
    obs, info = env.reset(options={"suite": DEV, "index": index})
    agent.reset()
    sim = env.unwrapped.simulation
    done = False
    while not done:
        agent.act(obs, info)
        world = sim.world
        for actor in sim.actors:
            truth = {o: (loc if loc in world.chars else world.anchor(loc))
                     for o, loc in actor.beliefs.items()}
            rebuilt = {o: b.place for o, b in agent.tracker.people[actor.id].beliefs.items()}
            assert rebuilt == truth, (actor.name, sim.tick)
        obs, _, term, trunc, info = env.step("none")
        done = term or trunc


# ---------------------------------------------------------------- the instruments themselves
def test_suite_constants_and_groups():
    assert validity.DEV_SUITE in S.SUITES and validity.TEST_SUITE in S.SUITES
    assert validity.DEV_SUITE.rsplit("-", 1)[1] == validity.TEST_SUITE.rsplit("-", 1)[1]
    assert set(validity.twin_groups()) == set(HELP_FAMILIES)
    assert {"false_belief_relocation", "implicit_goal_search"} <= set(validity.belief_groups())
    assert "implicit_goal_blocked" not in validity.belief_groups()
    assert validity.hedged("reactive") == "reactive+prefix8"
    assert len(validity.FEATURES) >= 100 and len(set(validity.FEATURES)) == len(validity.FEATURES)


_ROOMS = [{"id": 10, "class": "kitchen"}, {"id": 20, "class": "livingroom"}]
_LOCS = [{"id": 11, "class": "fridge", "room": 10, "open": False},
         {"id": 12, "class": "kitchentable", "room": 10, "open": None},
         {"id": 13, "class": "kitchencabinet", "room": 10, "open": False}]
_CLS = {11: "fridge", 12: "kitchentable", 13: "kitchencabinet", 100: "apple"}


def _hand_built(away: bool):
    """Ann puts the apple in the fridge; Bob moves it to the cabinet (Ann away in the
    livingroom, or watching); Ann opens the fridge and closes it again."""
    def info(tick, ann, apple_on_table=False):
        objs = [{"id": 100, "class": "apple", "location": 12, "room": 10}] if apple_on_table \
            else []
        return {"tick": tick, "robot": {"id": 1, "room": 10, "holding": []},
                "candidates": {"rooms": _ROOMS, "locations": _LOCS, "objects": objs,
                               "actors": [{"id": 2, "name": "Ann", "kind": "adult",
                                           "room": ann, "holding": []},
                                          {"id": 3, "name": "Bob", "kind": "adult",
                                           "room": 10, "holding": []}]}}

    def ev(t, who, verb, args, room=10, contents=None):
        e = {"tick": t, "actor": who, "actor_name": "x", "verb": verb, "room": room,
             "args": [{"id": a, "class": _CLS[a]} for a in args]}
        if contents is not None:
            e["contents"] = [{"id": c, "class": _CLS[c]} for c in contents]
        return e

    def obs(events):
        return {"narration": "", "events": json.dumps(events), "tick": 0}

    there = 20 if away else 10
    return [
        (obs([]), info(0, 10, apple_on_table=True)),
        (obs([ev(0, 2, "grab", [100]), ev(1, 2, "open", [11], contents=[]),
              ev(2, 2, "putin", [100, 11])]), info(3, 10)),
        (obs([ev(3, 2, "close", [11])] + ([ev(4, 2, "walk", [], 20)] if away else [])),
         info(5, there)),
        (obs([ev(5, 3, "open", [11], contents=[100]), ev(6, 3, "grab", [100]),
              ev(7, 3, "close", [11]), ev(8, 3, "open", [13], contents=[]),
              ev(9, 3, "putin", [100, 13]), ev(10, 3, "close", [13])]), info(11, there)),
        (obs(([ev(11, 2, "walk", [11], 10)] if away else [])
             + [ev(12, 2, "open", [11], contents=[]), ev(13, 2, "close", [11])]), info(14, 10)),
    ]


def _acts(name, windows):
    agent = make_agent(name)
    agent.reset()
    acted = [agent.act(o, i) != "none" for o, i in windows]
    return acted, agent


@pytest.mark.parametrize("away", [True, False])
def test_ablations_differ_from_the_tracker_on_a_hand_built_episode(away):
    tracker, _ = _acts("belief-tracker", _hand_built(away))
    shared, _ = _acts("ablation-shared-view", _hand_built(away))
    own, _ = _acts("ablation-own-actions", _hand_built(away))
    pfree, _ = _acts("perspective-free", _hand_built(away))
    # the tracker helps exactly when Ann was out of the room during the move
    assert tracker == [False] * 4 + [away]
    # everyone knows what the robot saw: nobody ever holds a false belief
    assert shared == [False] * 5
    # knowing only what one did oneself: Ann expects the apple where she put it either way
    assert own == [False] * 4 + [True]
    assert pfree == [False] * 4 + [True]


def test_ablations_keep_their_rule_when_perception_gains_one():
    """A perception rule added to the tracker (here: everyone in the house sees every move)
    must not leak into the ablations: they rebuild beliefs after every tick."""
    from mindhelper_env.agents.ablations import OwnActionsAgent, OwnActionsTracker

    class Leaky(OwnActionsTracker):
        def _perceive(self, p, tick, events):
            super()._perceive(p, tick, events)
            for obj, loc in self.where.items():
                self._set_belief(p, obj, loc, tick, "telepathy")

    class Agent(OwnActionsAgent):
        tracker_class = Leaky

    agent = Agent()
    agent.reset()
    acted = [agent.act(o, i) != "none" for o, i in _hand_built(True)]
    assert acted == [False] * 4 + [True]


def test_ablation_shared_view_never_judges_a_false_belief():
    env = gym.make("MindHelper-VirtualHome-v0")
    agent = make_agent("ablation-shared-view")
    for index in range(0, 100, 4):
        obs, info = env.reset(options={"suite": DEV, "index": index})
        agent.reset()
        done = False
        while not done:
            agent.act(obs, info)
            obs, _, term, trunc, info = env.step("none")
            done = term or trunc
        assert all(c.need is None or c.need.kind != "false_belief" for c in agent.tracker.cues)


def _synthetic(n, seed, planted=False, groups=("implicit_goal_reach", "implicit_goal_blocked")):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        g = groups[i % len(groups)]
        help_ = bool(rng.integers(2))
        feats = {name: float(rng.integers(0, 4)) for name in validity.FEATURES}
        if planted:
            feats["cue:free_adults_at_furniture"] = 0.0 if help_ else 1.0 + rng.integers(2)
        words = [[str(w) for w in rng.choice(["opened", "shut", "took", "walked", "the"], 6)]
                 for _ in range(8)]
        ticks = [3 * k for k in range(8)]
        positive = [help_ and 9 <= t <= 14 for t in ticks]
        if planted:
            for k, pos in enumerate(positive):
                if pos:
                    words[k].append("plantedcue")
            if help_:
                words[2].append("plantedhelp")
        out.append(validity.EpisodeData(g if help_ else "reach_helped", g, help_, words, ticks,
                                        positive, 2, feats))
    return out


def test_feature_scan_finds_a_planted_feature_and_nothing_in_noise():
    scan = validity.feature_scan(_synthetic(300, 0, planted=True), _synthetic(200, 1, True))
    for g, r in scan.items():
        assert r["single"]["feature"] == "cue:free_adults_at_furniture", g
        assert r["single"]["test"] == 1.0 and r["tree"]["test"] == 1.0
    broken = validity.check_bounds({}, scan=scan)
    assert len(broken) == 2 * len(scan)
    noise = validity.feature_scan(_synthetic(300, 2), _synthetic(300, 3))
    for r in noise.values():
        assert r["single"]["test"] < 0.65 and r["tree"]["test"] < 0.65


def test_text_classifiers_find_a_planted_token_and_nothing_in_noise():
    train, test = _synthetic(300, 4, planted=True), _synthetic(200, 5, planted=True)
    acc = validity.cue_classifier_accuracy(train, test)
    assert min(acc.values()) >= 0.95, acc
    clf = validity.train_window_classifier(train)
    assert min(validity.window_classifier_accuracy(clf, test).values()) >= 0.95
    noise = validity.cue_classifier_accuracy(_synthetic(300, 6), _synthetic(300, 7))
    assert max(noise.values()) < 0.65, noise


def test_window_docs_and_the_window_agent_play():
    from mindhelper_env.evaluation import run_episode

    assert validity.window_docs([["a", "b_c", "ev:x"], ["d"]], 1) == [
        ["a", "b_c", "ev:x"], ["d", "prev1:a", "prev1:ev:x"]]
    clf = validity.train_window_classifier(_synthetic(200, 8, planted=True), context=2)
    agent = validity.WindowClassifierAgent(clf)
    assert agent.name == "window-classifier-ctx2" and clf.context == 2
    docs = validity.window_docs(_synthetic(3, 9, planted=True)[0].windows, 2)
    assert np.allclose([clf.prob(d) for d in docs], clf.model.predict_proba(docs)[:, 1])
    env = gym.make("MindHelper-VirtualHome-v0")
    rec = run_episode(env, agent, options={"suite": DEV, "index": 0})
    assert rec["usage"]["fallbacks"] == 0


def _metrics(pha, pia, **extra):
    return {"PHA": pha, "PIA": pia, "PHR": pha, "PIR": pia, "PSR": pha, "TA": pha, "SR": pha,
            "AC": pha, "groups": {}, **extra}


def test_check_bounds_catches_every_kind_of_break():
    good = {"oracle": _metrics(100.0, 100.0), "belief-tracker": _metrics(98.0, 98.0),
            "ablation-shared-view": _metrics(50.0, 50.0),
            "ablation-own-actions": _metrics(55.0, 55.0, groups={
                "false_belief_relocation": {"PHA": 50.0}}),
            "reactive": _metrics(30.0, 40.0), "reactive+prefix8": _metrics(29.5, 40.0),
            "ablation-goal-blind": _metrics(80.0, 90.0, groups={
                "implicit_goal_reach": {"PHA": 60.0, "PHR": 30.0}})}
    assert validity.check_bounds(good, classifiers={"cue": {"all": 0.9, "x": 0.55}}) == []
    bad = {**good, "oracle": _metrics(99.0, 100.0), "belief-tracker": _metrics(90.0, 98.0),
           "ablation-own-actions": _metrics(55.0, 55.0, groups={
               "false_belief_relocation": {"PHA": 75.0}}),
           "reactive+prefix8": _metrics(33.0, 70.0),
           "ablation-goal-blind": _metrics(80.0, 90.0, groups={
               "implicit_goal_reach": {"PHA": 70.0, "PHR": 55.0}})}
    broken = validity.check_bounds(bad, classifiers={"cue": {"x": 0.7}, "reset": {"all": 0.7}})
    text = "\n".join(broken)
    for needle in ("oracle PHA", "belief-tracker PHA", "ablation-own-actions PHA 75.0 in "
                   "false_belief_relocation", "reactive+prefix8 PIA", "the hedge changes "
                   "reactive's PHA by +3.0", "ablation-goal-blind PHR 55.0 in "
                   "implicit_goal_reach", "cue classifier", "reset classifier"):
        assert needle in text, needle


def test_episode_data_features_and_labels():
    spec = S.suite_episode(DEV, 0)
    d = validity.episode_data(spec)
    assert set(d.features) == set(validity.FEATURES)
    assert len(d.windows) == len(d.ticks) == len(d.positive)
    win = spec["reference"]["window"]
    if spec["reference"]["needs_intervention"]:
        assert any(d.positive)
        assert all(p == (win["onset_tick"] <= t <= win["deadline_tick"])
                   for p, t in zip(d.positive, d.ticks, strict=True))
    else:
        assert not any(d.positive)


@pytest.mark.parametrize("name", [*validity.ABLATION_AGENTS, "perspective-free"])
def test_new_agents_play_without_fallbacks(name):
    from mindhelper_env.evaluation import run_episode

    env = gym.make("MindHelper-VirtualHome-v0")
    for index in (0, 1, 2):
        rec = run_episode(env, make_agent(name), options={"suite": DEV, "index": index})
        assert rec["usage"]["fallbacks"] == 0


# ---------------------------------------------------------------- v2 guards (dev suite)
V2_TRAIN = 800  # training episodes for the classifiers of TestV2Bounds


@pytest.fixture(scope="module")
def v2_played():
    agents = ["oracle", "belief-tracker", *validity.ABLATION_AGENTS,
              validity.GOAL_ABLATION, *validity.SHORTCUT_BASELINES]
    agents += [validity.hedged(a) for a in agents if a != "oracle"]
    return agent_scores(DEV, agents, workers=1)


@pytest.fixture(scope="module")
def v2_data():
    return validity.training_data(V2_TRAIN), validity.suite_data(DEV)


class TestV2Bounds:
    """validity.BOUNDS on the 100-episode dev suite with looser margins (13-14 episodes per
    twin group)."""

    def test_tracker_and_oracle(self, v2_played):
        for key in ("PHA", "PHR", "PIR", "PSR", "PIA", "TA"):
            assert v2_played["oracle"][key] == 100.0, key
        assert v2_played["belief-tracker"]["PHA"] >= 90.0

    @pytest.mark.parametrize("agent", validity.ABLATION_AGENTS)
    def test_ablations_fail_where_beliefs_decide(self, v2_played, agent):
        assert v2_played[agent]["PHA"] <= 67.0
        for g in validity.belief_groups():
            assert v2_played[agent]["groups"][g]["PHA"] <= 70.0, g

    def test_goal_blind_ablation_hands_the_wrong_thing(self, v2_played):
        groups = validity.goal_groups()
        assert groups
        for g in groups:
            assert v2_played[validity.GOAL_ABLATION]["groups"][g]["PHR"] <= 55.0, g
            assert v2_played["belief-tracker"]["groups"][g]["PHR"] >= 90.0, g

    @pytest.mark.parametrize("agent", validity.SHORTCUT_BASELINES)
    def test_shortcuts_fail_hedged_or_not(self, v2_played, agent):
        for name in (agent, validity.hedged(agent)):
            assert v2_played[name]["PIA"] <= 72.0, name
            assert v2_played[name]["PHA"] <= 62.0, name

    def test_the_hedge_does_not_pay(self, v2_played):
        for name, m in v2_played.items():
            h = v2_played.get(validity.hedged(name))
            if h is not None:
                assert abs(h["PHA"] - m["PHA"]) <= 1.0, name
                assert h["PIA"] == m["PIA"], name

    @pytest.mark.parametrize("context", validity.WINDOW_CONTEXTS)
    def test_window_classifier_agent_fails(self, v2_data, context):
        train, _ = v2_data
        clf = validity.train_window_classifier(train, context=context)
        m = validity.scores(validity.play_records(DEV, validity.WindowClassifierAgent(clf),
                                                  "window-classifier"), DEV)
        assert m["PIA"] <= 72.0 and m["PHA"] <= 62.0
        # 13-14 dev episodes per group (one episode is 7 points): a loose guard that still
        # catches a group given away (v1's reach and blocked groups were at 82-95 %)
        for g, gm in m["groups"].items():
            assert gm["accuracy"] <= 85.0, g

    # With 13-14 dev episodes per group one episode is 7 points: "at most 12 of 14 right"
    # (0.87) still catches a group given away as v1's were (82-95 % on 1,000 episodes, 13 or
    # 14 of 14 here); the 60/65 % bounds themselves are checked on vh-test-v2 by
    # benchmarks/bench_validity.py.
    GROUP_MAX = 0.87

    def test_cue_time_classifier_is_near_chance(self, v2_data):
        acc = validity.cue_classifier_accuracy(*v2_data)
        for g in validity.twin_groups():
            assert acc[g] <= self.GROUP_MAX, (g, acc[g])

    def test_no_feature_gives_the_answer_away(self, v2_data):
        for g, r in validity.feature_scan(*v2_data).items():
            assert r["single"]["test"] <= 0.80, (g, r["single"])
            assert r["tree"]["test"] <= self.GROUP_MAX, g
