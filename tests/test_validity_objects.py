"""The instruments that see objects (docs/validity.md): the physical trackers, the coarse
mind, the hedges, the object-centric scan and the v3 bounds.

Each instrument is tested on hand-built or synthetic data (it finds a planted leak and
nothing in noise; the physical tracker cannot tell who saw what and never reads ground
truth), and on ``vh-dev-v2``, a suite known to leak to agents that track objects, where a
strong instrument must find the leak.
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from mindhelper_env import validity
from mindhelper_env.agents import make_agent
from mindhelper_env.agents.coarse_mind import CoarseMindAgent, CoarseMindTracker
from mindhelper_env.agents.hedge import (
    Delay,
    OnRepeat,
    WaitAndSee,
    split_hedge_suffix,
)
from mindhelper_env.agents.physical import (
    STRUGGLE_FEATURES,
    ObjectTracker,
    PhysicalRulesAgent,
    best_guess,
    rule_help,
    struggle_features,
)
from mindhelper_env.validity import objects as O

V2 = "vh-dev-v2"  # frozen: the v2 suite the instruments are calibrated on

# ---------------------------------------------------------------------- a hand-built house
_ROOMS = [{"id": 10, "class": "kitchen"}, {"id": 20, "class": "livingroom"},
          {"id": 30, "class": "bedroom"}]
_LOCS = [{"id": 11, "class": "fridge", "room": 10, "open": False},
         {"id": 12, "class": "kitchentable", "room": 10, "open": None},
         {"id": 13, "class": "kitchencabinet", "room": 10, "open": False},
         {"id": 21, "class": "coffeetable", "room": 20, "open": None}]
_CLS = {11: "fridge", 12: "kitchentable", 13: "kitchencabinet", 21: "coffeetable",
        100: "apple", 101: "apple"}


def _episode(*, away: bool, to: int = 21, spare: bool = False, ann_on_phone: bool = False):
    """Ann puts the apple in the fridge; Bob moves it to ``to`` (the livingroom's coffee
    table, or the kitchen cabinet) while Ann is away in the bedroom or stays in the kitchen
    (on the phone or not); Ann opens the fridge and closes it again. With
    ``spare`` a second apple lies on the kitchen table throughout."""
    def info(tick, ann, apple_at=None):
        objs = [{"id": 100, "class": "apple", "location": apple_at, "room": 10}] \
            if apple_at else []
        if spare:
            objs.append({"id": 101, "class": "apple", "location": 12, "room": 10})
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

    there = 30 if away else 10
    move = [ev(5, 3, "open", [11], contents=[100]), ev(6, 3, "grab", [100]),
            ev(7, 3, "close", [11])]
    if to == 13:
        move += [ev(8, 3, "open", [13], contents=[]), ev(9, 3, "putin", [100, 13]),
                 ev(10, 3, "close", [13])]
    else:
        move += [ev(8, 3, "walk", [21], 20), ev(9, 3, "putback", [100, 21], 20),
                 ev(10, 3, "walk", [12], 10)]
    return [
        (obs([]), info(0, 10, apple_at=12)),
        (obs([ev(0, 2, "grab", [100]), ev(1, 2, "open", [11], contents=[]),
              ev(2, 2, "putin", [100, 11])]), info(3, 10)),
        (obs([ev(3, 2, "close", [11])] + ([ev(4, 2, "walk", [], 30)] if away else [])
             + ([ev(4, 2, "phone", [])] if ann_on_phone else [])), info(5, there)),
        (obs(move), info(11, there, apple_at=to)),
        (obs(([ev(11, 2, "walk", [11], 10)] if away else [])
             + [ev(12, 2, "open", [11], contents=[]), ev(13, 2, "close", [11])]), info(14, 10)),
    ]


def _acts(agent, windows):
    agent.reset()
    return [agent.act(o, i) for o, i in windows]


def _tracked(windows) -> ObjectTracker:
    t = ObjectTracker()
    for o, i in windows:
        t.update(o, i)
    return t


# ---------------------------------------------------------------------- the physical tracker
def test_object_tracker_follows_trajectories_and_keeps_no_beliefs():
    t = _tracked(_episode(away=True))
    assert [loc for _, loc in t.trails[100]] == [12, 2, 11, 3, 21]
    assert t.left_at(100, 11, 13) == 6 and t.left_at(100, 13, 13) is None
    assert all(not p.beliefs for p in t.people.values())  # perception is switched off
    [s] = t.struggles
    assert (s.person, s.kind, s.place, s.tick) == (2, "look", 11, 13)
    assert s.rooms == (10, 30, 10)
    g = best_guess(t, s)
    assert (g.kind, g.target, g.source) == ("give", 100, "trail")
    f = struggle_features(t, s)
    assert set(f) == set(STRUGGLE_FEATURES)
    assert f["x_other_room"] == 1 and f["x_same_room_as_place"] == 0
    assert f["move_to_look"] == 13 - 6 and f["x_moved_by_struggler"] == 1
    assert f["x_last_moved_by_struggler"] == 0 and f["same_class_house"] == 0


@pytest.mark.parametrize("away", [True, False])
def test_physical_rules_cannot_tell_who_saw_the_move(away):
    """No minds: whether Ann watched the move changes nothing for the physical rules, while
    the coarse mind (room co-presence) helps exactly when she was away."""
    physical = _acts(PhysicalRulesAgent(), _episode(away=away))
    coarse = _acts(CoarseMindAgent(), _episode(away=away))
    assert [p != "none" for p in physical] == [False] * 4 + [True]
    assert "[give] <apple> (100) <character> (2)" in physical[-1]
    assert [p != "none" for p in coarse] == [False] * 4 + [away]


def test_physical_rules_veto_a_spare_in_view_and_the_movers_own_look():
    assert _acts(PhysicalRulesAgent(), _episode(away=True, spare=True))[-1] == "none"
    t = _tracked(_episode(away=True, spare=True))
    f = struggle_features(t, t.struggles[-1])
    assert f["same_class_in_view"] == 1 and f["same_class_usual"] == 1 and f["rule_help"] == 0
    # moved within the fridge's own room: reported as a feature
    t = _tracked(_episode(away=True, to=13))
    f = struggle_features(t, t.struggles[-1])
    assert f["x_same_room_as_place"] == 1 and f["x_in_container"] == 1
    assert rule_help(t, t.struggles[-1])


def test_physical_and_coarse_agents_never_read_ground_truth(monkeypatch):
    """The agents play whole v2 episodes with the env's ground truth made unreadable."""
    env_cls = type(gym.make("MindHelper-VirtualHome-v0").unwrapped)

    def forbidden(self):
        raise AssertionError("an agent read the ground truth")

    monkeypatch.setattr(env_cls, "ground_truth", property(forbidden))
    monkeypatch.setattr(env_cls, "episode_spec", property(forbidden))
    model = O.PhysicalModel(0.0, 0.5)  # fires on nothing, but computes every feature
    agents = [make_agent("physical-rules"), make_agent("physical-rules+wait3"),
              make_agent("coarse-mind+repeat2"), O.PhysicalLearnedAgent(model)]
    env = gym.make("MindHelper-VirtualHome-v0")
    acted = 0
    for index in range(6):
        for agent in agents:
            obs, info = env.reset(options={"suite": V2, "index": index})
            agent.reset(seed=index)
            done = False
            while not done:
                program = agent.act(obs, info)
                acted += program != "none"
                obs, _, term, trunc, info = env.step(program)
                done = term or trunc
            assert agent.usage.fallbacks == 0
    env.close()
    assert acted > 0


