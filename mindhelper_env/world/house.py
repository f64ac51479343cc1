"""Procedurally generated households with VirtualHome class names.

:func:`generate_house` lays 3–6 rooms (kitchen, living room, bedroom, bathroom, dining room,
home office) on a grid, links neighbouring rooms by doors, furnishes each room (surfaces,
openable containers, a high wall shelf, seats, appliances) and scatters everyday objects where
people keep them. All randomness comes from the ``numpy.random.Generator`` passed in, so the
same seed gives the same house. Bounding boxes (metres; ``y`` is up) give the floor plan used by
the renderer and the heights used by reach checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mindhelper_env.world.graph import Node, SceneGraph

__all__ = [
    "ROOM_TYPES",
    "OBJECT_CATALOG",
    "FURNITURE",
    "generate_house",
    "add_object",
    "plausible_places",
    "FIRST_HOUSE_ID",
    "scatter_objects",
]

#: Node ids below this are reserved for characters (1 = robot, 2.. = people).
FIRST_HOUSE_ID = 100

ROOM_TYPES = ("kitchen", "livingroom", "bedroom", "bathroom", "diningroom", "homeoffice")
_ROOM_SIZE = 5.0  # metres, square rooms on a grid


@dataclass(frozen=True)
class Furniture:
    """A furniture class: properties, default state, centre height and size (metres)."""

    cls: str
    props: tuple[str, ...]
    states: tuple[str, ...]
    cy: float
    size: tuple[float, float, float]


def _f(cls: str, props: str, states: str, cy: float, size: tuple[float, float, float]) -> Furniture:
    return Furniture(cls, tuple(props.split()), tuple(states.split()), cy, size)


_C = "CONTAINERS CAN_OPEN"
_S = "SURFACES"
#: Furniture by class name. ``wallshelf`` and ``kitchencabinet`` hang high: out of a child's or a
#: wheelchair user's reach.
FURNITURE: dict[str, Furniture] = {
    f.cls: f
    for f in (
        _f("fridge", _C + " HAS_SWITCH", "CLOSED ON", 0.9, (0.8, 1.8, 0.7)),
        _f("kitchencabinet", _C, "CLOSED", 1.7, (1.0, 0.6, 0.4)),
        _f("kitchencounter", _S, "", 0.45, (2.0, 0.9, 0.6)),
        _f("microwave", _C + " HAS_SWITCH", "CLOSED OFF", 1.05, (0.5, 0.3, 0.4)),
        _f("dishwasher", _C, "CLOSED", 0.4, (0.6, 0.8, 0.6)),
        _f("kitchentable", _S, "", 0.38, (1.6, 0.76, 0.9)),
        _f("wallshelf", _S, "", 1.75, (1.0, 0.1, 0.3)),
        _f("sofa", _S + " SITTABLE", "", 0.25, (2.0, 0.5, 0.9)),
        _f("coffeetable", _S, "", 0.22, (1.0, 0.45, 0.6)),
        _f("tvstand", _S, "", 0.3, (1.5, 0.6, 0.4)),
        _f("tv", "HAS_SWITCH", "OFF", 1.0, (1.2, 0.7, 0.1)),
        _f("cabinet", _C, "CLOSED", 0.5, (1.0, 1.0, 0.5)),
        _f("bookshelf", _S, "", 0.5, (1.0, 1.0, 0.35)),
        _f("bed", _S + " SITTABLE", "", 0.3, (1.6, 0.6, 2.0)),
        _f("nightstand", _C, "CLOSED", 0.3, (0.5, 0.6, 0.4)),
        _f("closet", _C, "CLOSED", 1.0, (1.2, 2.0, 0.6)),
        _f("desk", _S, "", 0.38, (1.4, 0.76, 0.7)),
        _f("chair", "SITTABLE", "", 0.45, (0.5, 0.9, 0.5)),
        _f("bathroomcabinet", _C, "CLOSED", 1.45, (0.7, 0.6, 0.25)),
        _f("bathroomcounter", _S, "", 0.42, (1.2, 0.85, 0.55)),
        _f("toilet", "SITTABLE", "", 0.2, (0.5, 0.4, 0.7)),
        _f("computer", "HAS_SWITCH", "OFF", 0.9, (0.5, 0.4, 0.2)),
    )
}

#: Furniture of each room type: always-present classes, then optional ones.
_ROOM_FURNITURE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kitchen": (("fridge", "kitchencounter", "kitchencabinet", "wallshelf"),
                ("microwave", "dishwasher", "kitchentable")),
    "livingroom": (("sofa", "coffeetable", "tvstand", "tv", "wallshelf"), ("cabinet", "bookshelf")),
    "bedroom": (("bed", "nightstand", "closet", "wallshelf"), ("desk", "chair")),
    "bathroom": (("bathroomcabinet", "bathroomcounter", "toilet"), ("wallshelf", "cabinet")),
    "diningroom": (("kitchentable", "chair", "cabinet", "wallshelf"), ("bookshelf",)),
    "homeoffice": (("desk", "chair", "bookshelf", "cabinet", "wallshelf"), ("computer",)),
}

#: Everyday objects: class -> (size, places where people usually keep it, in order of habit).
OBJECT_CATALOG: dict[str, tuple[tuple[float, float, float], tuple[str, ...]]] = {
    "apple": ((0.08, 0.08, 0.08), ("fridge", "kitchencounter", "kitchentable", "coffeetable")),
    "bananas": ((0.2, 0.05, 0.1), ("kitchencounter", "kitchentable", "fridge")),
    "milk": ((0.1, 0.25, 0.1), ("fridge", "kitchencounter", "kitchentable")),
    "juice": ((0.1, 0.25, 0.1), ("fridge", "kitchencounter", "kitchencabinet")),
    "cupcake": ((0.08, 0.08, 0.08), ("fridge", "kitchencounter", "kitchentable", "kitchencabinet")),
    "chips": ((0.2, 0.25, 0.1), ("kitchencabinet", "kitchencounter", "coffeetable", "cabinet")),
    "mug": ((0.1, 0.1, 0.1), ("kitchencabinet", "dishwasher", "kitchencounter", "desk")),
    "wineglass": ((0.08, 0.2, 0.08), ("kitchencabinet", "dishwasher", "kitchentable", "cabinet")),
    "plate": ((0.25, 0.03, 0.25), ("kitchencabinet", "dishwasher", "kitchentable", "kitchencounter")),
    "remotecontrol": ((0.05, 0.03, 0.18), ("coffeetable", "tvstand", "sofa", "nightstand")),
    "book": ((0.15, 0.04, 0.22), ("bookshelf", "nightstand", "desk", "coffeetable", "wallshelf")),
    "cellphone": ((0.07, 0.01, 0.15), ("nightstand", "desk", "coffeetable", "kitchencounter")),
    "glasses": ((0.14, 0.04, 0.05), ("nightstand", "desk", "bathroomcounter", "coffeetable")),
    "towel": ((0.3, 0.05, 0.3), ("bathroomcabinet", "closet", "bathroomcounter")),
    "toothbrush": ((0.02, 0.18, 0.02), ("bathroomcounter", "bathroomcabinet")),
    "toothpaste": ((0.05, 0.18, 0.04), ("bathroomcabinet", "bathroomcounter")),
    "pillow": ((0.5, 0.15, 0.35), ("bed", "sofa", "closet")),
    "folder": ((0.25, 0.03, 0.32), ("desk", "cabinet", "bookshelf")),
    "magazine": ((0.2, 0.01, 0.28), ("coffeetable", "nightstand", "bookshelf", "desk")),
    "wallet": ((0.11, 0.02, 0.09), ("nightstand", "desk", "cabinet", "kitchencounter")),
}

_OBJ_PROPS = frozenset({"GRABBABLE", "MOVABLE"})


def plausible_places(world_graph: SceneGraph, obj_class: str) -> list[int]:
    """Ids of the furniture where people would look for ``obj_class`` (by habit order)."""
    entry = OBJECT_CATALOG.get(obj_class)
    if entry is None:
        return []
    places = entry[1]
    by_class: dict[str, list[int]] = {}
    for n in world_graph.nodes.values():
        by_class.setdefault(n.key, []).append(n.id)
    out: list[int] = []
    for cls in places:
        out.extend(sorted(by_class.get(cls, [])))
    return out


def _room_origin(cell: tuple[int, int]) -> tuple[float, float]:
    return cell[0] * _ROOM_SIZE, cell[1] * _ROOM_SIZE


def generate_house(rng: np.random.Generator, n_rooms: int | None = None,
                   n_objects_per_room: tuple[int, int] = (2, 4)) -> SceneGraph:
    """Generate a furnished household scene graph from ``rng``.

    Rooms: ``n_rooms`` (3–6; random if None) distinct room types, always a kitchen and a living
    room. Node ids start at :data:`FIRST_HOUSE_ID`; ids below are left for characters.
    """
    if n_rooms is None:
        n_rooms = int(rng.integers(3, 7))
    if not 3 <= n_rooms <= 6:
        raise ValueError(f"n_rooms must be between 3 and 6, got {n_rooms}")
    others = [r for r in ROOM_TYPES if r not in ("kitchen", "livingroom")]
    picked = ["kitchen", "livingroom"] + [
        others[i] for i in sorted(rng.choice(len(others), n_rooms - 2, replace=False))
    ]
    order = rng.permutation(n_rooms)
    room_types = [picked[i] for i in order]
    # grid cells: 3 wide, filled row by row, so rooms form a connected block
    cols = 3 if n_rooms > 4 else 2
    cells = [(i % cols, i // cols) for i in range(n_rooms)]

    g = SceneGraph()
    next_id = FIRST_HOUSE_ID

    def new_id() -> int:
        nonlocal next_id
        next_id += 1
        return next_id - 1

    room_ids: list[int] = []
    for rtype, cell in zip(room_types, cells, strict=True):
        x0, z0 = _room_origin(cell)
        rid = new_id()
        g.add_node(Node(rid, rtype, "Rooms", frozenset(), set(), bounding_box={
            "center": [x0 + _ROOM_SIZE / 2, 1.5, z0 + _ROOM_SIZE / 2],
            "size": [_ROOM_SIZE, 3.0, _ROOM_SIZE],
        }))
        room_ids.append(rid)
    # doors: a random spanning tree of grid neighbours plus one extra link when possible
    neigh = [(a, b) for a in range(n_rooms) for b in range(a + 1, n_rooms)
             if abs(cells[a][0] - cells[b][0]) + abs(cells[a][1] - cells[b][1]) == 1]
    perm = rng.permutation(len(neigh))
    parent = list(range(n_rooms))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    links: list[tuple[int, int]] = []
    spare: list[tuple[int, int]] = []
    for k in perm:
        a, b = neigh[int(k)]
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
            links.append((a, b))
        else:
            spare.append((a, b))
    if spare and rng.random() < 0.5:
        links.append(spare[0])
    for a, b in sorted(links):
        (xa, za), (xb, zb) = _room_origin(cells[a]), _room_origin(cells[b])
        cx = (xa + xb) / 2 + _ROOM_SIZE / 2
        cz = (za + zb) / 2 + _ROOM_SIZE / 2
        did = new_id()
        g.add_node(Node(did, "door", "Doors", frozenset({"CAN_OPEN"}), {"OPEN"}, bounding_box={
            "center": [cx, 1.0, cz], "size": [0.9, 2.0, 0.9],
        }))
        g.add_edge(did, "BETWEEN", room_ids[a])
        g.add_edge(did, "BETWEEN", room_ids[b])
        g.add_edge(did, "INSIDE", room_ids[a])

    # furniture along the walls, evenly spaced slots
    for rid, rtype, cell in zip(room_ids, room_types, cells, strict=True):
        must, optional = _ROOM_FURNITURE[rtype]
        chosen = list(must) + [c for c in optional if rng.random() < 0.6]
        x0, z0 = _room_origin(cell)
        slots = _wall_slots(len(chosen))
        slot_order = rng.permutation(len(slots))
        for k, cls in enumerate(chosen):
            fdef = FURNITURE[cls]
            fx, fz = slots[int(slot_order[k])]
            fid = new_id()
            g.add_node(Node(fid, cls, "Furniture", frozenset(fdef.props), set(fdef.states),
                            bounding_box={"center": [x0 + fx, fdef.cy, z0 + fz],
                                          "size": list(fdef.size)}))
            g.add_edge(fid, "INSIDE", rid)
    scatter_objects(g, rng, n_rooms, n_objects_per_room)
    return g


def scatter_objects(g: SceneGraph, rng: np.random.Generator, n_rooms: int,
                    n_objects_per_room: tuple[int, int] = (2, 4)) -> None:
    """Put everyday objects where people keep them: between ``lo * n_rooms`` and
    ``hi * n_rooms`` draws of a class from :data:`OBJECT_CATALOG`, each on or in a random
    piece of furniture of one of its habitual classes (a draw with no such furniture adds
    nothing). New ids continue after the largest id in ``g``."""
    furn_by_class: dict[str, list[int]] = {}
    for n in g.nodes.values():
        if n.category == "Furniture":
            furn_by_class.setdefault(n.key, []).append(n.id)
    next_id = max(g.nodes) + 1 if g.nodes else FIRST_HOUSE_ID
    classes = sorted(OBJECT_CATALOG)
    lo, hi = n_objects_per_room
    n_objects = int(rng.integers(lo * n_rooms, hi * n_rooms + 1))
    for _ in range(n_objects):
        cls = classes[int(rng.integers(len(classes)))]
        homes = [f for c in OBJECT_CATALOG[cls][1] for f in furn_by_class.get(c, [])]
        if not homes:
            continue
        add_object(g, next_id, cls, homes[int(rng.integers(len(homes)))])
        next_id += 1


def _wall_slots(n: int) -> list[tuple[float, float]]:
    """Positions (metres from the room's corner) along the four walls, clockwise."""
    m = 0.7
    s = _ROOM_SIZE
    base = [(1.2, m), (2.5, m), (3.8, m), (s - m, 1.5), (s - m, 3.2), (3.8, s - m),
            (2.5, s - m), (1.2, s - m), (m, 3.2), (m, 1.5)]
    if n > len(base):
        raise ValueError("too much furniture for one room")
    return base


def add_object(g: SceneGraph, nid: int, cls: str, parent: int) -> int:
    """Add a grabbable object of class ``cls`` in (container) or on (surface) ``parent``."""
    p = g.nodes[parent]
    size = OBJECT_CATALOG.get(cls, ((0.1, 0.1, 0.1), ()))[0]
    rel = "INSIDE" if "CONTAINERS" in p.properties else "ON"
    pb = p.bounding_box or {"center": [0.0, 0.0, 0.0], "size": [0.0, 0.0, 0.0]}
    cx, cy, cz = pb["center"]
    if rel == "ON":
        cy = cy + pb["size"][1] / 2
    g.add_node(Node(nid, cls, "Props", _OBJ_PROPS, set(),
                    bounding_box={"center": [cx, round(cy, 4), cz], "size": list(size)}))
    g.add_edge(nid, rel, parent)
    room = next((t for t in g.targets(parent, "INSIDE")
                 if g.nodes[t].category == "Rooms"), None)
    if room is not None:
        g.add_edge(nid, "INSIDE", room)
    return nid
