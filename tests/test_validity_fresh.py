"""validity.fresh: agents and classifiers on fresh episodes of a suite's generator.

The fresh figures stand beside the suite's in ``bench_validity.py --scan-fresh`` and are
bounded from 500 episodes a twin group, so their scoring must agree with the suite's, their
episodes must be the suite's kind but never its own, and their intervals must be right.
"""

from __future__ import annotations

import math

import pytest

from mindhelper_env import validity as V
from mindhelper_env.agents import make_agent
from mindhelper_env.evaluation import suite_env_id
from mindhelper_env.scenarios.suites import SUITES, suite_specs
from mindhelper_env.validity.fresh import group_counts, wilson


def test_pha_interval_by_hand() -> None:
    m = {"PHR": 60.0, "PSR": 40.0, "n_help": 100, "n_silent": 100}
    lo, hi = V.pha_interval(m)
    se = 0.5 * math.sqrt(0.6 * 0.4 / 100 + 0.4 * 0.6 / 100)
    assert lo == pytest.approx(100 * (0.5 - 1.96 * se))
    assert hi == pytest.approx(100 * (0.5 + 1.96 * se))
    # a perfect agent has no spread; one side missing has no interval
    assert V.pha_interval({"PHR": 100.0, "PSR": 100.0, "n_help": 5, "n_silent": 5}) == (100.0, 100.0)
    assert V.pha_interval({"PHR": 60.0, "PSR": None, "n_help": 10, "n_silent": 0}) is None


def test_wilson_by_hand() -> None:
    lo, hi = wilson(0.5, 100)
    assert lo == pytest.approx(40.38, abs=0.01) and hi == pytest.approx(59.62, abs=0.01)
    assert wilson(0.5, 0) is None
    # narrower with more cases, and never outside 0-100
    assert wilson(0.5, 1000)[1] - wilson(0.5, 1000)[0] < hi - lo
    assert wilson(1.0, 10)[1] == pytest.approx(100.0)


def test_fresh_episodes_are_the_suites_kind_and_never_its_own() -> None:
    specs = V.fresh_episodes("vh-dev-v5", 40)
    again = V.fresh_episodes("vh-dev-v5", 40)
    ids = [s["episode_id"] for s in specs]
    assert ids == [s["episode_id"] for s in again]  # deterministic
    assert len(set(ids)) == len(ids)
    suite_ids = {s["episode_id"] for s in suite_specs("vh-dev-v5")}
    assert not set(ids) & suite_ids
    # the suite's generator: mh-gen-3.2 episodes last 96 ticks and perceive by sight
    assert {s["horizon"] for s in specs} == {96}
    assert {s.get("perception") for s in specs} == {"sight"}
    assert sum(s["reference"]["needs_intervention"] for s in specs) == 20  # half need help
    other = V.fresh_episodes("vh-dev-v5", 40, seed=V.FRESH_SEED + 1)
    assert [s["episode_id"] for s in other] != ids


def test_fresh_scores_agree_with_the_suites_scoring() -> None:
    """The same episodes scored through the fresh path and through the suite's give the same
    figures, overall and per twin group."""
    suite = "vh-dev-v4"
    specs = suite_specs(suite)[:40]
    name = "physical-rules+wait3"
    fresh = V.episode_scores(V.play_episodes(specs, name, name, env_id=suite_env_id(suite)),
                             specs)
    direct = V.scores(V.play_records(suite, make_agent(name), name, limit=40), suite)
    for k in ("PHA", "PHR", "PSR", "PIA", "n_help", "n_silent"):
        assert fresh[k] == direct[k], k
    assert set(fresh["groups"]) == set(direct["groups"])
    for g, m in direct["groups"].items():
        assert fresh["groups"][g]["PHA"] == m["PHA"], g
        assert fresh["groups"][g]["PHA_ci"] == V.pha_interval(m)
    lo, hi = fresh["PHA_ci"]
    assert lo <= fresh["PHA"] <= hi


def test_an_agent_object_plays_on_fresh_episodes() -> None:
    specs = V.fresh_episodes("tdw-dev-v5", 16)
    assert SUITES["tdw-dev-v5"]["house"] == "tdw"
    silent = V.episode_scores(V.play_episodes(specs, make_agent("silent"), "silent",
                                              env_id=suite_env_id("tdw-dev-v5")), specs)
    assert silent["PHA"] == 50.0 and silent["PSR"] == 100.0 and silent["PHR"] == 0.0
    counts = group_counts([type("D", (), {"group": g})() for g in ("a", "b", "a", None)])
    assert counts == {"a": 2, "b": 1}
