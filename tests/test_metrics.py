"""Tests for mindhelper_env.metrics (docs/metrics.md). Expected values are worked out by hand."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindhelper_env.metrics import (
    action_correctness,
    as_percentages,
    atom_similarity,
    atoms_from_lines,
    bigram_f1,
    compute_metrics,
    compute_table,
    episode_outcome,
    lcs_f1,
    sequence_similarity,
    trigger_accuracy,
    unigram_f1,
)

# Atoms used throughout.
WALK = ("walk", ("fridge",))
OPEN = ("open", ("fridge",))
PUTIN = ("putin", ("apple", "fridge"))
PUTIN_CAB = ("putin", ("apple", "cabinet"))
GRAB = ("grab", ("apple",))

REF_LINES = ["[walk] <fridge> (12)", "[open] <fridge> (12)"]


def make_ref(
    eid: str,
    *,
    needs: bool,
    family: str = "fam",
    onset: int = 10,
    deadline: int = 20,
    actions: list[str] | None = None,
) -> dict[str, Any]:
    """A reference record; needs-help episodes get the window [onset, deadline]."""
    return {
        "episode_id": eid,
        "family": family,
        "needs_intervention": needs,
        "focus_actor": "alice",
        "target_object": "apple",
        "mental_state": {},
        "window": {"onset_tick": onset, "deadline_tick": deadline} if needs else None,
        "reference_actions": list(REF_LINES if actions is None and needs else actions or []),
        "success": {},
    }


def make_rec(
    eid: str,
    ticks: list[int] | None = None,
    *,
    executed: list[tuple[str, bool]] | None = None,
    success: bool = False,
    harm: bool = False,
    usage: dict[str, Any] | None = None,
    agent: str = "a",
    trigger_ops: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A result record acting at ``ticks``: one program per tick whose acting line
    (``[open]``, failed, so it adds no atoms) was executed; ``executed`` lines are added after
    them as issued at the first tick."""
    first = (ticks or [0])[0]
    rec: dict[str, Any] = {
        "episode_id": eid,
        "agent": agent,
        "suite": "unit",
        "actions": [{"tick": t, "program": "[open] <fridge> (12)"} for t in ticks or []],
        "executed": [
            {"tick": t + 1, "line": "[open] <fridge> (12)", "ok": False, "reason": "blocked",
             "issued": t}
            for t in ticks or []
        ] + [
            {"tick": first + 1, "line": line, "ok": ok, "reason": None if ok else "blocked",
             "issued": first}
            for line, ok in executed or []
        ],
        "focus_success": success,
        "harm": harm,
        "ticks": 30,
        "steps": 30,
    }
    if usage is not None:
        rec["usage"] = usage
    if trigger_ops is not None:
        rec["trigger_ops"] = trigger_ops
    return rec


# ---------------------------------------------------------------------------------------
# Atoms and similarity
# ---------------------------------------------------------------------------------------


def test_atoms_from_lines_normalizes_and_skips() -> None:
    lines = [
        "[putin] <apple> (31) <kitchen_counter> (12)",
        "this is not a script line",
        "none",
        "[Walk] <Fridge> (1); [open] <fridge> (1)",
        "[standup]",
    ]
    assert atoms_from_lines(lines) == [
        ("putin", ("apple", "kitchencounter")),
        ("walk", ("fridge",)),
        ("open", ("fridge",)),
        ("standup", ()),
    ]


def test_atom_similarity_values() -> None:
    assert atom_similarity(WALK, OPEN) == 0.0
    assert atom_similarity(PUTIN, PUTIN) == pytest.approx(1.0)
    # one of two args equal: 0.2 + 0.8 * 1/2 = 0.6
    assert atom_similarity(PUTIN, PUTIN_CAB) == pytest.approx(0.6)
    # two of three args equal: 0.2 + 0.8 * 2/3
    a = ("tell", ("character", "apple", "fridge"))
    b = ("tell", ("character", "apple", "cabinet"))
    assert atom_similarity(a, b) == pytest.approx(0.2 + 0.8 * 2 / 3)
    # no argument equal but same verb: 0.2
    assert atom_similarity(("grab", ("apple",)), ("grab", ("mug",))) == pytest.approx(0.2)
    assert atom_similarity(("standup", ()), ("standup", ())) == 1.0


