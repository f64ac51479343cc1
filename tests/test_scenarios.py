"""Scenario families: validated ground truth, oracle and silent agents, theory-of-mind semantics.

The semantics tests are those of the v2 families (``mh-gen-2.5``, the ``-v0`` ids' content;
``tests/test_twins.py`` tests ``mh-gen-3.0``'s pairing); the oracle and the silent agent are
checked on every family of both generators."""

from __future__ import annotations

from functools import partial

import gymnasium as gym
import pytest

from mindhelper_env.agents import make_agent
from mindhelper_env.backends.symbolic import Simulation
from mindhelper_env.metrics import compute_metrics
from mindhelper_env.scenarios import FAMILIES, HELP_FAMILIES
from mindhelper_env.scenarios import generate_episode as _generate_episode
from mindhelper_env.scenarios.generator import help_program
from mindhelper_env.scenarios.spec import GENERATOR_V2, GENERATOR_V3, V3_FAMILIES
from tests.conftest import play

#: the v2 families' generator unless a test names another
generate_episode = partial(_generate_episode, generator=GENERATOR_V2)
N_SEEDS = {GENERATOR_V2: 50, GENERATOR_V3: 30}
BOTH = [(GENERATOR_V2, f) for f in FAMILIES] + [(GENERATOR_V3, f) for f in V3_FAMILIES]


@pytest.fixture(scope="module")
def episodes():
    return {(g, f): [_generate_episode(f, s, generator=g) for s in range(N_SEEDS[g])]
            for g, f in BOTH}


def _run(agent_name, specs):
    env = gym.make("MindHelper-VirtualHome-v1")
    agent = make_agent(agent_name, env=env)
    records, refs = [], {}
    for spec in specs:
        info = play(env, agent, options={"episode": spec})
        rec = info["episode_record"]
        records.append(rec)
        refs[rec["episode_id"]] = rec["reference"]
    return compute_metrics(records, refs)


@pytest.mark.parametrize(("generator", "family"), BOTH)
def test_oracle_solves_every_family(episodes, generator, family):
    m = _run("oracle", episodes[generator, family])
    if family in HELP_FAMILIES:
        assert m["PIR"] == 1.0 and m["TA"] == 1.0 and m["SR"] == 1.0 and m["AC"] == 1.0
    else:
        assert m["PSR"] == 1.0
    assert m["harm_rate"] == 0.0


@pytest.mark.parametrize(("generator", "family"), BOTH)
def test_silent_agent(episodes, generator, family):
    m = _run("silent", episodes[generator, family])
    if family in HELP_FAMILIES:
        assert m["PIR"] == 0.0 and m["TA"] == 0.0
    else:
        assert m["PSR"] == 1.0
    assert m["silent_all"] == 1.0


def test_generation_is_deterministic_and_varied():
    a = generate_episode("false_belief_relocation", 7)
    assert a == generate_episode("false_belief_relocation", 7)
    b = generate_episode("false_belief_relocation", 8)
    assert a["graph"] != b["graph"]
    names = {generate_episode("routine", s)["actors"][0]["name"] for s in range(10)}
    assert len(names) > 3
    counts = {len(generate_episode("implicit_goal_search", s)["actors"]) for s in range(15)}
    assert counts == {2, 3}


def test_unknown_family_and_bad_seed():
    with pytest.raises(ValueError, match="unknown family"):
        generate_episode("telepathy", 1)
    with pytest.raises(ValueError, match="seed"):
        generate_episode("routine", -1)


def _belief_vs_truth_at(spec, tick):
    sim = Simulation(spec)
    sim.run(max_ticks=tick)
    ref = spec["reference"]
    focus = sim.actor_by_id[ref["focus_actor"]]
    x = ref["target_object"]
    believed = focus.beliefs.get(x)
    truth = sim.world.location(x)
    return believed, truth, sim


@pytest.mark.parametrize("seed", range(10))
def test_relocation_belief_is_false_at_onset(seed):
    spec = generate_episode("false_belief_relocation", seed)
    ref = spec["reference"]
    # onset is the tick the focus person closes L1 again; they opened it the tick before,
    # still believing X was inside
    believed, truth, sim = _belief_vs_truth_at(spec, ref["window"]["onset_tick"] - 1)
    assert believed == ref["mental_state"]["believed"]
    assert sim.world.anchor(truth) != sim.world.anchor(believed)


