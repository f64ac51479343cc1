"""MindClaw's Trigger: the dispatcher that picks the next operation within a window.

The engine calls :meth:`Trigger.dispatch` repeatedly in a window until it returns
``action_run`` or ``noop``. The operations (:data:`TRIGGER_OPS`, in index order):

====  ==============================  =============================================
 0    ``belief_create_visual_fact``   commit where the robot first saw objects
 1    ``belief_update_visual_fact``   commit objects seen somewhere new
 2    ``belief_create_actor_belief``  commit new rows of people's belief tables
 3    ``belief_update_actor_belief``  commit changed or erased rows
 4    ``reasoning_run``               judge the next struggle cue (Mental Reasoning)
 5    ``action_run``                  generate and issue the helpful program; ends the window
 6    ``noop``                        nothing (more) to do; ends the window
====  ==============================  =============================================

Decision order per call: (1) **deterministic skill matchers** — the next unhandled cue is
matched against the skill book; a high-confidence ``noop`` skill drops the cue (no
reasoning needed), an ``action_run`` skill on a stretch or stand cue sets the need and
returns ``action_run`` directly; (2) the **policy** — by default the rule policy
(:func:`rule_policy`: pending belief operations in table order, then ``action_run`` if a
need was found, then ``reasoning_run`` while cues are unhandled, else ``noop``).

A learned policy replaces the rule policy with ``Trigger(policy=fn)``, where
``fn(features, mask) -> int`` gets :func:`trigger_features` (a float32 vector of
:data:`TRIGGER_FEATURE_SIZE`) and :func:`action_mask` (bool, one per operation) and returns
an index into :data:`TRIGGER_OPS`. An index that is out of range or masked is replaced by
the rule policy's choice and counted in ``Trigger.policy_errors``. After
:data:`MAX_DISPATCHES` calls in one window the Trigger returns ``noop``.

Feature vector (:data:`FEATURE_NAMES`, all in [0, 1]): pending changes of each of the four
belief operations (count / 10, capped at 1); unhandled cues (count / 5, capped); the next
unhandled cue's kind one-hot (look, stretch, stand) and its signature flags (noticed,
believed_here, usual_place, small, hands_full); the best matching skill's confidence; a
need found (1/0); already acted (1/0); dispatches so far this window / ``MAX_DISPATCHES``;
the decision tick / 200 (capped).

:func:`policy_observation` appends :data:`EXTRA_FEATURE_NAMES` to those 18: the next cue's
``expected_missing`` and ``astray_class`` signature flags (see
:meth:`~.memory.MindMemory.cue_signature`); ``knows_other`` — an object the person
expected at the place is elsewhere, and for each such object the person's committed table
holds another object of its class where the robot last saw it; ``usual_seen`` — for some
class kept at the place that the person's table holds nothing of, the robot saw an object
of that class at a usual place for it (not held). This is the observation of the Trigger env
(``MindHelper-Trigger-v3``) and of the shipped learned Trigger. ``Trigger(features=fn)``
chooses which vector the policy gets (default :func:`trigger_features`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mindhelper_env.agents.mindclaw.memory import BELIEF_OPS, CueContext, MindMemory, Perception
from mindhelper_env.agents.mindclaw.skills import SkillBook
from mindhelper_env.scenarios.observer import Need

__all__ = ["TRIGGER_OPS", "TRIGGER_FEATURE_SIZE", "FEATURE_NAMES", "MAX_DISPATCHES",
           "EXTRA_FEATURE_NAMES", "OBSERVATION_NAMES", "OBSERVATION_SIZE", "policy_observation",
           "WindowState", "Trigger", "trigger_features", "action_mask", "rule_policy",
           "op_index", "window_op", "look_context", "mask_flags"]

TRIGGER_OPS: tuple[str, ...] = (*BELIEF_OPS, "reasoning_run", "action_run", "noop")

FEATURE_NAMES: tuple[str, ...] = (
    "pending_create_visual_fact", "pending_update_visual_fact",
    "pending_create_actor_belief", "pending_update_actor_belief",
    "unhandled_cues",
    "cue_look", "cue_stretch", "cue_stand",
    "cue_noticed", "cue_believed_here", "cue_usual_place", "cue_small", "cue_hands_full",
    "skill_confidence", "need_found", "acted", "dispatches", "tick",
)
#: Length of :func:`trigger_features`' vector.
TRIGGER_FEATURE_SIZE = len(FEATURE_NAMES)
#: Features :func:`policy_observation` adds after :data:`FEATURE_NAMES`.
EXTRA_FEATURE_NAMES: tuple[str, ...] = ("cue_expected_missing", "cue_astray_class",
                                         "cue_knows_other", "cue_usual_seen")
OBSERVATION_NAMES: tuple[str, ...] = FEATURE_NAMES + EXTRA_FEATURE_NAMES
#: Length of :func:`policy_observation`'s vector.
OBSERVATION_SIZE = len(OBSERVATION_NAMES)
#: Dispatches per window after which the Trigger answers ``noop``.
MAX_DISPATCHES = 64

Policy = Callable[[np.ndarray, np.ndarray], int]


def op_index(op: str) -> int:
    return TRIGGER_OPS.index(op)


@dataclass
class WindowState:
    """The Trigger's view of the current window (built by the engine)."""

    perception: Perception
    acted: bool = False
    needs: list[tuple[Need, str]] = field(default_factory=list)
    dispatches: int = 0
    skill_hits: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tick(self) -> int:
        return self.perception.tick

    def next_cue(self) -> CueContext | None:
        for c in self.perception.cues:
            if not c.handled:
                return c
        return None

    def unhandled(self) -> int:
        return sum(1 for c in self.perception.cues if not c.handled)


