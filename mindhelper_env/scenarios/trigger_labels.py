"""Ground-truth Trigger operations per observation window (for scoring Trigger agents).

A Trigger agent (MindClaw) dispatches operations within each window; its record carries
``trigger_ops``: one ``{"predicted", "window", "tick"}`` per window, where ``predicted``
sums the window up (``action_run`` > ``reasoning_run`` > ``belief_update_actor_belief`` >
``belief_create_actor_belief`` > ``belief_update_visual_fact`` >
``belief_create_visual_fact`` > ``noop``). :func:`trigger_labels` gives the right operation
for every window of an episode, computed from the reference and the **no-help rollout**
(the episode simulated with the robot idle — what the agent observes until it first acts):

The window decided at tick ``t`` shows the ticks ``t - w .. t - 1`` (``w`` =
``window_ticks``; the window at tick 0 is the reset observation). Its label is the first
that applies of:

1. ``action_run`` — the episode needs help and ``onset < t <= deadline``: the window shows
   the onset (or comes after it) and acting now is precise;
2. ``reasoning_run`` — the window shows a visible struggle cue (a look that took nothing, a
   stretch, standing at a closed container with full hands; as
   :func:`mindhelper_env.scenarios.generator.observe_cues` finds them), whether or not the
   ideal observer judges it blocked: a cue outside the precise window is something to
   reason about, not to act on;
3. ``belief_update_actor_belief`` — some person's true belief about an object changed
   place or was erased in the window; ``belief_create_actor_belief`` — some person came to
   believe something new (at tick 0: anyone starts with beliefs);
4. ``belief_update_visual_fact`` — an object the home's cameras could see moved;
   ``belief_create_visual_fact`` — an object became visible for the first time (at tick 0:
   everything in view);
5. ``noop``.

Labels are ground truth: they never appear in ``info`` and agents must not read them. The
scorer attaches them with :func:`attach_trigger_labels`; operations recorded after the
robot's first intervention get ``label: None`` (the world no longer follows the no-help
rollout) and are not scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["trigger_labels", "attach_trigger_labels"]


def _visible(sim: Any, props: list[int]) -> dict[int, int]:
    w = sim.world
    out = {}
    for o in props:
        if not w.is_hidden(o):
            h = w.holder(o)
            out[o] = h if h is not None else w.anchor(o)
    return out


def _beliefs(sim: Any) -> dict[int, dict[int, int]]:
    return {a.id: dict(a.beliefs) for a in sim.actors}


def _belief_op(before: dict[int, dict[int, int]], after: dict[int, dict[int, int]]) -> str | None:
    created = False
    for pid, table in after.items():
        old = before.get(pid, {})
        for obj, loc in old.items():
            if table.get(obj) != loc:
                return "belief_update_actor_belief"
        if any(obj not in old for obj in table):
            created = True
    return "belief_create_actor_belief" if created else None


def _fact_op(before: dict[int, int], after: dict[int, int]) -> str | None:
    if any(obj in before and before[obj] != loc for obj, loc in after.items()):
        return "belief_update_visual_fact"
    if any(obj not in before for obj in after):
        return "belief_create_visual_fact"
    return None


def trigger_labels(spec: Mapping[str, Any], window_ticks: int = 3,
                   max_ticks: int = 150) -> list[dict[str, Any]]:
    """``[{"window", "tick", "label"}]`` for every window of the no-help rollout."""
    from mindhelper_env.backends.symbolic import Simulation
    from mindhelper_env.scenarios.generator import observe_cues

    if isinstance(window_ticks, bool) or not isinstance(window_ticks, int) or window_ticks < 1:
        raise ValueError(f"window_ticks must be a positive int, got {window_ticks!r}")
    ref = spec.get("reference") or {}
    window = ref.get("window") if ref.get("needs_intervention") else None
    onset = None if not window else int(window["onset_tick"])
    deadline = None if not window else int(window["deadline_tick"])

    cue_sim = Simulation(dict(spec))
    cue_sim.horizon = min(cue_sim.horizon, max_ticks)
    cue_ticks = {int(t) for t, _p, _c, _n in observe_cues(cue_sim)}

    sim = Simulation(dict(spec))
    sim.horizon = min(sim.horizon, max_ticks)
    w = sim.world
    props = [nid for nid, n in w.graph.nodes.items() if "GRABBABLE" in n.properties]
    beliefs, seen = _beliefs(sim), _visible(sim, props)
    start = {"beliefs": bool(any(beliefs.values())), "seen": bool(seen)}
    labels = [{"window": 0, "tick": 0,
               "label": "belief_create_actor_belief" if start["beliefs"]
               else "belief_create_visual_fact" if start["seen"] else "noop"}]
    k = 0
    while sim.tick < sim.horizon:
        first = sim.tick
        for _ in range(window_ticks):
            sim.step_tick()
            if sim.tick >= sim.horizon:
                break
        if sim.tick >= sim.horizon:
            break  # the env ends here: no decision follows this window
        k += 1
        t = sim.tick
        now_beliefs, now_seen = _beliefs(sim), _visible(sim, props)
        if onset is not None and deadline is not None and onset < t <= deadline:
            label = "action_run"
        elif any(first <= c < t for c in cue_ticks):
            label = "reasoning_run"
        else:
            label = (_belief_op(beliefs, now_beliefs) or _fact_op(seen, now_seen) or "noop")
        labels.append({"window": k, "tick": t, "label": label})
        beliefs, seen = now_beliefs, now_seen
    return labels


def attach_trigger_labels(record: dict[str, Any], spec: Mapping[str, Any],
                          window_ticks: int = 3) -> dict[str, Any]:
    """Fill ``label`` in ``record["trigger_ops"]`` from :func:`trigger_labels` (in place;
    returns the record). Operations are matched by ``tick`` (else ``window * window_ticks``);
    those after the robot's first non-silent program, or beyond the no-help rollout, get
    ``None``. A record without ``trigger_ops`` is returned unchanged.

    Raises ``ValueError`` if the record and the spec name different episodes.
    """
    ops = record.get("trigger_ops")
    if not isinstance(ops, list):
        return record
    rid, sid = record.get("episode_id"), spec.get("episode_id")
    if rid is not None and sid is not None and rid != sid:
        raise ValueError(f"record of episode {rid!r} cannot take labels of episode {sid!r}")
    from mindhelper_env.metrics import is_silence

    by_tick = {lab["tick"]: lab["label"] for lab in trigger_labels(spec, window_ticks)}
    acted = [int(a["tick"]) for a in record.get("actions", [])
             if not is_silence(str(a.get("program", "none")))]
    first_action = min(acted) if acted else None
    for op in ops:
        tick = op.get("tick")
        if not isinstance(tick, int):
            window = op.get("window")
            tick = window * window_ticks if isinstance(window, int) else None
        if tick is None or (first_action is not None and tick > first_action):
            op["label"] = None
        else:
            op["label"] = by_tick.get(tick)
    return record