@pytest.mark.parametrize("seed", range(10))
def test_witnessed_belief_is_true_when_needed(seed):
    spec = generate_episode("false_belief_witnessed", seed)
    sim = Simulation(spec)
    sim.run()
    focus = sim.focus
    fetch_idx = next(i for i, a in enumerate(focus.activities) if a["type"] == "fetch")
    start = next(m.tick for m in focus.markers if m.kind == "activity_start" and m.activity == fetch_idx)
    believed, truth, sim2 = _belief_vs_truth_at(spec, start)
    assert believed is not None and sim2.world.anchor(believed) == sim2.world.anchor(truth)


@pytest.mark.parametrize("seed", range(10))
def test_actor_never_learns_what_it_could_not_perceive(seed):
    spec = generate_episode("false_belief_relocation", seed)
    ref = spec["reference"]
    sim = Simulation(spec)
    focus = sim.actor_by_id[ref["focus_actor"]]
    x = ref["target_object"]
    # tick by tick: the focus person's belief about X only changes in a tick where X was
    # visible to them (an event in their room, or X in view after they moved)
    prev = focus.beliefs.get(x)
    while not sim.terminated and sim.tick < ref["window"]["onset_tick"] - 1:
        events = sim.step_tick()
        now = focus.beliefs.get(x)
        if now != prev:
            room = sim.world.chars[focus.id].room
            saw_event = any(e.room == room and x in e.args for e in events)
            in_view = x in sim.world.visible_nodes(focus.id)
            assert saw_event or in_view or now is None
        prev = now
    assert focus.beliefs.get(x) == ref["mental_state"]["believed"]


def test_help_changes_what_the_actor_does_next():
    spec = generate_episode("implicit_goal_reach", 3)
    ref = spec["reference"]
    base = Simulation(spec)
    base.run()
    helped = Simulation(spec)
    helped.run(max_ticks=ref["window"]["onset_tick"])
    helped.issue("\n".join(ref["reference_actions"]))
    helped.run()
    assert base.focus.status == "gave_up" and helped.focus.status == "done"


def test_tell_updates_belief_and_rescues_relocation():
    for seed in range(20):
        spec = generate_episode("false_belief_relocation", seed)
        ref = spec["reference"]
        sim = Simulation(spec)
        sim.run(max_ticks=ref["window"]["onset_tick"])
        f = ref["focus_actor"]
        x = ref["target_object"]
        true_loc = sim.world.location(x)
        if sim.world.chars[1].room != sim.world.chars[f].room:
            continue
        node = sim.world.graph.nodes
        sim.issue(f"[walk] <character> ({f}); [tell] <character> ({f}) <{node[x].class_name}> ({x}) "
                  f"<{node[true_loc].class_name}> ({true_loc})")
        sim.run()
        assert sim.robot_lines[-1].ok
        if sim.focus_succeeded():
            return
    pytest.fail("telling the true location never helped")


def test_premature_help_is_recorded_as_premature():
    env = gym.make("MindHelper-VirtualHome-v0")
    spec = generate_episode("false_belief_relocation", 4)
    obs, info = env.reset(options={"episode": spec})
    ref = env.unwrapped.ground_truth
    assert info["tick"] < ref.window["onset_tick"]
    obs, r, term, trunc, info = env.step("\n".join(ref.reference_actions))
    assert r < 0  # premature penalty
    while not (term or trunc):
        obs, r, term, trunc, info = env.step("none")
    m = compute_metrics([info["episode_record"]], {ref.episode_id: ref.to_dict()})
    assert m["premature_rate"] == 1.0 and m["PIR"] == 0.0


def test_help_program_for_blocked_opens_container():
    spec = generate_episode("implicit_goal_blocked", 0)
    sim = Simulation(spec)
    prog = help_program(sim.world, 2, "implicit_goal_blocked", spec["reference"]["target_object"])
    assert [p.split("]")[0] for p in prog] == ["[walk", "[open"]