def test_sr_identical_is_one() -> None:
    seq = [WALK, OPEN, PUTIN]
    assert sequence_similarity(seq, seq) == 1.0
    assert action_correctness(seq, seq) == 1.0


def test_sr_partial_argument_match() -> None:
    # sim = 0.6 -> R1 = F1(P=0.6, R=0.6) = 0.6; R2 falls back to R1 = 0.6; RL = 0.6
    assert unigram_f1([PUTIN_CAB], [PUTIN]) == pytest.approx(0.6)
    assert bigram_f1([PUTIN_CAB], [PUTIN]) == pytest.approx(0.6)
    assert lcs_f1([PUTIN_CAB], [PUTIN]) == pytest.approx(0.6)
    assert sequence_similarity([PUTIN_CAB], [PUTIN]) == pytest.approx(0.6)
    assert action_correctness([PUTIN_CAB], [PUTIN]) == 0.0


def test_sr_reordered() -> None:
    pred, ref = [OPEN, WALK], [WALK, OPEN]
    # R1 = 1 (both atoms matched); the only bigrams (open,walk) vs (walk,open) score
    # (0 + 0)/2 = 0 -> R2 = 0; LCS = 1 -> RL = F1(1/2, 1/2) = 0.5
    assert unigram_f1(pred, ref) == pytest.approx(1.0)
    assert bigram_f1(pred, ref) == pytest.approx(0.0)
    assert lcs_f1(pred, ref) == pytest.approx(0.5)
    # SR = (2*1 + 3*0 + 5*0.5) / 10 = 0.45
    assert sequence_similarity(pred, ref) == pytest.approx(0.45)
    assert action_correctness(pred, ref) == 1.0


def test_sr_reordered_with_soft_lcs() -> None:
    pred, ref = [PUTIN_CAB, WALK], [WALK, PUTIN]
    # R1: matches 0.6 + 1 = 1.6 -> P = R = 0.8 -> 0.8
    # R2: (putin_cab, walk) vs (walk, putin) = (0 + 0)/2 = 0
    # RL: orders conflict, best alignment keeps walk=walk (1.0) -> F1(0.5, 0.5) = 0.5
    # SR = (2*0.8 + 0 + 5*0.5)/10 = 0.41
    assert sequence_similarity(pred, ref) == pytest.approx(0.41)
    assert action_correctness(pred, ref) == pytest.approx(0.5)


def test_sr_extra_predicted_atoms() -> None:
    pred, ref = [WALK, GRAB, OPEN], [WALK, OPEN]
    # R1: 2 matched -> P = 2/3, R = 1 -> F1 = 0.8
    assert unigram_f1(pred, ref) == pytest.approx(0.8)
    # R2: (walk,grab)~(walk,open) = 0.5, (grab,open)~(walk,open) = 0.5; one ref bigram
    # -> matched 0.5 -> P = 0.25, R = 0.5 -> F1 = 1/3
    assert bigram_f1(pred, ref) == pytest.approx(1 / 3)
    # RL: LCS 2 -> 0.8
    assert lcs_f1(pred, ref) == pytest.approx(0.8)
    # SR = (2*0.8 + 3/3 + 5*0.8)/10 = 0.66
    assert sequence_similarity(pred, ref) == pytest.approx(0.66)
    assert action_correctness(pred, ref) == 1.0


def test_sr_ac_empty_and_multiset() -> None:
    assert sequence_similarity([], [WALK]) == 0.0
    assert action_correctness([], [WALK]) == 0.0
    assert sequence_similarity([WALK], []) == 0.0
    # AC is a multiset intersection: grab predicted once, required twice -> 1/2
    assert action_correctness([GRAB], [GRAB, GRAB]) == pytest.approx(0.5)
    assert action_correctness([GRAB, GRAB, GRAB], [GRAB, GRAB]) == pytest.approx(1.0)
    # SR: R1 = F1(1, 1/2) = 2/3; R2 falls back to R1; RL = 2/3 -> SR = 2/3
    assert sequence_similarity([GRAB], [GRAB, GRAB]) == pytest.approx(2 / 3)


# ---------------------------------------------------------------------------------------
# Episode outcomes and aggregate metrics
# ---------------------------------------------------------------------------------------


