"""mh-gen-3.3: the decoy of the belief groups (docs/scenarios.md, "Generator mh-gen-3.3").

Base by base: the decoy is there on every side, its calls and chores are the focus person's
of the other side, the house-wide count of every verb at every tick up to the look is the
same on every side (all groups), every gap the switch does not list is equal, and whether
anyone but the mover is busy or away at the decisive moment is the same on both sides."""

from __future__ import annotations

from typing import Any

import pytest
from test_twins import _bases as twin_bases

from mindhelper_env.scenarios.generator import DEADLINE_TICKS, GENERATORS, generate_episode
from mindhelper_env.scenarios.spec import (
    DECOY_GENERATORS,
    GENERATOR_V32,
    GENERATOR_V33,
    GENERATOR_VERSION,
    V3_TWINS,
)
from mindhelper_env.scenarios.twins import probe
from mindhelper_env.validity.decisive import Moment, decisive_classifier, decisive_moment
from mindhelper_env.validity.timing import house_counts, timeline, unequal_base_gaps

GROUPS = tuple(V3_TWINS)
BELIEF = ("false_belief_relocation", "false_belief_watched", "false_belief_told_away",
          "false_belief_emptied", "implicit_goal_search")
_BUSY_VERBS = ("phone", "hangup", "chore", "chore_done")


def _bases(group: str, n: int, generator: str = GENERATOR_V33) -> list[dict[str, Any]]:
    return twin_bases(group, n, generator)


def _line(d: Any) -> dict[str, Any]:
    return timeline({"reference": {"focus_actor": d.focus, "target_object": d.target}},
                    make_sim=lambda: probe(d))


def _busy_events(d: Any, who: int, until: int) -> list[tuple[int, str]]:
    sim = probe(d)
    out = []
    while sim.tick <= until:
        t = sim.tick
        out += [(t, e.verb) for e in sim.step_tick() if e.actor == who and e.verb in _BUSY_VERBS]
    return out


def _spec(d: Any) -> dict[str, Any]:
    """What :func:`decisive_moment` reads of a draft (it plays the probe's simulation)."""
    return {"family": d.family, "reference": {"focus_actor": d.focus, "target_object": d.target}}


def test_v33_is_selectable_but_not_the_default() -> None:
    assert GENERATOR_V33 in GENERATORS and GENERATOR_V33 in DECOY_GENERATORS
    assert GENERATOR_VERSION == GENERATOR_V32
    spec = generate_episode("false_belief_relocation", 5, generator="mh-gen-3.3")
    assert spec["generator"] == "mh-gen-3.3" and spec["perception"] == "sight"
    assert spec["horizon"] == 96
    again = generate_episode("false_belief_relocation", 5, generator="mh-gen-3.3")
    assert again == spec


@pytest.mark.parametrize("group", BELIEF)
def test_the_decoy_is_the_focus_person_with_the_kinds_swapped(group: str) -> None:
    """On every side of a base the decoy is there (an adult, switched); the decoy's calls and
    chores on the help side are the focus person's on the twin's, tick for tick, and the
    other way round; 3.2 drafts have none."""
    switched = 0
    for variants in _bases(group, 3):
        help_d = variants[group]
        twin_d = next(d for f, d in variants.items() if f != group)
        assert help_d.decoy is not None and help_d.decoy == twin_d.decoy
        assert help_d.decoy in help_d.switched and help_d.decoy != help_d.focus
        assert help_d.actor(help_d.decoy)["kind"] == "adult"
        look = min(_line(d)["look"] for d in (help_d, twin_d))
        a, dec = help_d.focus, help_d.decoy
        focus_help, decoy_help = (_busy_events(help_d, p, look) for p in (a, dec))
        focus_twin, decoy_twin = (_busy_events(twin_d, p, look) for p in (a, dec))
        # the calls and chores the switch takes from the focus person are the decoy's on
        # the other side (told-away's first block, the move's, is the focus person's on
        # both), and together the two do the same on both sides
        moved_a = sorted(set(focus_help) ^ set(focus_twin))
        moved_d = sorted(set(decoy_help) ^ set(decoy_twin))
        assert moved_a == moved_d, group
        assert sorted(focus_help + decoy_help) == sorted(focus_twin + decoy_twin), group
        switched += bool(moved_a)
    assert switched  # some base has a call or a chore in its switch block
    for d in _bases(group, 1, GENERATOR_V32)[0].values():
        assert d.decoy is None and not d.decoys


