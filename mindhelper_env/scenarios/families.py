"""Scenario families: each builds a *draft* episode (house, people, schedule) from an rng.

A draft has everything but the measured window and the reference program; the generator
(:mod:`mindhelper_env.scenarios.generator`) simulates it to measure onset and deadline, builds
the reference and validates it. Every random choice goes through the ``numpy`` Generator.

| family | help | what happens |
|---|---|---|
| false_belief_relocation | yes | A knows X is at L1, leaves; X is moved to L2 while A is away; A returns for X |
| false_belief_irrelevant | no | same relocation, but A's next task does not need X |
| false_belief_witnessed | no | X is moved while A watches: no false belief |
| false_belief_self_corrected | no | A is away during the move but sees X at L2 before needing it |
| implicit_goal_search | yes | A needs X, never says so, and searches places where X is not |
| implicit_goal_reach | yes | a child or wheelchair user keeps failing to reach X on a high shelf |
| implicit_goal_blocked | yes | A's hands are full and A cannot open the container it must fill |
| routine | no | tasks go as planned, possibly with distractor events |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mindhelper_env.actors.actor import ACTOR_KINDS
from mindhelper_env.backends.symbolic import ROBOT_ID
from mindhelper_env.world.graph import Node, SceneGraph
from mindhelper_env.world.house import OBJECT_CATALOG, generate_house
from mindhelper_env.world.world import World

__all__ = ["BUILDERS", "Draft", "NAMES"]

NAMES = (
    "Alice", "Bob", "Carla", "David", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas",
    "Kemi", "Liam", "Maya", "Noah", "Olga", "Priya", "Quentin", "Rosa", "Sam", "Tara",
)


class Draft:
    """A house with people being put together; ``to_spec`` makes the spec dict."""

    def __init__(self, rng: np.random.Generator, family: str) -> None:
        self.rng = rng
        self.family = family
        self.g: SceneGraph = generate_house(rng)
        self.world = World(self.g)  # index for queries while building (kept in sync below)
        self.next_id = max(self.g.nodes) + 1
        self.actors: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.focus: int = 2
        self.target: int | None = None
        self.mental_state: dict[str, Any] = {"type": "none"}
        self.needs_help = False
        names = list(NAMES)
        order = rng.permutation(len(names))
        self._names = [names[int(i)] for i in order]
        room = self.rooms[int(rng.integers(len(self.rooms)))]
        self.world.add_character(ROBOT_ID, room, name="robot", robot=True)

    # ---------------------------------------------------------------- queries
    @property
    def rooms(self) -> list[int]:
        return self.world.rooms

    def furniture(self, room: int | None = None, *, prop: str | None = None,
                  max_top: float | None = None, cls: tuple[str, ...] | None = None) -> list[int]:
        out = []
        for n in self.g.nodes.values():
            if n.category != "Furniture":
                continue
            if room is not None and self.world.room_of(n.id) != room:
                continue
            if prop is not None and prop not in n.properties:
                continue
            if cls is not None and n.key not in cls:
                continue
            if max_top is not None:
                h = self.world.height(n.id, top="SURFACES" in n.properties)
                if h is not None and h > max_top:
                    continue
            out.append(n.id)
        return sorted(out)

    def places(self, room: int | None = None, *, max_top: float = 1.9) -> list[int]:
        """Furniture an object can be put in or on, reachable up to ``max_top``."""
        return [f for f in self.furniture(room, max_top=max_top)
                if {"SURFACES", "CONTAINERS"} & self.g.nodes[f].properties]

    def pick(self, seq: list[int] | tuple) -> Any:
        if not seq:
            raise _Reject("nothing to choose from")
        return seq[int(self.rng.integers(len(seq)))]

    def room_of(self, nid: int) -> int:
        r = self.world.room_of(nid)
        if r is None:
            raise _Reject(f"node {nid} has no room")
        return r

    def habitual(self, cls: str) -> list[int]:
        by_cls = OBJECT_CATALOG[cls][1]
        return [f for c in by_cls for f in self.furniture(cls=(c,))]

    # ---------------------------------------------------------------- building
    def person(self, kind: str | None = None, room: int | None = None) -> int:
        cid = 2 + len(self.actors)
        kind = kind or ("adult" if self.rng.random() < 0.7 else
                        ("child" if self.rng.random() < 0.5 else "wheelchair"))
        room = room if room is not None else self.pick(self.rooms)
        name = self._names[len(self.actors)]
        self.world.add_character(cid, room, name=name, reach=ACTOR_KINDS[kind])
        self.g.nodes[cid].extra["kind"] = kind
        self.actors.append({"id": cid, "name": name, "kind": kind, "patience": 3,
                            "retry_wait": 1, "beliefs": {}, "activities": []})
        return cid

    def actor(self, cid: int) -> dict[str, Any]:
        return self.actors[cid - 2]

    def _new_object(self, cls: str) -> Node:
        nid = self.next_id
        self.next_id += 1
        size = OBJECT_CATALOG[cls][0]
        return Node(nid, cls, "Props", frozenset({"GRABBABLE", "MOVABLE"}), set(),
                    bounding_box={"center": [0.0, 1.0, 0.0], "size": list(size)})

    def obj(self, cls: str, parent: int) -> int:
        """Put a new object of class ``cls`` in (container) or on (surface) ``parent``."""
        rel = "INSIDE" if "CONTAINERS" in self.g.nodes[parent].properties else "ON"
        return self.world.add_object(self._new_object(cls), rel, parent)

    def hold(self, cid: int, cls: str) -> int:
        """Give person ``cid`` a new object of class ``cls`` in a free hand."""
        hand = self.world.free_hand(cid)
        if hand is None:
            raise _Reject("no free hand")
        return self.world.add_object(self._new_object(cls), hand, cid)

    def goto(self, cid: int, target: int, stay: int) -> None:
        node = self.g.nodes[target]
        use = None
        if "SITTABLE" in node.properties:
            use = "sit"
        elif "HAS_SWITCH" in node.properties and "CONTAINERS" not in node.properties:
            use = "switchon"
        self.actor(cid)["activities"].append({"type": "goto", "target": target, "stay": stay,
                                              "use": use})

    def fetch(self, cid: int, obj: int, dest: int | None, search: list[int]) -> None:
        self.actor(cid)["activities"].append({"type": "fetch", "object": obj, "dest": dest,
                                              "search": [int(s) for s in search]})

    def believe(self, cid: int, obj: int, loc: int) -> None:
        self.actor(cid)["beliefs"][str(obj)] = int(loc)

    def search_order(self, cls: str, exclude: set[int], last: list[int] = ()) -> list[int]:
        places = [p for p in dict.fromkeys(self.habitual(cls)) if p not in exclude and p not in last]
        perm = self.rng.permutation(len(places))
        return [places[int(i)] for i in perm] + [p for p in last if p not in exclude]

    def bystanders(self, n: int) -> None:
        for _ in range(n):
            cid = self.person()
            for _ in range(int(self.rng.integers(1, 3))):
                self.goto(cid, self.pick(self.furniture()), int(self.rng.integers(2, 8)))

    def to_spec(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "graph": self.g.to_virtualhome(),
            "robot": {"id": ROBOT_ID, "name": "robot"},
            "actors": self.actors,
            "events": self.events,
            "horizon": 150,
            "focus": self.focus,
            "target": self.target,
            "mental_state": self.mental_state,
            "needs_intervention": self.needs_help,
        }


class _Reject(Exception):
    """The draft cannot be built from this rng state; the generator resamples."""


def _n_actors(d: Draft) -> int:
    return int(d.rng.integers(1, 4))


def _target_class(d: Draft, min_places: int = 2) -> str:
    classes = [c for c in sorted(OBJECT_CATALOG)
               if len({d.world.anchor(p) for p in d.habitual(c)}) >= min_places]
    return d.pick(classes)


def _dest_surface(d: Draft, exclude: set[int], max_top: float = 1.1) -> int:
    return d.pick([f for f in d.furniture(prop="SURFACES", max_top=max_top) if f not in exclude])


def _relocation(d: Draft, variant: str) -> None:
    n = _n_actors(d)
    cls = _target_class(d)
    l1 = d.pick([p for p in d.habitual(cls) if p in d.places(max_top=1.5)])
    r1 = d.room_of(l1)
    a = d.person(kind="adult", room=r1)
    x = d.obj(cls, l1)
    d.target = x
    d.believe(a, x, l1)
    away_rooms = [r for r in d.rooms if r != r1]
    r_away = d.pick(away_rooms)
    if variant == "witnessed":
        l2 = d.pick([p for p in d.places(r1, max_top=1.5) if p != l1])
        d.goto(a, d.pick([f for f in d.furniture(r1) if f not in (l1, l2)]), int(d.rng.integers(6, 10)))
    else:
        l2_rooms = [r for r in d.rooms if r != r_away]
        if variant == "self_corrected":
            cands = [p for p in d.furniture(prop="SURFACES", max_top=1.5)
                     if d.room_of(p) in l2_rooms and p != l1 and d.room_of(p) != r1]
        else:
            cands = [p for p in d.places(max_top=1.5) if d.room_of(p) in l2_rooms and p != l1]
        l2 = d.pick(cands)
        d.goto(a, d.pick(d.furniture(r_away)), int(d.rng.integers(8, 13)))
    d.mental_state = {"type": "false_belief", "object": x, "believed": l1, "true": l2}
    # the move
    if n >= 2:
        b_room = d.pick([r for r in d.rooms if r != r_away])
        b = d.person(kind="adult", room=b_room)
        d.believe(b, x, l1)
        d.actor(b)["activities"].append({"type": "idle", "ticks": int(d.rng.integers(1, 3))})
        d.fetch(b, x, l2, [l1])
        d.bystanders(n - 2)
    else:
        tick = 3 + d.world.distance(r1, r_away) if variant != "witnessed" else 3
        rel = "INSIDE" if "CONTAINERS" in d.g.nodes[l2].properties else "ON"
        d.events.append({"tick": int(tick), "type": "move", "object": x, "to": l2, "relation": rel})
    dest = _dest_surface(d, {l1, l2})
    if variant == "relocation":
        d.fetch(a, x, dest, d.search_order(cls, {l1, l2}, last=[l2]))
        d.needs_help = True
    elif variant == "irrelevant":
        later = d.pick([f for f in d.furniture() if d.room_of(f) not in (r1, d.room_of(l2))])
        d.goto(a, later, int(d.rng.integers(3, 7)))
    elif variant == "witnessed":
        d.fetch(a, x, dest, d.search_order(cls, {l1, l2}, last=[l2]))
        d.mental_state = {"type": "none"}
    elif variant == "self_corrected":
        d.goto(a, d.pick(d.furniture(d.room_of(l2))), int(d.rng.integers(2, 4)))
        d.fetch(a, x, dest, d.search_order(cls, {l1, l2}, last=[l2]))
        d.mental_state = dict(d.mental_state, corrected=True)


def false_belief_relocation(d: Draft) -> None:
    _relocation(d, "relocation")


def false_belief_irrelevant(d: Draft) -> None:
    _relocation(d, "irrelevant")


def false_belief_witnessed(d: Draft) -> None:
    _relocation(d, "witnessed")


def false_belief_self_corrected(d: Draft) -> None:
    _relocation(d, "self_corrected")


def implicit_goal_search(d: Draft) -> None:
    n = _n_actors(d)
    cls = _target_class(d)
    habitual = set(d.habitual(cls))
    where = d.pick([p for p in d.furniture(prop="SURFACES", max_top=1.5) if p not in habitual])
    a = d.person(kind="adult", room=d.pick([r for r in d.rooms if r != d.room_of(where)]))
    x = d.obj(cls, where)
    d.target = x
    d.actor(a)["patience"] = int(d.rng.integers(3, 5))
    if d.rng.random() < 0.5:
        d.goto(a, d.pick(d.furniture(d.world.chars[a].room)), int(d.rng.integers(2, 5)))
    dest = _dest_surface(d, {where})
    d.fetch(a, x, dest, d.search_order(cls, {where}))
    d.mental_state = {"type": "implicit_goal", "goal": f"get the {cls}", "object": x}
    d.needs_help = True
    d.bystanders(n - 1)


def implicit_goal_reach(d: Draft) -> None:
    n = _n_actors(d)
    shelf = d.pick(d.furniture(cls=("wallshelf",)))
    cls = d.pick(sorted(OBJECT_CATALOG))
    x = d.obj(cls, shelf)
    d.target = x
    kind = "child" if d.rng.random() < 0.5 else "wheelchair"
    a = d.person(kind=kind, room=d.pick(d.rooms))
    d.actor(a)["patience"] = int(d.rng.integers(4, 7))
    d.actor(a)["retry_wait"] = 2
    d.believe(a, x, shelf)
    if d.rng.random() < 0.5:
        d.goto(a, d.pick(d.furniture(d.world.chars[a].room)), int(d.rng.integers(2, 5)))
    dest = _dest_surface(d, {shelf}, max_top=ACTOR_KINDS[kind])
    d.fetch(a, x, dest, [shelf])
    d.mental_state = {"type": "implicit_goal", "goal": f"get the {cls} from the high shelf",
                      "object": x}
    d.needs_help = True
    d.bystanders(n - 1)


def implicit_goal_blocked(d: Draft) -> None:
    n = _n_actors(d)
    box = d.pick(d.furniture(prop="CAN_OPEN", cls=("fridge", "kitchencabinet", "cabinet",
                                                    "closet", "dishwasher")))
    a = d.person(kind="adult", room=d.pick([r for r in d.rooms if r != d.room_of(box)]
                                           or d.rooms))
    fits = {"fridge": ("milk", "juice", "apple", "cupcake"),
            "dishwasher": ("plate", "mug", "wineglass"),
            "kitchencabinet": ("plate", "mug", "chips", "wineglass")}
    pool = fits.get(d.g.nodes[box].key, ("book", "folder", "towel", "magazine", "wallet"))
    o1 = d.hold(a, d.pick(list(pool)))
    o2 = d.hold(a, d.pick(list(pool)))
    d.target = box
    d.actor(a)["patience"] = int(d.rng.integers(4, 7))
    d.actor(a)["retry_wait"] = 2
    d.actor(a)["activities"].append({"type": "deliver", "objects": [o1, o2], "dest": box})
    d.mental_state = {"type": "implicit_goal", "goal": f"open the {d.g.nodes[box].class_name}",
                      "object": box}
    d.needs_help = True
    d.bystanders(n - 1)


def routine(d: Draft) -> None:
    n = _n_actors(d)
    cls = _target_class(d, min_places=1)
    loc = d.pick([p for p in d.habitual(cls) if p in d.places(max_top=1.5)])
    a = d.person(kind="adult")
    y = d.obj(cls, loc)
    d.target = y
    d.believe(a, y, loc)
    d.goto(a, d.pick(d.furniture()), int(d.rng.integers(2, 6)))
    d.fetch(a, y, _dest_surface(d, {loc}), d.search_order(cls, {loc}, last=[loc]))
    if d.rng.random() < 0.5:
        d.goto(a, d.pick(d.furniture()), int(d.rng.integers(1, 4)))
    # a distractor: something else gets moved
    others = [o for o in d.g.nodes.values() if o.category == "Props" and o.id != y
              and d.world.holder(o.id) is None]
    if others:
        z = d.pick(sorted(o.id for o in others))
        to = d.pick([p for p in d.places() if p != d.world.anchor(z)])
        if n >= 2:
            b = d.person(kind="adult")
            d.believe(b, z, d.world.location(z))
            d.fetch(b, z, to, [d.world.anchor(z)])
            d.bystanders(n - 2)
        else:
            rel = "INSIDE" if "CONTAINERS" in d.g.nodes[to].properties else "ON"
            d.events.append({"tick": int(d.rng.integers(2, 10)), "type": "move", "object": z,
                             "to": to, "relation": rel})
    else:
        d.bystanders(n - 1)


BUILDERS: dict[str, Callable[[Draft], None]] = {
    "false_belief_relocation": false_belief_relocation,
    "false_belief_irrelevant": false_belief_irrelevant,
    "false_belief_witnessed": false_belief_witnessed,
    "false_belief_self_corrected": false_belief_self_corrected,
    "implicit_goal_search": implicit_goal_search,
    "implicit_goal_reach": implicit_goal_reach,
    "implicit_goal_blocked": implicit_goal_blocked,
    "routine": routine,
}
