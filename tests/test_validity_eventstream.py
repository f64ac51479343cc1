"""The house-wide timing instruments (docs/validity.md, "Instruments that read house-wide
timing"): the event-stream features and learners, the pixel stream, the unbound coarse mind
and the decisive-moment statistic.

Each is checked on hand-built data, and the learner on real ``mh-gen-3.2`` episodes, where
house-wide timing is known to carry the side: trained on a few training seeds it must beat
silence clearly on fresh belief-group episodes (an instrument that cannot fail to be blind
would prove nothing).
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from mindhelper_env.agents import AGENT_GROUPS, AGENTS, make_agent
from mindhelper_env.agents.coarse_mind import CoarseMindAgent
from mindhelper_env.agents.coarse_mind_unbound import UnboundCoarseMindAgent
from mindhelper_env.agents.event_stream import (
    LAG_BUCKETS,
    NEVER,
    STREAM_VERBS,
    PixelStreamAgent,
    StreamFiringAgent,
    frame_change_counts,
    palette_codes,
    pixel_channel_names,
    stream_feature_names,
    stream_matrix,
    window_verb_counts,
)
from mindhelper_env.validity import eventstream as ES
from mindhelper_env.validity.decisive import DecisiveState, decisive_state, decisive_statistic
from mindhelper_env.validity.eventstream_bench import (
    EVENTSTREAM_BOUNDS,
    check_eventstream,
    eventstream_bounded,
)

GEN = "mh-gen-3.2"


def _obs(events) -> dict:
    return {"narration": "", "events": json.dumps(events), "tick": 0}


def _ev(verb: str, tick: int = 0, actor: int = 2) -> dict:
    return {"tick": tick, "actor": actor, "verb": verb, "room": 10,
            "args": [{"id": 100, "class": "apple"}]}


# ----------------------------------------------------------------- features by hand
def test_window_verb_counts_reads_verbs_only():
    col = {v: i for i, v in enumerate(STREAM_VERBS)}
    c = window_verb_counts(_obs([_ev("phone"), _ev("walk", actor=3), _ev("walk"),
                                 _ev("teleport"), {"verb": "grab"}]))  # no tick: not an event
    assert c[col["phone"]] == 1 and c[col["walk"]] == 2 and c[col["other"]] == 1
    assert c.sum() == 4
    # the same verbs with other ids, rooms and arguments give the same counts
    moved = [dict(_ev("phone"), actor=9, room=77, args=[]), _ev("walk", 5, 4),
             _ev("walk", 1, 8), _ev("teleport")]
    assert np.array_equal(window_verb_counts(_obs(moved)), c)
    assert not window_verb_counts({"events": "not json"}).any()


def test_stream_matrix_by_hand():
    # channels: a, b; windows 0..5
    counts = np.array([[1, 0], [0, 0], [2, 1], [0, 0], [0, 0], [0, 3]], dtype=float)
    x = stream_matrix(counts)
    names = stream_feature_names(("a", "b"))
    assert x.shape == (6, len(names)) == (6, 2 * (2 + len(LAG_BUCKETS)) + 1)
    row = dict(zip(names, x[5], strict=True))
    assert row["now:a"] == 0 and row["now:b"] == 3
    assert row["lag1:a"] == 0 and row["lag1:b"] == 0            # window 4
    assert row["lag2-3:a"] == 2 and row["lag2-3:b"] == 1        # windows 2, 3
    assert row["lag4-7:a"] == 1 and row["lag4-7:b"] == 0        # windows 0, 1
    assert row["lag8-15:a"] == 0 and row["lag16+:a"] == 0
    assert row["since:a"] == 3 and row["since:b"] == 0          # a last in 2; b now
    assert row["window"] == 5
    first = dict(zip(names, x[0], strict=True))
    assert first["since:a"] == 0 and first["since:b"] == NEVER and first["lag1:a"] == 0
    long = np.zeros((20, 1))
    long[0, 0] = 1
    r = dict(zip(stream_feature_names(("a",)), stream_matrix(long)[19], strict=True))
    assert r["lag16+:a"] == 1 and r["since:a"] == 19 and r["lag8-15:a"] == 0
    with pytest.raises(ValueError, match="windows, channels"):
        stream_matrix(np.zeros(3))


# ----------------------------------------------------------------- pixels
def test_frame_change_counts_by_palette_colour():
    codes, names = palette_codes()
    rgb = [((int(c) >> 16) & 255, (int(c) >> 8) & 255, int(c) & 255) for c in codes]
    a, b = rgb[0], rgb[1]
    f0 = np.zeros((4, 4, 3), dtype=np.uint8)
    f0[:] = a
    f1 = f0.copy()
    f1[0, :2] = b            # two pixels a -> b
    f2 = f1.copy()
    f2[3, 3] = (1, 2, 3)     # one pixel a -> a colour off the palette (if it is off it)
    out = frame_change_counts(np.stack([f1, f2]), previous=f0)
    ch = dict(zip(pixel_channel_names(), out, strict=True))
    assert ch[f"to:{names[1]}"] == 2 and ch[f"from:{names[0]}"] == 3
    off = (1 << 16 | 2 << 8 | 3) not in set(codes.tolist())
    assert ch["to:other"] == (1 if off else 0)
    assert sum(v for k, v in ch.items() if k.startswith("to:")) == 3
    # without the previous frame only the change inside the window counts
    ch2 = dict(zip(pixel_channel_names(), frame_change_counts(np.stack([f1, f2])), strict=True))
    assert ch2[f"to:{names[1]}"] == 0
    with pytest.raises(ValueError):
        frame_change_counts(np.zeros((4, 4)))


def test_pixel_features_from_real_rgb_windows():
    from mindhelper_env.evaluation import DEFAULT_ENV_ID, make_env
    from mindhelper_env.scenarios.generator import generate_episode
    from mindhelper_env.validity.pixelstream import frame_size_for

    size = frame_size_for("vh-test-v5")
    spec = generate_episode("false_belief_relocation", 11, generator=GEN)
    env = make_env(DEFAULT_ENV_ID, obs_mode="rgb", frame_size=size)
    try:
        ep = ES.stream_episode(spec, env, mode="pixels")
    finally:
        env.close()
    assert ep.counts.shape[1] == len(pixel_channel_names())
    assert ep.counts.shape[0] == len(ep.positive) > 20
    assert ep.counts[1:].sum() > 0                       # people move: pixels change
    to = ep.counts[:, :ep.counts.shape[1] // 2].sum()
    assert to == ep.counts[:, ep.counts.shape[1] // 2:].sum()  # every change has both ends
    assert ep.positive.any() == ep.needs_help


# ----------------------------------------------------------------- the learner has power
def _belief_specs(seeds, families=("false_belief_told_away", "false_belief_told")):
    from mindhelper_env.scenarios.generator import generate_episode

    return [generate_episode(f, s, generator=GEN) for s in seeds for f in families]


@pytest.fixture(scope="module")
def trained():
    """A small learner: 60 training bases of told-away (help and its twin) of mh-gen-3.2."""
    data = ES.stream_data(_belief_specs(range(1000, 1060)))
    fit, tune = ES.split_fit_tune(data)
    model = ES.train_stream_model(fit, tune, channels=STREAM_VERBS,
                                  grid={"max_depth": (3,), "max_iter": (200,),
                                        "learning_rate": (0.1,)})
    return model, data


def test_the_learner_beats_silence_on_fresh_v5_belief_episodes(trained):
    """House-wide timing carries the side on mh-gen-3.2 (the known leak): the learner,
    trained on training seeds only, must find it on fresh episodes (seeds it never saw)."""
    model, _ = trained
    test = ES.stream_data(_belief_specs(range(5000, 5025)))
    ok = ES.model_decisions(model, test)
    acc = ES.balanced_accuracy(test, ok)
    assert acc >= 0.75, acc       # silence: 0.50
    imp = ES.stream_importance(model, test, repeats=1)
    assert imp["all"]["accuracy"] == pytest.approx(100 * acc)
    top = list(imp["all"]["channel"])[:6]
    assert "tell" in top, imp["all"]["channel"]   # the switched event's verb carries it
    assert max(imp["all"]["kind"].values()) > 5.0


def test_the_learner_finds_nothing_in_noise():
    rng = np.random.default_rng(0)
    eps = []
    for i in range(120):
        counts = rng.poisson(1.0, size=(25, len(STREAM_VERBS))).astype(float)
        help_ = bool(i % 2)
        pos = np.zeros(25, dtype=bool)
        if help_:
            pos[rng.integers(8, 20):][:2] = True
        eps.append(ES.StreamEpisode(str(i), "f", "g", help_, counts, pos))
    fit, tune = ES.split_fit_tune(eps[:80])
    model = ES.train_stream_model(fit, tune, channels=STREAM_VERBS,
                                  grid={"max_depth": (3,), "max_iter": (100,),
                                        "learning_rate": (0.1,)})
    acc = ES.balanced_accuracy(eps[80:], ES.model_decisions(model, eps[80:]))
    assert acc <= 0.65


def test_the_stream_agent_reads_only_obs_and_info_and_fires_once(trained, monkeypatch):
    model, _ = trained
    from mindhelper_env.evaluation import DEFAULT_ENV_ID

    env_cls = type(gym.make(DEFAULT_ENV_ID).unwrapped)

    def forbidden(self):
        raise AssertionError("an agent read the ground truth")

    monkeypatch.setattr(env_cls, "ground_truth", property(forbidden))
    monkeypatch.setattr(env_cls, "episode_spec", property(forbidden))
    env = gym.make(DEFAULT_ENV_ID)
    agent = ES.stream_agent(model)
    hedged = ES.stream_agent(model, hedge="wait3")
    acted = 0
    for spec in _belief_specs(range(5000, 5004)):
        for a in (agent, hedged):
            obs, info = env.reset(options={"episode": spec})
            a.reset(seed=0)
            done, programs = False, []
            while not done:
                program = a.act(obs, info)
                programs.append(program)
                obs, _, term, trunc, info = env.step(program)
                done = term or trunc
            assert sum(p != "none" for p in programs) <= 1   # fires once
            acted += any(p != "none" for p in programs)
            assert a.usage.fallbacks == 0
    env.close()
    assert acted > 0


def test_the_firing_agent_waits_for_a_struggle_and_then_helps_the_latest():
    class Always:
        threshold = 0.5

        def prob_stream(self, counts):
            return 1.0

    agent = StreamFiringAgent(Always())
    agent.reset()
    info = {"tick": 0, "robot": {"id": 1, "room": 10, "holding": []},
            "candidates": {"rooms": [{"id": 10, "class": "kitchen"}],
                           "locations": [], "objects": [], "actors": []}}
    assert agent.act(_obs([]), info) == "none"      # fired, but nothing to help yet
    assert agent.fired_window == 0


def test_pixel_agent_fires_from_frames_and_helps_once():
    """The pixel agent's scorer sees only colour-change counts; once it fires, the program
    comes from the pixel-perception reference, issued once."""
    from mindhelper_env.scenarios.generator import generate_episode
    from mindhelper_env.validity.pixelstream import frame_size_for, play_pixels

    seen = []

    class Always:
        threshold = 0.5

        def prob_stream(self, counts):
            assert counts.shape[1] == len(pixel_channel_names())
            seen.append(counts.shape[0])
            return 1.0

    agent = PixelStreamAgent(Always())
    agent.reset()
    assert agent.inner.fired_window is None
    spec = generate_episode("false_belief_relocation", 11, generator=GEN)
    recs, refs = play_pixels([spec], Always(), frame_size=frame_size_for(None))
    acts = [a for a in recs[0]["actions"] if a.get("acts")]
    assert recs[0]["intervention_tick"] is not None and len(acts) == 1
    assert seen and seen[0] == 1   # it fired on the first window's counts: asked once


# ----------------------------------------------------------------- the unbound coarse mind
def test_unbound_coarse_mind_is_registered_and_hedged():
    assert "coarse-mind-unbound" in AGENTS
    assert "coarse-mind-unbound" in AGENT_GROUPS["ablations"]
    agent = make_agent("coarse-mind-unbound")
    assert isinstance(agent, UnboundCoarseMindAgent) and agent.rung == "d"
    assert agent.name == "coarse-mind-unbound"
    assert make_agent("coarse-mind-unbound", rung="b").name == "coarse-mind-unbound-b"
    hedged = make_agent("coarse-mind-unbound+wait3")
    assert type(hedged).__name__ == "WaitAndSee"
    with pytest.raises(ValueError, match="unknown rung"):
        UnboundCoarseMindAgent(rung="z")


_ROOMS = [{"id": 10, "class": "kitchen"}, {"id": 20, "class": "livingroom"},
          {"id": 30, "class": "bedroom"}]
_LOCS = [{"id": 11, "class": "fridge", "room": 10, "open": False},
         {"id": 12, "class": "kitchentable", "room": 10, "open": None},
         {"id": 13, "class": "kitchencabinet", "room": 10, "open": False}]
_CLS = {11: "fridge", 12: "kitchentable", 13: "kitchencabinet", 100: "apple"}


def _house_episode():
    """Ann puts the apple in the fridge with Bob and Cal in the kitchen; Cal goes to the
    bedroom; Bob moves the apple to the cabinet while Ann watches; Ann opens the fridge and
    closes it again. Only Cal missed the move: Ann, who looks, did not."""
    def info(tick, cal, apple_at=None):
        objs = [{"id": 100, "class": "apple", "location": apple_at, "room": 10}] \
            if apple_at else []
        people = [{"id": 2, "name": "Ann", "kind": "adult", "room": 10, "holding": []},
                  {"id": 3, "name": "Bob", "kind": "adult", "room": 10, "holding": []},
                  {"id": 4, "name": "Cal", "kind": "adult", "room": cal, "holding": []}]
        return {"tick": tick, "robot": {"id": 1, "room": 10, "holding": []},
                "candidates": {"rooms": _ROOMS, "locations": _LOCS, "objects": objs,
                               "actors": people}}

    def ev(t, who, verb, args, room=10, contents=None):
        e = {"tick": t, "actor": who, "actor_name": "x", "verb": verb, "room": room,
             "args": [{"id": a, "class": _CLS[a]} for a in args]}
        if contents is not None:
            e["contents"] = [{"id": c, "class": _CLS[c]} for c in contents]
        return e

    return [
        (_obs([]), info(0, 10, apple_at=12)),
        (_obs([ev(0, 2, "grab", [100]), ev(1, 2, "open", [11], contents=[]),
               ev(2, 2, "putin", [100, 11])]), info(3, 10)),
        (_obs([ev(3, 2, "close", [11]), ev(4, 4, "walk", [], 30)]), info(5, 30)),
        (_obs([ev(5, 3, "open", [11], contents=[100]), ev(6, 3, "grab", [100]),
               ev(7, 3, "close", [11]), ev(8, 3, "open", [13], contents=[]),
               ev(9, 3, "putin", [100, 13]), ev(10, 3, "close", [13])]),
         info(11, 30, apple_at=13)),
        (_obs([ev(12, 2, "open", [11], contents=[]), ev(13, 2, "close", [11])]), info(14, 30)),
    ]


def _acts(agent, windows):
    agent.reset()
    return [agent.act(o, i) for o, i in windows]


def test_unbound_coarse_mind_takes_anyones_missed_move_for_the_lookers():
    bound = _acts(CoarseMindAgent(rung="d"), _house_episode())
    assert bound[-1] == "none"                  # Ann watched the move: no false belief
    agent = UnboundCoarseMindAgent()
    unbound = _acts(agent, _house_episode())
    assert unbound[-1] != "none" and "(13)" in unbound[-1]  # Cal missed it: "someone" did
    assert agent.tracker.house_stale() == {100: 11}
    assert agent.tracker.people[2].beliefs[100].place == 13  # Ann's own table is untouched


# ----------------------------------------------------------------- the decisive moment
def test_decisive_moment_on_hand_checked_episodes():
    """relocation: the focus person misses the move on the help side and watches it on the
    twin's; told-away: the tell; reach: the look, with the looker never counted."""
    from mindhelper_env.scenarios.generator import generate_group

    specs = generate_group("false_belief_relocation", 3, generator=GEN)
    help_m = decisive_state(specs["false_belief_relocation"])
    twin_m = decisive_state(specs["false_belief_witnessed"])
    for m, spec in ((help_m, specs["false_belief_relocation"]),
                    (twin_m, specs["false_belief_witnessed"])):
        assert m is not None and m.kind == "move" and m.tick is not None
        focus = int(spec["reference"]["focus_actor"])
        assert m.actor is not None and m.actor != focus
        assert m.actor not in m.busy and m.actor not in m.away
        assert m.anyone == bool(m.busy or m.away)
        assert m.anyone_other == any(p != focus for p in (*m.busy, *m.away))
    f_help = int(specs["false_belief_relocation"]["reference"]["focus_actor"])
    f_twin = int(specs["false_belief_witnessed"]["reference"]["focus_actor"])
    assert f_help in (*help_m.busy, *help_m.away)        # missed it
    assert f_twin not in (*twin_m.busy, *twin_m.away)    # watched it
    assert help_m.anyone
    reach = generate_group("implicit_goal_reach", 3, generator=GEN)
    m = decisive_state(reach["implicit_goal_reach"])
    assert m.kind == "look" and m.actor == int(reach["implicit_goal_reach"]["reference"]
                                               ["focus_actor"])
    assert m.actor not in m.busy and m.actor not in m.away