@pytest.mark.parametrize("group", GROUPS)
def test_house_wide_verb_counts_are_equal_tick_for_tick(group: str) -> None:
    """Every side of a base has the same number of each verb at each tick up to the
    deadline, the look's tick + DEADLINE_TICKS (who does it left out): calls, chores,
    walks, tells, takes, puts, opens."""
    for variants in _bases(group, 3):
        drafts = list(variants.values())
        look = min(_line(d)["look"] for d in drafts)
        counts = [house_counts(lambda d=d: probe(d), look + DEADLINE_TICKS) for d in drafts]
        assert all(c == counts[0] for c in counts[1:]), group


def test_house_wide_counts_tell_the_side_on_v32() -> None:
    """The check can fail: on mh-gen-3.2 the focus person's call or chore in the switch
    block is the only one then, so the counts differ on the two sides."""
    for variants in _bases("false_belief_relocation", 2, GENERATOR_V32):
        drafts = list(variants.values())
        look = min(_line(d)["look"] for d in drafts)
        counts = [house_counts(lambda d=d: probe(d), look) for d in drafts]
        assert counts[0] != counts[1]


@pytest.mark.parametrize("group", GROUPS)
def test_v33_unlisted_gaps_are_equal_base_by_base(group: str) -> None:
    for variants in _bases(group, 3):
        drafts = list(variants.values())
        first = drafts[0]
        lines = [_line(d) for d in drafts]
        assert lines[0]["look"] is not None
        assert not unequal_base_gaps(group, lines, GENERATOR_V33), (group, lines)
        for d in drafts[1:]:
            assert d.rng.bit_generator.state == first.rng.bit_generator.state
            assert d.g.to_virtualhome() == first.g.to_virtualhome()
            for p, q in zip(first.actors, d.actors, strict=True):
                assert p["id"] == q["id"] and p["kind"] == q["kind"]
                if p["id"] not in first.switched and p["id"] != first.focus:
                    assert p["activities"] == q["activities"], p["name"]


@pytest.mark.parametrize("group", BELIEF)
def test_anyone_busy_or_away_at_the_decisive_moment_is_the_same_on_both_sides(group: str
                                                                            ) -> None:
    """At the move (emptying, tell, delivery) someone but the mover is busy or away on both
    sides of every base; on the help side the focus person is among them, on the twin's the
    decoy."""
    for variants in _bases(group, 3):
        moments = {f: decisive_moment(_spec(d), max_ticks=84, make_sim=lambda d=d: probe(d)) for f, d in variants.items()}
        help_m = moments[group]
        twin_m = next(m for f, m in moments.items() if f != group)
        assert help_m.tick is not None and help_m.tick == twin_m.tick
        assert help_m.flag and twin_m.flag
        d = variants[group]
        assert d.focus in help_m.busy + help_m.away
        assert d.decoy in twin_m.busy + twin_m.away


def test_the_decisive_moment_tells_the_side_on_v32() -> None:
    """The instrument can fail: on mh-gen-3.2 relocation the focus person is busy at the move
    on the help side only."""
    found = []
    for variants in _bases("false_belief_relocation", 3, GENERATOR_V32):
        moments = {f: decisive_moment(_spec(d), max_ticks=84, make_sim=lambda d=d: probe(d)) for f, d in variants.items()}
        found.append(moments["false_belief_relocation"].flag
                     != moments["false_belief_witnessed"].flag)
    assert any(found)


def test_decisive_classifier_scores_both_orientations() -> None:
    on, off = Moment(3, 1, 9, busy=(2,)), Moment(3, 1, 9)
    rows = [(True, on)] * 8 + [(True, off)] * 2 + [(False, off)] * 9 + [(False, on)]
    s = decisive_classifier("false_belief_relocation", rows + [(True, Moment(None, None, None))])
    assert s.help_n == 10 and s.twin_n == 10 and s.missing == 1
    assert s.accuracy["flag"] == pytest.approx(85.0) and s.accuracy["busy"] == pytest.approx(85.0)
    assert s.help_share["flag"] == pytest.approx(80.0)
    assert s.twin_share["flag"] == pytest.approx(10.0)
    lo, hi = s.interval["flag"]
    assert lo < 85.0 < hi
    # the other orientation: flag means twin
    flipped = decisive_classifier("g", [(not h, m) for h, m in rows])
    assert flipped.accuracy["flag"] == pytest.approx(85.0)
    assert decisive_classifier("g", [(True, on), (False, on)]).accuracy["flag"] == 50.0


def test_env_accepts_v33() -> None:
    from mindhelper_env.envs.virtualhome import MindHelperEnv

    env = MindHelperEnv(generator="mh-gen-3.3", families={"false_belief_relocation": 1.0})
    _obs, info = env.reset(seed=3)
    assert info.get("perception") == "sight"
    env.close()
