"""MindClaw's Memory: a committed belief table on top of :class:`BeliefTracker` perception.

The :class:`~mindhelper_env.agents.tracker.BeliefTracker` is the perception layer (the
symbolic backend of MindClaw's Observation module): it replays each window's events and
keeps where the robot saw things and what each person can have seen. :class:`MindMemory`
adds MindClaw's **belief table**, which changes only through the Trigger's belief
operations:

* ``visual_facts[object] -> Fact(location, tick, evidence)`` — where the robot saw it;
* ``actor_beliefs[actor][object] -> Fact(location, tick, evidence)`` — where that person
  believes it is (``location`` is an anchor id or the id of a person holding it).

:meth:`MindMemory.perceive` runs the tracker on a window and returns a :class:`Perception`:
the table rows the tracker now disagrees with (pending creations and updates, grouped by
the four belief operations) and one :class:`CueContext` per struggle cue. A cue context is
computed *before* anything is committed, so it sees the person's beliefs as they stood at
the end of the previous window — what they expected when they looked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mindhelper_env.agents.tracker import BeliefTracker, Cue, parse_events
from mindhelper_env.scenarios.observer import (
    ADULT_REACH,
    PersonView,
    SceneView,
    classes_kept_at,
    is_usual_place,
)

__all__ = ["Fact", "Change", "CueContext", "Perception", "MindMemory", "BELIEF_OPS"]

#: The belief operations, in the order the rule policy commits them.
BELIEF_OPS = (
    "belief_create_visual_fact",
    "belief_update_visual_fact",
    "belief_create_actor_belief",
    "belief_update_actor_belief",
)


@dataclass(frozen=True)
class Fact:
    """One row of the belief table: a location (None: erased), since when, and why."""

    location: int | None
    tick: int
    evidence: str


@dataclass(frozen=True)
class Change:
    """A pending row change: ``actor`` is None for a visual fact."""

    actor: int | None
    obj: int
    old: int | None
    new: int | None
    tick: int
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        return {"actor": self.actor, "object": self.obj, "old": self.old, "new": self.new,
                "tick": self.tick, "evidence": self.evidence}


@dataclass
class CueContext:
    """A struggle cue, its symbolic features and the belief-table rows relevant to it.

    ``signature`` holds the coarse features skills are matched on (see
    :func:`cue_signature`); ``prior_beliefs`` is the person's committed belief table at
    the end of the previous window (object -> location).
    """

    cue: Cue
    signature: dict[str, Any]
    prior_beliefs: dict[int, int]
    handled: bool = False


@dataclass
class Perception:
    """What one window brought: pending belief-table changes per operation, and cues."""

    tick: int
    pending: dict[str, list[Change]] = field(default_factory=lambda: {op: [] for op in BELIEF_OPS})
    cues: list[CueContext] = field(default_factory=list)

    def count(self, op: str) -> int:
        return len(self.pending.get(op, []))


class _Tracker(BeliefTracker):
    """The belief tracker, also remembering where people stood just before each tick of
    the current window (so cue features describe the moment of the cue)."""

    def update(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> list[Cue]:
        self.stance: dict[int, dict[int, tuple[int | None, int | None, int, float]]] = {}
        self.where_before: dict[int, dict[int, int]] = {}
        self.views_before: dict[int, dict[int, PersonView]] = {}
        return super().update(obs, info)

    def _before_tick(self, tick: int, views: dict[int, PersonView], scene: SceneView) -> None:
        # the snapshots the tick's cues are judged on (read-only, so shared, not copied again)
        self.stance[tick] = {p.id: (p.room, p.near, len(p.holding), p.reach)
                             for p in self.people.values()}
        self.where_before[tick] = scene.where  # type: ignore[assignment]
        self.views_before[tick] = views


class MindMemory:
    """BeliefTracker perception plus MindClaw's committed belief table."""

    #: the tracker's revision :attr:`perception` was computed at (a class default too, for
    #: a memory pickled before it existed)
    _revision: int | None = None

    def __init__(self, robot_id: int = 1) -> None:
        self.tracker: BeliefTracker = _Tracker(robot_id)
        self.reset()

    def reset(self) -> None:
        self.tracker.reset()
        self.visual_facts: dict[int, Fact] = {}
        self.actor_beliefs: dict[int, dict[int, Fact]] = {}
        self.perception = Perception(0)
        self._revision = None

    def belief_snapshot(self) -> dict[int, dict[int, int]]:
        """Read-only copy of the committed belief table: ``{person: {object: place}}``
        (erased rows left out)."""
        return {pid: {obj: f.location for obj, f in table.items() if f.location is not None}
                for pid, table in self.actor_beliefs.items()}

    # ------------------------------------------------------------------ perception
    def perceive(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> Perception:
        """Run the tracker on one window; return the pending changes and the cue contexts."""
        cues = self.tracker.update(obs, info)
        t = self.tracker
        parsed = t.parsed
        events = parsed[1] if parsed is not None and parsed[0] is obs else parse_events(obs)
        tick = t.tick
        if t.revision == self._revision and not events and not cues:
            return self._perceive_again(tick)
        self._revision = t.revision
        why = self._evidence(events)
        p = Perception(tick)
        # Only the rows that differ are visited in Python (most of the table agrees with the
        # tracker from one window to the next); each list is in object order, as before.
        facts = self.visual_facts
        create, update = p.pending["belief_create_visual_fact"], \
            p.pending["belief_update_visual_fact"]
        for obj in sorted([o for o, loc in t.where.items()
                           if (f := facts.get(o)) is None or f.location != loc]):
            loc, old = t.where[obj], facts.get(obj)
            if old is None:
                create.append(Change(None, obj, None, loc, tick, why.get(obj, "in view")))
            else:
                update.append(Change(None, obj, old.location, loc, tick,
                                     why.get(obj, "in view")))
        create, update = p.pending["belief_create_actor_belief"], \
            p.pending["belief_update_actor_belief"]
        for pid, person in sorted(t.people.items()):
            table = self.actor_beliefs.get(pid, {})
            beliefs = person.beliefs
            for obj in sorted([o for o, b in beliefs.items()
                               if (r := table.get(o)) is None or r.location is None
                               or r.location != b.place]):
                b, old_row = beliefs[obj], table.get(obj)
                if old_row is None or old_row.location is None:
                    create.append(Change(pid, obj, None, b.place, b.tick, b.evidence))
                else:
                    update.append(Change(pid, obj, old_row.location, b.place, b.tick,
                                         b.evidence))
            for obj in sorted([o for o, row in table.items()
                               if row.location is not None and o not in beliefs]):
                update.append(Change(pid, obj, table[obj].location, None, tick,
                                     "no longer believes it"))
        for cue in cues:
            prior = {o: f.location for o, f in self.actor_beliefs.get(cue.person, {}).items()
                     if f.location is not None}
            p.cues.append(CueContext(cue, self.cue_signature(cue, prior), prior))
        self.perception = p
        return p

    def _perceive_again(self, tick: int) -> Perception:
        """:meth:`perceive` when the tracker is as it was at the last perception and the
        window saw nothing: the rows still pending are those that differed then and were not
        committed since (a commit makes its rows agree with the tracker, and touches no
        other row), so they are the last perception's, the visual facts and erased beliefs
        dated ``tick`` and the facts' evidence ``in view`` as :meth:`perceive` gives them."""
        p = Perception(tick)
        for op, rows in self.perception.pending.items():
            if op.endswith("visual_fact"):
                p.pending[op] = [Change(None, c.obj, c.old, c.new, tick, "in view") for c in rows]
            else:
                p.pending[op] = [c if c.new is not None else
                                 Change(c.actor, c.obj, c.old, None, tick, c.evidence)
                                 for c in rows]
        self.perception = p
        return p

    @staticmethod
    def _evidence(events: list[dict[str, Any]]) -> dict[int, str]:
        out: dict[int, str] = {}
        for ev in events:
            verb = ev.get("verb")
            name = ev.get("actor_name", ev.get("actor"))
            args = [a for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]
            if verb in ("grab", "putin", "putback", "drop", "give") and args:
                out[int(args[0]["id"])] = f"saw {name} {verb} it at tick {ev['tick']}"
            elif verb == "open":
                for c in ev.get("contents", []) or []:
                    if isinstance(c, dict) and "id" in c:
                        out[int(c["id"])] = f"saw it when {name} opened it at tick {ev['tick']}"
        return out

    def commit(self, op: str) -> list[Change]:
        """Apply the pending changes of one belief operation to the table; return them."""
        changes = self.perception.pending.get(op, [])
        for ch in changes:
            row = Fact(ch.new, ch.tick, ch.evidence)
            if ch.actor is None:
                self.visual_facts[ch.obj] = row
            else:
                self.actor_beliefs.setdefault(ch.actor, {})[ch.obj] = row
        self.perception.pending[op] = []
        return list(changes)

    # ------------------------------------------------------------------ cue features
    def helper_at(self, person: int, anchor: int | None, tick: int | None = None) -> bool:
        """Was an adult with a free hand, other than ``person``, standing at ``anchor`` just
        before ``tick`` (default: now)?"""
        t = self.tracker
        stance = getattr(t, "stance", {}).get(tick) if tick is not None else None
        if stance is None:
            stance = {p.id: (p.room, p.near, len(p.holding), p.reach) for p in t.people.values()}
        me = stance.get(person)
        for pid, (room, near, held, reach) in stance.items():
            if pid == person or anchor is None or near != anchor:
                continue
            if me is not None and room != me[0]:
                continue
            if held < 2 and reach >= ADULT_REACH:
                return True
        return False

    def noticed(self, person: int, tick: int | None = None) -> bool:
        """Would someone have noticed ``person`` struggle just before ``tick`` (default: now)?"""
        t = self.tracker
        views = getattr(t, "views_before", {}).get(tick) if tick is not None else None
        if views is None:
            views = t._views()
        me = views.get(person)
        return me is not None and t.notices(me, SceneView(dict(t.where), t.classes,
                                                          t.room_of, views))

    def cue_signature(self, cue: Cue, prior: Mapping[int, int]) -> dict[str, Any]:
        """Coarse, model-free features of a cue (what skills are matched on).

        ``kind`` (look / stretch / stand); ``noticed`` (someone who would notice the
        struggle was in the room just before it: an adult, not on the phone, with a free
        hand — :meth:`~mindhelper_env.agents.tracker.BeliefTracker.notices`);
        ``believed_here`` (the person's committed table had some object at the place); ``usual_place`` (people keep some class of object there); ``small`` (a
        child or wheelchair user); ``hands_full``.
        """
        t = self.tracker
        person = t.people.get(cue.person)
        place_class = t.classes.get(cue.place, "")
        kept = classes_kept_at(place_class)
        known = {t.classes.get(o) for o in prior}
        astray = False
        for c in kept:
            if c in known:
                continue
            seen = [loc for o, loc in t.where.items()
                    if t.classes.get(o) == c and loc not in t.people and loc != t.robot_id]
            if seen and not any(is_usual_place(c, t.classes.get(loc, "")) for loc in seen):
                astray = True
                break
        return {
            "kind": cue.kind,
            "noticed": self.noticed(cue.person, cue.tick),
            "believed_here": any(loc == cue.place for loc in prior.values()),
            "expected_missing": any(loc == cue.place and t.where.get(o) not in (None, cue.place)
                                    for o, loc in prior.items()),
            "astray_class": astray,
            "usual_place": bool(kept),
            "small": person is not None and person.kind in ("child", "wheelchair"),
            "hands_full": person is not None and len(person.holding) >= 2,
        }

    # ------------------------------------------------------------------ prompt rows
    def name(self, node: int | None) -> str:
        """``class (id)`` or ``Name (id)`` for people."""
        if node is None:
            return "nowhere"
        t = self.tracker
        if node in t.people:
            return f"{t.people[node].name} ({node})"
        if node == t.robot_id:
            return f"the robot ({node})"
        return f"{t.classes.get(node, 'thing')} ({node})"

    def relevant_objects(self, ctx: CueContext) -> set[int]:
        """The objects :meth:`relevant_rows` is about: those the person believed at the
        place or of a class kept there, the stretched-for object, and every object of a
        class kept at the place that no person holds."""
        t = self.tracker
        cue = ctx.cue
        kept = set(classes_kept_at(t.classes.get(cue.place, "")))
        objs: set[int] = set()
        for obj, loc in ctx.prior_beliefs.items():
            if loc == cue.place or t.classes.get(obj) in kept:
                objs.add(obj)
        if cue.kind == "stretch":
            objs.add(cue.place)
        for obj in t.where:
            if t.classes.get(obj) in kept and t.where[obj] not in t.people:
                objs.add(obj)
        return objs

    def relevant_rows(self, ctx: CueContext) -> dict[str, list[str]]:
        """The belief-table rows a model needs to judge one cue, as short text lines.

        ``beliefs``: the person's prior beliefs about objects at the place or of a class
        kept there; ``facts``: where the robot saw those objects and every object of a class
        kept at the place (with whether that location is a usual place for it); ``people``:
        who stands at the place.
        """
        t = self.tracker
        cue = ctx.cue
        objs = self.relevant_objects(ctx)
        beliefs = []
        for obj, loc in sorted(ctx.prior_beliefs.items()):
            if obj in objs and (loc == cue.place or t.classes.get(obj) in
                                set(classes_kept_at(t.classes.get(cue.place, "")))):
                row = self.actor_beliefs.get(cue.person, {}).get(obj)
                since = f" (since tick {row.tick}: {row.evidence})" if row is not None else ""
                beliefs.append(f"{self.name(obj)} at {self.name(loc)}{since}")
        facts = []
        for obj in sorted(objs):
            loc = t.where.get(obj)
            row = self.visual_facts.get(obj)
            usual = is_usual_place(t.classes.get(obj, ""), t.classes.get(loc, "")) \
                if loc is not None else False
            tag = "usual place" if usual else "not where people keep it"
            since = f", seen at tick {row.tick}" if row is not None else ""
            facts.append(f"{self.name(obj)} at {self.name(loc)} ({tag}{since})")
        anchor = t.where.get(cue.place, cue.place) if cue.kind == "stretch" else cue.place
        people = []
        for p in sorted(t.people.values(), key=lambda q: q.id):
            if p.id != cue.person and p.near == anchor:
                held = ", ".join(self.name(h) for h in p.holding) or "nothing"
                people.append(f"{p.name} ({p.id}), {p.kind}, holding {held}")
        return {"beliefs": beliefs, "facts": facts, "people": people}

    def describe_cue(self, cue: Cue) -> str:
        """One sentence stating the cue (what the camera showed)."""
        t = self.tracker
        p = t.people.get(cue.person)
        who = f"{p.name} ({p.id}), {p.kind}" if p is not None else f"person ({cue.person})"
        held = ", ".join(self.name(h) for h in (p.holding if p else [])) or "nothing"
        if cue.kind == "look":
            what = f"looked at {self.name(cue.place)} and took nothing"
        elif cue.kind == "stretch":
            what = f"stretched toward {self.name(cue.place)} at {self.name(t.where.get(cue.place))}"
        else:
            what = f"stood at the closed {self.name(cue.place)}"
        return f"Tick {cue.tick}: {who}, holding {held}, {what}."
