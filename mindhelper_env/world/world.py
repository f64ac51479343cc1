"""The symbolic household world: executes VirtualHome script lines on a scene graph.

:class:`World` wraps a :class:`~mindhelper_env.world.graph.SceneGraph` and keeps indices that
are updated incrementally (placement of each object, contents of each container, room of each
node, holder of each object, what each character is close to), so executing a line costs
microseconds and no step copies the graph.

Semantics follow VirtualHome's evolving-graph executor closely: on random plausible line
sequences over the TrimmedTestScene1 graphs we agree with it on about 99 % of the non-walk
lines it accepts and of those it rejects, every verb at least 95 %
(:mod:`mindhelper_env.world.conformance`, ``benchmarks/bench_conformance.py``). Deliberate
differences, which account for the remaining lines:

* **Closeness.** A character is *close* to a node when both are in the same room and they share
  the same *anchor* (the piece of furniture or room-level object the node is in or on). Walking
  to a fridge makes the character close to the fridge and to everything in or on it.
  VirtualHome instead uses CLOSE edges (from distances between bounding boxes) and counts a
  character as close to whatever is CLOSE to something it is close to, so after walking to a
  table it may also reach a chair or a floor tile beside it; we need a walk to those.
* **Walking takes time.** ``execute(..., max_hops=1)`` moves a character at most one door per
  call and reports ``done=False`` until the target room is reached; the environment uses this
  so that crossing rooms costs one tick per door. Without ``max_hops`` a walk completes at once.
* **Reach.** Each character has a reach height (default 2.1 m). Grabbing an object, opening a
  container or putting something on/in a target fails when its height (bounding-box centre;
  the top of a surface for ``putback``) is above the character's reach. VirtualHome has no
  reach limit.
* **Hands.** ``open`` needs a free hand and ``close`` does not, as in VirtualHome; ``grab``
  needs a free hand and puts the object in the right hand if it is free, else the left.
* **Hidden objects.** Objects inside a closed container (a node with the CONTAINERS property)
  cannot be walked to or grabbed; VirtualHome lets a character walk to them.
* **Opening appliances that are on.** VirtualHome refuses to ``open`` something that is ON (a
  running oven, a microwave, a fridge); our fridges run and open, so we do not.
* **Seats after ``standup``.** VirtualHome leaves the character ON its seat after ``standup``
  and then counts it as taking that seat, so a one-seat chair cannot be sat on twice; we free
  the seat. Otherwise a seat holds as many sitters as in VirtualHome (four on a couch, sofa or
  bed, two on a loveseat or bench, one elsewhere), objects ON it included.
* **Moved objects** take the position of what they are put on or in (their bounding-box centre
  is updated), so reach checks stay meaningful after the object moves. VirtualHome leaves
  bounding boxes unchanged.
* **``drop``** puts the held object on the floor of the character's room (INSIDE the room).
* **Extension verbs.** ``give <obj> <character>`` hands a held object to another character in
  the same room who has a free hand (people may give too, e.g. an adult handing a child what
  it could not reach); the robot-only ``tell <character> <obj> <location>`` tells a person in
  the same room where an object is (the world records the event; actors decide what to
  believe).
* VirtualHome's ``PUTOFF`` crash and similar executor bugs are not reproduced; unknown verbs
  are rejected by the parser with a reason.

A failed precondition never raises: :meth:`World.execute` returns an :class:`ActionResult`
with ``ok=False`` and a ``reason``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable
from typing import Any

from mindhelper_env.world.actions import (
    _PLACEMENT,
    DEFAULT_REACH,
    ActionResult,
    Event,
    VerbHandlers,
    _Char,
)
from mindhelper_env.world.graph import Node, SceneGraph

__all__ = ["World", "ActionResult", "Event", "DEFAULT_REACH"]


_ROOM_CLASSES = frozenset(
    {
        "kitchen",
        "livingroom",
        "bedroom",
        "bathroom",
        "diningroom",
        "homeoffice",
        "office",
        "hallway",
        "entrance",
    }
)
#: Categories of structural nodes that never count as an object's container or surface
#: (VirtualHome puts furniture ON the floor; the furniture is the anchor, not the floor).
#: TrimmedTestScene1 graphs spell some of these categories in the singular.
_STRUCTURAL = frozenset(
    {"floor", "floors", "wall", "walls", "ceiling", "ceilings", "doors", "windows"}
)


class World(VerbHandlers):
    """A household you can run VirtualHome script lines in.

    ``version`` changes whenever the world's methods change where an object is, who holds
    it or which room a node is in, or open or close something that holds objects (not when
    a character only walks, stands near something, sits or stands up): results computed
    from those, such as :meth:`objects_in`, can be reused while it stays the same.
    ``states_version`` changes with any node's states. Change the world through its
    methods.

    Parameters
    ----------
    graph:
        a :class:`SceneGraph` or a VirtualHome environment-graph dict (copied).
    robot_ids:
        ids of characters allowed to use ``give`` and ``tell``.
    """

    def __init__(self, graph: SceneGraph | dict[str, Any], robot_ids: Iterable[int] = ()) -> None:
        if isinstance(graph, dict):
            graph = SceneGraph.from_virtualhome(graph)
        elif not isinstance(graph, SceneGraph):
            raise TypeError(f"graph must be a SceneGraph or dict, got {type(graph).__name__}")
        self.graph = graph
        self.tick = 0
        self.rooms: list[int] = []
        self._room_of: dict[int, int | None] = {}
        self._parent: dict[int, tuple[str, int]] = {}
        self._contents: dict[int, set[int]] = {}
        self._holder: dict[int, int] = {}
        self._room_members: dict[int, set[int]] = {}
        self.chars: dict[int, _Char] = {}
        self._hop: dict[tuple[int, int], int] = {}
        self._dist: dict[tuple[int, int], int] = {}
        self._build_indices()
        for rid in robot_ids:
            self.set_robot(rid)

    #: see the class docstring (an int, incremented in place by the world's mutations)
    version: int = 0
    states_version: int = 0

    def copy(self) -> World:
        """An independent copy of the world in its current state, much cheaper than building
        a new one from the graph: the graph and every mutable index are copied; the door
        graph (never changed after construction) is shared."""
        w = World.__new__(World)
        w.graph = self.graph.copy()
        w.tick = self.tick
        w.version = self.version
        w.states_version = self.states_version
        w.rooms = list(self.rooms)
        w._room_of = dict(self._room_of)
        w._parent = dict(self._parent)
        w._contents = {k: set(v) for k, v in self._contents.items()}
        w._holder = dict(self._holder)
        w._room_members = {k: set(v) for k, v in self._room_members.items()}
        w.chars = {k: _Char(c.room, c.near, c.sitting_on, c.reach, c.robot, dict(c.extra))
                   for k, c in self.chars.items()}
        w._hop = self._hop
        w._dist = self._dist
        w.adjacency = self.adjacency
        w.doors = self.doors
        return w

    # ------------------------------------------------------------------ index building
    def _is_room(self, n: Node) -> bool:
        return n.category.lower() == "rooms" or n.key in _ROOM_CLASSES

    def _build_indices(self) -> None:
        g = self.graph
        self.rooms = sorted(n.id for n in g.nodes.values() if self._is_room(n))
        room_set = set(self.rooms)
        for r in self.rooms:
            self._room_members[r] = set()
            self._contents[r] = set()
        for n in g.nodes.values():
            if n.id in room_set:
                continue
            if n.key == "character":
                rooms = [t for t in g.targets(n.id, "INSIDE") if t in room_set]
                self.chars[n.id] = _Char(room=min(rooms) if rooms else None)
                for rel in ("HOLDS_RH", "HOLDS_LH"):
                    for obj in g.targets(n.id, rel):
                        self._holder[obj] = n.id
                for seat in g.targets(n.id, "SITTING"):
                    self.chars[n.id].sitting_on = seat
                if "SITTING" in n.states and self.chars[n.id].sitting_on is None:
                    # VirtualHome's executor seats a character with an ON edge, and a loaded
                    # graph may say SITTING with no seat at all: then it sits in its room
                    seats = sorted(g.targets(n.id, "ON")) or sorted(rooms)
                    self.chars[n.id].sitting_on = seats[0] if seats else None
                continue
        for n in g.nodes.values():
            if n.id in room_set or n.id in self.chars or n.id in self._holder:
                continue
            inside = g.targets(n.id, "INSIDE")
            non_room_in = sorted(t for t in inside if self._can_hold(t, room_set))
            on = sorted(t for t in g.targets(n.id, "ON") if self._can_hold(t, room_set))
            rooms = sorted(t for t in inside if t in room_set)
            if non_room_in:
                self._parent[n.id] = ("INSIDE", non_room_in[0])
            elif on:
                self._parent[n.id] = ("ON", on[0])
            elif rooms:
                self._parent[n.id] = ("INSIDE", rooms[0])
        for obj, (_, p) in self._parent.items():
            self._contents.setdefault(p, set()).add(obj)
        # room of every non-room node
        for nid in g.nodes:
            if nid in room_set:
                continue
            self._room_of[nid] = self._resolve_room(nid, room_set)
        for nid, r in self._room_of.items():
            if r is not None:
                self._room_members[r].add(nid)
        self._build_doors(room_set)

    def _can_hold(self, nid: int, room_set: set[int]) -> bool:
        if nid in room_set or nid in self.chars:
            return False
        return self.graph.nodes[nid].category.lower() not in _STRUCTURAL

    def _resolve_room(self, nid: int, room_set: set[int]) -> int | None:
        seen: set[int] = set()
        cur: int | None = nid
        while cur is not None and cur not in seen:
            seen.add(cur)
            if cur in self.chars:
                return self.chars[cur].room
            direct = [t for t in self.graph.targets(cur, "INSIDE") if t in room_set]
            if direct:
                return min(direct)
            if cur in self._holder:
                cur = self._holder[cur]
                continue
            par = self._parent.get(cur)
            cur = par[1] if par else None
            if cur in room_set:
                return cur
        return None

    def _build_doors(self, room_set: set[int]) -> None:
        g = self.graph
        adj: dict[int, set[int]] = {r: set() for r in self.rooms}
        self.doors: dict[int, tuple[int, int]] = {}
        for n in g.nodes.values():
            if "door" not in n.key:
                continue
            linked = sorted(
                {t for t in g.targets(n.id, "BETWEEN") if t in room_set}
                | {t for t in g.targets(n.id, "INSIDE") if t in room_set}
            )
            if len(linked) >= 2:
                a, b = linked[0], linked[1]
                adj[a].add(b)
                adj[b].add(a)
                self.doors[n.id] = (a, b)
        # a room no door reaches is treated as adjacent to every room (documented fallback)
        for r in self.rooms:
            if not adj[r]:
                for o in self.rooms:
                    if o != r:
                        adj[r].add(o)
                        adj[o].add(r)
        self.adjacency = {r: sorted(v) for r, v in adj.items()}
        for src in self.rooms:
            dist = {src: 0}
            first: dict[int, int] = {}
            q = deque([src])
            while q:
                u = q.popleft()
                for v in self.adjacency[u]:
                    if v not in dist:
                        dist[v] = dist[u] + 1
                        first[v] = v if u == src else first[u]
                        q.append(v)
            for dst, d in dist.items():
                key = (src, dst)  # one key object for both tables (a pickle stores it once)
                self._dist[key] = d
                if dst != src:
                    self._hop[key] = first[dst]

    # ------------------------------------------------------------------ characters
    def set_robot(self, char_id: int, robot: bool = True) -> None:
        self._char(char_id).robot = robot

    def set_reach(self, char_id: int, reach: float) -> None:
        self._char(char_id).reach = float(reach)

    def _char(self, char_id: int) -> _Char:
        try:
            return self.chars[char_id]
        except KeyError:
            raise ValueError(f"node {char_id} is not a character") from None

    def add_character(
        self, char_id: int, room: int, *, name: str | None = None, reach: float = DEFAULT_REACH,
        robot: bool = False,
    ) -> int:
        """Add a character node in ``room`` (VirtualHome class ``character``)."""
        if room not in self._room_members:
            raise ValueError(f"node {room} is not a room")
        extra = {"name": name} if name else {}
        self.graph.add_node(Node(char_id, "character", "Characters", frozenset(), set(), extra=extra))
        self.graph.add_edge(char_id, "INSIDE", room)
        self.chars[char_id] = _Char(room=room, reach=reach, robot=robot)
        self.version += 1
        self._room_of[char_id] = room
        self._room_members[room].add(char_id)
        return char_id

    # ------------------------------------------------------------------ queries
    def node(self, nid: int) -> Node:
        return self.graph.nodes[nid]

    def name(self, nid: int) -> str:
        n = self.graph.nodes.get(nid)
        if n is None:
            return f"? ({nid})"
        return f"{n.class_name} ({nid})"

    def room_of(self, nid: int) -> int | None:
        if nid in self.chars:
            return self.chars[nid].room
        if nid in self._room_members:
            return nid
        return self._room_of.get(nid)

    def placement(self, obj: int) -> tuple[str, int] | None:
        """``(relation, parent)`` of an object that is not held, else None."""
        return self._parent.get(obj)

    def location(self, obj: int) -> int | None:
        """Id of what the object is in or on (a room if it stands free), or its holder."""
        h = self._holder.get(obj)
        if h is not None:
            return h
        p = self._parent.get(obj)
        return p[1] if p else None

    def holder(self, obj: int) -> int | None:
        return self._holder.get(obj)

    def contents(self, parent: int) -> set[int]:
        return self._contents.get(parent, set())

    def held_by(self, char_id: int) -> list[int]:
        rels = self.graph._out[char_id]  # graph.targets(), twice, inlined
        rh, lh = rels.get("HOLDS_RH"), rels.get("HOLDS_LH")
        if not rh and not lh:
            return []
        return sorted(rh or ()) + sorted(lh or ())

    def free_hand(self, char_id: int) -> str | None:
        rels = self.graph._out[char_id]
        if not rels.get("HOLDS_RH"):
            return "HOLDS_RH"
        if not rels.get("HOLDS_LH"):
            return "HOLDS_LH"
        return None

    def is_open(self, nid: int) -> bool:
        return "OPEN" in self.graph.nodes[nid].states

    def is_closed_container(self, nid: int) -> bool:
        n = self.graph.nodes[nid]
        return "CLOSED" in n.states

    def is_hidden(self, nid: int) -> bool:
        """True if the node is inside a closed container (at any depth). Only nodes with the
        CONTAINERS property hide what is in them: VirtualHome also marks counters CLOSED and
        puts curtains INSIDE one another."""
        holder, parent, members = self._holder, self._parent, self._room_members
        cur = nid
        for _ in range(16):
            if cur in holder:
                return False
            p = parent.get(cur)
            if p is None:
                return False
            rel, par = p
            if par in members:
                return False
            if rel == "INSIDE":
                pn = self.graph.nodes[par]
                if "CLOSED" in pn.states and "CONTAINERS" in pn.properties:
                    return True
            cur = par
        return False

    def objects_in(self, ids: Iterable[int], rooms: Container[int | None]
                   ) -> list[tuple[int, int | None, int | None]]:
        """``(id, location, room)`` of each node of ``ids`` (in order) whose room is in
        ``rooms`` and that is not hidden: the same as filtering with :meth:`room_of` and
        :meth:`is_hidden` and asking :meth:`location`, in one pass over the indices."""
        return [(nid, loc, r) for nid, _, loc, r
                in self.objects_in_with(dict.fromkeys(ids), rooms)]

    def objects_in_with(self, labels: dict[int, Any], rooms: Container[int | None]
                        ) -> list[tuple[int, Any, int | None, int | None]]:
        """``(id, label, location, room)`` for each ``id: label`` of ``labels`` (in order)
        whose room is in ``rooms`` and that is not hidden: the same as filtering with
        :meth:`room_of` and :meth:`is_hidden` and asking :meth:`location`, in one pass over
        the indices (the env lists its candidate objects with it, labelled by class)."""
        holder, parent, members = self._holder, self._parent, self._room_members
        chars, room_of, nodes = self.chars, self._room_of, self.graph.nodes
        out = []
        for nid, cls in labels.items():
            if nid in chars:
                r = chars[nid].room
            elif nid in members:
                r = nid
            else:
                r = room_of.get(nid)
            if r not in rooms:
                continue
            h = holder.get(nid)
            if h is not None:
                out.append((nid, cls, h, r))
                continue
            p = parent.get(nid)
            if p is None:
                out.append((nid, cls, None, r))
                continue
            up, hidden = p, False  # objects_in's walk up, from the parent
            for _ in range(16):
                rel, par = up
                if par in members:
                    break
                if rel == "INSIDE" and "CLOSED" in nodes[par].states \
                        and "CONTAINERS" in nodes[par].properties:  # as is_hidden
                    hidden = True
                    break
                if par in holder:
                    break
                up = parent.get(par)
                if up is None:
                    break
            if not hidden:
                out.append((nid, cls, p[1], r))
        return out

    def anchor(self, nid: int) -> int:
        """The room-level object a node is in or on (itself if it stands in a room)."""
        holder, parent, members = self._holder, self._parent, self._room_members
        cur = nid
        for _ in range(16):
            h = holder.get(cur)
            if h is not None:
                return h
            p = parent.get(cur)
            if p is None or p[1] in members:
                return cur
            cur = p[1]
        return cur

    def is_close(self, char_id: int, nid: int) -> bool:
        chars = self.chars
        c = chars[char_id]
        room = c.room
        if room is None:
            return False
        if nid in chars:
            if chars[nid].room != room:
                return False
            return c.near == nid or chars[nid].near == char_id or (
                c.near is not None and c.near == chars[nid].near
            )
        if (nid if nid in self._room_members else self._room_of.get(nid)) != room:
            return False
        if self._holder.get(nid) == char_id:
            return True
        near = c.near
        return near is not None and self.anchor(near) == self.anchor(nid)

    def height(self, nid: int, *, top: bool = False) -> float | None:
        n = self.graph.nodes[nid]
        bb = n.bounding_box
        if not bb:
            return None
        try:
            y = float(bb["center"][1])
            if top:
                y += float(bb["size"][1]) / 2.0
        except (KeyError, IndexError, TypeError, ValueError):
            return None
        return y

    def reachable(self, char_id: int, nid: int, *, top: bool = False) -> bool:
        h = self.height(nid, top=top)
        return h is None or h <= self.chars[char_id].reach + 1e-9

    def room_nodes(self, room: int) -> set[int]:
        """Every non-room node currently in ``room`` (characters included)."""
        return self._room_members.get(room, set())

    def visible_nodes(self, char_id: int) -> list[int]:
        """What a character perceives: its room's nodes not hidden in closed containers."""
        room = self.chars[char_id].room
        if room is None:
            return []
        return [n for n in self._room_members[room] if not self.is_hidden(n)]

    def views(self, room: int | None) -> list[int]:
        """The rooms seen from ``room`` through an open door (sight perception): the other
        room of every door of ``room`` that is not closed, by id."""
        if room is None:
            return []
        nodes = self.graph.nodes
        return sorted({b if a == room else a for did, (a, b) in self.doors.items()
                       if room in (a, b) and "CLOSED" not in nodes[did].states})

    def distance(self, room_a: int, room_b: int) -> int:
        """Number of doors between two rooms."""
        return self._dist.get((room_a, room_b), 0)

    def next_room(self, room_a: int, room_b: int) -> int:
        return self._hop.get((room_a, room_b), room_b)

    # ------------------------------------------------------------------ mutation helpers
    def _set_room(self, nid: int, room: int | None) -> None:
        old = self._room_of.get(nid)
        if old == room:
            return
        members = self._room_members
        if nid not in self.chars:  # a character's own room is not an object's
            self.version += 1
        if old is not None:
            members[old].discard(nid)
        self._room_of[nid] = room
        if room is not None:
            members[room].add(nid)
            g = self.graph
            inside = g._out[nid].get("INSIDE")  # g.targets(nid, "INSIDE"), inlined
            if inside:
                for r in [r for r in inside if r in members and r != room]:
                    g.remove_edge(nid, "INSIDE", r)
            g.add_edge(nid, "INSIDE", room)
        # contents travel with their container
        children = self._contents.get(nid)
        if children:
            for child in list(children):
                self._set_room(child, room)

    def _unplace(self, obj: int) -> tuple[str, int] | None:
        old = self._parent.pop(obj, None)
        if old is not None:
            self.version += 1
            rel, par = old
            self._contents.get(par, set()).discard(obj)
            self.graph.remove_edge(obj, rel, par)
        return old

    def _place(self, obj: int, rel: str, parent: int) -> None:
        self.version += 1
        self._parent[obj] = (rel, parent)
        self._contents.setdefault(parent, set()).add(obj)
        self.graph.add_edge(obj, rel, parent)
        room = parent if parent in self._room_members else self.room_of(parent)
        self._set_room(obj, room)
        pb = self.graph.nodes[parent].bounding_box
        ob = self.graph.nodes[obj].bounding_box
        if pb and ob and "center" in pb and "center" in ob:
            try:
                cx, cy, cz = (float(v) for v in pb["center"])
                if rel == "ON":
                    cy += float(pb["size"][1]) / 2.0
                ob["center"] = [cx, round(cy, 4), cz]
            except (KeyError, TypeError, ValueError, IndexError):
                pass

    def _release(self, char_id: int, obj: int) -> None:
        self.graph.remove_edge(char_id, "HOLDS_RH", obj)
        self.graph.remove_edge(char_id, "HOLDS_LH", obj)
        self.version += 1
        self._holder.pop(obj, None)

    def _set_near(self, char_id: int, target: int | None) -> None:
        c = self.chars[char_id]
        if c.near is not None and c.near in self.graph.nodes:
            self.graph.remove_edge(char_id, "CLOSE", c.near)
            self.graph.remove_edge(c.near, "CLOSE", char_id)
        c.near = target
        if target is not None:
            self.graph.add_edge(char_id, "CLOSE", target)
            self.graph.add_edge(target, "CLOSE", char_id)

    def add_object(self, node: Node, relation: str, parent: int) -> int:
        """Add a new object node in/on ``parent`` (``INSIDE``/``ON``), or held by a character
        (``relation`` ``HOLDS_RH``/``HOLDS_LH``, ``parent`` the character)."""
        self.graph.add_node(node)
        self._room_of[node.id] = None
        if relation in ("HOLDS_RH", "HOLDS_LH"):
            if parent not in self.chars:
                raise ValueError(f"node {parent} is not a character")
            if self.graph.targets(parent, relation):
                raise ValueError(f"{self.name(parent)} already holds something in that hand")
            self.graph.add_edge(parent, relation, node.id)
            self.version += 1
            self._holder[node.id] = parent
            self._set_room(node.id, self.chars[parent].room)
        else:
            self.move_object(node.id, relation, parent)
        return node.id

    def remove_object(self, obj: int) -> None:
        """Take an object (not a character, room or container with contents) out of the world."""
        if obj not in self.graph.nodes or obj in self.chars or obj in self._room_members:
            raise ValueError(f"node {obj} is not an object")
        if self._contents.get(obj):
            raise ValueError(f"{self.name(obj)} still holds other nodes")
        h = self._holder.get(obj)
        if h is not None:
            self._release(h, obj)
        self._unplace(obj)
        self._set_room(obj, None)
        self._room_of.pop(obj, None)
        self._contents.pop(obj, None)
        self.graph.remove_node(obj)
        self.version += 1

    def move_object(self, obj: int, relation: str, parent: int) -> None:
        """Scenario-level relocation (no character involved): put ``obj`` in/on ``parent``."""
        if relation not in _PLACEMENT:
            raise ValueError(f"relation must be INSIDE or ON, got {relation!r}")
        for nid in (obj, parent):
            if nid not in self.graph.nodes:
                raise ValueError(f"unknown node id {nid}")
        h = self._holder.get(obj)
        if h is not None:
            self._release(h, obj)
        self._unplace(obj)
        self._place(obj, relation, parent)

    def set_state(self, nid: int, state: str, on: bool = True) -> None:
        states = self.graph.nodes[nid].states
        self.states_version += 1
        if state in ("OPEN", "CLOSED") and self._contents.get(nid):
            self.version += 1  # what it holds may have been hidden or shown
        pairs = {"OPEN": "CLOSED", "CLOSED": "OPEN", "ON": "OFF", "OFF": "ON"}
        if on:
            states.add(state)
            if state in pairs:
                states.discard(pairs[state])
        else:
            states.discard(state)

    # ------------------------------------------------------------------ execution