def test_decisive_statistic_counts_by_hand():
    def mk(help_, anyone, other):
        return DecisiveState("e", "f", "false_belief_relocation", help_, "move", 5,
                              anyone=anyone, anyone_other=other)

    ms = [mk(True, True, False)] * 6 + [mk(False, True, True)] * 2 + \
        [mk(False, False, False)] * 2
    r = decisive_statistic(moments=ms)["false_belief_relocation"]
    assert r["n"] == 10 and r["n_help"] == 6
    assert r["anyone"]["rule"] == 80.0 and r["anyone"]["best"] == 80.0
    assert r["other"]["rule"] == 20.0 and r["other"]["best"] == 80.0
    assert r["other"]["direction"] == "busy/away -> silent"
    lo, hi = r["anyone"]["best_ci"]
    assert lo < 80 < hi


# ----------------------------------------------------------------- bounds
def test_the_bounds_follow_the_generator_and_catch_a_break():
    assert not eventstream_bounded("mh-gen-3.2") and not eventstream_bounded("mh-gen-3.1")
    assert eventstream_bounded("mh-gen-3.3") and eventstream_bounded("mh-gen-4.0")
    b = EVENTSTREAM_BOUNDS
    ok = {"PHA": 50.0, "PIA": 52.0, "groups": {"false_belief_relocation": {"PHA": 55.0}}}
    res = {"suite": {"event-stream-gbm": ok, "event-stream-gbm+wait3": ok,
                     "coarse-mind-unbound": {"PHA": 70.0, "PIA": 70.0, "groups": {
                         "false_belief_relocation": {"PHA": 50.0},
                         "implicit_goal_reach": {"PHA": 100.0}}}},
           "decisive": {"fresh": {"implicit_goal_reach": {
               "anyone": {"best": 90.0}, "other": {"best": 90.0}}}}}
    assert check_eventstream(res) == []
    res["suite"]["event-stream-gru"] = {"PHA": 81.0, "PIA": 82.0, "groups": {
        "false_belief_watched": {"PHA": 93.0}}}
    res["fresh"] = {"coarse-mind-unbound+prefix8": {"PHA": 60.0, "groups": {
        "false_belief_emptied": {"PHA": 61.0, "n": 520},
        "false_belief_watched": {"PHA": 90.0, "n": 140}}}}  # too few fresh: reported
    res["decisive"]["fresh"]["false_belief_told_away"] = {"n": 510, "anyone": {"best": 56.0},
                                                          "other": {"best": 50.0}}
    res["decisive"]["fresh"]["false_belief_emptied"] = {"n": 90, "anyone": {"best": 80.0},
                                                        "other": {"best": 80.0}}
    # people other than the focus person: bound to the looker, reported, never bounded
    res["decisive"]["fresh"]["false_belief_relocation"] = {"n": 600, "anyone": {"best": 52.0},
                                                           "other": {"best": 82.0}}
    broken = check_eventstream(res)
    assert len(broken) == 5, broken
    assert any("event-stream-gru PHA 81.0" in x for x in broken)
    assert any(f"> {b['PIA_max']}" in x for x in broken)
    assert any("false_belief_watched" in x for x in broken)
    assert any("coarse-mind-unbound+prefix8" in x and "emptied" in x for x in broken)
    assert any("decisive moment (anyone) 56.0%" in x for x in broken)