def test_object_placed_in_view_is_picked_up():
    """Reach family: the robot takes X off the high shelf and sets it on a low surface in the
    person's room; the person sees it being put there and fetches it without a hand-over."""
    for seed in range(10):
        spec = generate_episode("implicit_goal_reach", seed)
        ref = spec["reference"]
        sim = Simulation(spec)
        sim.run(max_ticks=ref["window"]["onset_tick"])
        w = sim.world
        f, x = ref["focus_actor"], ref["target_object"]
        room = w.chars[f].room
        shelf = w.anchor(x)
        low = [n for n in w.room_nodes(room) if "SURFACES" in w.graph.nodes[n].properties
               and (w.height(n, top=True) or 0) < 1.0 and w.graph.nodes[n].category == "Furniture"]
        if not low or w.room_of(shelf) != room:
            continue
        cls, sh, lo = w.graph.nodes[x].class_name, w.graph.nodes[shelf].class_name, w.graph.nodes[low[0]].class_name
        sim.issue(f"[walk] <{sh}> ({shelf}); [grab] <{cls}> ({x}); [walk] <{lo}> ({low[0]}); "
                  f"[putback] <{cls}> ({x}) <{lo}> ({low[0]})")
        sim.run()
        assert all(ln.ok for ln in sim.robot_lines)
        assert sim.focus_succeeded()
        assert not any(ln.line.startswith("[give]") for ln in sim.robot_lines)
        return
    pytest.fail("no episode with a low surface next to the shelf")


@pytest.mark.parametrize("family", ["reach_helped", "reach_noticed", "blocked_helped",
                                    "blocked_noticed"])
@pytest.mark.parametrize("seed", range(4))
def test_noticed_struggle_is_helped_only_after_the_deadline_would_be(family, seed):
    # someone who noticed helps only after NOTICE_DELAY, past onset + DEADLINE_TICKS: a robot
    # cannot wait to see whether anyone comes; the struggler waits for them meanwhile
    from mindhelper_env.actors.actor import NOTICE_DELAY
    from mindhelper_env.scenarios.generator import DEADLINE_TICKS

    assert NOTICE_DELAY > DEADLINE_TICKS
    spec = generate_episode(family, seed)
    sim = Simulation(spec)
    sim.run()
    focus = spec["reference"]["focus_actor"]
    cue = min(e.tick for e in sim.log if e.actor == focus and e.verb in ("stretch", "stand"))
    others = [e for e in sim.log if e.ok and e.actor not in (focus,) and e.tick >= cue
              and ((e.verb == "give" and e.args[-1] == focus)
                   or (e.verb == "open" and family.startswith("blocked")
                       and e.args[0] == spec["reference"]["target_object"]))]
    assert others, "nobody helped the struggler in a silent twin"
    first_visible = min(e.tick for e in sim.log if e.ok and e.actor == others[0].actor
                        and e.tick > cue)
    assert first_visible > cue + DEADLINE_TICKS
    assert sim.focus.status == "done"
    # exactly one struggle: the person waits for the help, they do not try again
    assert sum(1 for e in sim.log if e.actor == focus and e.verb in ("stretch", "stand")) == 1


_ATTENTION = ("implicit_goal_reach", "reach_helped", "reach_noticed", "implicit_goal_blocked",
              "blocked_helped", "blocked_noticed")


@pytest.mark.parametrize("family", _ATTENTION)
def test_every_call_starts_before_the_first_struggle(family):
    # in a help draft the room's calls must have begun by the struggle (or someone notices);
    # a call starting later, which only a silent draft could have, would mark the twins
    # (generator._CALLS_BEFORE_CUE rejects such drafts on both sides)
    with_calls = 0
    for seed in range(10):
        spec = generate_episode(family, seed)
        sim = Simulation(spec)
        sim.run()
        focus = spec["reference"]["focus_actor"]
        cue = min(e.tick for e in sim.log if e.actor == focus and e.verb in ("stretch", "stand"))
        starts = [m.tick for a in sim.actors for m in a.markers
                  if m.kind == "activity_start" and m.detail == "phone"]
        if starts:  # a help episode may have no adult in the room, and so no call
            with_calls += 1
            assert max(starts) < cue, seed
    assert with_calls >= 5


