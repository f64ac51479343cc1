"""Scoring: every metric of docs/metrics.md, recomputed from result records and references.

Inputs are plain JSON-style dicts.

*Result record* (one per agent × episode)::

    {"episode_id": str, "agent": str, "suite": str | None,
     "actions": [{"tick": int, "program": str, "acts": bool}, ...],   # "acts" optional
     "executed": [{"tick": int, "line": str, "ok": bool, "reason": str | None,
                   "issued": int}, ...],
     "focus_success": bool, "harm": bool, "ticks": int, "steps": int,
     "usage": {"model_calls": int, "prompt_tokens": int, "completion_tokens": int,
               "seconds": float, "decisions": int},            # optional, missing -> zeros
     "trigger_ops": [{"predicted": str, "label": str | None}, ...]}   # optional

Only the keys scoring needs are required: ``episode_id``, ``actions``, ``executed``,
``focus_success`` and ``harm`` (see :data:`REQUIRED_RECORD_KEYS`).

*Reference record* (one per episode)::

    {"episode_id": str, "family": str, "needs_intervention": bool,
     "window": {"onset_tick": int, "deadline_tick": int} | None,
     "reference_actions": [str, ...], ...}

``window`` is required (and must satisfy ``onset_tick <= deadline_tick``) only when
``needs_intervention`` is true.

Notation: R is the set of episodes that need help, S the set that do not, and ``t_I`` the
time of the robot's *intervention*: the tick at which it **issued** its first program that
contains an *acting line* — a line that parses as a script line whose verb is not one of the
movement verbs walk, find and standup — whether or not that line was ever executed
(:func:`intervention_tick`). A robot that commits to act has intervened; replacing the
program later does not undo it. Movement is free: a robot whose programs only move never
intervenes. The env marks each program with ``"acts"``; records without the mark (written
before the rule, or by other tools) are judged by parsing ``program``.

All rates are fractions in ``[0, 1]``; a rate whose denominator set is empty is ``None``
(never ``0``), so that "not measured" cannot be mistaken for "always wrong".
:func:`as_percentages` converts for reporting.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mindhelper_env.similarity import (
    Atom,
    action_correctness,
    atom_similarity,
    atoms_from_lines,
    bigram_f1,
    lcs_f1,
    sequence_similarity,
    unigram_f1,
)
from mindhelper_env.world.script import (
    MOVEMENT_VERBS,
    is_silence,
    parse_program,
)

__all__ = [
    "Atom",
    "REQUIRED_RECORD_KEYS",
    "REQUIRED_REFERENCE_KEYS",
    "USAGE_FIELDS",
    "RATE_KEYS",
    "atoms_from_lines",
    "atom_similarity",
    "unigram_f1",
    "bigram_f1",
    "lcs_f1",
    "sequence_similarity",
    "action_correctness",
    "episode_outcome",
    "intervention_tick",
    "program_acts",
    "trigger_accuracy",
    "belief_accuracy",
    "compute_metrics",
    "compute_table",
    "breakdown",
    "BREAKDOWN_RATE_KEYS",
    "as_percentages",
]


#: Keys a result record must have.
REQUIRED_RECORD_KEYS: tuple[str, ...] = (
    "episode_id",
    "actions",
    "executed",
    "focus_success",
    "harm",
)

#: Keys a reference record must have (plus ``window`` when ``needs_intervention`` is true).
REQUIRED_REFERENCE_KEYS: tuple[str, ...] = (
    "episode_id",
    "family",
    "needs_intervention",
    "reference_actions",
)

#: Usage counters read from ``record["usage"]``; missing fields count as zero.
USAGE_FIELDS: tuple[str, ...] = (
    "model_calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "decisions",
    "parse_failures",
)

#: Keys of a metrics block that are fractions (converted by :func:`as_percentages`).
RATE_KEYS: tuple[str, ...] = (
    "PHA",
    "PHR",
    "PIR",
    "PSR",
    "PIA",
    "TA",
    "SR",
    "AC",
    "silent_all",
    "premature_rate",
    "late_rate",
    "missed_rate",
    "false_alarm_rate",
    "harm_rate",
)

_TRIGGER_RATE_KEYS: tuple[str, ...] = ("op_accuracy", "op_accuracy_no_noop")

#: Rates of a :func:`breakdown` group (converted by :func:`as_percentages`).
BREAKDOWN_RATE_KEYS: tuple[str, ...] = ("PHA", "PHR", "PSR")



# --------------------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(float(value))
    )


def _episode_label(record: Any) -> str:
    if isinstance(record, Mapping):
        eid = record.get("episode_id")
        if isinstance(eid, str):
            return eid
    return "<unknown>"


def _check_record(record: Any) -> str:
    """Validate a result record's required keys and types; return its episode id."""
    if not isinstance(record, Mapping):
        raise ValueError(f"result record must be a dict, got {type(record).__name__}")
    label = _episode_label(record)
    for key in REQUIRED_RECORD_KEYS:
        if key not in record:
            raise ValueError(f"episode {label!r}: result record missing key {key!r}")
    if not isinstance(record["episode_id"], str):
        raise ValueError(f"episode {label!r}: 'episode_id' must be a string")
    for key in ("focus_success", "harm"):
        if not _is_bool(record[key]):
            raise ValueError(f"episode {label!r}: {key!r} must be a bool")
    actions = record["actions"]
    if not isinstance(actions, list):
        raise ValueError(f"episode {label!r}: 'actions' must be a list")
    for k, action in enumerate(actions):
        if not isinstance(action, Mapping):
            raise ValueError(f"episode {label!r}: actions[{k}] must be a dict")
        for key in ("tick", "program"):
            if key not in action:
                raise ValueError(f"episode {label!r}: actions[{k}] missing key {key!r}")
        if not _is_int(action["tick"]):
            raise ValueError(f"episode {label!r}: actions[{k}].tick must be an int")
        if not isinstance(action["program"], str):
            raise ValueError(f"episode {label!r}: actions[{k}].program must be a string")
        if "acts" in action and not _is_bool(action["acts"]):
            raise ValueError(f"episode {label!r}: actions[{k}].acts must be a bool")
    executed = record["executed"]
    if not isinstance(executed, list):
        raise ValueError(f"episode {label!r}: 'executed' must be a list")
    for k, entry in enumerate(executed):
        if not isinstance(entry, Mapping):
            raise ValueError(f"episode {label!r}: executed[{k}] must be a dict")
        for key in ("line", "ok"):
            if key not in entry:
                raise ValueError(f"episode {label!r}: executed[{k}] missing key {key!r}")
        if not isinstance(entry["line"], str):
            raise ValueError(f"episode {label!r}: executed[{k}].line must be a string")
        if not _is_bool(entry["ok"]):
            raise ValueError(f"episode {label!r}: executed[{k}].ok must be a bool")
    usage = record.get("usage")
    if usage is not None and not isinstance(usage, Mapping):
        raise ValueError(f"episode {label!r}: 'usage' must be a dict")
    return record["episode_id"]