# ---------------------------------------------------------------------- the coarse mind
def test_coarse_mind_learns_by_room_co_presence_even_on_the_phone():
    """Ann on the phone in the kitchen sees the apple moved to the cabinet (co-presence: the
    call changes nothing); away in the bedroom she misses it."""
    agent = CoarseMindAgent()
    out = _acts(agent, _episode(away=False, to=13, ann_on_phone=True))
    assert out[-1] == "none"
    assert agent.tracker.people[2].beliefs[100].place == 13
    out = _acts(agent, _episode(away=True, to=13))
    assert out[-1] != "none" and "(13)" in out[-1]


def test_coarse_mind_keeps_its_rule_when_the_trackers_perception_changes():
    class Leaky(CoarseMindTracker):
        def _perceive(self, p, tick, events):
            super()._perceive(p, tick, events)
            for obj, loc in self.where.items():
                self._set_belief(p, obj, loc, tick, "telepathy")

    class Agent(CoarseMindAgent):
        tracker_class = Leaky

    assert [a != "none" for a in _acts(Agent(), _episode(away=True))] == [False] * 4 + [True]


# ---------------------------------------------------------------------- hedges
class _Scripted:
    """Issues ``program`` at window ``at`` (0-based), silence otherwise."""

    name = "scripted"

    def __init__(self, program: str, at: int) -> None:
        self.program, self.at = program, at
        self.usage = object()

    def reset(self, *, seed=None):
        self.k = 0

    def act(self, obs, info):
        self.k += 1
        return self.program if self.k - 1 == self.at else "none"