@pytest.mark.parametrize("family", ["false_belief_witnessed", "false_belief_self_corrected",
                                    "watched_move_seen", "false_belief_told",
                                    "emptied_witnessed", "false_belief_spare", "emptied_spare"])
def test_a_twin_who_knows_better_waits_before_going_on(family):
    # after the empty look in L1 (the help family's cue) the twin's person takes nothing
    # until past the deadline and the robot's next decision: waiting to see whether they
    # find it tells nothing
    from mindhelper_env.scenarios.generator import DEADLINE_TICKS

    checked = 0
    for seed in range(6):
        spec = generate_episode(family, seed)
        ref = spec["reference"]
        focus = ref["focus_actor"]
        acts = next(a for a in spec["actors"] if a["id"] == focus)["activities"]
        # L1: where a spare twin's person believes X is; the look of a knowing twin is the
        # last check before they go for X
        l1 = ref["mental_state"].get("believed") or [a for a in acts
                                                     if a["type"] == "check"][-1]["target"]
        sim = Simulation(spec)
        sim.run()
        grabs = [e.tick for e in sim.log if e.ok and e.actor == focus and e.verb == "grab"]
        assert grabs, "the twin's person never took what they were after"
        looks = [e.tick for e in sim.log if e.ok and e.actor == focus and e.args
                 and e.verb in ("look", "close") and e.args[0] == l1 and e.tick < grabs[-1]]
        if not looks:  # they saw X (or a spare) in the room first and never looked in L1
            continue
        # the pause (families.SELF_RESOLVE_DELAY, at least 9 ticks) and the way to X: well
        # past the deadline (DEADLINE_TICKS after the look) and the decision after it
        assert grabs[-1] - looks[-1] >= 10 > DEADLINE_TICKS + 3, seed
        assert sim.focus.status == "done"
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("family", ["false_belief_relocation", "false_belief_witnessed",
                                    "implicit_goal_reach", "reach_helped"])
def test_people_carry_on_once_their_task_is_over(family):
    # given up or done, the focus person goes on with their `after` list (so a help
    # episode's silent rollout is not quieter than its twin's); their status and markers
    # keep how the task ended
    spec = generate_episode(family, 3)
    focus = spec["reference"]["focus_actor"]
    rec = next(a for a in spec["actors"] if a["id"] == focus)
    assert rec["after"], "the focus person has nothing to do after the task"
    sim = Simulation(spec)
    sim.run()  # to settling: the task's outcome
    ended = sim.tick
    outcome = sim.focus.status
    assert outcome == ("gave_up" if spec["reference"]["needs_intervention"] else "done")
    markers = list(sim.focus.markers)
    while sim.tick < spec["horizon"]:
        sim.step_tick()
    assert sim.focus.status == outcome
    assert sim.focus.markers == markers  # nothing after the task is a marker
    later = [e for e in sim.log if e.actor == focus and e.tick > ended and e.ok]
    assert later, "the focus person did nothing after the task was over"


def test_a_failure_after_the_task_only_skips_that_activity():
    spec = generate_episode("false_belief_witnessed", 5)
    sim = Simulation(spec)
    sim.run()
    f = sim.focus
    assert f.status == "done" and f._after
    markers, failures = list(f.markers), f.failures
    f._fail_attempt(sim.world, "nothing there")
    assert f.status == "done" and f.markers == markers and f.failures == failures
    assert f._activity_done  # skipped: the next tick moves on


def test_after_activities_are_checked_like_activities():
    from mindhelper_env.actors.actor import Actor

    with pytest.raises(ValueError, match="after #0 has unknown type"):
        Actor.from_spec({"id": 3, "name": "Sam", "activities": [],
                         "after": [{"type": "dance"}]})


def test_carry_on_names_only_known_families():
    from mindhelper_env.scenarios.generator import CARRY_ON
    from mindhelper_env.scenarios.spec import FAMILIES

    assert set(CARRY_ON) <= set(FAMILIES)
    for low, high, walks in CARRY_ON.values():
        assert 0 <= low <= high and walks >= 0