def _check_reference(reference: Any, episode_id: str) -> None:
    """Validate a reference record (the one scored against ``episode_id``)."""
    if not isinstance(reference, Mapping):
        raise ValueError(
            f"episode {episode_id!r}: reference must be a dict, got {type(reference).__name__}"
        )
    for key in REQUIRED_REFERENCE_KEYS:
        if key not in reference:
            raise ValueError(f"episode {episode_id!r}: reference missing key {key!r}")
    if reference["episode_id"] != episode_id:
        raise ValueError(
            f"episode {episode_id!r}: reference has episode_id {reference['episode_id']!r}"
        )
    if not isinstance(reference["family"], str):
        raise ValueError(f"episode {episode_id!r}: reference 'family' must be a string")
    if not _is_bool(reference["needs_intervention"]):
        raise ValueError(f"episode {episode_id!r}: reference 'needs_intervention' must be a bool")
    if not isinstance(reference["reference_actions"], list):
        raise ValueError(f"episode {episode_id!r}: reference 'reference_actions' must be a list")
    if reference["needs_intervention"]:
        window = reference.get("window")
        if not isinstance(window, Mapping):
            raise ValueError(
                f"episode {episode_id!r}: reference needs intervention but has no 'window'"
            )
        for key in ("onset_tick", "deadline_tick"):
            if key not in window:
                raise ValueError(f"episode {episode_id!r}: reference window missing key {key!r}")
            if not _is_int(window[key]):
                raise ValueError(f"episode {episode_id!r}: reference window {key!r} must be an int")
        if window["onset_tick"] > window["deadline_tick"]:
            raise ValueError(f"episode {episode_id!r}: reference window has onset after deadline")


