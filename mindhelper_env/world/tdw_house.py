"""TDW's furnished floorplans as household scene graphs (needs the ``tdw`` extra).

The ``tdw`` package ships four floorplans (1, 2, 4, 5), each with three furniture layouts
(0, 1, 2), as plain data: ``add_ons/floorplan_layouts.json`` (per layout, the models placed:
model name, position, rotation, scale), ``add_ons/floorplan_floods.json`` (per floorplan, its
floor sections: name, position, adjacent sections) and ``metadata_libraries/models_core.json``
(per model: WordNet category ``wcategory``, bounds relative to the model's pivot). This module
turns each of the 12 floorplan × layout combinations into a graph in VirtualHome's
environment-graph format, shaped like :func:`~mindhelper_env.world.house.generate_house`'s
houses (rooms, doors, furniture; no everyday objects, no characters), so that
``World(SceneGraph.from_virtualhome(graph))`` and the scenario builders use it unchanged.

>>> graphs = tdw_house_graphs()            # doctest: +SKIP
>>> sorted(graphs)[:3]                     # doctest: +SKIP
['floorplan_1a', 'floorplan_1b', 'floorplan_1c']

**Names.** House ``floorplan_<F><v>`` is floorplan ``F`` with layout ``0``, ``1``, ``2`` for
``v`` = ``a``, ``b``, ``c``; a TDW mirror loads the scene of the same name (TDW's visual
variant ``v`` of floorplan ``F``).

**Sections and rooms.** Every flood floor section is a part of the floor; its ``position`` is
the section's centre. Each layout object belongs to the section whose centre is nearest (in
``x``/``z``); objects more than :data:`OUTSIDE_M` from every centre lie outside the house and
are dropped. A section's extent is symmetric about its centre and just covers (plus
:data:`WALL_MARGIN_M`) the footprints of the objects of all three layouts that belong to it,
at least :data:`MIN_HALF_M` each way; where two adjacent sections then overlap, the middle of
the overlap becomes their boundary. Model bounds whose centre lies so far from the pivot that
the pivot is outside them (a few records, e.g. ``fridge_large_composite``, are offset by
metres) are centred on the pivot. In floorplan 2 every section has the same position (the
pivot of the whole floor mesh, not a centre); there the sections with one neighbour are rooms
off a hallway, and their centres come from a deterministic k-means of the three layouts'
object positions (k = number of such sections; clusters are matched to sections in ``x``,
then ``z`` order) and their extents are their objects' bounds plus the margin; the other
sections (the hallway) hold no objects.

A section then becomes a room of the type its furniture implies (first rule that applies):

=============  ==============================================================
``bathroom``   a toilet, bathroom counter or bathroom cabinet
``kitchen``    a fridge, kitchen counter, kitchen cabinet, dishwasher or microwave
``bedroom``    a bed
``homeoffice`` a desk or a computer
``diningroom`` a kitchen table with at least two chairs in the section
``livingroom`` a sofa, a TV or a coffee table
=============  ==============================================================

When no section of a house is then a living room, the typed dining room or home office with
the most sofas, TVs and coffee tables (at least one) becomes the living room.

A section none of these rules types (a hallway, a corner holding only chairs or nothing) is
merged into its neighbouring section with the most furniture (ties: lower section number),
repeatedly, until every section is part of a typed room. A room's bounding box is the union
of the extents of its sections that hold furniture, 3 m high (TDW's interior walls; the floor
is at ``y = 0``).

**Doors.** Two rooms are joined by a door when a section of one is adjacent (flood data) to a
section of the other; one door per pair of rooms (the first such pair of sections), at the
middle of the boundary between the two sections' extents (on the axis where they are furthest
apart; along it, the middle of their overlap), ``INSIDE`` the room whose box is nearest. The
flood adjacency of every floorplan is connected, so every room is reachable. A floorplan-2
hallway's extent is the band between the two rows of rooms it joins, so its doors open on it.

**Furniture.** Models play a household role by their ``wcategory`` (and, for cabinets and
tables, their name and size), see :data:`WCATEGORY_CLASSES`, :func:`furniture_class`; the rest
(lamps, paintings, cushions, cutlery, small appliances, toys, luggage, loose items) are
dropped and counted. A furniture node keeps the model name as ``prefab_name``, the layout
entry under the extra key ``"tdw"`` (model, position, rotation, scale, library, kinematic,
gravity: what a TDW mirror needs to rebuild the layout exactly) and a bounding box from the
layout position and the model's bounds, its ``x``/``z`` footprint turned by the ``y`` rotation.

**The high shelf.** No layout has a wall shelf, which the reach scenarios need. Each house
gets one (``"added": true`` in its node): a ``wallshelf`` whose board is at 1.75 m, on the
least furnished wall of the kitchen (else the living room, else the most furnished room). Its
``prefab_name`` is TDW's ``4ft_wood_shelving`` shelf unit, which a mirror raises (kinematic,
no gravity) so that its top board is at 1.8 m.

Converted houses are cached as JSON in ``<cache dir>/tdw-houses`` (cache dir: see
:func:`mindhelper_env.paths.cache_dir`), one file per ``tdw`` version and
:data:`CONVERTER_VERSION`; an unreadable file is rebuilt; files are written atomically.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mindhelper_env.world.house import FIRST_HOUSE_ID, FURNITURE, ROOM_TYPES

__all__ = [
    "CONVERTER_VERSION",
    "TDW_OBJECT_MODELS",
    "WCATEGORY_CLASSES",
    "HIGH_SHELF_MODEL",
    "furniture_class",
    "house_names",
    "tdw_house_graph",
    "tdw_house_graphs",
    "tdw_house_info",
    "convert_tdw_houses",
    "tdw_data",
]

#: Bump when the conversion changes: cached houses of another version are not read.
CONVERTER_VERSION = 1

INSTALL_HINT = 'pip install "mindhelper-env[tdw]"'

FLOORPLANS = ("1", "2", "4", "5")
LAYOUT_LETTERS = "abc"
ROOM_HEIGHT = 3.0
#: Objects further than this from every section centre are outside the house (metres).
OUTSIDE_M = 6.0
#: Free floor between the outermost furniture and a section's wall (metres).
WALL_MARGIN_M = 0.3
#: Smallest half-extent of a section (metres).
MIN_HALF_M = 1.5
DOOR_SIZE = (0.9, 2.0, 0.9)

#: Models that play a household role, by WordNet category. ``cabinet`` and ``table`` are
#: refined by :func:`furniture_class`; other categories are dropped.
WCATEGORY_CLASSES: dict[str, str] = {
    "refrigerator": "fridge",
    "dishwasher": "dishwasher",
    "microwave": "microwave",
    "microwave, microwave oven": "microwave",
    "sofa": "sofa",
    "coffee table, cocktail table": "coffeetable",
    "television set": "tv",
    "bed": "bed",
    "chair": "chair",
    "stool": "chair",
    "bench": "chair",
    "trunk": "cabinet",  # a lidded chest standing on the floor
    "laptop, laptop computer": "computer",
    "bookshelf": "bookshelf",
    "shelf": "bookshelf",  # free-standing shelving units
    "dining table": "kitchentable",
    "cabinet": "cabinet",
    "table": "kitchentable",
}

#: Cabinet models by name: (name prefix, class). Wall cabinets hang high (out of a child's
#: reach), sink units are kitchen counters, full-height units are pantry closets; other
#: cabinets are floor cabinets.
CABINET_PREFIXES: tuple[tuple[str, str], ...] = (
    ("sink_cabinet_unit", "kitchencounter"),
    ("cabinet_24_wall", "kitchencabinet"),
    ("cabinet_full_height", "closet"),
)

#: A table at least this high (metres) is a dining/kitchen table (a desk when a laptop,
#: printer or pencil stands on it); a lower one is a coffee table.
TABLE_MIN_HEIGHT = 0.65
_DESK_ITEMS = frozenset({"laptop, laptop computer", "printer", "pencil", "pen"})

#: The shelf unit used for each house's added high shelf, and the height of its top board.
HIGH_SHELF_MODEL = "4ft_wood_shelving"
HIGH_SHELF_TOP = 1.8

#: A TDW model (``models_core``) for each everyday-object class of
#: :data:`~mindhelper_env.world.house.OBJECT_CATALOG`. Where ``models_core`` has no such
#: object the comment names the stand-in.
TDW_OBJECT_MODELS: dict[str, str] = {
    "apple": "apple",
    "bananas": "b04_banana",
    "milk": "jug02",  # no milk carton: a small jug
    "juice": "b04_ramlosa_bottle_2015_vray",  # a drinks bottle
    "cupcake": "bread",  # no cupcake: a small bread roll
    "chips": "b05_snickers",  # no crisps packet: a snack bar
    "mug": "coffeemug",
    "wineglass": "b04_wineglass",
    "plate": "plate06",
    "remotecontrol": "remote_vr_2012",
    "book": "holy_bible",  # a hard-cover book
    "cellphone": "f10_apple_iphone_4",
    "glasses": "b04_cgaxis_models_31_12_vray",  # no spectacles: headphones (worn likewise)
    "towel": "flat_woven_rug",  # no towel: the smallest woven textile
    "toothbrush": "generic_toothbrush_001",
    "toothpaste": "soap_dispenser_01",  # no toothpaste tube: a bathroom dispenser
    "pillow": "pillow01",
    "folder": "cgaxis_models_65_14_vray",  # no folder: a thin book
    "magazine": "cgaxis_models_23_19_vray",  # no magazine: a thin book
    "wallet": "small_purse",
}

_ROOM_RULES: tuple[tuple[str, frozenset[str]], ...] = (
    ("bathroom", frozenset({"toilet", "bathroomcounter", "bathroomcabinet"})),
    ("kitchen", frozenset({"fridge", "kitchencounter", "kitchencabinet", "dishwasher",
                           "microwave"})),
    ("bedroom", frozenset({"bed"})),
    ("homeoffice", frozenset({"desk", "computer"})),
)
_LIVING = frozenset({"sofa", "tv", "coffeetable"})


# ---------------------------------------------------------------------------------- data
def _require_tdw() -> None:
    if importlib.util.find_spec("tdw") is None:
        raise ImportError(f"TDW houses need the tdw package: {INSTALL_HINT}")


def _tdw_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tdw")
    except PackageNotFoundError:  # importable but not installed as a distribution
        return "unknown"


def tdw_data() -> dict[str, Any]:
    """TDW's shipped data this module reads: ``layouts``, ``floods``, ``models`` (the
    ``models_core`` records), ``scenes`` (``scenes.json`` records), ``replicants``,
    ``wheelchair_replicants``. Read as files (``tdw.librarian`` is not imported)."""
    _require_tdw()
    from importlib.resources import files

    root = files("tdw")

    def load(*parts: str) -> Any:
        return json.loads(root.joinpath(*parts).read_text(encoding="utf-8"))

    return {
        "layouts": load("add_ons", "floorplan_layouts.json"),
        "floods": load("add_ons", "floorplan_floods.json"),
        "models": load("metadata_libraries", "models_core.json")["records"],
        "scenes": load("metadata_libraries", "scenes.json")["records"],
        "replicants": load("metadata_libraries", "replicants.json")["records"],
        "wheelchair_replicants": load("metadata_libraries",
                                      "wheelchair_replicants.json")["records"],
    }


def house_names() -> list[str]:
    """The 12 house names, ``floorplan_1a`` … ``floorplan_5c`` (no tdw needed)."""
    return [f"floorplan_{f}{v}" for f in FLOORPLANS for v in LAYOUT_LETTERS]


# ------------------------------------------------------------------------------ geometry
def _extents(record: dict[str, Any]) -> tuple[float, float, float, float, float, float]:
    """``(x0, x1, y0, y1, z0, z1)`` of a model's bounds about its pivot (sorted: some
    records list left/right or back/front the other way round)."""
    b = record["bounds"]
    xs = sorted((b["left"]["x"], b["right"]["x"]))
    ys = sorted((b["bottom"]["y"], b["top"]["y"]))
    zs = sorted((b["back"]["z"], b["front"]["z"]))
    if not (xs[0] <= 0.0 <= xs[1] and zs[0] <= 0.0 <= zs[1]):
        # the pivot lies outside the footprint: the record's bounds are offset (e.g.
        # fridge_large_composite's by 4 m), while the layouts place the model where its
        # position says; centre the footprint on the pivot
        hx, hz = (xs[1] - xs[0]) / 2, (zs[1] - zs[0]) / 2
        xs, zs = [-hx, hx], [-hz, hz]
    return xs[0], xs[1], ys[0], ys[1], zs[0], zs[1]


def _footprint(obj: dict[str, Any], record: dict[str, Any]) -> dict[str, list[float]]:
    """World-space axis-aligned box of a placed model: its bounds scaled, the ``x``/``z``
    rectangle turned by the ``y`` rotation (degrees, clockwise seen from above, as Unity
    turns), moved to the position."""
    x0, x1, y0, y1, z0, z1 = _extents(record)
    s = obj.get("scale_factor") or {"x": 1, "y": 1, "z": 1}
    x0, x1 = x0 * s["x"], x1 * s["x"]
    y0, y1 = y0 * s["y"], y1 * s["y"]
    z0, z1 = z0 * s["z"], z1 * s["z"]
    a = math.radians(obj["rotation"]["y"])
    c, sn = math.cos(a), math.sin(a)
    corners = [(x * c + z * sn, -x * sn + z * c) for x in (x0, x1) for z in (z0, z1)]
    cx = [p[0] for p in corners]
    cz = [p[1] for p in corners]
    p = obj["position"]
    lo = (p["x"] + min(cx), p["y"] + y0, p["z"] + min(cz))
    hi = (p["x"] + max(cx), p["y"] + y1, p["z"] + max(cz))
    return {"center": [round((a_ + b_) / 2, 4) for a_, b_ in zip(lo, hi, strict=True)],
            "size": [round(b_ - a_, 4) for a_, b_ in zip(lo, hi, strict=True)]}


def _rect(box: dict[str, list[float]]) -> tuple[float, float, float, float]:
    (cx, _, cz), (sx, _, sz) = box["center"], box["size"]
    return cx - sx / 2, cx + sx / 2, cz - sz / 2, cz + sz / 2


def _union(rects: Iterable[tuple[float, float, float, float]]
           ) -> tuple[float, float, float, float]:
    rs = list(rects)
    return (min(r[0] for r in rs), max(r[1] for r in rs),
            min(r[2] for r in rs), max(r[3] for r in rs))


def _kmeans(points: list[tuple[float, float]], k: int) -> list[tuple[float, float]]:
    """Deterministic k-means in the plane: farthest-point start from the point with the
    smallest ``x + z``, then Lloyd iterations. Centres sorted by ``x``, then ``z``."""
    pts = sorted(points)
    if len(pts) < k:
        raise ValueError("fewer points than clusters")
    centres = [min(pts, key=lambda p: (p[0] + p[1], p))]
    while len(centres) < k:
        centres.append(max(pts, key=lambda p: (min(math.dist(p, c) for c in centres), p)))
    for _ in range(50):
        groups: list[list[tuple[float, float]]] = [[] for _ in centres]
        for p in pts:
            groups[min(range(k), key=lambda i: (math.dist(p, centres[i]), i))].append(p)
        new = [(sum(p[0] for p in g) / len(g), sum(p[1] for p in g) / len(g)) if g else c
               for g, c in zip(groups, centres, strict=True)]
        if new == centres:
            break
        centres = new
    return sorted(centres)


def _nearest(p: tuple[float, float], centres: dict[str, tuple[float, float]]) -> str:
    return min(centres, key=lambda s: (math.dist(p, centres[s]), int(s)))


def _sections(floorplan: str, data: dict[str, Any]) -> tuple[
        dict[str, tuple[float, float]], dict[str, tuple[float, float, float, float]],
        dict[str, list[str]], dict[str, str]]:
    """Section centres, extents (x0, x1, z0, z1), adjacency and names of one floorplan."""
    floods = data["floods"][floorplan]
    models = data["models"]
    adjacency = {s: sorted(v["adjacent_floors"], key=int) for s, v in floods.items()}
    names = {s: v["name"] for s, v in floods.items()}
    objs = [o for lay in data["layouts"][floorplan].values() for o in lay if o["name"] in models]
    points = [(o["position"]["x"], o["position"]["z"]) for o in objs]
    given = {s: (v["position"]["x"], v["position"]["z"]) for s, v in floods.items()}
    symmetric = len({(round(x, 2), round(z, 2)) for x, z in given.values()}) == len(given)
    if symmetric:
        centres = given
    else:  # coinciding positions: rooms are the leaf sections, placed by clustering
        rooms = sorted((s for s in floods if len(adjacency[s]) == 1), key=int)
        centres = dict(zip(rooms, _kmeans(points, len(rooms)), strict=True))
    reach: dict[str, list[tuple[float, float, float, float]]] = {s: [] for s in centres}
    for o in objs:
        p = (o["position"]["x"], o["position"]["z"])
        s = _nearest(p, centres)
        if math.dist(p, centres[s]) > OUTSIDE_M:
            continue
        reach[s].append(_rect(_footprint(o, models[o["name"]])))
    extents: dict[str, tuple[float, float, float, float]] = {}
    for s, (cx, cz) in centres.items():
        rs = reach[s] or [(cx, cx, cz, cz)]
        if symmetric:
            hx = max(MIN_HALF_M, max(max(cx - r[0], r[1] - cx) for r in rs) + WALL_MARGIN_M)
            hz = max(MIN_HALF_M, max(max(cz - r[2], r[3] - cz) for r in rs) + WALL_MARGIN_M)
            extents[s] = (cx - hx, cx + hx, cz - hz, cz + hz)
        else:
            x0, x1, z0, z1 = _union(rs)
            m = WALL_MARGIN_M
            extents[s] = (x0 - m, x1 + m, z0 - m, z1 + m)
    if not symmetric:
        for s in sorted(floods, key=int):
            if s not in extents:
                extents[s] = _hallway([extents[n] for n in adjacency[s] if n in extents])
    # adjacent sections that overlap share the middle of the overlap as their boundary
    for a in sorted(extents, key=int):
        for b in adjacency[a]:
            if b not in extents or int(b) < int(a):
                continue
            ra, rb = list(extents[a]), list(extents[b])
            ox = min(ra[1], rb[1]) - max(ra[0], rb[0])
            oz = min(ra[3], rb[3]) - max(ra[2], rb[2])
            if ox <= 0 or oz <= 0:
                continue
            ax, az = (ra[0] + ra[1]) / 2, (ra[2] + ra[3]) / 2
            bx, bz = (rb[0] + rb[1]) / 2, (rb[2] + rb[3]) / 2
            k, ca, cb = (0, ax, bx) if abs(ax - bx) >= abs(az - bz) else (2, az, bz)
            cut = (max(ra[k], rb[k]) + min(ra[k + 1], rb[k + 1])) / 2
            if ca <= cb:
                ra[k + 1], rb[k] = cut, cut
            else:
                rb[k + 1], ra[k] = cut, cut
            extents[a], extents[b] = tuple(ra), tuple(rb)  # type: ignore[assignment]
    return centres, extents, adjacency, names


def _hallway(rooms: list[tuple[float, float, float, float]]
             ) -> tuple[float, float, float, float]:
    """Extent of a hallway joining ``rooms`` (x0, x1, z0, z1 each): the band between the two
    rows the rooms form (split at their mean centre, on the axis where the gap between the
    rows is widest; at least 1 m wide), as long as the rooms reach along the other axis."""
    best: tuple[float, int, float, float] | None = None
    for k in (0, 2):
        mids = [(r[k] + r[k + 1]) / 2 for r in rooms]
        split = sum(mids) / len(mids)
        low = [r[k + 1] for r, m in zip(rooms, mids, strict=True) if m < split]
        high = [r[k] for r, m in zip(rooms, mids, strict=True) if m >= split]
        if not low or not high:
            continue
        lo, hi = max(low), min(high)
        if best is None or hi - lo > best[0]:
            best = (hi - lo, k, lo, hi)
    if best is None:  # one row or one room: a band along the rooms' middle
        x0, x1, z0, z1 = _union(rooms)
        mid = (z0 + z1) / 2
        return x0, x1, mid - 0.5, mid + 0.5
    _, k, lo, hi = best
    if hi - lo < 1.0:
        mid = (lo + hi) / 2
        lo, hi = mid - 0.5, mid + 0.5
    x0, x1, z0, z1 = _union(rooms)
    return (lo, hi, z0, z1) if k == 0 else (x0, x1, lo, hi)


# ------------------------------------------------------------------------------ furniture
def furniture_class(obj: dict[str, Any], record: dict[str, Any],
                    layout: list[dict[str, Any]], models: dict[str, Any]) -> str | None:
    """Our furniture class of a layout object, or None when it plays no household role.

    By :data:`WCATEGORY_CLASSES`; a cabinet by :data:`CABINET_PREFIXES` (else ``cabinet``);
    a table lower than :data:`TABLE_MIN_HEIGHT` is a ``coffeetable``, a higher one a ``desk``
    when a laptop, printer or pencil of the layout stands on its top, else a
    ``kitchentable``."""
    cls = WCATEGORY_CLASSES.get(record["wcategory"])
    if cls == "cabinet":
        return next((c for p, c in CABINET_PREFIXES if obj["name"].startswith(p)), "cabinet")
    if cls == "kitchentable" and record["wcategory"] == "table":
        box = _footprint(obj, record)
        top = box["center"][1] + box["size"][1] / 2
        if top < TABLE_MIN_HEIGHT:
            return "coffeetable"
        x0, x1, z0, z1 = _rect(box)
        for other in layout:
            rec = models.get(other["name"])
            if rec is None or rec["wcategory"] not in _DESK_ITEMS:
                continue
            p = other["position"]
            if x0 <= p["x"] <= x1 and z0 <= p["z"] <= z1 and abs(p["y"] - top) < 0.15:
                return "desk"
    return cls


def _room_type(classes: list[str]) -> str | None:
    present = set(classes)
    for rtype, needs in _ROOM_RULES:
        if present & needs:
            return rtype
    if "kitchentable" in present and classes.count("chair") >= 2:
        return "diningroom"
    if present & _LIVING:
        return "livingroom"
    return None


# ------------------------------------------------------------------------------ a house
def _convert(floorplan: str, layout_index: int, data: dict[str, Any]
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    models = data["models"]
    layout = data["layouts"][floorplan][str(layout_index)]
    name = f"floorplan_{floorplan}{LAYOUT_LETTERS[layout_index]}"
    centres, extents, adjacency, section_names = _sections(floorplan, data)

    # furniture of this layout, by section
    furniture: list[tuple[str, str, dict[str, Any], dict[str, list[float]]]] = []
    dropped = outside = 0
    for obj in layout:
        rec = models.get(obj["name"])
        cls = furniture_class(obj, rec, layout, models) if rec is not None else None
        if cls is None:
            dropped += 1
            continue
        box = _footprint(obj, rec)
        p = (obj["position"]["x"], obj["position"]["z"])
        sec = _nearest(p, centres)
        if math.dist(p, centres[sec]) > OUTSIDE_M:
            outside += 1
            continue
        furniture.append((sec, cls, obj, box))

    # rooms: typed sections absorb untyped neighbours
    sections = sorted(adjacency, key=int)
    classes = {s: [f[1] for f in furniture if f[0] == s] for s in sections}
    owner = {s: s for s in sections}
    rtype = {s: _room_type(classes[s]) for s in sections}
    if "livingroom" not in rtype.values():
        lounge = [s for s in sections if rtype[s] in ("diningroom", "homeoffice")
                  and any(c in _LIVING for c in classes[s])]
        if lounge:
            best = max(lounge, key=lambda s: (sum(c in _LIVING for c in classes[s]), -int(s)))
            rtype[best] = "livingroom"

    def root(s: str) -> str:
        while owner[s] != s:
            s = owner[s]
        return s

    while True:
        pending = [s for s in sections if owner[s] == s and rtype[s] is None]
        if not pending:
            break
        progressed = False
        for s in pending:
            members = [m for m in sections if root(m) == s]
            neigh = {root(n) for m in members for n in adjacency[m]} - {s}
            typed = [n for n in neigh if rtype[n] is not None]
            if not typed:
                continue
            best = max(typed, key=lambda n: (sum(len(classes[m]) for m in sections
                                                 if root(m) == n), -int(n)))
            owner[s] = best
            progressed = True
        if not progressed:  # nothing typed anywhere: call the best furnished a living room
            s = max(pending, key=lambda n: (len(classes[n]), -int(n)))
            rtype[s] = "livingroom"
    roots = [s for s in sections if owner[s] == s]

    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    next_id = FIRST_HOUSE_ID
    room_id: dict[str, int] = {}
    room_rect: dict[str, tuple[float, float, float, float]] = {}
    for s in roots:
        members = [m for m in sections if root(m) == s]
        furnished = [m for m in members if classes[m]] or members
        rect = _union(extents[m] for m in furnished)
        room_rect[s] = rect
        room_id[s] = next_id
        nodes.append({
            "id": next_id, "class_name": rtype[s], "category": "Rooms",
            "properties": [], "states": [],
            "bounding_box": _box(rect, 0.0, ROOM_HEIGHT),
            "tdw": {"scene": name, "sections": [section_names[m] for m in members]},
        })
        next_id += 1

    # doors
    pairs: dict[tuple[str, str], tuple[str, str]] = {}  # room pair -> first section pair
    for a in sections:
        for b in adjacency[a]:
            ra, rb = sorted((root(a), root(b)), key=int)
            if ra != rb and (ra, rb) not in pairs:
                pairs[(ra, rb)] = (a, b) if root(a) == ra else (b, a)
    for (ra, rb), (sa, sb) in sorted(pairs.items(), key=lambda p: (int(p[0][0]), int(p[0][1]))):
        cx, cz = _door_point(extents[sa], extents[sb])
        near = min((ra, rb), key=lambda r: (_outside(room_rect[r], cx, cz), int(r)))
        nodes.append({
            "id": next_id, "class_name": "door", "category": "Doors",
            "properties": ["CAN_OPEN"], "states": ["OPEN"],
            "bounding_box": {"center": [round(cx, 3), DOOR_SIZE[1] / 2, round(cz, 3)],
                             "size": list(DOOR_SIZE)},
        })
        edges += [_edge(next_id, "BETWEEN", room_id[ra]), _edge(next_id, "BETWEEN", room_id[rb]),
                  _edge(next_id, "INSIDE", room_id[near])]
        next_id += 1

    # furniture
    placed: list[tuple[str, dict[str, list[float]]]] = []
    for sec, cls, obj, box in furniture:
        fdef = FURNITURE[cls]
        nodes.append({
            "id": next_id, "class_name": cls, "category": "Furniture",
            "properties": sorted(fdef.props), "states": sorted(fdef.states),
            "bounding_box": box, "prefab_name": obj["name"],
            "tdw": {k: obj[k] for k in ("position", "rotation", "scale_factor", "library",
                                        "kinematic", "gravity") if k in obj}
            | {"model": obj["name"]},
        })
        edges.append(_edge(next_id, "INSIDE", room_id[root(sec)]))
        placed.append((root(sec), box))
        next_id += 1

    # the high shelf
    shelves = [n for n in nodes if n["class_name"] == "wallshelf"
               and n["bounding_box"]["center"][1] >= 1.6]
    added = 0
    if not shelves:
        home = _shelf_room(roots, rtype, placed)
        node = _high_shelf(next_id, room_rect[home], [b for r, b in placed if r == home],
                           models[HIGH_SHELF_MODEL])
        nodes.append(node)
        edges.append(_edge(next_id, "INSIDE", room_id[home]))
        next_id += 1
        added = 1
    edges.sort(key=lambda e: (e["from_id"], e["relation_type"], e["to_id"]))
    info = {"scene": name, "floorplan": floorplan, "layout": layout_index, "dropped": dropped,
            "outside": outside, "added_shelves": added}
    return {"nodes": nodes, "edges": edges}, info


def _edge(f: int, rel: str, t: int) -> dict[str, Any]:
    return {"from_id": f, "relation_type": rel, "to_id": t}


def _box(rect: tuple[float, float, float, float], y0: float, y1: float
         ) -> dict[str, list[float]]:
    x0, x1, z0, z1 = rect
    return {"center": [round((x0 + x1) / 2, 3), round((y0 + y1) / 2, 3), round((z0 + z1) / 2, 3)],
            "size": [round(x1 - x0, 3), round(y1 - y0, 3), round(z1 - z0, 3)]}


def _outside(rect: tuple[float, float, float, float], x: float, z: float) -> float:
    """How far the point ``(x, z)`` lies outside ``rect`` (0 inside)."""
    dx = max(rect[0] - x, 0.0, x - rect[1])
    dz = max(rect[2] - z, 0.0, z - rect[3])
    return math.hypot(dx, dz)


def _door_point(a: tuple[float, float, float, float], b: tuple[float, float, float, float]
                ) -> tuple[float, float]:
    """Middle of the boundary between two room rectangles."""
    gap_x = max(b[0] - a[1], a[0] - b[1])
    gap_z = max(b[2] - a[3], a[2] - b[3])

    def mid(lo_a: float, hi_a: float, lo_b: float, hi_b: float) -> float:
        lo, hi = max(lo_a, lo_b), min(hi_a, hi_b)
        return (lo + hi) / 2 if lo <= hi else (lo_a + hi_a + lo_b + hi_b) / 4

    def edge(lo_a: float, hi_a: float, lo_b: float, hi_b: float) -> float:
        # the facing edges' midpoint (overlapping boxes: the middle of the overlap)
        if (lo_a + hi_a) <= (lo_b + hi_b):
            return (hi_a + lo_b) / 2
        return (hi_b + lo_a) / 2

    if gap_x >= gap_z:
        return edge(a[0], a[1], b[0], b[1]), mid(a[2], a[3], b[2], b[3])
    return mid(a[0], a[1], b[0], b[1]), edge(a[2], a[3], b[2], b[3])


def _shelf_room(roots: list[str], rtype: dict[str, str | None],
                placed: list[tuple[str, dict[str, list[float]]]]) -> str:
    count = {r: sum(1 for s, _ in placed if s == r) for r in roots}
    for want in ("kitchen", "livingroom"):
        cands = [r for r in roots if rtype[r] == want]
        if cands:
            return max(cands, key=lambda r: (count[r], -int(r)))
    return max(roots, key=lambda r: (count[r], -int(r)))


def _high_shelf(nid: int, rect: tuple[float, float, float, float],
                boxes: list[dict[str, list[float]]], record: dict[str, Any]) -> dict[str, Any]:
    """A wall shelf on the room wall with the least furniture near its middle."""
    x0, x1, z0, z1 = rect
    cx, cz = (x0 + x1) / 2, (z0 + z1) / 2
    inset = 0.2
    # (name, shelf centre, wall runs along x?)
    walls = [("north", (cx, z1 - inset), True), ("east", (x1 - inset, cz), False),
             ("south", (cx, z0 + inset), True), ("west", (x0 + inset, cz), False)]

    def crowd(p: tuple[float, float]) -> int:
        return sum(1 for b in boxes if math.dist(p, (b["center"][0], b["center"][2])) < 1.2)

    _, (px, pz), along_x = min(walls, key=lambda w: crowd(w[1]))
    w, h, d = FURNITURE["wallshelf"].size
    size = [w, h, d] if along_x else [d, h, w]
    _, _, _, top, _, _ = _extents(record)
    # the shelf unit's long side lies along its z axis: turn it along walls that run along x
    rot_y = 90.0 if along_x else 0.0
    cy = FURNITURE["wallshelf"].cy
    return {
        "id": nid, "class_name": "wallshelf", "category": "Furniture",
        "properties": sorted(FURNITURE["wallshelf"].props),
        "states": sorted(FURNITURE["wallshelf"].states),
        "bounding_box": {"center": [round(px, 3), cy, round(pz, 3)], "size": size},
        "prefab_name": HIGH_SHELF_MODEL,
        "added": True,
        "tdw": {"model": HIGH_SHELF_MODEL, "library": "models_core.json",
                "position": {"x": round(px, 3), "y": round(HIGH_SHELF_TOP - top, 4),
                             "z": round(pz, 3)},
                "rotation": {"x": 0.0, "y": rot_y, "z": 0.0},
                "scale_factor": {"x": 1, "y": 1, "z": 1},
                "kinematic": True, "gravity": False},
    }


def _convert_all(data: dict[str, Any]) -> dict[str, Any]:
    houses: dict[str, dict[str, Any]] = {}
    info: dict[str, dict[str, Any]] = {}
    for f in FLOORPLANS:
        for i in range(len(LAYOUT_LETTERS)):
            g, facts = _convert(f, i, data)
            houses[facts["scene"]] = g
            info[facts["scene"]] = facts
            bad = [n["class_name"] for n in g["nodes"]
                   if n["category"] == "Rooms" and n["class_name"] not in ROOM_TYPES]
            if bad:
                raise RuntimeError(f"{facts['scene']}: rooms of unknown types {bad}")
    return {"converter_version": CONVERTER_VERSION, "tdw_version": _tdw_version(),
            "houses": houses, "info": info}


def convert_tdw_houses(data: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Convert every floorplan × layout now (no cache): name -> graph. ``data``:
    :func:`tdw_data`."""
    return _convert_all(data if data is not None else tdw_data())["houses"]


