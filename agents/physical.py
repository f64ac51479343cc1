"""``physical-rules``: objects and bodies, no minds (a validity instrument).

The agent answers one question: *how far does the physical world alone go?* It keeps what a
camera shows and household common sense, and nothing about minds:

* **object trajectories** (:attr:`ObjectTracker.trails`): every place each object has been
  seen at, with the tick it got there (a person's id while they hold it);
* **bodies**: every person's current room, the furniture they stand at, what they hold, their
  kind (and so their reach), the rooms they have been in, everything they did;
* **the present scene**: where each object lies now, which containers are open;
* **household common sense**: where each class of object is usually kept
  (:data:`~mindhelper_env.world.house.OBJECT_CATALOG`,
  :func:`~mindhelper_env.scenarios.observer.is_usual_place`,
  :func:`~mindhelper_env.scenarios.observer.classes_kept_at`) and what a task wants next
  (:data:`~mindhelper_env.scenarios.observer.GOAL_AFTER`).

It keeps **no** record of who saw or heard what and **no** attention model: the per-person
belief tables of :class:`~mindhelper_env.agents.tracker.BeliefTracker` are switched off
(:meth:`ObjectTracker._perceive` and :meth:`ObjectTracker._look_around` do nothing), nobody is
taken to notice anything, phone calls and tells change nothing.

Each visible struggle — a look that took nothing (a surface looked over, a container opened
and closed again), a stretch, a stop at a closed container with full hands — is stored as a
:class:`Struggle` with the state at the start of its tick. :func:`best_guess` says what the
struggler most likely wants there (from the trajectories and common sense), :func:`rule_help`
whether the hand-written rules call for help, and :func:`struggle_features` turns a struggle
into the numbers the learned variant (``mindhelper_env.validity.objects``) and the
object-centric scan read. If a benchmark rewards this agent, the physical world leaks its
labels (docs/validity.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mindhelper_env.agents.belief import _OnceAgent
from mindhelper_env.agents.tracker import BeliefTracker, Cue, Person
from mindhelper_env.scenarios.observer import (
    ADULT_REACH,
    PersonView,
    SceneView,
    classes_kept_at,
    infer_goal,
    is_usual_place,
)

__all__ = ["Body", "Struggle", "Guess", "ObjectTracker", "best_guess", "rule_help",
           "struggle_features", "STRUGGLE_FEATURES", "room_history_features",
           "ROOM_HISTORY_FEATURES", "PhysicalRulesAgent"]

@dataclass(frozen=True)
class Body:
    """A person as the camera shows them at one moment."""

    room: int | None
    near: int | None
    holding: tuple[int, ...]
    kind: str
    reach: float

    @property
    def free_hand(self) -> bool:
        return len(self.holding) < 2


@dataclass
class Struggle:
    """A visible struggle with the physical state at the start of its tick.

    ``place`` is what was looked at (a place), stretched toward (an object or a place) or
    stood at (a container); ``anchor`` the furniture it belongs to. ``where`` maps every
    object the robot knows of to its location then (a person's id while held); ``bodies``
    every person; ``took`` the classes the struggler took so far, oldest first; ``rooms``
    the struggler's rooms so far, in order of entry; ``decision_tick`` the tick of the
    decision that follows the window it was seen in (set by the caller)."""

    tick: int
    person: int
    kind: str
    place: int
    anchor: int
    where: dict[int, int]
    bodies: dict[int, Body]
    took: tuple[str, ...]
    rooms: tuple[int | None, ...]
    index: int
    decision_tick: int | None = None


@dataclass(frozen=True)
class Guess:
    """What a struggler most likely wants: an object to hand over (``target``), or a
    container to open (``kind == "open"``). ``source``: how it was found — ``trail`` (it lay
    at the place and has left), ``goal`` (the class the person's earlier steps ask for lies
    astray), ``kept`` (every object of a class kept there lies astray), ``reach`` (a stretch),
    ``stand`` (a full-handed stop)."""

    kind: str
    target: int
    source: str


def _ids(ev: Mapping[str, Any]) -> list[int]:
    return [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]


class ObjectTracker(BeliefTracker):
    """The tracker's visual facts plus trajectories; per-person perception switched off."""

    def reset(self) -> None:
        super().reset()
        #: object -> [(tick, location)] in order (a person's id while held)
        self.trails: dict[int, list[tuple[int, int]]] = {}
        #: person -> [(tick, room)] whenever their room changes
        self.room_trail: dict[int, list[tuple[int, int | None]]] = {}
        #: person -> [(tick, verb, arg ids)] of everything they did
        self.acts: dict[int, list[tuple[int, str, tuple[int, ...]]]] = {}
        #: every struggle seen, in order
        self.struggles: list[Struggle] = []
        #: [(tick, open door room pairs)] whenever the open doors (``info["doors"]``) change
        self.door_trail: list[tuple[int, frozenset[tuple[int, int]]]] = []
        self._peeking: set[tuple[int, int]] = set()

    # no perception of people: nobody's beliefs are formed
    def _look_around(self, p: Person, tick: int) -> None:
        p.last_room = p.room
        p.looked = True

    def _perceive(self, p: Person, tick: int, events: list[dict[str, Any]]) -> None:
        return None

    def notices(self, person: PersonView, scene: SceneView) -> bool:
        return False

    def update(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> list[Cue]:
        cues = super().update(obs, info)
        self._record(self.tick)  # what the end-of-window view added or corrected
        doors = info.get("doors") if isinstance(info, Mapping) else None
        if isinstance(doors, list):
            pairs = frozenset(
                (min(int(d["rooms"][0]), int(d["rooms"][1])),
                 max(int(d["rooms"][0]), int(d["rooms"][1])))
                for d in doors if isinstance(d, Mapping) and d.get("open")
                and isinstance(d.get("rooms"), list) and len(d["rooms"]) == 2)
            if not self.door_trail or self.door_trail[-1][1] != pairs:
                self.door_trail.append((self.tick, pairs))
        return cues

    def _record(self, tick: int) -> None:
        for obj, loc in self.where.items():
            trail = self.trails.get(obj)
            if trail is None:
                self.trails[obj] = [(tick, loc)]
            elif trail[-1][1] != loc:
                trail.append((tick, loc))
        for p in self.people.values():
            rt = self.room_trail.setdefault(p.id, [])
            if not rt or rt[-1][1] != p.room:
                rt.append((tick, p.room))

    def _tick(self, tick: int, events: list[dict[str, Any]]) -> list[Cue]:
        where = dict(self.where)
        bodies = {p.id: Body(p.room, p.near, tuple(p.holding), p.kind, p.reach)
                  for p in self.people.values()}
        new: list[Struggle] = []
        for ev in events:
            who = int(ev.get("actor", -1))
            if who not in self.people:
                continue
            verb, args = str(ev.get("verb")), _ids(ev)
            self.acts.setdefault(who, []).append((tick, verb, tuple(args)))
            if verb == "open" and args:
                self._peeking.add((who, args[0]))
            elif verb in ("grab", "putin"):
                self._peeking = {k for k in self._peeking if k[0] != who}
            elif verb == "close" and args and (who, args[0]) in self._peeking:
                self._peeking.discard((who, args[0]))
                new.append(self._struggle(tick, who, "look", args[0], args[0], where, bodies))
            elif verb == "look" and args:
                new.append(self._struggle(tick, who, "look", args[0], args[0], where, bodies))
            elif verb == "stretch" and len(args) >= 2:
                loc = where.get(args[1])
                anchor = args[1] if loc is None or loc in self.rooms else loc
                new.append(self._struggle(tick, who, "stretch", args[0], anchor, where, bodies))
            elif verb == "stand" and args:
                new.append(self._struggle(tick, who, "stand", args[0], args[0], where, bodies))
        super()._tick(tick, events)  # the visual facts (its own cues are not used)
        self._record(tick)
        self.struggles.extend(new)
        return [Cue(s.tick, s.person, s.kind, s.place, None) for s in new]

    def _struggle(self, tick: int, who: int, kind: str, place: int, anchor: int,
                  where: dict[int, int], bodies: dict[int, Body]) -> Struggle:
        rooms = tuple(r for _, r in self.room_trail.get(who, []))
        index = sum(s.person == who for s in self.struggles)
        return Struggle(tick, who, kind, place, anchor, where, bodies,
                        tuple(self.people[who].took), rooms, index)

    # ------------------------------------------------------------------ queries
    def room_of_loc(self, loc: int | None, bodies: Mapping[int, Body] | None = None) -> Any:
        """The room of a location: a room itself, furniture's room, a holder's room."""
        if loc is None:
            return None
        if loc in self.rooms:
            return loc
        if loc in self.people:
            b = (bodies or {}).get(loc)
            return b.room if b is not None else self.people[loc].room
        if loc == self.robot_id:
            return self.robot_room
        return self.room_of.get(loc)

    def room_at(self, person: int, tick: int) -> int | None:
        """``person``'s room at ``tick`` (from :attr:`room_trail`; None: not seen yet)."""
        out = None
        for tk, r in self.room_trail.get(person, []):
            if tk > tick:
                break
            out = r
        return out

    def door_open_at(self, a: int | None, b: int | None, tick: int) -> bool:
        """Was a door between rooms ``a`` and ``b`` open at ``tick`` (as ``info["doors"]``
        showed it at the end of that window; the first view stands for earlier ticks)?"""
        if a is None or b is None or a == b or not self.door_trail:
            return False
        pairs = self.door_trail[0][1]
        for tk, ps in self.door_trail:
            if tk > tick:
                break
            pairs = ps
        return (min(a, b), max(a, b)) in pairs

    def loc_room_at(self, loc: int | None, tick: int) -> int | None:
        """The room of a location at ``tick`` (a holder's room then)."""
        if loc is not None and loc in self.people:
            return self.room_at(loc, tick)
        return self.room_of_loc(loc)

    def held(self, loc: int | None) -> bool:
        return loc is not None and (loc in self.people or loc == self.robot_id)

    def in_open(self, loc: int | None) -> bool:
        """Lying where a look shows it: not held, not inside a closed container."""
        if loc is None or self.held(loc):
            return False
        return loc not in self.is_container or bool(self.open.get(loc, False))

    def left_at(self, obj: int, place: int, before: int) -> int | None:
        """The tick ``obj`` last left ``place`` before tick ``before`` (None: it never lay
        there, or still does)."""
        trail = self.trails.get(obj, [])
        out = None
        for i, (tk, loc) in enumerate(trail):
            if tk > before:
                break
            if loc == place and i + 1 < len(trail) and trail[i + 1][0] <= before:
                out = trail[i + 1][0]
        return out

    def movers(self, obj: int, before: int) -> list[tuple[int, int]]:
        """``(tick, person)`` of every grab of ``obj`` before tick ``before``."""
        out = []
        for pid, acts in self.acts.items():
            for tk, verb, args in acts:
                if tk < before and verb == "grab" and args and args[0] == obj:
                    out.append((tk, pid))
        return sorted(out)


def _class_objects(t: ObjectTracker, c: str, where: Mapping[int, int]) -> list[int]:
    return sorted(o for o in where if t.classes.get(o) == c)


def best_guess(t: ObjectTracker, s: Struggle) -> Guess | None:
    """What the struggler most likely wants at ``s.place`` (None: no physical reason)."""
    where, cls = s.where, t.classes
    if s.kind == "stand":
        return Guess("open", s.place, "stand")
    goal = infer_goal(s.took)
    if s.kind == "stretch":
        if s.place != s.anchor:
            return Guess("give", s.place, "reach")
        objs = sorted(o for o, loc in where.items() if loc == s.anchor)
        for o in objs:
            if goal is not None and cls.get(o) == goal:
                return Guess("give", o, "reach")
        return Guess("give", objs[0], "reach") if objs else Guess("open", s.anchor, "reach")
    # a look that took nothing: what lay here and has left (the most recent leaver first)
    gone = []
    for o, loc in where.items():
        if loc == s.place or loc == s.person:
            continue
        left = t.left_at(o, s.place, s.tick)
        if left is not None:
            gone.append((left, o))
    kept = classes_kept_at(cls.get(s.place, ""))
    if goal is not None:
        wanted = [(left, o) for left, o in gone if cls.get(o) == goal]
        if wanted:
            return Guess("give", max(wanted)[1], "trail")
        if goal in kept:
            objs = [o for o in _class_objects(t, goal, where) if not t.held(where[o])]
            if objs and all(not is_usual_place(goal, cls.get(where[o], "")) for o in objs):
                return Guess("give", objs[0], "goal")
    if gone:
        return Guess("give", max(gone)[1], "trail")
    if goal is None:
        for c in kept:
            objs = [o for o in _class_objects(t, c, where) if not t.held(where[o])]
            if objs and all(not is_usual_place(c, cls.get(where[o], "")) for o in objs):
                return Guess("give", objs[0], "kept")
    return None


def rule_help(t: ObjectTracker, s: Struggle, guess: Guess | None = None) -> bool:
    """The hand-written physical rules: does ``s`` call for help?

    * a stretch or a full-handed stop: yes, unless another adult with a free hand is in
      the struggler's room;
    * a look that took nothing, at a place something left (``trail``): yes, unless it or
      another of its class lies in the open in the looker's room, or another of its class
      lies at a usual place, or the struggler moved it last;
    * a look whose object follows from common sense: yes when the class is the one the
      person's earlier steps ask for (``goal``) and every object of it lies astray, unless one
      lies in the open in the looker's room; no when no earlier step names a class
      (``kept``: people look over places for chores of their own as often).
    """
    guess = guess if guess is not None else best_guess(t, s)
    if guess is None:
        return False
    me = s.bodies.get(s.person)
    if s.kind in ("stretch", "stand"):
        return not any(pid != s.person and b.room == me.room and b.free_hand
                       and b.reach >= ADULT_REACH for pid, b in s.bodies.items()) \
            if me is not None else True
    x = guess.target
    where, cls = s.where, t.classes
    c = cls.get(x)
    room = me.room if me is not None else None
    same = [o for o in _class_objects(t, c, where) if o != x and not t.held(where[o])]
    if any(t.in_open(where[o]) and t.room_of_loc(where[o], s.bodies) == room
           for o in [x, *same] if o in where):
        return False
    if guess.source == "kept":
        return False
    if guess.source == "goal":
        return True
    if any(is_usual_place(c or "", cls.get(where[o], "")) for o in same):
        return False
    moves = t.movers(x, s.tick)
    return not (moves and moves[-1][1] == s.person)


# ---------------------------------------------------------------------- features
def struggle_features(t: ObjectTracker, s: Struggle) -> dict[str, float]:
    """The physical state at a struggle as numbers (:data:`STRUGGLE_FEATURES`): the object
    the struggle is most likely about (X), other objects of its class in the house, in the
    open in the struggler's room and in the robot's view; where X went relative to the place
    (same room, other room, surface, container, held); the move-to-look delay; who is where
    and holds what; the struggler's rooms so far; the scene."""
    f: dict[str, float] = dict.fromkeys(STRUGGLE_FEATURES, 0.0)
    where, cls = s.where, t.classes
    me = s.bodies.get(s.person)
    room = me.room if me is not None else None
    g = best_guess(t, s)
    f[f"kind_{s.kind}"] = 1.0
    f["tick"] = float(s.tick)
    f["repeat"] = float(s.index)
    f["place_container"] = float(s.anchor in t.is_container)
    f["place_wallshelf"] = float(cls.get(s.anchor) == "wallshelf")
    f["place_room_is_struggler_room"] = float(t.room_of.get(s.anchor) == room)
    if me is not None:
        f[f"struggler_{me.kind}"] = 1.0 if me.kind in ("adult", "child", "wheelchair") else 0.0
        f["struggler_holding"] = float(len(me.holding))
    f["struggler_rooms"] = float(len(set(s.rooms)))
    f["struggler_room_changes"] = float(max(0, len(s.rooms) - 1))
    trail = t.room_trail.get(s.person, [])
    entered = max((tk for tk, r in trail if tk <= s.tick and r == room), default=-1)
    f["ticks_in_room"] = float(s.tick - entered) if entered >= 0 else float(s.tick + 1)
    acts = [a for a in t.acts.get(s.person, []) if a[0] < s.tick]
    f["struggler_acts"] = float(len(acts))
    f["ticks_since_last_act"] = float(s.tick - acts[-1][0]) if acts else -1.0
    f["struggler_took"] = float(len(s.took))
    goal = infer_goal(s.took)
    f["goal_known"] = float(goal is not None)
    f["rule_help"] = float(rule_help(t, s, g))
    others = [b for pid, b in s.bodies.items() if pid != s.person]
    f["others_in_room"] = float(sum(b.room == room for b in others))
    f["free_adults_in_room"] = float(sum(b.room == room and b.free_hand and
                                         b.reach >= ADULT_REACH for b in others))
    f["others_at_place"] = float(sum(b.near == s.anchor for b in others))
    f["free_adults_at_place"] = float(sum(b.near == s.anchor and b.free_hand and
                                          b.reach >= ADULT_REACH for b in others))
    f["others_elsewhere"] = float(sum(b.room != room for b in others))
    f["others_holding"] = float(sum(len(b.holding) for b in others))
    f["robot_in_room"] = float(t.robot_room == room)
    f["objects_known"] = float(len(where))
    f["objects_astray"] = float(sum(not t.held(loc) and loc not in t.rooms and
                                    not is_usual_place(cls.get(o, ""), cls.get(loc, ""))
                                    for o, loc in where.items()))
    kept = classes_kept_at(cls.get(s.anchor, ""))
    known = [o for o in where if cls.get(o) in kept and not t.held(where[o])]
    f["kept_known"] = float(len(known))
    f["kept_astray"] = float(sum(not is_usual_place(cls.get(o, ""), cls.get(where[o], ""))
                                 for o in known))
    if g is None:
        f["guess_none"] = 1.0
        return f
    f[f"guess_{g.source}"] = 1.0
    x = g.target
    if g.kind == "open" or x not in where and x not in t.trails:
        return f
    c = cls.get(x)
    loc = where.get(x)
    f["x_goal_class"] = float(goal is not None and c == goal)
    same = [o for o in _class_objects(t, c, where) if o != x]
    free = [o for o in same if not t.held(where[o])]
    f["same_class_house"] = float(len(free))
    f["same_class_usual"] = float(sum(is_usual_place(c or "", cls.get(where[o], ""))
                                      for o in free))
    f["same_class_struggler_room"] = float(sum(t.room_of_loc(where[o], s.bodies) == room
                                               for o in free))
    f["same_class_in_view"] = float(sum(t.in_open(where[o]) and
                                        t.room_of_loc(where[o], s.bodies) == room
                                        for o in free))
    f["same_class_robot_view"] = float(sum(t.room_of_loc(where[o], s.bodies) == t.robot_room
                                           for o in free))
    f["same_class_held"] = float(len(same) - len(free))
    xroom = t.room_of_loc(loc, s.bodies)
    place_room = t.room_of.get(s.place)
    f["x_held"] = float(t.held(loc))
    f["x_held_by_struggler"] = float(loc == s.person)
    f["x_same_room_as_place"] = float(xroom is not None and xroom == place_room)
    f["x_other_room"] = float(xroom is not None and xroom != place_room)
    f["x_in_struggler_room"] = float(xroom is not None and xroom == room)
    f["x_in_view"] = float(xroom == room and t.in_open(loc))
    f["x_in_robot_room"] = float(xroom is not None and xroom == t.robot_room)
    f["x_on_surface"] = float(loc is not None and not t.held(loc) and loc not in t.rooms
                              and loc not in t.is_container)
    f["x_in_container"] = float(loc in t.is_container)
    f["x_on_floor"] = float(loc in t.rooms)
    f["x_usual_place"] = float(is_usual_place(c or "", cls.get(loc, "")))
    f["x_third_room"] = float(xroom is not None and xroom != place_room and xroom != room)
    trail = [(tk, lc) for tk, lc in t.trails.get(x, []) if tk < s.tick]
    f["x_moves"] = float(max(0, len(trail) - 1))
    left = t.left_at(x, s.place, s.tick)
    f["x_left_place"] = float(left is not None)
    f["move_to_look"] = float(s.tick - left) if left is not None else -1.0
    f["last_move_to_look"] = float(s.tick - trail[-1][0]) if trail else -1.0
    moves = t.movers(x, s.tick)
    f["x_movers"] = float(len({p for _, p in moves}))
    f["x_moved_by_struggler"] = float(any(p == s.person for _, p in moves))
    f["x_last_moved_by_struggler"] = float(bool(moves) and moves[-1][1] == s.person)
    return f


STRUGGLE_FEATURES: tuple[str, ...] = (
    "kind_look", "kind_stretch", "kind_stand", "tick", "repeat", "place_container",
    "place_wallshelf", "place_room_is_struggler_room", "struggler_adult", "struggler_child",
    "struggler_wheelchair", "struggler_holding", "struggler_rooms", "struggler_room_changes",
    "ticks_in_room", "struggler_acts", "ticks_since_last_act", "struggler_took", "goal_known",
    "rule_help", "others_in_room", "free_adults_in_room", "others_at_place",
    "free_adults_at_place", "others_elsewhere", "others_holding", "robot_in_room",
    "objects_known", "objects_astray", "kept_known", "kept_astray", "guess_none",
    "guess_trail", "guess_goal", "guess_kept", "guess_reach", "guess_stand", "x_goal_class",
    "same_class_house", "same_class_usual", "same_class_struggler_room", "same_class_in_view",
    "same_class_robot_view", "same_class_held", "x_held", "x_held_by_struggler",
    "x_same_room_as_place", "x_other_room", "x_in_struggler_room", "x_in_view",
    "x_in_robot_room", "x_on_surface", "x_in_container", "x_on_floor", "x_usual_place",
    "x_third_room", "x_moves", "x_left_place", "move_to_look", "last_move_to_look",
    "x_movers", "x_moved_by_struggler", "x_last_moved_by_struggler",
)


# ------------------------------------------------------- the struggler's room history
def room_history_features(t: ObjectTracker, s: Struggle) -> dict[str, float]:
    """Where the struggler was when the object the struggle is most likely about (X,
    :func:`best_guess`) moved (:data:`ROOM_HISTORY_FEATURES`, named ``room:``): at the tick X
    left the looked-at place and at X's last move before the struggle, the struggler's room
    then, whether it was the room X moved in (taken from / put into), whether a door between
    the two was open (``info["doors"]``), and how long ago the struggler was last in X's
    present room.

    These are a record of where people were when things happened: with them a learner can
    find sight on its own (who was in the room, or next door through an open door, when X
    moved). ``physical-learned-history`` reads them; the strict ``physical-learned`` does not.
    """
    f: dict[str, float] = dict.fromkeys(ROOM_HISTORY_FEATURES, 0.0)
    g = best_guess(t, s)
    if g is None or g.kind == "open":
        return f
    x = g.target
    trail = [(tk, lc) for tk, lc in t.trails.get(x, []) if tk < s.tick]
    if len(trail) < 2:
        return f
    events = {"last": (trail[-1][0], trail[-2][1], trail[-1][1])}
    left = t.left_at(x, s.place, s.tick)
    if left is not None:
        i = max(i for i, (tk, _) in enumerate(trail) if tk == left)
        if i >= 1:
            events["left"] = (left, trail[i - 1][1], trail[i][1])
    for key, (tk, before, after) in events.items():
        mine = t.room_at(s.person, tk)
        src, dst = t.loc_room_at(before, tk - 1), t.loc_room_at(after, tk)
        f[f"room:{key}_known"] = 1.0
        f[f"room:{key}_struggler_in_from_room"] = float(mine is not None and mine == src)
        f[f"room:{key}_struggler_in_to_room"] = float(mine is not None and mine == dst)
        f[f"room:{key}_door_open_from"] = float(t.door_open_at(mine, src, tk))
        f[f"room:{key}_door_open_to"] = float(t.door_open_at(mine, dst, tk))
        f[f"room:{key}_struggler_moved_it"] = float(after == s.person or before == s.person)
        f[f"room:{key}_ticks_before"] = float(s.tick - tk)
    now = t.room_of_loc(s.where.get(x), s.bodies)
    seen = [tk for tk, r in t.room_trail.get(s.person, []) if tk < s.tick and r == now]
    me = s.bodies.get(s.person)
    f["room:in_x_room_since_last_move"] = float(
        now is not None and (any(tk >= trail[-1][0] for tk in seen)
                             or (me is not None and me.room == now)))
    return f


ROOM_HISTORY_FEATURES: tuple[str, ...] = (
    *(f"room:{k}_{n}" for k in ("left", "last") for n in (
        "known", "struggler_in_from_room", "struggler_in_to_room", "door_open_from",
        "door_open_to", "struggler_moved_it", "ticks_before")),
    "room:in_x_room_since_last_move",
)


# ---------------------------------------------------------------------- the agent
class PhysicalRulesAgent(_OnceAgent):
    """``physical-rules``: help the first struggle :func:`rule_help` calls for, with the
    program for :func:`best_guess`'s object (handed over) or container (opened)."""

    name = "physical-rules"

    def __init__(self) -> None:
        super().__init__()
        self.tracker: ObjectTracker = ObjectTracker()

    def decide(self, observation: Mapping[str, Any], info: Mapping[str, Any],
               cues: list[Any]) -> list[str]:
        t = self.tracker
        for s in t.struggles[len(t.struggles) - len(cues):]:
            if self.fires(s):
                program = self.program(s)
                if program:
                    return program
        return []

    def fires(self, s: Struggle) -> bool:
        """Does this struggle call for help? (The rules; the learned variant overrides.)"""
        return rule_help(self.tracker, s)

    def program(self, s: Struggle) -> list[str]:
        """The help program for the best guess at ``s`` (empty if there is none)."""
        g = best_guess(self.tracker, s)
        if g is None:
            return []
        if g.kind == "open":
            return self.open_box(g.target)
        return self.give(g.target, s.person)