def _usage(record: Mapping[str, Any]) -> dict[str, float]:
    """Usage counters of a record; a missing ``usage`` dict or field (or ``None``) is 0."""
    label = _episode_label(record)
    usage = record.get("usage") or {}
    out: dict[str, float] = {}
    for key in USAGE_FIELDS:
        value = usage.get(key, 0)
        if value is None:
            value = 0
        if not _is_number(value) or value < 0:
            raise ValueError(f"episode {label!r}: usage.{key} must be a non-negative number")
        out[key] = float(value) if key == "seconds" else int(value)
    out["tokens_estimated"] = bool(usage.get("tokens_estimated", False))
    return out


def _normalize_references(references: Any) -> dict[str, Mapping[str, Any]]:
    """Turn a mapping ``episode_id -> reference`` or an iterable of references into a dict.

    A reference lacking ``episode_id`` inside a mapping takes its key; a mismatch between
    key and ``episode_id`` is an error, as are duplicate ids in an iterable.
    """
    out: dict[str, Mapping[str, Any]] = {}
    if isinstance(references, Mapping):
        for key, ref in references.items():
            if not isinstance(ref, Mapping):
                raise ValueError(f"episode {key!r}: reference must be a dict")
            if "episode_id" not in ref:
                ref = {**ref, "episode_id": key}
            elif ref["episode_id"] != key:
                raise ValueError(
                    f"episode {key!r}: reference keyed {key!r} has episode_id {ref['episode_id']!r}"
                )
            out[key] = ref
        return out
    if isinstance(references, (str, bytes)):
        raise ValueError("references must be a mapping or an iterable of reference dicts")
    for ref in references:
        if not isinstance(ref, Mapping) or not isinstance(ref.get("episode_id"), str):
            raise ValueError("every reference must be a dict with a string 'episode_id'")
        eid = ref["episode_id"]
        if eid in out:
            raise ValueError(f"episode {eid!r}: duplicate reference")
        out[eid] = ref
    return out


# --------------------------------------------------------------------------------------
# Per-episode outcome
# --------------------------------------------------------------------------------------