def _mixed_set() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Five needs-help episodes (window [10, 20]) and three silent ones.

    R: h_on (t_I=10, precise, success), h_dl (t_I=20, precise), h_pre (t_I=9, premature,
       success), h_late (t_I=21, late), h_miss (never acts)
    S: s1, s2 silent, s3 acts at tick 4 (false alarm, harm)
    All S episodes report focus_success=True; that must not leak into TA.
    """
    refs = {
        "h_on": make_ref("h_on", needs=True, family="fb"),
        "h_dl": make_ref("h_dl", needs=True, family="fb"),
        "h_pre": make_ref("h_pre", needs=True, family="fb"),
        "h_late": make_ref("h_late", needs=True, family="goal"),
        "h_miss": make_ref("h_miss", needs=True, family="goal"),
        "s1": make_ref("s1", needs=False, family="none"),
        "s2": make_ref("s2", needs=False, family="none"),
        "s3": make_ref("s3", needs=False, family="none"),
    }
    ok_lines = [(REF_LINES[0], True), (REF_LINES[1], True)]
    records = [
        make_rec("h_on", [10, 12], executed=ok_lines, success=True),
        make_rec("h_dl", [20], executed=[(REF_LINES[0], True)]),
        make_rec("h_pre", [9], success=True, harm=True),
        make_rec("h_late", [21, 25]),
        make_rec("h_miss", []),
        make_rec("s1", [], success=True),
        make_rec("s2", [], success=True),
        make_rec("s3", [4], executed=ok_lines, success=True, harm=True),
    ]
    return records, refs


def test_episode_outcome_window_edges() -> None:
    records, refs = _mixed_set()
    out = {r["episode_id"]: episode_outcome(r, refs[r["episode_id"]]) for r in records}
    assert out["h_on"]["t_I"] == 10 and out["h_on"]["precise"]
    assert out["h_dl"]["t_I"] == 20 and out["h_dl"]["precise"]
    assert out["h_pre"]["premature"] and not out["h_pre"]["precise"]
    assert out["h_late"]["late"] and not out["h_late"]["precise"]
    assert out["h_miss"]["missed"] and out["h_miss"]["t_I"] is None and out["h_miss"]["silent"]
    assert out["s3"]["false_alarm"] and out["s3"]["intervened"]
    assert not out["s1"]["false_alarm"] and out["s1"]["silent"]
    # SR/AC only for needs-help episodes
    assert out["s3"]["sr"] is None and out["s3"]["ac"] is None
    assert out["h_on"]["sr"] == 1.0 and out["h_on"]["ac"] == 1.0
    assert out["h_miss"]["sr"] == 0.0 and out["h_miss"]["ac"] == 0.0


def test_none_program_does_not_count_as_action() -> None:
    rec = make_rec("e", [15])
    rec["actions"].insert(0, {"tick": 3, "program": " None "})
    out = episode_outcome(rec, make_ref("e", needs=True))
    # the 'none' at tick 3 is silence; t_I = 15 is inside [10, 20]
    assert out["t_I"] == 15 and out["precise"] and not out["premature"]
    assert out["n_actions"] == 1


def test_movement_is_not_an_intervention() -> None:
    rec = make_rec("e", [])
    rec["actions"] = [{"tick": 2, "program": "[walk] <fridge> (12); [find] <fridge> (12)"}]
    rec["executed"] = [{"tick": 3, "line": "[walk] <fridge> (12)", "ok": True, "reason": None,
                        "issued": 2},
                       {"tick": 4, "line": "[find] <fridge> (12)", "ok": True, "reason": None,
                        "issued": 2}]
    silent = episode_outcome(rec, make_ref("e", needs=False))
    assert silent["silent"] and not silent["false_alarm"] and silent["t_I"] is None
    # the first program containing an acting line decides t_I: the tick it was issued
    rec["actions"].append({"tick": 12, "program": "[walk] <fridge> (12); [open] <fridge> (12)"})
    out = episode_outcome(rec, make_ref("e", needs=True))
    assert out["t_I"] == 12 and out["precise"]


def test_intervention_is_the_issue_of_an_acting_program_executed_or_not() -> None:
    # "walk x8, then act", issued at tick 12; the episode's record shows only walks executed
    # (the act never came up). The commitment is the intervention, in both kinds of episode.
    hedge = "; ".join(["[walk] <kitchen> (5)"] * 8 + ["[open] <fridge> (12)"])
    rec = make_rec("e", [])
    rec["actions"] = [{"tick": 12, "program": hedge}]
    rec["executed"] = [{"tick": 13 + k, "line": "[walk] <kitchen> (5)", "ok": True,
                        "reason": None, "issued": 12} for k in range(3)]
    assert episode_outcome(rec, make_ref("e", needs=True))["t_I"] == 12
    silent = episode_outcome(rec, make_ref("e", needs=False))
    assert silent["false_alarm"] and not silent["silent"] and silent["t_I"] == 12
    # replacing the program by silence or by walks does not undo it
    rec["actions"].append({"tick": 15, "program": "[walk] <kitchen> (5)"})
    assert episode_outcome(rec, make_ref("e", needs=False))["false_alarm"]
    # lines that do not parse are not acting lines; a later acting program is
    rec["actions"] = [{"tick": 3, "program": "open the fridge please"},
                      {"tick": 6, "program": "[open] fridge"},
                      {"tick": 9, "program": "[grab] <apple> (99999)"}]
    assert episode_outcome(rec, make_ref("e", needs=True))["t_I"] == 9


def test_the_envs_acts_mark_decides_over_the_program_text() -> None:
    # the env marks what it kept (e.g. after cutting a program at 64 lines); records
    # without the mark are judged by their text
    rec = make_rec("e", [])
    rec["actions"] = [{"tick": 4, "program": "[open] <fridge> (12)", "acts": False},
                      {"tick": 7, "program": "[walk] <fridge> (12)", "acts": True}]
    assert episode_outcome(rec, make_ref("e", needs=True))["t_I"] == 7
    del rec["actions"][0]["acts"]
    assert episode_outcome(rec, make_ref("e", needs=True))["t_I"] == 4
    rec["actions"][1]["acts"] = "yes"
    with pytest.raises(ValueError, match=r"actions\[1\]\.acts must be a bool"):
        episode_outcome(rec, make_ref("e", needs=True))


def test_phr_needs_precise_successful_harmless_help() -> None:
    refs = {e: make_ref(e, needs=True) for e in ("ok", "late", "fail", "harm")}
    refs["quiet"] = make_ref("quiet", needs=False)
    recs = [make_rec("ok", [11], success=True), make_rec("late", [25], success=True),
            make_rec("fail", [11], success=False), make_rec("harm", [11], success=True, harm=True),
            make_rec("quiet", [], success=True)]
    m = compute_metrics(recs, refs)
    assert m["PIR"] == pytest.approx(3 / 4)
    assert m["PHR"] == pytest.approx(1 / 4)
    assert m["PSR"] == 1.0
    assert m["PHA"] == pytest.approx((1 / 4 + 1) / 2)
    assert m["PIA"] == pytest.approx((3 / 4 + 1) / 2)


def test_compute_metrics_mixed() -> None:
    records, refs = _mixed_set()
    m = compute_metrics(records, refs)
    assert (m["episodes"], m["n_help"], m["n_silent"]) == (8, 5, 3)
    # PIR: h_on, h_dl precise out of 5 R episodes
    assert m["PIR"] == pytest.approx(2 / 5)
    assert m["premature_rate"] == pytest.approx(1 / 5)
    assert m["late_rate"] == pytest.approx(1 / 5)
    assert m["missed_rate"] == pytest.approx(1 / 5)
    # PSR: s1, s2 silent out of 3 S episodes; false alarm s3
    assert m["PSR"] == pytest.approx(2 / 3)
    assert m["false_alarm_rate"] == pytest.approx(1 / 3)
    assert m["PIA"] == pytest.approx((2 / 5 + 2 / 3) / 2)
    # TA only over R: h_on and h_pre succeed -> 2/5 (S successes are ignored; 5/8 would be wrong)
    assert m["TA"] == pytest.approx(2 / 5)
    # silent_all: h_miss, s1, s2 -> 3/8
    assert m["silent_all"] == pytest.approx(3 / 8)
    # harm: h_pre, s3 -> 2/8
    assert m["harm_rate"] == pytest.approx(0.25)
    # SR over R: h_on = 1.0; h_dl executed [walk] vs [walk, open]:
    #   R1 = F1(1, 1/2) = 2/3, R2 = R1 (pred has one atom), RL = 2/3 -> SR = 2/3, AC = 1/2;
    # the other three executed nothing -> 0. SR = (1 + 2/3)/5 = 1/3, AC = (1 + 1/2)/5 = 0.3
    assert m["n_sequence"] == 5
    assert m["SR"] == pytest.approx(1 / 3)
    assert m["AC"] == pytest.approx(0.3)
    # no usage anywhere -> zeros; no trigger ops -> None
    assert m["efficiency"]["model_calls_per_episode"] == 0
    assert m["efficiency"]["tokens_per_call"] is None
    assert m["trigger"] is None


def test_failed_executed_lines_are_not_atoms() -> None:
    rec = make_rec("e", [12], executed=[(REF_LINES[0], True), (REF_LINES[1], False)])
    out = episode_outcome(rec, make_ref("e", needs=True))
    # only [walk] counts: SR = 2/3 (see above), AC = 1/2
    assert out["sr"] == pytest.approx(2 / 3)
    assert out["ac"] == pytest.approx(0.5)


def test_per_family() -> None:
    records, refs = _mixed_set()
    m = compute_metrics(records, refs)
    fam = m["per_family"]
    assert list(fam) == ["fb", "goal", "none"]
    # fb: h_on, h_dl precise, h_pre premature -> PIR 2/3; TA: h_on, h_pre -> 2/3
    assert fam["fb"]["episodes"] == 3
    assert fam["fb"]["PIR"] == pytest.approx(2 / 3)
    assert fam["fb"]["TA"] == pytest.approx(2 / 3)
    assert fam["fb"]["PSR"] is None
    assert fam["fb"]["PIA"] == pytest.approx(2 / 3)
    # goal: late + missed -> PIR 0
    assert fam["goal"]["PIR"] == 0.0
    assert fam["goal"]["late_rate"] == pytest.approx(0.5)
    # none: S only
    assert fam["none"]["PIR"] is None and fam["none"]["TA"] is None
    assert fam["none"]["SR"] is None and fam["none"]["AC"] is None
    assert fam["none"]["PSR"] == pytest.approx(2 / 3)
    assert fam["none"]["PIA"] == pytest.approx(2 / 3)
    assert compute_metrics(records, refs, by_family=False)["per_family"] is None


def test_no_needed_help_episodes() -> None:
    refs = [make_ref("s1", needs=False), make_ref("s2", needs=False)]
    records = [make_rec("s1", []), make_rec("s2", [5])]
    m = compute_metrics(records, refs)
    assert m["n_help"] == 0
    for key in ("PIR", "TA", "SR", "AC", "premature_rate", "late_rate", "missed_rate"):
        assert m[key] is None, key
    assert m["PSR"] == pytest.approx(0.5)
    assert m["PIA"] == pytest.approx(0.5)  # only PSR exists
    assert m["silent_all"] == pytest.approx(0.5)


def test_no_silent_episodes_and_empty_records() -> None:
    m = compute_metrics([make_rec("h", [15])], [make_ref("h", needs=True)])
    assert m["PSR"] is None and m["false_alarm_rate"] is None
    assert m["PIR"] == 1.0 and m["PIA"] == 1.0
    empty = compute_metrics([], [make_ref("h", needs=True)])
    assert empty["episodes"] == 0
    assert empty["PIA"] is None and empty["harm_rate"] is None
    assert empty["efficiency"]["tokens_per_episode"] is None


def test_empty_reference_program_excluded_from_sr() -> None:
    refs = [make_ref("a", needs=True), make_ref("b", needs=True, actions=["bogus"])]
    records = [make_rec("a", [12], executed=[(REF_LINES[0], True), (REF_LINES[1], True)])]
    records.append(make_rec("b", [12]))
    m = compute_metrics(records, refs)
    # b's reference has no atoms -> only a counts: SR = AC = 1.0 (0.5 if b were included)
    assert m["n_sequence"] == 1
    assert m["SR"] == 1.0 and m["AC"] == 1.0


def test_efficiency() -> None:
    refs = [make_ref(e, needs=False) for e in ("x", "y", "z")]
    records = [
        make_rec(
            "x",
            usage={
                "model_calls": 2,
                "prompt_tokens": 100,
                "completion_tokens": 20,
                "seconds": 1.5,
                "decisions": 3,
            },
        ),
        make_rec("y", usage={"model_calls": 0}),
        make_rec("z"),  # usage missing -> zeros
    ]
    eff = compute_metrics(records, refs)["efficiency"]
    assert eff["model_calls_per_episode"] == pytest.approx(2 / 3)
    assert eff["tokens_per_episode"] == pytest.approx(40.0)  # 120 / 3
    assert eff["prompt_tokens_per_episode"] == pytest.approx(100 / 3)
    assert eff["completion_tokens_per_episode"] == pytest.approx(20 / 3)
    assert eff["tokens_per_call"] == pytest.approx(60.0)  # 120 / 2 calls
    assert eff["seconds_per_decision"] == pytest.approx(0.5)  # 1.5 s / 3 decisions


def test_trigger_op_accuracy() -> None:
    refs = [make_ref(e, needs=False) for e in ("x", "y", "z")]
    records = [
        make_rec("x", trigger_ops=[{"predicted": "reasoning_run", "label": "reasoning_run"}]),
        make_rec(
            "y",
            trigger_ops=[
                {"predicted": "noop", "label": "noop"},
                {"predicted": "noop", "label": "noop"},
                {"predicted": "action_run", "label": "reasoning_run"},
            ],
        ),
        make_rec("z"),
    ]
    trig = compute_metrics(records, refs)["trigger"]
    # 3 of 4 correct overall; excluding noop labels: 1 of 2
    assert trig["ops"] == 4 and trig["ops_no_noop"] == 2
    assert trig["op_accuracy"] == pytest.approx(0.75)
    assert trig["op_accuracy_no_noop"] == pytest.approx(0.5)
    assert trigger_accuracy([make_rec("x")]) is None
    only_noop = trigger_accuracy([make_rec("x", trigger_ops=[{"predicted": "x", "label": "noop"}])])
    assert only_noop is not None
    assert only_noop["op_accuracy"] == 0.0 and only_noop["op_accuracy_no_noop"] is None


def test_compute_metrics_is_pure_and_accepts_iterables() -> None:
    records, refs = _mixed_set()
    before = (copy.deepcopy(records), copy.deepcopy(refs))
    m1 = compute_metrics(iter(records), iter(refs.values()))
    m2 = compute_metrics(records, refs)
    assert m1 == m2
    assert (records, refs) == before


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------


def test_duplicate_episode_raises() -> None:
    refs = [make_ref("e1", needs=False)]
    with pytest.raises(ValueError, match="e1.*duplicate"):
        compute_metrics([make_rec("e1"), make_rec("e1")], refs)


def test_foreign_episode_raises() -> None:
    with pytest.raises(ValueError, match="ghost"):
        compute_metrics([make_rec("ghost")], [make_ref("e1", needs=False)])


def test_missing_keys_raise() -> None:
    rec = make_rec("e1")
    del rec["harm"]
    with pytest.raises(ValueError, match=r"e1.*'harm'"):
        compute_metrics([rec], [make_ref("e1", needs=False)])
    ref = make_ref("e2", needs=True)
    ref["window"] = None
    with pytest.raises(ValueError, match=r"e2.*window"):
        episode_outcome(make_rec("e2"), ref)
    bad_tick = make_rec("e3", [1])
    bad_tick["actions"][0]["tick"] = "1"
    with pytest.raises(ValueError, match=r"e3.*tick"):
        episode_outcome(bad_tick, make_ref("e3", needs=False))
    ref4 = make_ref("e4", needs=False)
    del ref4["family"]
    with pytest.raises(ValueError, match=r"e4.*'family'"):
        episode_outcome(make_rec("e4"), ref4)


def test_reference_and_agent_errors() -> None:
    with pytest.raises(ValueError, match="e1.*duplicate reference"):
        compute_metrics([], [make_ref("e1", needs=False), make_ref("e1", needs=False)])
    with pytest.raises(ValueError, match="e9"):
        compute_metrics([], {"e1": make_ref("e9", needs=False)})
    refs = [make_ref("e1", needs=False), make_ref("e2", needs=False)]
    with pytest.raises(ValueError, match="several agents"):
        compute_metrics([make_rec("e1", agent="a"), make_rec("e2", agent="b")], refs)
    with pytest.raises(ValueError, match="listed under agent"):
        compute_table({"a": [make_rec("e1", agent="b")]}, refs)


# ---------------------------------------------------------------------------------------
# Table and percentages
# ---------------------------------------------------------------------------------------


def test_compute_table_and_percentages() -> None:
    records, refs = _mixed_set()
    silent = [make_rec(r["episode_id"], agent="silent") for r in records]
    table = compute_table({"a": records, "silent": silent}, iter(refs.values()))
    assert set(table) == {"a", "silent"}
    assert table["a"]["PIR"] == pytest.approx(0.4)
    # the always-silent agent: PIR 0, PSR 1, PIA 0.5, silent_all 1
    assert table["silent"]["PIR"] == 0.0 and table["silent"]["PSR"] == 1.0
    assert table["silent"]["PIA"] == pytest.approx(0.5)
    assert table["silent"]["silent_all"] == 1.0

    m = table["a"]
    pct = as_percentages(m)
    assert pct["PIR"] == 40.0
    assert pct["PIA"] == 53.33  # (0.4 + 2/3)/2 = 0.5333...
    assert pct["PSR"] == 66.67
    assert pct["episodes"] == 8  # counts untouched
    assert pct["per_family"]["fb"]["PIR"] == 66.67
    assert pct["per_family"]["none"]["PIR"] is None
    assert m["PIR"] == pytest.approx(0.4)  # input not modified
    trig = as_percentages({"PIR": None, "trigger": {"op_accuracy": 0.75, "ops": 4}})
    assert trig["PIR"] is None
    assert trig["trigger"] == {"op_accuracy": 75.0, "ops": 4}


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------

_CLASSES = ["apple", "fridge", "cabinet", "mug", "character"]
_atom = st.one_of(
    st.tuples(st.just("standup"), st.just(())),
    st.tuples(
        st.sampled_from(["walk", "open", "grab"]),
        st.tuples(st.sampled_from(_CLASSES)),
    ),
    st.tuples(
        st.sampled_from(["putin", "putback", "give"]),
        st.tuples(st.sampled_from(_CLASSES), st.sampled_from(_CLASSES)),
    ),
)
_seq = st.lists(_atom, max_size=8)


@settings(max_examples=300, deadline=None)
@given(pred=_seq, ref=_seq)
def test_property_bounds(pred: list[Any], ref: list[Any]) -> None:
    for fn in (unigram_f1, bigram_f1, lcs_f1, sequence_similarity, action_correctness):
        value = fn(pred, ref)
        assert 0.0 <= value <= 1.0, (fn.__name__, value)
    if not pred or not ref:
        assert sequence_similarity(pred, ref) == 0.0


@settings(max_examples=200, deadline=None)
@given(seq=_seq.filter(bool))
def test_property_self_similarity(seq: list[Any]) -> None:
    assert sequence_similarity(seq, seq) == 1.0
    assert action_correctness(seq, seq) == 1.0


@settings(max_examples=200, deadline=None)
@given(
    episodes=st.lists(
        st.tuples(st.booleans(), st.one_of(st.none(), st.integers(0, 40))), max_size=12
    )
)
def test_property_timing_partition(episodes: list[tuple[bool, int | None]]) -> None:
    refs = [make_ref(f"e{i}", needs=needs) for i, (needs, _) in enumerate(episodes)]
    records = [make_rec(f"e{i}", [] if t is None else [t]) for i, (_, t) in enumerate(episodes)]
    m = compute_metrics(records, refs)
    if m["n_help"]:
        total = m["PIR"] + m["premature_rate"] + m["late_rate"] + m["missed_rate"]
        assert total == pytest.approx(1.0)
    if m["n_silent"]:
        assert m["PSR"] + m["false_alarm_rate"] == pytest.approx(1.0)
    if m["episodes"]:
        assert 0.0 <= m["silent_all"] <= 1.0


def test_breakdown_by_task_type_ability_and_twin_group() -> None:
    refs = {
        "fb_ok": make_ref("fb_ok", needs=True, family="false_belief_relocation"),
        "fb_late": make_ref("fb_late", needs=True, family="false_belief_relocation"),
        "spare": make_ref("spare", needs=False, family="false_belief_spare"),
        "reach": make_ref("reach", needs=True, family="implicit_goal_reach"),
        "found": make_ref("found", needs=False, family="search_self_found"),
        "routine": make_ref("routine", needs=False, family="routine"),
    }
    recs = [make_rec("fb_ok", [11], success=True), make_rec("fb_late", [25], success=True),
            make_rec("spare", []), make_rec("reach", [12], success=True), make_rec("found", []),
            make_rec("routine", [5])]  # a false alarm that counts toward no group
    b = compute_metrics(recs, refs)["breakdown"]
    assert list(b["task_type"]) == ["false_belief", "implicit_goal", "routine"]
    # the task types add up to every episode: routine is a type of its own
    assert sum(t["episodes"] for t in b["task_type"].values()) == len(refs)
    assert b["task_type"]["routine"] == {"episodes": 1, "n_help": 0, "n_silent": 1,
                                         "PHA": None, "PHR": None, "PSR": 0.0}
    assert b["task_type"]["false_belief"] == {"episodes": 3, "n_help": 2, "n_silent": 1,
                                              "PHA": 0.75, "PHR": 0.5, "PSR": 1.0}
    assert b["task_type"]["implicit_goal"] == {"episodes": 2, "n_help": 1, "n_silent": 1,
                                               "PHA": 1.0, "PHR": 1.0, "PSR": 1.0}
    ab = b["ability"]
    assert list(ab) == ["location_belief", "state_belief", "communication", "helper_attention",
                        "goal_inference", "special_population"]
    # a silent twin counts toward its help family's abilities; the search twin toward two
    assert (ab["location_belief"]["n_help"], ab["location_belief"]["n_silent"]) == (2, 2)
    assert ab["location_belief"]["PHA"] == pytest.approx(0.75)
    assert ab["goal_inference"]["PHA"] == 1.0 and ab["goal_inference"]["episodes"] == 2
    # a side is empty: PHR or PSR alone, no PHA
    assert ab["helper_attention"] == {"episodes": 1, "n_help": 1, "n_silent": 0, "PHA": None,
                                      "PHR": 1.0, "PSR": None}
    assert ab["special_population"]["PHA"] is None
    assert ab["state_belief"] == {"episodes": 0, "n_help": 0, "n_silent": 0, "PHA": None,
                                  "PHR": None, "PSR": None}
    groups = b["twin_group"]
    assert list(groups) == ["false_belief_relocation", "implicit_goal_reach",
                            "implicit_goal_search"]
    assert groups["false_belief_relocation"]["PHA"] == 0.75
    assert groups["implicit_goal_search"] == {"episodes": 1, "n_help": 0, "n_silent": 1,
                                              "PHA": None, "PHR": None, "PSR": 1.0}
    assert sum(g["episodes"] for g in groups.values()) == 5  # routine is in none
    pct = as_percentages(compute_metrics(recs, refs))["breakdown"]
    assert pct["ability"]["location_belief"]["PHA"] == 75.0
    assert pct["twin_group"]["implicit_goal_search"]["PSR"] == 100.0
    assert pct["ability"]["location_belief"]["n_help"] == 2  # counts stay counts


def test_breakdown_table_type_rows_add_up_to_every_episode(capsys) -> None:
    """The printed ability breakdown's "type" rows count every episode once, routine ones
    included (vh-dev-v5's shipped references: 97 typed and 3 routine episodes)."""
    import re

    from mindhelper_env.cli.tables import print_breakdown
    from mindhelper_env.scenarios.suites import suite_references

    refs = suite_references("vh-dev-v5")
    recs = [make_rec(eid, []) for eid in refs]  # a silent agent
    m = as_percentages(compute_metrics(recs, refs))
    assert m["breakdown"]["task_type"]["routine"]["episodes"] == sum(
        r["family"] == "routine" for r in refs.values()) > 0
    print_breakdown({"silent": m})
    out = capsys.readouterr().out
    rows = re.findall(r"type (\w+)\s*│\s*(\d+) \((\d+)/(\d+)\)", out)
    assert [r[0] for r in rows] == ["false_belief", "implicit_goal", "routine"], out
    assert sum(int(r[1]) for r in rows) == len(refs) == 100
    assert sum(int(r[2]) for r in rows) == m["n_help"]
