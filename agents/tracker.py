"""Belief tracking from observations only: who saw what, who holds what, who stands where.

:class:`BeliefTracker` reads nothing but what a Gymnasium agent gets — ``obs["events"]`` (the
structured behaviour of each window) and ``info["candidates"]`` (what the robot sees at the
end of a window) — and keeps

* **visual facts**: where the robot last saw each object (a container, a surface, a room's
  floor, or the person holding it), which containers are open, the class and room of every
  place;
* **people**: room, the furniture they stand at, what they hold, their kind (and so their
  reach);
* **per-person belief tables**: where each person believes each object is, updated by the
  same perception rules the people follow (they see their room when they enter it; in a room
  they see what others take, put and reveal; a place in view that lacks what they expected
  erases that belief; where ``info["perception"]`` is ``"attention"``, someone on the phone
  perceives none of it; where it is ``"sight"``, nor does someone at a chore, and a person
  sees objects taken and put next door through an open door, read off ``info["doors"]``);
  each entry keeps the tick and the evidence that set it;
* **attention and earlier steps**: who is on the phone (and so notices nothing), and what each
  person took so far (what they will want next follows from it:
  :func:`~mindhelper_env.scenarios.observer.infer_goal`);
* **struggle cues**: a look that took nothing (a surface looked over, a container opened and
  closed again), a stretch toward something out of reach, standing at a closed container with
  full hands — each judged with :mod:`mindhelper_env.scenarios.observer`'s rules on the
  state just before it.

It is the memory of the ``belief-tracker`` reference agent and of MindClaw's symbolic
backend. It never reads ``env.unwrapped``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mindhelper_env.actors.actor import ACTOR_KINDS
from mindhelper_env.scenarios.observer import (
    VIEW_VERBS,
    Need,
    PersonView,
    SceneView,
    forget_opened,
    judge_tick,
    someone_notices,
)

__all__ = ["BeliefTracker", "Belief", "Person", "Cue", "parse_events"]

#: What a person sees others do to objects in their room (and, with sight perception, next
#: door through an open door).
_MOVES = frozenset({"grab", "putback", "putin", "drop", "give"})


@dataclass
class Belief:
    """One entry of a person's belief table: where, since when, and why."""

    place: int
    tick: int
    evidence: str


@dataclass
class Person:
    id: int
    name: str
    kind: str
    room: int | None = None
    near: int | None = None
    holding: list[int] = field(default_factory=list)
    beliefs: dict[int, Belief] = field(default_factory=dict)
    last_room: int | None = None
    looked: bool = False
    #: on the phone or at a chore (notices nothing)
    busy: bool = False
    #: at a chore (facing away; sight perception), as opposed to on the phone
    chore: bool = False
    #: classes of what the person took, oldest first (their earlier steps)
    took: list[str] = field(default_factory=list)

    @property
    def reach(self) -> float:
        return ACTOR_KINDS.get(self.kind, ACTOR_KINDS["adult"])


@dataclass
class Cue:
    """A visible struggle and the observer's judgement of it (``need`` None: not blocked)."""

    tick: int
    person: int
    kind: str  # look | stretch | stand
    place: int
    need: Need | None


def _is_mapping(x: Any) -> bool:
    """``isinstance(x, Mapping)``, without the ABC check for a plain dict."""
    return type(x) is dict or isinstance(x, Mapping)