_GIVE = "[walk] <apple> (100)\n[grab] <apple> (100)\n[walk] <character> (2)\n" \
        "[give] <apple> (100) <character> (2)"


def _window(tick, events=()):
    return {"narration": "", "events": json.dumps(list(events)), "tick": tick}, {"tick": tick}


def _ev(t, who, verb, *args):
    return {"tick": t, "actor": who, "verb": verb, "room": 10,
            "args": [{"id": a, "class": _CLS.get(a, "apple")} for a in args]}


def test_wait_and_see_sends_an_unresolved_program_and_drops_a_resolved_one():
    look = [_ev(4, 2, "look", 12)]
    quiet = [_window(3), _window(6, look), _window(9), _window(12)]
    h = WaitAndSee(_Scripted(_GIVE, 1), 3)
    h.reset()
    assert [h.act(o, i) for o, i in quiet] == ["none", "none", _GIVE, "none"]
    assert (h.released, h.dropped) == (1, 0)
    found = [_window(3), _window(6, look), _window(9, [_ev(7, 2, "grab", 101)]), _window(12)]
    h.reset()
    assert [h.act(o, i) for o, i in found] == ["none"] * 4 and h.dropped == 1
    # someone else taking the very object resolves it too; the robot's own grab does not
    for who, dropped in ((3, 1), (1, 0)):
        h.reset()
        [h.act(o, i) for o, i in [_window(3), _window(6, look),
                                  _window(9, [_ev(7, who, "grab", 100)])]]
        assert h.dropped == dropped


def test_on_repeat_and_delay_hold_the_program():
    h = OnRepeat(_Scripted(_GIVE, 1), 2)
    h.reset()
    wins = [_window(3, [_ev(2, 2, "look", 12)]), _window(6), _window(9, [_ev(8, 3, "look", 12)]),
            _window(12, [_ev(10, 2, "stretch", 100, 12)])]
    assert [h.act(o, i) for o, i in wins] == ["none", "none", "none", _GIVE]
    d = Delay(_Scripted(_GIVE, 0), 2)
    d.reset()
    assert [d.act(o, i) for o, i in [_window(3), _window(6), _window(9)]] == \
        ["none", "none", _GIVE]