def test_the_bench_section_reports_v5_and_fails_a_bounded_generator(monkeypatch, tmp_path):
    """bench_validity.py --eventstream-only: on a known-leak generator the breaks are
    printed and the exit status is 0; on any other generator they fail the run."""
    import importlib.util
    from pathlib import Path

    from mindhelper_env.validity import eventstream_bench as EB

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_validity.py"
    spec = importlib.util.spec_from_file_location("bench_validity_es", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    leak = {"suite_name": "vh-dev-v5", "generator": "mh-gen-3.2", "decisive": {},
            "suite": {"event-stream-gbm": {"PHA": 81.0, "PIA": 81.0, "groups": {}}}}
    calls = []

    def fake_run(suite, **kw):
        calls.append((suite, kw))
        return dict(leak)

    monkeypatch.setattr(EB, "run_eventstream", fake_run)
    out = tmp_path / "ev.json"
    argv = ["--suite", "vh-dev-v5", "--eventstream-only", "--eventstream-train", "3",
            "--eventstream-pixels", "0", "--no-gru", "--json", str(out)]
    assert bench.main(argv) == 0                      # mh-gen-3.2: reported
    assert calls[-1][1]["per_family"] == 3 and calls[-1][1]["pixels"] == 0
    assert calls[-1][1]["gru"] is False
    data = json.loads(out.read_text())
    assert data["eventstream"]["bounded"] is False and data["broken"] == []
    assert any("PHA 81.0" in b for b in data["eventstream"]["broken"])
    monkeypatch.setattr(bench.V, "generator_of", lambda suite: "mh-gen-3.3")
    assert bench.main(argv) == 1                      # a bounded generator: it fails
    assert json.loads(out.read_text())["broken"]
