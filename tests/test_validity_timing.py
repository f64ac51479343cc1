"""The timing scan (mindhelper_env.validity.timing, docs/validity.md): it finds a planted gap
and nothing in noise, tells listed gaps from free ones, reads real timelines, and guards
mh-gen-3.2 (the generator of the next suites) on fresh bases of every twin group."""

from __future__ import annotations

import numpy as np
import pytest

from mindhelper_env.scenarios.generator import generate_group
from mindhelper_env.scenarios.spec import GENERATOR_V31, GENERATOR_V32, V3_TWINS
from mindhelper_env.validity import timing as T


def _sample(group: str, n: int, plant: tuple[str, str] | None, rng_seed: int = 0
            ) -> T.GroupSample:
    """``n`` synthetic bases: every gap drawn alike on both sides, except ``plant`` (the help
    side's is 30 to 32 ticks shorter)."""
    rng = np.random.default_rng(rng_seed)
    x = rng.integers(-20, 20, size=(2 * n, len(T.GAPS)))
    help_ = np.tile([True, False], n)
    if plant is not None:
        k = T.GAPS.index(plant)
        x[help_, k] -= 30 + rng.integers(0, 3, size=n)
    return T.GroupSample(group, "synthetic", x, help_, np.repeat(np.arange(n), 2))


def test_the_single_gap_rule_finds_a_planted_gap_and_nothing_in_noise() -> None:
    noise = T.scan_group(_sample("implicit_goal_reach", 400, None))
    assert noise.best_acc < 58 and noise.tree_acc < 58
    planted = T.scan_group(_sample("implicit_goal_reach", 400, ("tell", "o_call")))
    assert planted.best_gap == "tell->o_call" and planted.best_acc > 70
    assert planted.tree_acc > 70 and planted.best_ci[0] > 60


def test_a_gap_the_switch_lists_is_reported_apart() -> None:
    gap = ("call", "move")
    assert T.listed("false_belief_relocation", gap) and not T.listed("implicit_goal_reach", gap)
    assert not T.listed("false_belief_told_away", ("tell", "look"))
    scan = T.scan_group(_sample("false_belief_relocation", 400, gap))
    assert scan.best_acc < 58  # not among the free gaps
    assert scan.listed_best_gap == "call->move" and scan.listed_best_acc > 70
    assert scan.tree_all_acc > 70


def test_wilson_interval() -> None:
    lo, hi = T.wilson(500, 1000)
    assert 46.8 < lo < 47.0 and 53.0 < hi < 53.2
    assert T.wilson(0, 0) == (0.0, 100.0)


def test_timeline_of_a_told_away_pair() -> None:
    specs = generate_group("false_belief_told_away", 3, generator=GENERATOR_V32)
    assert set(specs) == {"false_belief_told_away", "false_belief_told"}
    lines = {f: T.timeline(s) for f, s in specs.items()}
    for line in lines.values():
        assert line["move"] is not None and line["tell"] is not None
        assert line["move"] < line["put"] < line["tell"] < line["look"]
        assert line["call"] is not None  # the focus person's call during the move
    a, b = lines.values()
    assert a["look"] - a["tell"] == b["look"] - b["tell"]  # drawn in the base (mh-gen-3.2)
    assert not T.unequal_base_gaps("false_belief_told_away", list(lines.values()))


@pytest.mark.parametrize("group", tuple(V3_TWINS))
def test_mh_gen_32_has_no_free_timing_tell(group: str) -> None:
    """The CI guard of the generator of the next suites: on fresh bases, no unlisted gap and
    no depth-3 tree over them tells the side (bounds wide enough for 60 bases; the full
    figures, on 2,000 bases a group: ``bench_validity.py --timing-scan 2000``)."""
    scan = T.scan_group(T.group_sample(group, 60, generator=GENERATOR_V32, seed=1))
    assert scan.episodes >= 55
    assert scan.best_acc <= 72 and scan.tree_acc <= 72, scan.to_dict()


def test_the_scan_sees_mh_gen_31s_told_away_timing() -> None:
    """mh-gen-3.1's told-away twins: the tell comes exactly 6 ticks before the look in some
    twins and never on the help side (hanging up first), so the look-tell gap's value set
    differs between the sides of the same bases."""
    sample = T.group_sample("false_belief_told_away", 40, generator=GENERATOR_V31, seed=2)
    k = T.GAPS.index(("look", "tell"))
    helps = set(sample.x[sample.help, k].tolist())
    twins = set(sample.x[~sample.help, k].tolist())
    assert helps != twins
    assert max(helps) <= -7 and -6 in twins