def test_hedge_suffixes_in_the_registry():
    assert split_hedge_suffix("physical-rules+wait3") == ("physical-rules", "wait", 3)
    assert split_hedge_suffix("a+wait3+prefix8") == ("a+wait3", "prefix", 8)
    assert split_hedge_suffix("reactive") == ("reactive", None, None)
    agent = make_agent("physical-rules+wait3+prefix8")
    assert agent.name == "physical-rules+wait3+prefix8"
    assert isinstance(agent.agent, WaitAndSee) and isinstance(agent.agent.agent,
                                                              PhysicalRulesAgent)
    for name in ("reactive+delay2", "reactive+repeat2", "coarse-mind+wait3"):
        assert make_agent(name).name == name
    with pytest.raises(ValueError, match="int from 0 to 999"):
        WaitAndSee(PhysicalRulesAgent(), -1)
    assert validity.base_agent("x+wait3+prefix8") == ("x", ["wait3", "prefix8"])
    assert validity.base_agent("x") == ("x", [])


# ---------------------------------------------------------------------- synthetic scans
def _synthetic(n: int, rng, *, leak: bool, group: str = "false_belief_relocation"):
    """Episodes of one twin group with two struggles each; with ``leak`` the focus person's
    ``cue:x_same_room_as_place`` says silent, and it fires on the help episodes' precise
    struggle."""
    eps = []
    for i in range(n):
        help_ = bool(i % 2)
        ep = O.PhysicalEpisode("f", group, help_, focus=2, target=100)
        for person, tick in ((3, 5), (2, 20)):
            feats = {name: float(rng.integers(0, 3)) for name in O.OBJECT_FEATURES}
            feats["cue:has_cue"] = 1.0
            if leak and person == 2:
                # values the noise (0 to 2) never takes
                feats["cue:x_same_room_as_place"] = 7.0 * (not help_)
                feats["cue:x_other_room"] = 7.0 * help_
            ep.cues.append(O.CueRow(person, tick, tick + 2, help_ and person == 2, feats,
                                    place=11, target=100 if person == 2 else None))
        eps.append(ep)
    return eps


def test_object_scan_finds_a_planted_leak_and_nothing_in_noise():
    rng = np.random.default_rng(0)
    res = O.object_scan(_synthetic(160, rng, leak=True), _synthetic(120, rng, leak=True))
    r = res["false_belief_relocation"]
    assert r["focus/cue"]["single"]["feature"] in ("cue:x_same_room_as_place",
                                                   "cue:x_other_room")
    for clf in ("single", "tree", "gb"):
        assert r["focus/cue"][clf]["test"] == 1.0
        assert r["first/cue"][clf]["test"] <= 0.65  # the leak is not in the first struggle
    noise = O.object_scan(_synthetic(160, rng, leak=False), _synthetic(160, rng, leak=False))
    for key, x in noise["false_belief_relocation"].items():
        if isinstance(x, dict):
            for clf in ("single", "tree", "gb"):
                assert x[clf]["test"] <= 0.65, (key, clf)
    broken = validity.check_bounds_v3({}, scan=res)
    assert any("focus/cue" in b and "gradient boosting" in b for b in broken)
    assert not validity.check_bounds_v3({}, scan=noise)


def test_learned_physical_model_finds_a_planted_leak_and_nothing_in_noise():
    rng = np.random.default_rng(1)
    m = O.train_physical_model(_synthetic(200, rng, leak=True), _synthetic(80, rng, leak=True))
    test = _synthetic(100, rng, leak=True)
    ok = O._episode_ok(test, [m.probs(ep.cues) for ep in test], m.threshold)
    assert ok.mean() >= 0.95
    m = O.train_physical_model(_synthetic(200, rng, leak=False),
                               _synthetic(80, rng, leak=False))
    test = _synthetic(200, rng, leak=False)
    ok = O._episode_ok(test, [m.probs(ep.cues) for ep in test], m.threshold)
    assert ok.mean() <= 0.65
    # the agent's per-struggle probability is the batch one
    row = test[0].cues[1]
    feats = {k.split(":", 1)[1]: v for k, v in row.features.items() if k.startswith("cue:")}
    assert m.prob(feats) == pytest.approx(float(m.probs([row])[0]))