def episode_outcome(record: Mapping[str, Any], reference: Mapping[str, Any]) -> dict[str, Any]:
    """Per-episode flags and scores.

    Returns a dict with:

    - ``episode_id``, ``family``, ``needs_help``;
    - ``intervened``: the robot issued a program containing an acting line (executed or
      not); ``silent`` is its negation; ``n_actions`` counts the non-``none`` programs;
    - ``t_I``: the issue tick of the first such program (:func:`intervention_tick`), or
      ``None``;
    - ``helpful_precise``: ``precise`` and the task succeeded and no harm (PHR's event);
    - ``precise`` (needs help and ``onset <= t_I <= deadline``), ``premature``
      (needs help and ``t_I < onset``), ``late`` (needs help and ``t_I > deadline``),
      ``missed`` (needs help and never acted) — for an episode in R exactly one of these
      four holds; all are ``False`` in S;
    - ``false_alarm``: no help needed and the robot acted;
    - ``success``: ``focus_success`` as recorded (only averaged over R for TA);
    - ``harm``: as recorded;
    - ``sr`` / ``ac``: :func:`sequence_similarity` / :func:`action_correctness` between
      the atoms of the executed lines with ``ok=True`` and the atoms of
      ``reference_actions``; only for episodes that need help and whose reference has at
      least one atom, otherwise ``None``;
    - the usage counters of :data:`USAGE_FIELDS`.

    Raises ``ValueError`` naming the episode and key for malformed input.
    """
    episode_id = _check_record(record)
    _check_reference(reference, episode_id)
    needs_help = bool(reference["needs_intervention"])

    ticks = [int(a["tick"]) for a in record["actions"] if not is_silence(a["program"])]
    t_i = intervention_tick(record["actions"])
    intervened = t_i is not None

    precise = premature = late = missed = False
    if needs_help:
        window = reference["window"]
        onset, deadline = int(window["onset_tick"]), int(window["deadline_tick"])
        if t_i is None:
            missed = True
        elif t_i < onset:
            premature = True
        elif t_i > deadline:
            late = True
        else:
            precise = True

    sr: float | None = None
    ac: float | None = None
    if needs_help:
        ref_atoms = atoms_from_lines(reference["reference_actions"])
        if ref_atoms:
            pred_atoms = atoms_from_lines(e["line"] for e in record["executed"] if e["ok"])
            sr = sequence_similarity(pred_atoms, ref_atoms)
            ac = action_correctness(pred_atoms, ref_atoms)

    outcome: dict[str, Any] = {
        "episode_id": episode_id,
        "family": reference["family"],
        "needs_help": needs_help,
        "intervened": intervened,
        "silent": not intervened,
        "n_actions": len(ticks),
        "t_I": t_i,
        "precise": precise,
        "premature": premature,
        "late": late,
        "missed": missed,
        "false_alarm": (not needs_help) and intervened,
        "helpful_precise": precise and bool(record["focus_success"]) and not bool(record["harm"]),
        "success": bool(record["focus_success"]),
        "harm": bool(record["harm"]),
        "sr": sr,
        "ac": ac,
    }
    outcome.update(_usage(record))
    return outcome


# --------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------


def program_acts(program: Any) -> bool:
    """Does ``program`` contain an acting line: a line that parses as a script line whose
    verb is not a movement verb (walk, find, standup)? ``none`` and non-strings do not."""
    if not isinstance(program, str) or is_silence(program):
        return False
    lines, _errors = parse_program(program)
    return any(line.verb not in MOVEMENT_VERBS for line in lines)


def intervention_tick(actions: Iterable[Mapping[str, Any]]) -> int | None:
    """``t_I`` of a record's ``actions``: the issue tick of the first program that contains
    an acting line (its ``"acts"`` mark when present, else :func:`program_acts` of its
    text), executed or not; None if there is none."""
    for action in actions:
        acts = action.get("acts")
        if acts is None:
            acts = program_acts(action.get("program"))
        if acts:
            return int(action["tick"])
    return None


def _rate(flags: Sequence[bool]) -> float | None:
    return sum(1 for f in flags if f) / len(flags) if flags else None


def _mean(values: Sequence[float]) -> float | None:
    return float(sum(values) / len(values)) if values else None