def parse_events(obs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of an observation as dicts (an empty list for malformed JSON).

    ``obs["events"]`` is the JSON text of the window's event dicts, or (from an env that
    was told to skip the text, as the Trigger env tells its household) the list of those
    dicts itself, read as the text would decode."""
    raw = obs.get("events", "[]") if _is_mapping(obs) else "[]"
    if type(raw) is list:
        events = raw
    else:
        try:
            events = json.loads(raw) if isinstance(raw, str) else []
        except ValueError:
            return []
        if not isinstance(events, list):
            return []
    return [e for e in events if isinstance(e, dict) and isinstance(e.get("tick"), int)]


class BeliefTracker:
    """Per-episode memory built from observations (see the module docstring)."""

    #: the rooms and locations :meth:`_learn_static` learned last, and their ids (a class
    #: default too, for a tracker pickled before it existed)
    _static: tuple[list[Any], list[Any], set[int]] | None = None
    _synced: tuple[list[Any], list[Any]] | None = None
    revision = 0

    def __init__(self, robot_id: int = 1, *, goal_inference: bool = True) -> None:
        self.robot_id = robot_id
        #: read what a person wants next from their earlier steps (off: the goal-blind
        #: ablation, which falls back on the first object at the place of a stretch)
        self.goal_inference = goal_inference
        self.reset()

    def reset(self) -> None:
        #: attention perception (``info["perception"] == "attention"``): someone on the phone
        #: perceives none of the others' events
        self.attention = False
        #: sight perception (``info["perception"] == "sight"``): a chore blinds like a call,
        #: and what is taken and put next door is seen through an open door
        self.sight = False
        #: the rooms seen from each room through an open door (``info["doors"]``)
        self.door_views: dict[int, set[int]] = {}
        self.where: dict[int, int] = {}
        self.classes: dict[int, str] = {}
        self.room_of: dict[int, int | None] = {}
        self.is_container: set[int] = set()
        self.open: dict[int, bool] = {}
        self.rooms: set[int] = set()
        self.people: dict[int, Person] = {}
        self.robot_room: int | None = None
        self.cues: list[Cue] = []
        self.tick = 0
        self._opened: dict[tuple[int, int], dict[int, int]] = {}
        self._started = False
        #: belief-table changes of the last :meth:`update` (for traces): (person, object,
        #: old place or None, new place or None)
        self.changes: list[tuple[int, int, int | None, int | None]] = []
        self.parsed: tuple[Any, list[dict[str, Any]]] | None = None
        self._static = None
        #: counts the updates that may have changed what the tracker knows (an update that
        #: saw nothing and found the robot's view as before does not count)
        self.revision += 1
        #: copies of the objects and actors the last counted update synced to
        self._synced: tuple[list[Any], list[Any]] | None = None

    # ------------------------------------------------------------------ input
    def update(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> list[Cue]:
        """Take in one observation window; return the new cues (in tick order)."""
        self.changes = []
        is_map = _is_mapping(info)
        cands = info.get("candidates", {}) if is_map else {}
        robot = info.get("robot") if is_map else None
        if is_map:
            # the episode's perception rule (absent: everyone in a room perceives it all)
            perception = info.get("perception")
            self.attention = perception in ("attention", "sight")
            self.sight = perception == "sight"
            if self.sight and not self.door_views:
                self._learn_doors(info.get("doors"))
        if _is_mapping(robot):
            self.robot_room = robot.get("room")
        if self._started:
            events = parse_events(obs)
            #: the observation last parsed and its events (read-only; MindClaw's memory
            #: reuses them instead of parsing the JSON again)
            self.parsed = (obs, events)
            if not events and self._unchanged(cands):
                # nothing seen, and the robot's view is the one synced last: learning and
                # syncing it again would change nothing
                tick = info.get("tick") if is_map else None
                if isinstance(tick, int):
                    self.tick = tick
                return []
        self.revision += 1
        self._learn_static(cands)
        if not self._started:
            self._started = True
            self._sync(cands)
            for p in self.people.values():
                self._look_around(p, -1)
            return []
        new: list[Cue] = []
        by_tick: dict[int, list[dict[str, Any]]] = {}
        for ev in events:
            by_tick.setdefault(int(ev["tick"]), []).append(ev)
        for tick in sorted(by_tick):
            new.extend(self._tick(tick, by_tick[tick]))
        self._sync(cands)
        tick = info.get("tick") if is_map else None
        if isinstance(tick, int):
            self.tick = tick
        self.cues.extend(new)
        return new

    def _learn_static(self, cands: Mapping[str, Any]) -> None:
        rooms = cands.get("rooms", []) or []
        locations = cands.get("locations", []) or []
        learned = self._static
        # the same rooms and locations as the window before (compared in C): learning them
        # again would change nothing, since only _sync writes these ids' classes and then
        # forgets what was learned
        if learned is None or learned[0] != rooms or learned[1] != locations:
            ids = set()
            for r in rooms:
                self.rooms.add(int(r["id"]))
                self.classes[int(r["id"])] = str(r["class"])
                self.room_of[int(r["id"])] = int(r["id"])
                ids.add(int(r["id"]))
            for loc in locations:
                lid = int(loc["id"])
                self.classes[lid] = str(loc["class"])
                self.room_of[lid] = loc.get("room")
                ids.add(lid)
                if loc.get("open") is not None:
                    self.is_container.add(lid)
                    # the snapshot is taken at the end of the window: the window's events
                    # decide the state while they are replayed; _sync applies the snapshot
                    # afterwards
                    self.open.setdefault(lid, bool(loc["open"]))
            # copies: the caller's dicts are its own to change
            self._static = ([dict(r) for r in rooms], [dict(loc) for loc in locations], ids)
        for a in cands.get("actors", []) or []:
            aid = int(a["id"])
            if aid not in self.people:
                self.people[aid] = Person(aid, str(a.get("name", aid)), str(a.get("kind", "adult")))
            self.classes[aid] = "character"

    def _unchanged(self, cands: Mapping[str, Any]) -> bool:
        """Are the rooms, locations, objects and actors of ``cands`` those of the last
        synced window (compared in C with the copies kept)?"""
        learned, synced = self._static, self._synced
        return (learned is not None and synced is not None
                and synced[0] == cands.get("objects", []) and synced[1] == cands.get("actors", [])
                and learned[0] == cands.get("rooms", []) and learned[1] == cands.get("locations", []))

    def _sync(self, cands: Mapping[str, Any]) -> None:
        """End-of-window snapshot: what the robot sees now overrides reconstruction."""
        # dict updates from comprehensions: the same entries, in the same order, as one
        # assignment per entry
        self.open.update({int(loc["id"]): bool(loc["open"])
                          for loc in cands.get("locations", []) or []
                          if loc.get("open") is not None})
        objects = cands.get("objects", []) or []
        classes = {int(o["id"]): str(o["class"]) for o in objects}
        self.classes.update(classes)
        self.where.update({int(o["id"]): int(o["location"]) for o in objects
                           if o.get("location") is not None})
        learned = self._static
        if learned is not None and not learned[2].isdisjoint(classes):
            self._static = None  # a room's or location's class was overwritten
        actors = cands.get("actors", []) or []
        for a in actors:
            p = self.people[int(a["id"])]
            p.room = a.get("room")
            p.holding = [int(h) for h in a.get("holding", [])]
            for h in p.holding:
                self.where[h] = p.id
        # copies (the caller's dicts are its own to change), for _unchanged
        if type(objects) is list and type(actors) is list:
            held = list(map(dict, actors))
            for a in held:
                h = a.get("holding")
                if type(h) is list:
                    a["holding"] = h.copy()
            self._synced = (list(map(dict, objects)), held)
        else:
            self._synced = None

    # ------------------------------------------------------------------ one tick
    def _tick(self, tick: int, events: list[dict[str, Any]]) -> list[Cue]:
        norm = []
        for ev in events:
            args = [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]
            for a in ev.get("args", []):
                if isinstance(a, dict) and "id" in a and "class" in a:
                    self.classes.setdefault(int(a["id"]), str(a["class"]))
            norm.append((int(ev.get("actor", -1)), str(ev.get("verb")), tuple(args)))
        if VIEW_VERBS.isdisjoint([n[1] for n in norm]):
            # no cue can come of this tick (most ticks: walks, grabs, puts): the people's
            # views and the scene are not built
            forget_opened(norm, self.people, self._opened)
            cues = []
        else:
            # the state at the start of the tick (the loop above only adds classes, which
            # the views do not hold and the scene shares)
            before = self._views()
            scene = SceneView(dict(self.where), self.classes, self.room_of, before)
            self._before_tick(tick, before, scene)
            cues = [Cue(t, who, kind, place, need) for t, who, kind, place, need in
                    judge_tick(tick, norm, before, scene, self._opened, self._anchor,
                               self.notices)]
        for ev in events:
            self._apply(ev)
        for p in self.people.values():
            self._perceive(p, tick, events)
        return cues

    def _before_tick(self, tick: int, views: dict[int, PersonView], scene: SceneView) -> None:
        """Called with the state at the start of each tick that can yield a cue (one with an
        event whose verb is in :data:`~mindhelper_env.scenarios.observer.VIEW_VERBS`;
        read-only snapshots: the people and the scene the cues of the tick are judged on);
        subclasses keep what they need."""

    def notices(self, person: PersonView, scene: SceneView) -> bool:
        """Does someone notice ``person``'s struggle (and help)? The observer's rule: an adult
        in the same room, not on the phone, with a free hand. Attention is perception too:
        perspective ablations override this."""
        return someone_notices(person, scene)

    def _anchor(self, place: int) -> int:
        loc = self.where.get(place)
        return place if loc is None or loc in self.rooms else loc

    def _views(self) -> dict[int, PersonView]:
        out = {}
        for p in self.people.values():
            out[p.id] = PersonView(p.id, p.reach, p.room, p.near, tuple(p.holding),
                                   {o: b.place for o, b in p.beliefs.items()}, p.busy,
                                   tuple(p.took) if self.goal_inference else ())
        return out

    def _apply(self, ev: dict[str, Any]) -> None:
        who = int(ev.get("actor", -1))
        verb = ev.get("verb")
        args = [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]
        room = ev.get("room")
        p = self.people.get(who)
        if verb in ("walk", "find"):
            if p is not None:
                p.room = room
                p.near = args[0] if args and args[0] not in self.rooms else None
            elif who == self.robot_id:
                self.robot_room = room
        elif verb == "grab" and args:
            self.where[args[0]] = who
            if p is not None and args[0] not in p.holding:
                p.holding.append(args[0])
            if p is not None:
                p.took.append(self.classes.get(args[0], "?"))
        elif verb in ("phone", "hangup", "chore", "chore_done"):
            if p is not None:
                p.busy = verb in ("phone", "chore")
                p.chore = verb == "chore"
        elif verb in ("putin", "putback") and len(args) >= 2:
            self.where[args[0]] = args[1]
            if p is not None and args[0] in p.holding:
                p.holding.remove(args[0])
        elif verb == "drop" and args:
            self.where[args[0]] = room if isinstance(room, int) else -1
            if p is not None and args[0] in p.holding:
                p.holding.remove(args[0])
        elif verb == "give" and len(args) >= 2:
            obj, to = args[0], args[1]
            self.where[obj] = to
            if p is not None:
                if obj in p.holding:
                    p.holding.remove(obj)
                p.near = to
            q = self.people.get(to)
            if q is not None and obj not in q.holding:
                q.holding.append(obj)
        elif verb == "open" and args:
            self.open[args[0]] = True
            self.is_container.add(args[0])
            for c in ev.get("contents", []) or []:
                if isinstance(c, dict) and "id" in c:
                    self.where[int(c["id"])] = args[0]
                    self.classes.setdefault(int(c["id"]), str(c.get("class", "?")))
        elif verb == "close" and args:
            self.open[args[0]] = False

    # ------------------------------------------------------------------ perception of people
    def _set_belief(self, p: Person, obj: int, place: int | None, tick: int, why: str) -> None:
        old = p.beliefs.get(obj)
        if place is None:
            if old is not None:
                del p.beliefs[obj]
                self.changes.append((p.id, obj, old.place, None))
            return
        if old is None or old.place != place:
            self.changes.append((p.id, obj, None if old is None else old.place, place))
        p.beliefs[obj] = Belief(place, tick, why)

    def _look_around(self, p: Person, tick: int) -> None:
        p.last_room = p.room
        p.looked = True
        if p.room is None:
            return
        room = p.room
        people, rooms, room_of = self.people, self.rooms, self.room_of
        boxes, is_open, robot, where = self.is_container, self.open.get, self.robot_id, self.where
        in_view_places: set[int] = set()
        for obj, loc in list(where.items()):
            # the room the object is in (with the person or robot holding it), and not
            # inside a closed container
            if loc in people:
                r = people[loc].room
            elif loc == robot:
                r = self.robot_room
            elif loc in rooms:
                r = loc
            else:
                r = room_of.get(loc)
            if r == room and not (loc in boxes and not is_open(loc, False)):
                self._set_belief(p, obj, loc, tick, "saw it on entering the room")
        classes = self.classes
        for place, r in room_of.items():
            if r == room and place not in rooms and place in classes \
                    and (place not in boxes or is_open(place, False)):
                in_view_places.add(place)
        if in_view_places:
            for obj, b in list(p.beliefs.items()):
                if b.place in in_view_places and where.get(obj) != b.place:
                    self._set_belief(p, obj, None, tick, "saw it was not there")

    def _perceive(self, p: Person, tick: int, events: list[dict[str, Any]]) -> None:
        if self.attention and p.busy:
            return  # on the phone or at a chore: nothing of what happens reaches them
        if self.sight:
            views = self.door_views.get(p.room) if p.room is not None else None
            if views:
                for ev in events:
                    if ev.get("room") in views and ev.get("verb") in _MOVES:
                        self._see_move(p, tick, ev, "saw it through the door")
        if p.room != p.last_room or not p.looked:
            self._look_around(p, tick)
            return
        for ev in events:
            if ev.get("room") != p.room:
                continue
            verb = ev.get("verb")
            args = [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]
            if verb in _MOVES:
                self._see_move(p, tick, ev, f"saw {verb}")
            elif verb == "open" and args:
                box = args[0]
                for c in ev.get("contents", []) or []:
                    if isinstance(c, dict) and "id" in c:
                        self._set_belief(p, int(c["id"]), box, tick, "saw it when opened")
                for obj, b in list(p.beliefs.items()):
                    if b.place == box and self.where.get(obj) != box:
                        self._set_belief(p, obj, None, tick, "saw it was not inside")
            elif verb == "tell" and len(args) >= 3:
                # everyone in earshot (the room) hears it
                self._set_belief(p, args[1], args[2], tick,
                                 "was told" if args[0] == p.id else "overheard it")

    def _see_move(self, p: Person, tick: int, ev: dict[str, Any], why: str) -> None:
        """``p`` saw an object taken, put or given: it is where the robot now knows it is."""
        args = [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]
        loc = self.where.get(args[0]) if args else None
        if loc is not None:
            self._set_belief(p, args[0], loc, tick, why)

    def _learn_doors(self, doors: Any) -> None:
        """The rooms seen from each room through an open door (``info["doors"]``)."""
        views: dict[int, set[int]] = {}
        for d in doors if isinstance(doors, list) else ():
            rooms = d.get("rooms") if isinstance(d, dict) else None
            if not d.get("open") or not isinstance(rooms, list) or len(rooms) != 2:
                continue
            a, b = int(rooms[0]), int(rooms[1])
            views.setdefault(a, set()).add(b)
            views.setdefault(b, set()).add(a)
        self.door_views = views

    # ------------------------------------------------------------------ queries
    def belief_snapshot(self) -> dict[int, dict[int, int]]:
        """Read-only copy of every person's belief table: ``{person: {object: place}}``."""
        return {pid: {obj: b.place for obj, b in p.beliefs.items()}
                for pid, p in self.people.items()}

    def anchor_of(self, obj: int) -> int | None:
        """The furniture (or person) where the robot last saw ``obj``."""
        return self.where.get(obj)

    def help_program(self, need: Need) -> list[str]:
        """The minimal helpful program for a judged need, from the robot's knowledge."""
        cls = self.classes
        target = need.target
        if need.cue == "stand" or target in self.is_container and target not in self.where:
            c = cls.get(target, "container")
            return [f"[walk] <{c}> ({target})", f"[open] <{c}> ({target})"]
        loc = self.where.get(target)
        if loc is None:
            return []
        lines = []
        if loc not in self.people:
            lines.append(f"[walk] <{cls.get(loc, 'place')}> ({loc})")
            if loc in self.is_container and not self.open.get(loc, False):
                lines.append(f"[open] <{cls.get(loc, 'container')}> ({loc})")
        elif loc != self.robot_id:
            return []
        oc = cls.get(target, "object")
        if loc != self.robot_id:
            lines.append(f"[grab] <{oc}> ({target})")
        lines.append(f"[walk] <character> ({need.person})")
        lines.append(f"[give] <{oc}> ({target}) <character> ({need.person})")
        return lines