# ---------------------------------------------------------------------- bounds
def _m(pha, pia=None, groups=None):
    return {"PHA": pha, "PIA": pha if pia is None else pia,
            "groups": {g: {"PHA": v} for g, v in (groups or {}).items()}}


def test_check_bounds_v3_catches_every_kind_of_break():
    g = "implicit_goal_search"
    ok = {"physical-rules": _m(50.0, 55.0, {g: 55.0}),
          "physical-rules+wait3": _m(51.0, 55.0, {g: 59.0})}
    assert validity.check_bounds_v3(ok) == []
    cases = {
        "PHA 56.0 >": {"physical-learned": _m(56.0, 50.0)},
        "PIA 61.0 >": {"reactive": _m(50.0, 61.0)},
        f"in {g} >": {"prior+delay1": _m(40.0, 40.0, {g: 61.0})},
        "gains +3.0 PHA over the better of physical-rules and silence (":
            {**ok, "physical-rules+repeat2": _m(53.0, 55.0, {g: 55.0})},
        f"gains +6.0 PHA over the better of physical-rules and silence in {g}":
            {**ok, "physical-rules+delay1": _m(50.0, 55.0, {g: 61.0 - 0.0})},
    }
    for needle, agents in cases.items():
        broken = validity.check_bounds_v3(agents)
        assert any(needle in b for b in broken), (needle, broken)
    # a hedge that only brings an agent below chance toward silence's 50 gains nothing
    # beyond it; past silence it is held to the bound like any other
    low = {"reactive": _m(20.0, 30.0, {g: 10.0}), "reactive+repeat2": _m(50.0, 52.0, {g: 55.0})}
    assert validity.check_bounds_v3(low) == []
    low["reactive+repeat2"] = _m(52.5, 52.0, {g: 55.0})
    assert any("gains +2.5 PHA over the better of reactive and silence" in b
               for b in validity.check_bounds_v3(low))
    # the mind agents are not held to the non-mind bounds; the coarse mind is reported only
    assert validity.check_bounds_v3({"belief-tracker": _m(100.0),
                                     validity.COARSE_MIND: _m(95.0)}) == []
    scan = {g: {"first/history": {"single": {"test": 0.5, "feature": "x"},
                                  "tree": {"test": 0.61}, "gb": {"test": 0.5}},
                "focus/post-hoc": {"single": {"test": 1.0, "feature": "y"},
                                   "tree": {"test": 1.0}, "gb": {"test": 1.0}}}}
    broken = validity.check_bounds_v3({}, scan=scan)
    assert len(broken) == 1 and "first/history: depth-3 tree 61.0%" in broken[0]


def test_bound_sets_follow_the_suites_generator(monkeypatch):
    from mindhelper_env.scenarios import suites as S

    assert validity.bounds_for(V2) == validity.BOUNDS and not validity.is_v3(V2)
    monkeypatch.setitem(S.SUITES, "fake-v3", {**S.SUITES[V2], "name": "fake-v3",
                                              "generator": "mh-gen-3.0"})
    assert validity.is_v3("fake-v3") and validity.bounds_for("fake-v3") == validity.BOUNDS_V3
    assert validity.BOUNDS_V3["non_mind_PHA_max"] == 55.0
    assert validity.BOUNDS_V3["tracker_PHA_min"] == 99.0
    with pytest.raises(ValueError, match="unknown suite"):
        validity.generator_of("no-such-suite")


def test_the_package_keeps_every_name_of_the_old_module():
    old = ["BOUNDS", "SHORTCUTS", "SHORTCUT_BASELINES", "ABLATION_AGENTS", "DEV_SUITE",
           "TEST_SUITE", "HEDGE_LINES", "GOAL_ABLATION", "goal_groups", "WINDOW_CONTEXTS",
           "WINDOW_AGENTS", "BELIEF_ABILITIES", "hedged", "twin_groups", "belief_groups",
           "agent_scores", "agent_records", "play_records", "scores", "narrations",
           "training_episodes", "bag_of_words_accuracy", "EpisodeData", "episode_data",
           "window_tokens", "WindowClassifier", "train_window_classifier",
           "SCAN_BOUNDED_KINDS", "WindowClassifierAgent", "text_classifier_accuracy",
           "cue_classifier_accuracy", "window_classifier_accuracy", "window_docs",
           "suite_data", "training_data", "FEATURES", "feature_scan", "best_single_feature",
           "check_bounds"]
    missing = [n for n in old if n not in validity.__all__ or not hasattr(validity, n)]
    assert not missing