def action_mask(memory: MindMemory, state: WindowState) -> np.ndarray:
    """Which operations are valid now (bool, one per :data:`TRIGGER_OPS` entry).

    A belief operation needs pending changes of its kind; ``reasoning_run`` an unhandled
    cue and no intervention yet; ``action_run`` a need found and no intervention yet;
    ``noop`` is always valid.
    """
    return np.array(mask_flags(state), dtype=bool)


def mask_flags(state: WindowState) -> list[bool]:
    """:func:`action_mask` as a list (cheaper to test when no array is needed)."""
    count = state.perception.count
    free = not state.acted
    return [count(op) > 0 for op in BELIEF_OPS] + [
        free and state.next_cue() is not None, free and bool(state.needs), True]


def trigger_features(memory: MindMemory, state: WindowState,
                     skills: SkillBook | None = None) -> np.ndarray:
    """The documented feature vector (float32, length :data:`TRIGGER_FEATURE_SIZE`)."""
    return np.array(_feature_list(state, skills), dtype=np.float32)


def _feature_list(state: WindowState, skills: SkillBook | None) -> list[Any]:
    """:func:`trigger_features` as a list (in :data:`FEATURE_NAMES` order)."""
    count = state.perception.count
    x: list[Any] = [min(count(op) / 10.0, 1.0) for op in BELIEF_OPS]
    x.append(min(state.unhandled() / 5.0, 1.0))
    cue = state.next_cue()
    if cue is not None:
        sig = cue.signature
        kind = [0.0, 0.0, 0.0]
        kind[("look", "stretch", "stand").index(sig["kind"])] = 1.0
        x += kind
        x += [float(bool(sig.get(key))) for key in ("noticed", "believed_here",
                                                     "usual_place", "small", "hands_full")]
        x.append(skills.confidence(sig) if skills is not None else 0.0)
    else:
        x += [0.0] * 9
    x += [float(bool(state.needs)), float(state.acted),
          min(state.dispatches / MAX_DISPATCHES, 1.0), min(max(state.tick, 0) / 200.0, 1.0)]
    return x


def policy_observation(memory: MindMemory, state: WindowState,
                       skills: SkillBook | None = None) -> np.ndarray:
    """:func:`trigger_features` plus :data:`EXTRA_FEATURE_NAMES` (float32, length
    :data:`OBSERVATION_SIZE`, all in [0, 1])."""
    # one list (in OBSERVATION_NAMES order), then one float32 array
    x = _feature_list(state, skills)
    cue = state.next_cue()
    if cue is not None:
        x += [float(bool(cue.signature.get(key))) for key in ("expected_missing",
                                                               "astray_class")]
        x += look_context(memory, cue)
    else:
        x += [0.0] * len(EXTRA_FEATURE_NAMES)
    return np.array(x, dtype=np.float32)