def _aggregate(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Headline metrics over a set of episode outcomes (see :func:`compute_metrics`)."""
    help_eps = [o for o in outcomes if o["needs_help"]]
    silent_eps = [o for o in outcomes if not o["needs_help"]]
    pir = _rate([o["precise"] for o in help_eps])
    psr = _rate([o["silent"] for o in silent_eps])
    phr = _rate([o["helpful_precise"] for o in help_eps])
    parts = [x for x in (pir, psr) if x is not None]
    pia = sum(parts) / len(parts) if parts else None
    parts = [x for x in (phr, psr) if x is not None]
    pha = sum(parts) / len(parts) if parts else None
    sr_values = [o["sr"] for o in help_eps if o["sr"] is not None]
    ac_values = [o["ac"] for o in help_eps if o["ac"] is not None]
    return {
        "episodes": len(outcomes),
        "n_help": len(help_eps),
        "n_silent": len(silent_eps),
        "n_sequence": len(sr_values),
        "PHA": pha,
        "PHR": phr,
        "PIR": pir,
        "PSR": psr,
        "PIA": pia,
        "TA": _rate([o["success"] for o in help_eps]),
        "SR": _mean(sr_values),
        "AC": _mean(ac_values),
        "silent_all": _rate([o["silent"] for o in outcomes]),
        "premature_rate": _rate([o["premature"] for o in help_eps]),
        "late_rate": _rate([o["late"] for o in help_eps]),
        "missed_rate": _rate([o["missed"] for o in help_eps]),
        "false_alarm_rate": _rate([o["false_alarm"] for o in silent_eps]),
        "harm_rate": _rate([o["harm"] for o in outcomes]),
    }


def _group_block(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """PHA, PHR, PSR and counts of one breakdown group; PHA is ``None`` when either side
    (help or silent episodes) is empty — a group is scored on both sides or not at all."""
    help_eps = [o for o in outcomes if o["needs_help"]]
    silent_eps = [o for o in outcomes if not o["needs_help"]]
    phr = _rate([o["helpful_precise"] for o in help_eps])
    psr = _rate([o["silent"] for o in silent_eps])
    return {
        "episodes": len(outcomes),
        "n_help": len(help_eps),
        "n_silent": len(silent_eps),
        "PHA": None if phr is None or psr is None else (phr + psr) / 2,
        "PHR": phr,
        "PSR": psr,
    }


#: The breakdown's task type of the episodes whose family has none (``routine``).
NO_TASK_TYPE = "routine"


def breakdown(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """PHA, PHR and PSR per task type, per ability and per twin group.

    ``outcomes`` are :func:`episode_outcome` results. The groups come from the episode's
    family (:mod:`mindhelper_env.scenarios.spec`): ``task_type`` (``false_belief``,
    ``implicit_goal``: :func:`~mindhelper_env.scenarios.spec.task_type`), ``ability``
    (:data:`~mindhelper_env.scenarios.spec.ABILITIES`; an episode counts toward every
    ability of :func:`~mindhelper_env.scenarios.spec.family_abilities`) and ``twin_group``
    (:func:`~mindhelper_env.scenarios.spec.twin_group`: a help family and its silent twins,
    keyed by the help family). A silent twin counts toward its help family's type,
    abilities and group; ``routine`` (and an unknown family) toward no ability and no
    group, and toward the task type ``routine`` (listed after the two types, only when
    there is such an episode), so that the task types add up to every episode.

    Every block is ``{"episodes", "n_help", "n_silent", "PHA", "PHR", "PSR"}`` with
    ``PHA = (PHR over its help episodes + PSR over its silent episodes) / 2``, ``None`` when
    either side is empty. Task types and abilities are listed in their canonical order,
    every one of them (an empty group has ``episodes = 0``; ``routine`` only when it has
    episodes); twin groups only when they have episodes, sorted.
    """
    from mindhelper_env.scenarios.spec import (
        ABILITIES,
        TASK_TYPES,
        family_abilities,
        task_type,
        twin_group,
    )

    by_type: dict[str, list[Mapping[str, Any]]] = {t: [] for t in (*TASK_TYPES, NO_TASK_TYPE)}
    by_ability: dict[str, list[Mapping[str, Any]]] = {a: [] for a in ABILITIES}
    by_group: dict[str, list[Mapping[str, Any]]] = {}
    for o in outcomes:
        family = o["family"]
        by_type.setdefault(task_type(family) or NO_TASK_TYPE, []).append(o)
        for ability in family_abilities(family):
            by_ability.setdefault(ability, []).append(o)
        group = twin_group(family)
        if group is not None:
            by_group.setdefault(group, []).append(o)
    if not by_type[NO_TASK_TYPE]:
        del by_type[NO_TASK_TYPE]
    return {
        "task_type": {k: _group_block(v) for k, v in by_type.items()},
        "ability": {k: _group_block(v) for k, v in by_ability.items()},
        "twin_group": {k: _group_block(by_group[k]) for k in sorted(by_group)},
    }


def _efficiency(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Per-episode and per-call usage; ``None`` where the denominator is zero."""
    n = len(outcomes)
    calls = sum(o["model_calls"] for o in outcomes)
    prompt = sum(o["prompt_tokens"] for o in outcomes)
    completion = sum(o["completion_tokens"] for o in outcomes)
    seconds = sum(o["seconds"] for o in outcomes)
    decisions = sum(o["decisions"] for o in outcomes)
    failures = sum(o["parse_failures"] for o in outcomes)
    return {
        "model_calls_per_episode": calls / n if n else None,
        "tokens_per_episode": (prompt + completion) / n if n else None,
        "prompt_tokens_per_episode": prompt / n if n else None,
        "completion_tokens_per_episode": completion / n if n else None,
        "tokens_per_call": (prompt + completion) / calls if calls else None,
        "model_calls_per_decision": calls / decisions if decisions else None,
        "tokens_per_decision": (prompt + completion) / decisions if decisions else None,
        "seconds_per_decision": seconds / decisions if decisions else None,
        "parse_failures": failures,
        "parse_failures_per_episode": failures / n if n else None,
        "tokens_estimated_episodes": sum(1 for o in outcomes if o.get("tokens_estimated")),
    }


def trigger_accuracy(records: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Trigger operation accuracy against oracle labels, pooled over all operations.

    ``op_accuracy`` is the share of operations with ``predicted == label``;
    ``op_accuracy_no_noop`` the same over operations whose *oracle label* is not
    ``noop``. Returns ``None`` when no record carries a ``trigger_ops`` list (the agent
    is not Trigger-based); an accuracy with no operations to count is ``None``. Operations
    without a ``label`` (missing or ``None``: labels not attached, see
    :func:`mindhelper_env.scenarios.trigger_labels.attach_trigger_labels`) are not scored
    and are counted in ``unlabeled``.
    """
    present = False
    total = correct = total_nn = correct_nn = unlabeled = 0
    for record in records:
        ops = record.get("trigger_ops")
        if ops is None:
            continue
        label = _episode_label(record)
        if not isinstance(ops, list):
            raise ValueError(f"episode {label!r}: 'trigger_ops' must be a list")
        present = True
        for k, op in enumerate(ops):
            if not isinstance(op, Mapping):
                raise ValueError(f"episode {label!r}: trigger_ops[{k}] must be a dict")
            if not isinstance(op.get("predicted"), str):
                raise ValueError(
                    f"episode {label!r}: trigger_ops[{k}] missing string key 'predicted'"
                )
            if op.get("label") is None:
                unlabeled += 1  # the agent's own record, before labels were attached
                continue
            if not isinstance(op["label"], str):
                raise ValueError(f"episode {label!r}: trigger_ops[{k}] 'label' must be a string")
            hit = op["predicted"] == op["label"]
            total += 1
            correct += hit
            if op["label"] != "noop":
                total_nn += 1
                correct_nn += hit
    if not present:
        return None
    return {
        "ops": total,
        "ops_no_noop": total_nn,
        "unlabeled": unlabeled,
        "op_accuracy": correct / total if total else None,
        "op_accuracy_no_noop": correct_nn / total_nn if total_nn else None,
    }


def belief_accuracy(
    records: Iterable[Mapping[str, Any]],
    references: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """Belief accuracy at the intervention tick, pooled over episodes.

    A record's optional ``belief`` block (written only for agents with a belief table:
    MindClaw, the belief tracker) holds, at the tick the agent issued its first acting
    program, the agent's table ``agent`` and every simulated person's true table ``truth``,
    both ``{person: {object: place}}``. A (person, object) pair *matches* when both tables
    hold it with the same place; a pair in only one table is a mismatch. ``accuracy`` is
    matches over the union of pairs; ``task_accuracy`` the same over the pairs of the
    episode's task object (``target_object`` of the reference, where ``references`` are
    given and it has one). Returns ``None`` when no record has a ``belief`` block; an
    accuracy with no pair to count is ``None``.
    """
    present = False
    episodes = pairs = matches = task_pairs = task_matches = 0
    for record in records:
        block = record.get("belief")
        if block is None:
            continue
        label = _episode_label(record)
        if not isinstance(block, Mapping) or not isinstance(block.get("agent"), Mapping) \
                or not isinstance(block.get("truth"), Mapping):
            raise ValueError(f"episode {label!r}: 'belief' must be a dict with 'agent' and "
                             "'truth' tables")
        present = True
        episodes += 1
        target = None
        if references is not None:
            ref = references.get(str(record.get("episode_id"))) or {}
            if ref.get("target_object") is not None:
                target = str(ref["target_object"])
        mine, truth = block["agent"], block["truth"]
        for person in set(mine) | set(truth):
            a_row = mine.get(person) or {}
            t_row = truth.get(person) or {}
            for obj in set(a_row) | set(t_row):
                hit = obj in a_row and obj in t_row and a_row[obj] == t_row[obj]
                pairs += 1
                matches += hit
                if target is not None and obj == target:
                    task_pairs += 1
                    task_matches += hit
    if not present:
        return None
    return {
        "episodes": episodes,
        "pairs": pairs,
        "task_pairs": task_pairs,
        "accuracy": matches / pairs if pairs else None,
        "task_accuracy": task_matches / task_pairs if task_pairs else None,
    }


def compute_metrics(
    records: Iterable[Mapping[str, Any]],
    references: Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]],
    *,
    by_family: bool = True,
) -> dict[str, Any]:
    """All §7 metrics for ONE agent's result records. Pure: inputs are not modified.

    ``references`` is a mapping ``episode_id -> reference`` or an iterable of references.
    References without a record are ignored (a run may cover part of a suite); records
    whose episode is not in ``references``, duplicate episode ids among ``records``,
    records of more than one ``agent``, and malformed records raise ``ValueError`` naming
    the episode.

    Returned keys (fractions in ``[0, 1]``, ``None`` when the denominator set is empty):

    - ``episodes``, ``n_help`` (= |R|), ``n_silent`` (= |S|), ``n_sequence`` (episodes
      of R with a non-empty reference program, the denominator of SR and AC);
    - ``PIR``, ``TA``, ``premature_rate``, ``late_rate``, ``missed_rate`` over R;
      ``PSR``, ``false_alarm_rate`` over S; ``SR``, ``AC`` are means over the
      ``n_sequence`` episodes; ``silent_all`` and ``harm_rate`` over all episodes;
    - ``PIA`` = (PIR + PSR) / 2; if only one of them exists (R or S empty) PIA equals
      that one, and it is ``None`` when neither does;
    - ``PHR`` (precise helpful rate) over R: the first intervention is in the window *and*
      the task succeeded *and* no harm; ``PHA`` = (PHR + PSR) / 2 (same rule as PIA). PIA
      rewards timing alone; PHA also needs help that works and harms no one;
    - ``efficiency``: ``model_calls_per_episode``, ``tokens_per_episode``
      (prompt + completion), ``prompt_tokens_per_episode``,
      ``completion_tokens_per_episode``, ``tokens_per_call`` (``None`` with no calls),
      ``model_calls_per_decision``, ``tokens_per_decision``, ``seconds_per_decision``
      (``None`` with no decisions), ``parse_failures`` (total) and
      ``parse_failures_per_episode``, ``tokens_estimated_episodes`` (episodes whose token
      counts are estimates because the server sent no usage);
    - ``trigger``: see :func:`trigger_accuracy` (``None`` for non-Trigger agents);
    - ``belief``: see :func:`belief_accuracy` (``None`` for agents without a belief table);
    - ``breakdown``: :func:`breakdown` — ``{"task_type" | "ability" | "twin_group":
      {group: {"episodes", "n_help", "n_silent", "PHA", "PHR", "PSR"}}}``;
    - ``per_family``: ``{family: headline block}`` sorted by family (the same keys as
      the top level minus ``efficiency``, ``trigger``, ``breakdown`` and ``per_family``), or ``None``
      when ``by_family`` is false.
    """
    refs = _normalize_references(references)
    records = list(records)
    seen: set[str] = set()
    agents: set[str] = set()
    outcomes: list[dict[str, Any]] = []
    for record in records:
        episode_id = _check_record(record)
        if episode_id in seen:
            raise ValueError(f"episode {episode_id!r}: duplicate result record")
        seen.add(episode_id)
        if episode_id not in refs:
            raise ValueError(f"episode {episode_id!r}: not in the references (foreign episode)")
        agent = record.get("agent")
        if isinstance(agent, str):
            agents.add(agent)
            if len(agents) > 1:
                raise ValueError(
                    f"episode {episode_id!r}: records of several agents {sorted(agents)}; "
                    "score one agent at a time (see compute_table)"
                )
        outcomes.append(episode_outcome(record, refs[episode_id]))

    result = _aggregate(outcomes)
    result["efficiency"] = _efficiency(outcomes)
    result["trigger"] = trigger_accuracy(records)
    result["belief"] = belief_accuracy(records, refs)
    result["breakdown"] = breakdown(outcomes)
    if by_family:
        families: dict[str, list[dict[str, Any]]] = {}
        for o in outcomes:
            families.setdefault(o["family"], []).append(o)
        result["per_family"] = {f: _aggregate(families[f]) for f in sorted(families)}
    else:
        result["per_family"] = None
    return result


def compute_table(
    records_by_agent: Mapping[str, Iterable[Mapping[str, Any]]],
    references: Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]],
    *,
    by_family: bool = True,
) -> dict[str, dict[str, Any]]:
    """:func:`compute_metrics` for each agent: ``{agent: metrics}``.

    ``references`` is read once (an iterator is fine). A record whose ``agent`` field
    differs from the key it is listed under raises ``ValueError``.
    """
    refs = _normalize_references(references)
    table: dict[str, dict[str, Any]] = {}
    for agent, records in records_by_agent.items():
        records = list(records)
        for record in records:
            if isinstance(record, Mapping):
                rec_agent = record.get("agent")
                if isinstance(rec_agent, str) and rec_agent != agent:
                    raise ValueError(
                        f"episode {_episode_label(record)!r}: record of agent {rec_agent!r} "
                        f"listed under agent {agent!r}"
                    )
        table[agent] = compute_metrics(records, refs, by_family=by_family)
    return table


def _percent(value: Any) -> Any:
    return None if value is None else round(float(value) * 100.0, 2)


def as_percentages(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a :func:`compute_metrics` result with rates as percentages.

    The keys of :data:`RATE_KEYS` (at the top level and in every ``per_family`` block),
    the trigger accuracies and the rates of every ``breakdown`` group
    (:data:`BREAKDOWN_RATE_KEYS`) become ``round(100 * x, 2)``; ``None`` stays ``None``.
    Counts and efficiency figures are unchanged. The input is not modified.
    """
    out = copy.deepcopy(dict(metrics))
    for key in RATE_KEYS:
        if key in out:
            out[key] = _percent(out[key])
    trigger = out.get("trigger")
    if isinstance(trigger, dict):
        for key in _TRIGGER_RATE_KEYS:
            if key in trigger:
                trigger[key] = _percent(trigger[key])
    belief = out.get("belief")
    if isinstance(belief, dict):
        for key in ("accuracy", "task_accuracy"):
            if key in belief:
                belief[key] = _percent(belief[key])
    groups = out.get("breakdown")
    if isinstance(groups, dict):
        for blocks in groups.values():
            for block in blocks.values():
                for key in BREAKDOWN_RATE_KEYS:
                    if key in block:
                        block[key] = _percent(block[key])
    per_family = out.get("per_family")
    if isinstance(per_family, dict):
        out["per_family"] = {f: as_percentages(block) for f, block in per_family.items()}
    return out