# ---------------------------------------------------------------------- on vh-dev-v2
def test_on_v2_the_object_instruments_find_the_known_leak():
    """v2 leaks to agents that track objects: the rules must find it (a weak instrument
    proves nothing), the coarse mind scores like the tracker (v2 perceives by room
    co-presence), and the learned tracker and the scan run and report."""
    rec = validity.agent_records(V2, ["physical-rules", "coarse-mind", "perspective-free"],
                                 limit=60)
    s = {a: validity.scores(r, V2) for a, r in rec.items()}
    assert s["physical-rules"]["PHA"] >= 60.0
    assert s["physical-rules"]["PHA"] > s["perspective-free"]["PHA"] + 10
    assert s["coarse-mind"]["PHA"] >= 95.0
    train = O.training_physical_data(120, seed=3)
    test = O.suite_physical_data(V2, limit=40)
    assert all(c.features["cue:has_cue"] == 1.0 for ep in test for c in ep.cues)
    assert sum(len(ep.cues) for ep in test) > 40
    m = O.train_physical_model(train[:90], train[90:])
    assert 0.0 <= m.threshold <= 1.0
    played = validity.scores(validity.play_records(V2, O.PhysicalLearnedAgent(m), "pl",
                                                   limit=20), V2)
    assert played["PHA"] is not None
    scan = O.object_scan(train, test, sets=("history",))
    assert scan and all({"first/history", "focus/history"} <= set(r) for r in scan.values())


# ---------------------------------------------------------------------- v3 guards on dev
#: Margins of the dev-suite guards over BOUNDS_V3 (100 episodes, 13-14 per twin group: one
#: standard error of a group's accuracy near 50 % is about 13 points).
#: Margins for the dev suite's size. Its twin groups hold 13-15 episodes each, so a
#: classifier of the object scan tested there is one of about 80 figures with a standard
#: error of 13 points: the guard catches gross leaks only (accuracy over 85 %);
#: benchmarks/bench_validity.py holds the scan to 60 % on vh-test-v3.
DEV_V3_MARGINS = {"non_mind_PHA_max": 7.0, "non_mind_PIA_max": 7.0,
                  "non_mind_group_PHA_max": 15.0, "hedge_gain_max": 3.0,
                  "hedge_group_gain_max": 10.0, "object_classifier_max": 0.15}
#: Fresh episodes the guard's object scan is tested on (about 85 a twin group: one standard
#: error about 5.4 points; 75 % is 4.6 of them above chance)
FRESH_SCAN = 600


