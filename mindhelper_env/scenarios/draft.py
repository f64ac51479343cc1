"""The draft of an episode: a house with people being put together from an rng.

:class:`Draft` holds the world, the people (their kinds, activities, patience and beliefs),
the focus person, the target and the mental state while a family builder
(:mod:`mindhelper_env.scenarios.families`) puts the episode together, and turns it into a
spec dict (:meth:`Draft.to_spec`). Every random choice goes through its ``numpy`` Generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mindhelper_env.actors.actor import ACTOR_KINDS
from mindhelper_env.backends.symbolic import ROBOT_ID
from mindhelper_env.scenarios.observer import GOAL_AFTER
from mindhelper_env.world.graph import Node, SceneGraph
from mindhelper_env.world.house import OBJECT_CATALOG, generate_house
from mindhelper_env.world.world import World

__all__ = ["Draft", "NAMES", "FITS", "Reject"]

NAMES = (
    "Alice", "Bob", "Carla", "David", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas",
    "Kemi", "Liam", "Maya", "Noah", "Olga", "Priya", "Quentin", "Rosa", "Sam", "Tara",
)

_KINDS = ("adult", "child", "wheelchair")


class Reject(Exception):
    """The draft cannot be built from this rng state; the generator resamples."""


class Draft:
    """A house with people being put together; ``to_spec`` makes the spec dict."""

    def __init__(self, rng: np.random.Generator, family: str, house: Any = None, *,
                 sight: bool = False, timed: bool = False, decoys: bool = False) -> None:
        self.rng = rng
        self.family = family
        #: sight perception (``mh-gen-3.1``): chores blind like calls, open doors let one
        #: see into the next room; the builders use both (:meth:`draw_doors`, :meth:`chore`)
        self.sight = bool(sight)
        #: ``mh-gen-3.2``: the twin builders draw in the base every timing the mind switch
        #: does not need (:mod:`mindhelper_env.scenarios.twins`)
        self.timed = bool(timed)
        #: ``mh-gen-3.2``: the length drawn in the base of each block of the focus person's
        #: timeline, by the index of its main activity (not part of the spec)
        self.block_ticks: dict[int, int] = {}
        #: ``mh-gen-3.3``: the belief groups add a decoy whose blocks mirror the focus
        #: person's (:mod:`mindhelper_env.scenarios.decoys`); ``block_draws`` keeps each
        #: block's draws by the index of its main activity, ``decoy`` the decoy's id
        self.decoys = bool(decoys)
        self.block_draws: dict[int, dict[str, Any]] = {}
        self.decoy: int | None = None
        #: ``house`` is a :class:`~mindhelper_env.world.houses.HouseSet` (real houses) or
        #: None (a procedurally generated house)
        self.g: SceneGraph = generate_house(rng) if house is None else house.build(rng)
        self.world = World(self.g)  # index for queries while building (kept in sync below)
        self.next_id = max(self.g.nodes) + 1
        self.actors: list[dict[str, Any]] = []
        self._by_id: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.focus: int = -1
        self.target: int | None = None
        self.mental_state: dict[str, Any] = {"type": "none"}
        self.needs_help = False
        #: objects other people's chores must leave alone
        self.keep: set[int] = set()
        #: people whose schedule a twin group's mind switch changes (``mh-gen-3.0``: the one
        #: who moves X, tells or leaves X astray; the adults whose call is switched)
        self.switched: set[int] = set()
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

    def containers(self, room: int | None = None, *, max_top: float = 1.9) -> list[int]:
        return [f for f in self.furniture(room, prop="CAN_OPEN", max_top=max_top)
                if "CONTAINERS" in self.g.nodes[f].properties]

    def surfaces(self, room: int | None = None, *, max_top: float = 1.1) -> list[int]:
        return self.furniture(room, prop="SURFACES", max_top=max_top)

    def pick(self, seq: list[int] | tuple) -> Any:
        if not seq:
            raise Reject("nothing to choose from")
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def room_of(self, nid: int) -> int:
        r = self.world.room_of(nid)
        if r is None:
            raise Reject(f"node {nid} has no room")
        return r

    def habitual(self, cls: str) -> list[int]:
        by_cls = OBJECT_CATALOG[cls][1]
        return [f for c in by_cls for f in self.furniture(cls=(c,))]

    def unusual_surfaces(self, cls: str, *, exclude_rooms: tuple[int, ...] = ()) -> list[int]:
        usual = set(OBJECT_CATALOG[cls][1])
        return [f for f in self.surfaces(max_top=1.1)
                if self.g.nodes[f].key not in usual and self.room_of(f) not in exclude_rooms]

    def instances(self, cls: str) -> list[int]:
        return sorted(n.id for n in self.g.nodes.values()
                      if n.category == "Props" and n.key == cls)

    def remove_instances(self, cls: str, keep: tuple[int, ...] = ()) -> None:
        """Take every object of ``cls`` but ``keep`` out of the house (it has just one X)."""
        for nid in self.instances(cls):
            if nid not in keep:
                self.world.remove_object(nid)

    # ---------------------------------------------------------------- building
    def person(self, kind: str | None = None, room: int | None = None) -> int:
        cid = 2 + len(self.actors)
        if kind is None:
            kind = "adult" if self.chance(0.6) else ("child" if self.chance(0.5) else "wheelchair")
        room = room if room is not None else self.pick(self.rooms)
        name = self._names[len(self.actors)]
        self.world.add_character(cid, room, name=name, reach=ACTOR_KINDS[kind])
        self.g.nodes[cid].extra["kind"] = kind
        rec = {"id": cid, "name": name, "kind": kind, "patience": 3, "retry_wait": 1,
               "beliefs": {}, "activities": []}
        self.actors.append(rec)
        self._by_id[cid] = rec
        return cid

    def actor(self, cid: int) -> dict[str, Any]:
        return self._by_id[cid]

    def reach(self, cid: int) -> float:
        return ACTOR_KINDS[self.actor(cid)["kind"]]

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
            raise Reject("no free hand")
        return self.world.add_object(self._new_object(cls), hand, cid)

    def goto(self, cid: int, target: int, stay: int, *, use_it: bool = True) -> None:
        """Person ``cid`` walks to ``target`` and stays ``stay`` ticks; with ``use_it`` they
        sit down on a seat (then get up again) or switch on what has a switch."""
        node = self.g.nodes[target]
        use = None
        if use_it and "SITTABLE" in node.properties and self.actor(cid)["kind"] != "wheelchair":
            use = "sit"
        elif use_it and "HAS_SWITCH" in node.properties and "CONTAINERS" not in node.properties:
            use = "switchon"
        self.actor(cid)["activities"].append({"type": "goto", "target": target, "stay": stay,
                                              "use": use})

    def fetch(self, cid: int, obj: int, dest: int | None, search: list[int]) -> None:
        self.actor(cid)["activities"].append({"type": "fetch", "object": obj, "dest": dest,
                                              "search": [int(s) for s in search]})

    def deliver(self, cid: int, objs: list[int], dest: int) -> None:
        self.actor(cid)["activities"].append({"type": "deliver", "objects": list(objs),
                                              "dest": dest})

    def check(self, cid: int, place: int) -> None:
        self.actor(cid)["activities"].append({"type": "check", "target": place})

    def idle(self, cid: int, ticks: int) -> None:
        self.actor(cid)["activities"].append({"type": "idle", "ticks": int(ticks)})

    def phone(self, cid: int, ticks: int) -> None:
        """Person ``cid`` takes a call where they stand (notices nothing while on it)."""
        self.actor(cid)["activities"].append({"type": "phone", "ticks": int(ticks)})

    def chore(self, cid: int, target: int, ticks: int) -> None:
        """Person ``cid`` walks to furniture ``target`` and does a chore there for ``ticks``
        ticks, back to the room (notices nothing; with sight perception sees nothing)."""
        self.actor(cid)["activities"].append({"type": "chore", "target": int(target),
                                              "ticks": int(ticks)})

    def busy(self, cid: int, target: int, ticks: int, chore: bool, *,
             use_it: bool = True) -> None:
        """Person ``cid`` walks to ``target`` (using it as :meth:`goto` does with
        ``use_it``) and is busy there ``ticks`` ticks: a chore at it (``chore``) or a call."""
        self.goto(cid, target, 0, use_it=use_it)
        if chore:
            self.chore(cid, target, ticks)
        else:
            self.phone(cid, ticks)

    def draw_doors(self, p_open: float = 0.6) -> None:
        """Sight perception: each door of the house stays open with probability ``p_open``,
        else it is closed for the whole episode (one draw per door, by id)."""
        for did in sorted(self.world.doors):
            if not self.chance(p_open):
                self.world.set_state(did, "CLOSED")

    def door_rooms(self, room: int, *, open_: bool) -> list[int]:
        """The rooms joined to ``room`` by an open (``open_``) or a closed door."""
        nodes = self.g.nodes
        out = {b if a == room else a for did, (a, b) in self.world.doors.items()
               if room in (a, b) and ("CLOSED" not in nodes[did].states) == open_}
        return sorted(out)

    def tell(self, cid: int, person: int, obj: int, place: int) -> None:
        """Person ``cid`` goes to ``person`` and says where ``obj`` is (the room hears)."""
        self.actor(cid)["activities"].append({"type": "tell", "person": int(person),
                                              "object": int(obj), "place": int(place)})

    def earlier_step(self, cid: int, goal_cls: str, room: int | None = None) -> int:
        """The task's earlier step that shows what ``cid`` will want next: they fetch an
        object whose :data:`~mindhelper_env.scenarios.observer.GOAL_AFTER` is ``goal_cls``
        from a low surface of ``room`` (their own by default) and set it down there."""
        firsts = [c for c, g in sorted(GOAL_AFTER.items()) if g == goal_cls]
        if not firsts:
            raise Reject(f"no earlier step leads to {goal_cls}")
        room = self.world.chars[cid].room if room is None else room
        spots = self.reachable_for(cid, self.surfaces(room))
        if len(spots) < 1:
            raise Reject("no low surface for the earlier step")
        y = self.obj(self.pick(firsts), self.pick(spots))
        self.keep.add(y)
        dest = self.pick(self.reachable_for(cid, self.surfaces(room)) or spots)
        self.fetch(cid, y, dest, [self.world.anchor(y)])
        return y

    def believe(self, cid: int, obj: int, loc: int) -> None:
        self.actor(cid)["beliefs"][str(obj)] = int(loc)

    def search_order(self, cls: str, exclude: set[int], last: list[int] = ()) -> list[int]:
        places = [p for p in dict.fromkeys(self.habitual(cls)) if p not in exclude and p not in last]
        perm = self.rng.permutation(len(places))
        return [places[int(i)] for i in perm] + [p for p in last if p not in exclude]

    def reachable_for(self, cid: int, places: list[int]) -> list[int]:
        r = self.reach(cid)
        out = []
        for p in places:
            h = self.world.height(p, top="SURFACES" in self.g.nodes[p].properties)
            if h is None or h <= r:
                out.append(p)
        return out

    # ---------------------------------------------------------------- background life
    def chores(self, cid: int, n: int | None = None) -> None:
        """Ordinary things a person does: walk about, check places, tidy, move things."""
        n = int(self.rng.integers(1, 4)) if n is None else n
        for _ in range(n):
            roll = self.rng.random()
            if roll < 0.25:
                self.goto(cid, self.pick(self.furniture()), int(self.rng.integers(1, 6)))
            elif roll < 0.75:
                pool = self.reachable_for(cid, self.containers() + self.surfaces())
                self.check(cid, self.pick(pool))
            else:
                self.move_something(cid)

    def carry_on(self, cid: int, chores: tuple[int, int] = (1, 3),
                 extra_walks: float = 0.0) -> None:
        """What person ``cid`` does once their task is over, whether it went well or they
        gave up (the actor's ``after`` list): ``chores`` (fewest, most) walks about the
        house (sitting down or switching on where the furniture invites it), plus on average ``extra_walks`` walks about the room where the task
        ended (whole walks, the fraction by chance). Nothing is moved, so nobody else's
        task changes, and nothing is looked into: a look that takes nothing after a task
        whose earlier steps showed a goal would read as a search. The generator's :data:`~mindhelper_env.scenarios.generator.CARRY_ON`
        sets both per family, making up for what a silent twin shows after its cue and a
        help episode does not (the task's last steps, someone coming over to help), so
        that how busy the house is after the cue says nothing of the label."""
        rec = self.actor(cid)
        task, rec["activities"] = rec["activities"], []
        n = int(self.rng.integers(int(chores[0]), int(chores[1]) + 1))
        walks = int(extra_walks) + int(self.chance(extra_walks - int(extra_walks)))
        kinds = ["walk"] * walks + ["any"] * n
        last = task[-1] if task else {}
        spot = last.get("dest") or last.get("target") or (last.get("search") or [None])[-1]
        near = self.furniture(self.room_of(spot)) if spot is not None else []
        for i in self.rng.permutation(len(kinds)):
            if kinds[int(i)] == "walk":  # about the room where the task ended
                self.goto(cid, self.pick(near or self.furniture()), int(self.rng.integers(0, 3)))
            else:
                self.goto(cid, self.pick(self.furniture()), int(self.rng.integers(1, 6)))
        rec["after"], rec["activities"] = rec["activities"], task

    def move_something(self, cid: int) -> None:
        """Person ``cid`` takes a visible object it can reach and puts it somewhere else."""
        room = self.world.chars[cid].room
        objs = [o for o in self.world.graph.nodes.values()
                if o.category == "Props" and self.world.holder(o.id) is None
                and self.world.room_of(o.id) == room  # seen at the start: no hidden prior
                and not self.world.is_hidden(o.id) and o.id != self.target
                and o.id not in self.keep and self.world.reachable(cid, o.id)]
        if not objs:
            self.check(cid, self.pick(self.reachable_for(cid, self.containers() + self.surfaces())))
            return
        z = self.pick(sorted(o.id for o in objs))
        src = self.world.anchor(z)
        dest = self.pick([p for p in self.reachable_for(cid, self.surfaces()) if p != src])
        self.fetch(cid, z, dest, [src])

    def bystander(self, room: int | None = None, kind: str | None = None) -> int:
        """Another person going about chores, sometimes carrying one or two things to a table
        (the same in every family)."""
        cid = self.person(kind=kind, room=room)
        roll = self.rng.random()
        two = 0.1
        if roll < two + 0.2:
            n = 2 if roll < two else 1
            pool = list(self.pick(sorted(FITS.items()))[1]) if n == 2 else sorted(OBJECT_CATALOG)
            objs = [self.hold(cid, self.pick(pool)) for _ in range(n)]
            self.deliver(cid, objs, self.pick(self.reachable_for(cid, self.surfaces())))
        if self.chance(0.25):  # a call, as in every family
            self.phone(cid, int(self.rng.integers(3, 12)))
        self.chores(cid)
        return cid

    def scenery(self) -> None:
        """Set-up found in every family: something lying where nobody keeps it, something on a
        high shelf."""
        if self.chance(0.6):
            cls = self.pick(sorted(OBJECT_CATALOG))
            spots = self.unusual_surfaces(cls)
            if spots:
                self.obj(cls, self.pick(spots))
        shelves = self.furniture(cls=("wallshelf",))
        if shelves and self.chance(0.6):
            self.obj(self.pick(sorted(OBJECT_CATALOG)), self.pick(shelves))

    def shuffle_ids(self) -> dict[int, int]:
        """Give every node but the robot a fresh random id, so ids say nothing about roles."""
        old = sorted(n for n in self.g.nodes if n != ROBOT_ID)
        pool = self.rng.choice(np.arange(2, 2 + 4 * len(old)), size=len(old), replace=False)
        return {o: int(new) for o, new in zip(old, pool, strict=True)}

    def stuck_after_one_try(self, cid: int, near: int | None = None) -> None:
        """Person ``cid`` (the focus of a help episode) fails once, then stays stuck for a
        while before giving up: one visible struggle, as in the silent twins. Half the time
        they wander over to other furniture of the room of ``near`` meanwhile, so that "the
        person did nothing after the struggle" does not mark the help episodes either."""
        rec = self.actor(cid)
        rec["patience"] = 1
        # long enough for help issued at the deadline behind a few free moves
        rec["linger"] = int(self.rng.integers(22, 27))
        if near is not None and self.chance(0.5):
            spots = [f for f in self.furniture(self.room_of(near)) if f != near]
            if spots:
                rec["stuck_walk"] = self.pick(spots)

    def to_spec(self) -> dict[str, Any]:
        mapping = self.shuffle_ids()

        def m(x: Any) -> Any:
            return mapping.get(int(x), int(x)) if x is not None else None

        graph = self.g.to_virtualhome()
        for node in graph["nodes"]:
            node["id"] = m(node["id"])
        for edge in graph["edges"]:
            edge["from_id"] = m(edge["from_id"])
            edge["to_id"] = m(edge["to_id"])
        graph["nodes"].sort(key=lambda n: n["id"])
        graph["edges"].sort(key=lambda e: (e["from_id"], e["relation_type"], e["to_id"]))
        actors = []
        for a in sorted(self.actors, key=lambda a: m(a["id"])):
            lists = {}
            for key in ("activities", "after"):
                acts = lists[key] = []
                for act in a.get(key, ()):
                    new = dict(act)
                    for k in ("target", "object", "dest", "person", "anchor", "container",
                              "place"):
                        if new.get(k) is not None:
                            new[k] = m(new[k])
                    for k in ("search", "alternatives", "objects"):
                        if k in new:
                            new[k] = [m(o) for o in new[k]]
                    acts.append(new)
            if not lists["after"]:
                del lists["after"]
            actors.append({**a, "id": m(a["id"]), **lists,
                           "beliefs": {str(m(k)): m(v) for k, v in a["beliefs"].items()},
                           **({"stuck_walk": m(a["stuck_walk"])} if "stuck_walk" in a else {}),
                           **({"pause_walk": m(a["pause_walk"])} if "pause_walk" in a else {})})
        ms = dict(self.mental_state)
        for k in ("object", "believed", "true", "spare"):
            if ms.get(k) is not None:
                ms[k] = m(ms[k])
        return {
            "family": self.family,
            "graph": graph,
            "robot": {"id": ROBOT_ID, "name": "robot"},
            "actors": actors,
            "events": [dict(e, object=m(e["object"]), to=m(e["to"])) for e in self.events],
            "horizon": 150,
            "focus": m(self.focus),
            "target": m(self.target),
            "mental_state": ms,
            "needs_intervention": self.needs_help,
        }


FITS = {"fridge": ("milk", "juice", "apple", "cupcake"),
         "dishwasher": ("plate", "mug", "wineglass"),
         "kitchencabinet": ("plate", "mug", "chips", "wineglass"),
         "other": ("book", "folder", "towel", "magazine", "wallet")}