# ---------------------------------------------------------------------------------- cache
def _cache_file(cache_dir: str | os.PathLike[str] | None) -> Path:
    if cache_dir is None:
        from mindhelper_env.paths import cache_dir as base

        root = base() / "tdw-houses"
    else:
        root = Path(cache_dir)
    return root / f"tdw-{_tdw_version()}-converter-{CONVERTER_VERSION}.json"


def _valid(doc: Any) -> bool:
    if not isinstance(doc, dict) or doc.get("converter_version") != CONVERTER_VERSION:
        return False
    houses, info = doc.get("houses"), doc.get("info")
    names = sorted(house_names())
    return (isinstance(houses, dict) and isinstance(info, dict)
            and sorted(houses) == names and sorted(info) == names
            and all(isinstance(g, dict) and isinstance(g.get("nodes"), list)
                    and isinstance(g.get("edges"), list) for g in houses.values())
            and all(isinstance(v, dict) for v in info.values()))


def _load(cache_dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The cached conversion (``houses`` and ``info``), converted and cached when missing,
    unreadable or not what it should be."""
    _require_tdw()
    path = _cache_file(cache_dir)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if _valid(doc):
            return doc
    except (OSError, ValueError):
        pass
    doc = _convert_all(tdw_data())
    text = json.dumps(doc, separators=(",", ":"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tdw-houses-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass  # a read-only cache directory: the houses are still returned
    return json.loads(text)


def tdw_house_graphs(cache_dir: str | os.PathLike[str] | None = None
                     ) -> dict[str, dict[str, Any]]:
    """Every TDW house: name -> VirtualHome environment graph (``nodes`` and ``edges``).

    Read from the cache in ``cache_dir`` (default ``<cache dir>/tdw-houses``) when there,
    else converted and cached. Raises ``ImportError`` without the tdw package."""
    return _load(cache_dir)["houses"]


def tdw_house_info(cache_dir: str | os.PathLike[str] | None = None
                   ) -> dict[str, dict[str, Any]]:
    """Facts about each house: name -> ``scene`` (the TDW scene to load), ``floorplan``,
    ``layout``, ``dropped`` (layout models that play no household role), ``outside``
    (furniture outside every floor section), ``added_shelves``."""
    return _load(cache_dir)["info"]


def tdw_house_graph(name: str, cache_dir: str | os.PathLike[str] | None = None
                    ) -> dict[str, Any]:
    """One TDW house by name (``floorplan_1a`` …); ``KeyError`` names the valid ones."""
    graphs = tdw_house_graphs(cache_dir)
    if name not in graphs:
        raise KeyError(f"no TDW house {name!r}; valid: {', '.join(house_names())}")
    return graphs[name]