class TestV3ObjectBounds:
    """BOUNDS_V3's object-instrument bounds on the default generator's dev suite
    (``validity.DEV_SUITE_V3``), with margins for its size."""

    @pytest.fixture(scope="class")
    def played(self):
        suite = validity.DEV_SUITE_V3
        assert validity.is_v3(suite)
        names = ["physical-rules", "physical-rules+wait3", "physical-rules+repeat2",
                 "perspective-free", "perspective-free+wait3"]
        recs = validity.agent_records(suite, names)
        train = O.training_physical_data(400, seed=0, generator=validity.generator_of(suite))
        k = 3 * len(train) // 4
        model = O.train_physical_model(train[:k], train[k:])
        out = {a: validity.scores(r, suite) for a, r in recs.items()}
        for name, agent in (("physical-learned", O.PhysicalLearnedAgent(model)),
                            ("physical-learned+wait3",
                             WaitAndSee(O.PhysicalLearnedAgent(model), 3))):
            out[name] = validity.scores(validity.play_records(suite, agent, name), suite)
        # the scan's classifiers are tested on fresh episodes of the suite's generator, not
        # on the dev suite: with 14 episodes a group, the best of its 84 figures passes 85 %
        # by chance (vh-dev-v5: gradient boosting 12 of 14 in relocation, where 140 suite
        # and 580 fresh episodes read 49 and 52)
        fresh = O.training_physical_data(FRESH_SCAN, specs=validity.fresh_episodes(suite,
                                                                                  FRESH_SCAN))
        scan = O.object_scan(train, fresh, sets=("cue", "history"))
        return out, scan

    def test_non_mind_agents_hedges_and_the_scan(self, played):
        scores, scan = played
        bounds = {k: v + DEV_V3_MARGINS.get(k, 0.0) for k, v in validity.BOUNDS_V3.items()}
        assert validity.check_bounds_v3(scores, scan=scan, bounds=bounds) == []
        assert min(r["n_test"] for r in scan.values()) >= 60  # about 85 a group


def test_coarse_mind_ladder_rungs_differ_on_a_phone_call():
    """Rung a (co-presence) learns the move Ann is on the phone for; rungs b-d (the phone
    blinds) do not, and so help her; the published coarse-mind keeps rung a's beliefs."""
    from mindhelper_env.agents.coarse_mind import LADDER, RUNGS

    assert LADDER == tuple(f"coarse-mind-{r}" for r in RUNGS)
    acts = {}
    for name in (*LADDER, "coarse-mind"):
        agent = make_agent(name)
        assert agent.name == name
        acts[name] = _acts(agent, _episode(away=False, to=13, ann_on_phone=True))[-1]
    assert acts["coarse-mind-a"] == acts["coarse-mind"] == "none"
    for name in LADDER[1:]:
        assert acts[name] != "none" and "(13)" in acts[name], name
    with pytest.raises(ValueError, match="unknown rung"):
        CoarseMindAgent(rung="e")


# ---------------------------------------------------------------------- room history
def test_room_history_features_record_where_the_struggler_was_and_the_strict_set_does_not():
    """The struggler's room when the apple moved (and an open door to it) is in the history
    variant's features and nowhere in the strict one's; it tells the away twin apart."""
    from mindhelper_env.agents.physical import ROOM_HISTORY_FEATURES, room_history_features

    assert not any(n.startswith("room:") for n in O.STRICT_NAMES)
    # the time in the room, set against the move's age, says who was there when it moved
    assert "cue:ticks_in_room" not in O.STRICT_NAMES and "cue:x_moves" in O.STRICT_NAMES
    assert "cue:ticks_in_room" in O.HISTORY_NAMES
    assert not set(ROOM_HISTORY_FEATURES) & {f"cue:{n}" for n in STRUGGLE_FEATURES}
    assert "room:left_struggler_in_from_room" in O.HISTORY_NAMES
    assert "room:last_door_open_to" in O.HISTORY_NAMES
    feats = {}
    for away in (True, False):
        windows = _episode(away=away)
        for _, i in windows:  # the bedroom's door to the livingroom stands open
            i["doors"] = [{"id": 40, "rooms": [20, 30], "open": True},
                          {"id": 41, "rooms": [10, 30], "open": False}]
        t = _tracked(windows)
        assert t.room_at(2, 6) == (30 if away else 10)
        assert t.door_open_at(30, 20, 9) and not t.door_open_at(30, 10, 9)
        [s] = t.struggles
        feats[away] = room_history_features(t, s)
        assert set(feats[away]) == set(ROOM_HISTORY_FEATURES)
    assert feats[True]["room:left_known"] == feats[False]["room:left_known"] == 1
    assert feats[True]["room:left_struggler_in_from_room"] == 0  # away: not in the kitchen
    assert feats[False]["room:left_struggler_in_from_room"] == 1
    assert feats[True]["room:last_door_open_to"] == 1  # the put, seen through the open door
    assert feats[False]["room:last_door_open_to"] == 0