def look_context(memory: MindMemory, ctx: CueContext) -> tuple[float, float]:
    """``(knows_other, usual_seen)`` of a cue (see the module docstring)."""
    from mindhelper_env.agents.mindclaw.memory import classes_kept_at
    from mindhelper_env.scenarios.observer import is_usual_place

    t = memory.tracker
    place = ctx.cue.place
    prior = ctx.prior_beliefs
    cls = t.classes
    missing = [o for o, loc in prior.items() if loc == place and t.where.get(o) not in
               (None, place)]
    knows_other = bool(missing) and all(
        any(o2 != o and cls.get(o2) == cls.get(o) and t.where.get(o2) == loc2
            for o2, loc2 in prior.items()) for o in missing)
    known = {cls.get(o) for o in prior}
    usual_seen = False
    for c in classes_kept_at(cls.get(place, "")):
        if c in known:
            continue
        if any(cls.get(o) == c and loc not in t.people and loc != t.robot_id
               and is_usual_place(c, cls.get(loc, "")) for o, loc in t.where.items()):
            usual_seen = True
            break
    return float(knows_other), float(usual_seen)


def rule_policy(memory: MindMemory, state: WindowState) -> str:
    """The default policy (see the module docstring)."""
    for op in BELIEF_OPS:
        if state.perception.count(op):
            return op
    if state.needs and not state.acted:
        return "action_run"
    if not state.acted and state.next_cue() is not None:
        return "reasoning_run"
    return "noop"


def window_op(ops: list[str]) -> str:
    """The operation that sums up a window: ``action_run`` > ``reasoning_run`` > actor
    belief update > actor belief creation > visual fact update > creation > ``noop``."""
    for op in ("action_run", "reasoning_run", "belief_update_actor_belief",
               "belief_create_actor_belief", "belief_update_visual_fact",
               "belief_create_visual_fact"):
        if op in ops:
            return op
    return "noop"


class Trigger:
    """The dispatcher (see the module docstring)."""

    def __init__(self, skills: SkillBook | None = None, policy: Policy | None = None,
                 features: Callable[..., np.ndarray] | None = None) -> None:
        self.skills = skills if skills is not None else SkillBook()
        self.policy = policy
        self.features = features if features is not None else trigger_features
        self.policy_errors = 0

    def _skill(self, state: WindowState) -> str | None:
        """Apply deterministic skill matchers to the next cues; an op or None."""
        while not state.acted:
            cue = state.next_cue()
            if cue is None:
                return None
            skill = self.skills.match(cue.signature)
            if skill is None:
                return None
            if skill.op == "noop":
                cue.handled = True
                state.skill_hits.append({"skill": skill.name, "cue_tick": cue.cue.tick,
                                         "person": cue.cue.person, "op": "noop"})
                continue
            if skill.op == "action_run" and cue.cue.kind in ("stretch", "stand"):
                cue.handled = True
                # a stretch names only the place: what it is for is the object there that
                # the person's earlier steps ask for (the tracker's reading of the cue)
                target = cue.cue.need.target if cue.cue.need is not None else cue.cue.place
                need = Need("implicit_goal", cue.cue.person, target, cue.cue.kind)
                state.needs.append((need, f"skill {skill.name}"))
                state.skill_hits.append({"skill": skill.name, "cue_tick": cue.cue.tick,
                                         "person": cue.cue.person, "op": "action_run"})
                return "action_run"
            return None  # an action skill on a look cue: the object must be reasoned out
        return None

    def automatic(self, memory: MindMemory, state: WindowState) -> str | None:
        """Count one dispatch and return the operation decided without a learned policy
        (``noop`` past :data:`MAX_DISPATCHES`, a skill's operation), or None when the
        policy must choose."""
        state.dispatches += 1
        if state.dispatches > MAX_DISPATCHES:
            return "noop"
        if self.policy is None:
            for op in BELIEF_OPS:
                if state.perception.count(op):
                    return op
        return self._skill(state)

    def observe(self, memory: MindMemory, state: WindowState) -> np.ndarray:
        """The policy's feature vector (``features``, default :func:`trigger_features`)."""
        return self.features(memory, state, self.skills)

    def dispatch(self, memory: MindMemory, state: WindowState) -> str:
        """The next operation for this window."""
        auto = self.automatic(memory, state)
        if auto is not None:
            return auto
        if self.policy is None:
            return rule_policy(memory, state)
        mask = action_mask(memory, state)
        try:
            idx = int(self.policy(self.observe(memory, state), mask))
        except (TypeError, ValueError):
            idx = -1
        if not 0 <= idx < len(TRIGGER_OPS) or not mask[idx]:
            self.policy_errors += 1
            return rule_policy(memory, state)
        return TRIGGER_OPS[idx]