def _with_room_leak(eps, rng):
    """The label sits only in room-history features (strict features are noise): values the
    noise never takes at the focus person's struggle."""
    for ep in eps:
        for c in ep.cues:
            for n in O.HISTORY_NAMES:
                if n.startswith("room:"):
                    c.features[n] = float(rng.integers(0, 3))
            if c.person == 2:
                c.features["room:left_struggler_in_from_room"] = 7.0 * (not ep.needs_help)
                c.features["room:last_door_open_to"] = 7.0 * ep.needs_help
    return eps


def test_the_history_variant_learns_room_history_the_strict_one_cannot():
    rng = np.random.default_rng(2)
    fit = _with_room_leak(_synthetic(200, rng, leak=False), rng)
    tune = _with_room_leak(_synthetic(80, rng, leak=False), rng)
    test = _with_room_leak(_synthetic(200, rng, leak=False), rng)
    grid = {"max_depth": (2, 3), "n_estimators": (50,), "top_features": (None, 10)}
    strict = O.train_physical_model(fit, tune, grid=grid)
    hist = O.train_physical_model(fit, tune, grid=grid, history=True)
    assert strict.agent_name == "physical-learned" and not strict.history
    assert hist.agent_name == "physical-learned-history" and hist.history
    assert not any(n.startswith("room:") for n in strict.names)
    assert "room:left_struggler_in_from_room" in hist.names
    for m, lo, hi in ((strict, 0.0, 0.65), (hist, 0.95, 1.0)):
        ok = O._episode_ok(test, [m.probs(ep.cues) for ep in test], m.threshold)
        assert lo <= ok.mean() <= hi, (m.agent_name, ok.mean())
        assert m.params["max_depth"] in (2, 3) and m.params["top_features"] in (None, 10)
    # the agent's per-struggle probability (room features keep their prefix) is the batch one
    row = test[0].cues[1]
    feats = {k.split(":", 1)[1] if k.startswith("cue:") else k: v
             for k, v in row.features.items()}
    assert hist.prob(feats) == pytest.approx(float(hist.probs([row])[0]))
    assert O.PhysicalLearnedAgent(hist).name == "physical-learned-history"
    assert O.PhysicalLearnedAgent(strict).name == "physical-learned"


def test_the_threshold_and_the_settings_are_chosen_on_the_held_out_seeds():
    """The threshold is the best one on ``tune`` (held-out training seeds), not on ``fit``:
    a tune set whose labels are flipped moves it."""
    rng = np.random.default_rng(3)
    fit, tune = _synthetic(200, rng, leak=True), _synthetic(80, rng, leak=True)
    grid = {"max_depth": (3,), "n_estimators": (50,), "top_features": (None,)}
    m = O.train_physical_model(fit, tune, grid=grid)
    assert (m.threshold, m.tune_score) == pytest.approx(O._pick_threshold(m, tune))
    assert m.tune_score >= 0.95
    flipped = _synthetic(80, rng, leak=True)
    for ep in flipped:
        ep.needs_help = not ep.needs_help
        for c in ep.cues:
            c.positive = ep.needs_help and c.person == 2
    m2 = O.train_physical_model(fit, flipped, grid=grid)
    assert m2.threshold != pytest.approx(m.threshold)
    assert m2.tune_score < m.tune_score
    assert (m2.threshold, m2.tune_score) == pytest.approx(O._pick_threshold(m2, flipped))


def test_the_room_history_variant_is_reported_not_bounded():
    assert "physical-learned-history" not in validity.NON_MIND_AGENTS
    assert not validity.check_bounds_v3({"physical-learned-history": _m(70.0, 70.0)})
    assert validity.check_bounds_v3({"physical-learned": _m(70.0, 70.0)})
