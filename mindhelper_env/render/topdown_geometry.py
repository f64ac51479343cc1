"""Layout records and geometry of the top-down frames (:mod:`mindhelper_env.render.topdown`):
room and furniture boxes in metres, door gaps, and the greedy label placer over occupancy
grids (summed-area tables). Pure functions of their inputs: no drawing, no randomness."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from mindhelper_env.render.topdown_style import (
    _FURNITURE_CATEGORIES,
    _FURNITURE_PROPS,
    Box,
)

if TYPE_CHECKING:
    from PIL import Image as PILImage

    from mindhelper_env.world.world import World

# ------------------------------------------------------------------------------------ layout
class LabelBox(NamedTuple):
    """A label drawn on a frame: what kind (``room``, ``furniture``, ``object``, ``person``,
    ``title``, ``caption``), its text and the pixel box ``(x0, y0, x1, y1)`` of its ink
    (x1, y1 exclusive). :meth:`TopDownRenderer.render` lists them on request."""

    kind: str
    text: str
    box: Box


@dataclass(slots=True)
class _Text:
    """A rasterised string: an ``L`` mask and its size."""

    mask: PILImage.Image
    w: int
    h: int


@dataclass(slots=True)
class _Glyph:
    """A rasterised character: its mask, advance and left offset from the pen position."""

    mask: np.ndarray
    adv: float
    left: int


@dataclass(slots=True)
class _Furn:
    """Static drawing data of one piece of furniture."""

    id: int
    room: int | None
    rect: Box
    inward: tuple[int, int]
    container: bool
    label: _Text | None
    label_pos: tuple[int, int] | None  # where the text mask is pasted
    label_inside: bool
    label_box: Box = (0, 0, 0, 0)  # the inked part of the label
    label_text: str = ""


@dataclass(slots=True)
class _ObjPlacement:
    """Cached placement of the visible objects for one configuration of the house."""

    items: list[tuple[Box, _Text | None, tuple[int, int]]]  # dot box, label, label position
    sat: np.ndarray  # summed-area table of the occupancy (static layer + object labels)
    extent: dict[int, int]  # furniture id -> farthest stacked pixel along its inward axis
    # per item: the box it takes (dot and label) and its label (None: a dot only)
    boxes: list[tuple[Box, LabelBox | None]] = field(default_factory=list)
    label_boxes: np.ndarray | None = None  # the labels' boxes ((0, 0, 0, 0) for a dot), (n, 4)


@dataclass(slots=True)
class _Layout:
    """Everything about a house that does not change during an episode."""

    graph: Any  # strong reference: keeps id(graph) from being reused while cached
    n_nodes: int
    base: PILImage.Image
    occupancy: np.ndarray
    scale: float
    origin: tuple[float, float]
    rooms: dict[int, Box]
    interiors: dict[int, Box]
    furniture: dict[int, _Furn]
    containers: list[int]
    doors: list[tuple[int, Box]]
    objects: list[int]
    caption_lines: int
    dynamic_labels: list[int]
    placements: OrderedDict[tuple[tuple[int, int], ...], _ObjPlacement] = field(
        default_factory=OrderedDict
    )
    room_labels: list[LabelBox] = field(default_factory=list)
    text: np.ndarray | None = None  # True under a label of the static layer
    clean: Any = None  # the static layer before its labels (to leave one out of a frame)
    static_labels: list[LabelBox] = field(default_factory=list)  # rooms' and furniture's
    static_boxes: np.ndarray | None = None  # their boxes, (n, 4)




# ------------------------------------------------------------------------------------ geometry
def _xz_box(bb: Any) -> tuple[float, float, float, float] | None:
    """Floor-plan footprint ``(x0, z0, x1, z1)`` of a bounding box, or None."""
    if not bb:
        return None
    try:
        cx, _, cz = (float(v) for v in bb["center"])
        sx, _, sz = (abs(float(v)) for v in bb["size"])
    except (KeyError, TypeError, ValueError):
        return None
    if not all(map(math.isfinite, (cx, cz, sx, sz))):
        return None
    return cx - sx / 2, cz - sz / 2, cx + sx / 2, cz + sz / 2


def _is_furniture(node: Any, world: World) -> bool:
    if node.id in world.chars or node.id in world.doors or "GRABBABLE" in node.properties:
        return False
    if node.category.lower() == "rooms" or node.id in world.rooms:
        return False
    return node.category.lower() in _FURNITURE_CATEGORIES or bool(
        node.properties & _FURNITURE_PROPS
    )


def _overflow(box: tuple[float, float, float, float],
              room: tuple[float, float, float, float]) -> float:
    x0, z0, x1, z1 = box
    rx0, rz0, rx1, rz1 = room
    return max(0.0, rx0 - x0) + max(0.0, x1 - rx1) + max(0.0, rz0 - z0) + max(0.0, z1 - rz1)


def _fit_in_room(box: tuple[float, float, float, float],
                 room: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """Rotate a footprint by 90 degrees if that keeps it inside the room, then clamp it."""
    x0, z0, x1, z1 = box
    cx, cz, hx, hz = (x0 + x1) / 2, (z0 + z1) / 2, (x1 - x0) / 2, (z1 - z0) / 2
    rotated = (cx - hz, cz - hx, cx + hz, cz + hx)
    if _overflow(rotated, room) + 1e-9 < _overflow(box, room):
        box = rotated
    inset = 0.08
    rx0, rz0, rx1, rz1 = room[0] + inset, room[1] + inset, room[2] - inset, room[3] - inset
    x0, z0, x1, z1 = box
    x0, x1 = max(x0, rx0), min(x1, rx1)
    z0, z1 = max(z0, rz0), min(z1, rz1)
    if x1 <= x0:
        x0, x1 = rx0, rx0 + 0.2
    if z1 <= z0:
        z0, z1 = rz0, rz0 + 0.2
    return x0, z0, x1, z1


def _separate(a: list[float], b: list[float], gap: float = 0.06) -> bool:
    """Trim two overlapping footprints apart along the axis of least overlap.

    A piece that mostly lies on top of another (a microwave on a counter) is left alone.
    """
    ox = min(a[2], b[2]) - max(a[0], b[0])
    oz = min(a[3], b[3]) - max(a[1], b[1])
    if ox <= -gap or oz <= -gap or (ox <= 0 and oz <= 0):
        return False
    if ox < 0 or oz < 0:
        return False
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    if smaller > 0 and ox * oz > 0.6 * smaller:
        return False
    if ox <= oz:
        lo, hi = (a, b) if a[0] + a[2] <= b[0] + b[2] else (b, a)
        cut = (ox + gap) / 2
        lo[2] -= cut
        hi[0] += cut
    else:
        lo, hi = (a, b) if a[1] + a[3] <= b[1] + b[3] else (b, a)
        cut = (oz + gap) / 2
        lo[3] -= cut
        hi[1] += cut
    return True


def _door_gap(
    ra: tuple[float, float, float, float],
    rb: tuple[float, float, float, float],
    bb: Any,
) -> tuple[tuple[float, float], bool] | None:
    """Door position on the wall shared by two rooms, and whether that wall is vertical."""
    ca = ((ra[0] + ra[2]) / 2, (ra[1] + ra[3]) / 2)
    cb = ((rb[0] + rb[2]) / 2, (rb[1] + rb[3]) / 2)
    vertical = abs(ca[0] - cb[0]) >= abs(ca[1] - cb[1])
    box = _xz_box(bb)
    if vertical:
        wx = ra[2] if ca[0] < cb[0] else ra[0]
        lo, hi = max(ra[1], rb[1]), min(ra[3], rb[3])
        if hi <= lo:
            return None
        z = (box[1] + box[3]) / 2 if box else (lo + hi) / 2
        return (wx, min(max(z, lo + 0.5), hi - 0.5)), True
    wz = ra[3] if ca[1] < cb[1] else ra[1]
    lo, hi = max(ra[0], rb[0]), min(ra[2], rb[2])
    if hi <= lo:
        return None
    x = (box[0] + box[2]) / 2 if box else (lo + hi) / 2
    return (min(max(x, lo + 0.5), hi - 0.5), wz), False


def _inward(rect: Box, room: Box) -> tuple[int, int]:
    """Unit direction from the nearest wall into the room (down for free-standing pieces)."""
    cx, cy = (rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2
    d = [
        (cx - room[0], (1, 0)),
        (room[2] - cx, (-1, 0)),
        (cy - room[1], (0, 1)),
        (room[3] - cy, (0, -1)),
    ]
    dist, direction = min(d, key=lambda t: t[0])
    if dist > 0.3 * min(room[2] - room[0], room[3] - room[1]):
        return (0, 1)
    return direction


def _depth_along(rect: Box, inward: tuple[int, int], box: Box) -> int:
    """How far ``box`` reaches into the room beyond ``rect`` along ``inward`` (pixels)."""
    ix, iy = inward
    if ix > 0:
        return max(0, box[2] - rect[2])
    if ix < 0:
        return max(0, rect[0] - box[0])
    if iy > 0:
        return max(0, box[3] - rect[3])
    return max(0, rect[1] - box[1])


def _label_depth(f: _Furn) -> int:
    """How far the furniture's own label reaches into the room beyond its rectangle."""
    if f.label is None or f.label_inside:
        return 0
    return _depth_along(f.rect, f.inward, f.label_box)


def _sat(occ: np.ndarray) -> np.ndarray:
    """Summed-area table of an occupancy grid, with a leading row and column of zeros."""
    h, w = occ.shape
    sat = np.zeros((h + 1, w + 1), dtype=np.int32)
    np.cumsum(np.cumsum(occ, axis=0, dtype=np.int32), axis=1, out=sat[1:, 1:])
    return sat


def _coverage(occ: np.ndarray, xs: np.ndarray, ys: np.ndarray, w: int, h: int) -> np.ndarray:
    """Occupied pixels under each ``w``x``h`` box with corner ``(xs, ys)``.

    Pixels outside the frame count 4 times. Uses a summed-area table of just the window the
    boxes cover, so a call costs little even on large frames.
    """
    H, W = occ.shape
    mn, mx = np.minimum, np.maximum  # (np.clip has a large per-call overhead)
    x0 = mn(mx(xs, 0), W)
    y0 = mn(mx(ys, 0), H)
    x1 = mn(mx(xs + w, 0), W)
    y1 = mn(mx(ys + h, 0), H)
    wx0, wy0 = int(x0.min()), int(y0.min())
    wx1, wy1 = int(x1.max()), int(y1.max())
    sat = np.zeros((max(wy1 - wy0, 0) + 1, max(wx1 - wx0, 0) + 1), dtype=np.int32)
    if wy1 > wy0 and wx1 > wx0:
        np.cumsum(np.cumsum(occ[wy0:wy1, wx0:wx1], axis=0, dtype=np.int32), axis=1,
                  out=sat[1:, 1:])
    x0, x1, y0, y1 = x0 - wx0, x1 - wx0, y0 - wy0, y1 - wy0
    inside = sat[y1, x1] - sat[y0, x1] - sat[y1, x0] + sat[y0, x0]
    outside = w * h - (x1 - x0) * (y1 - y0)
    return inside + 4 * outside


def _first_free(occ: np.ndarray, cands: Sequence[tuple[int, int]], w: int, h: int
                ) -> tuple[int, int]:
    """The first candidate corner whose ``w``x``h`` box is free, else the least covered one."""
    if not cands:
        raise ValueError("no candidate positions")
    xs = np.fromiter((c[0] for c in cands), dtype=np.int64, count=len(cands))
    ys = np.fromiter((c[1] for c in cands), dtype=np.int64, count=len(cands))
    cov = _coverage(occ, xs, ys, w, h)
    free = np.flatnonzero(cov == 0)
    i = int(free[0]) if free.size else int(np.argmin(cov))
    return int(xs[i]), int(ys[i])


def _place_near(occ: np.ndarray, rect: Box, w: int, h: int, inward: tuple[int, int], *,
                step: int, reach: int, bounds: Box | None = None,
                text: np.ndarray | None = None) -> tuple[int, int] | None:
    """Top-left corner of a free ``w``x``h`` box as close as possible to ``rect``.

    Candidates lie on a grid around ``rect`` (never overlapping it, inside ``bounds`` when
    given, e.g. the room, when it is large enough); among free boxes the one
    nearest to ``rect`` wins, with boxes on the room side of the furniture preferred. When no
    box is free, the least covered one is used. Ties go to the first candidate in grid order,
    so the result is deterministic.

    With ``text`` (the grid of the labels placed so far), a box may cover furniture but never
    a label nor the frame's edge: None when every candidate would (the label is left out).
    """
    a, b, c, d = rect
    gx = np.arange(a - w - reach, c + reach + 1, step, dtype=np.int64)
    gy = np.arange(b - h - reach, d + reach + 1, step, dtype=np.int64)
    xs = np.repeat(gx[None, :], gy.size, axis=0).ravel()
    ys = np.repeat(gy[:, None], gx.size, axis=1).ravel()
    dx = np.maximum(np.maximum(a - (xs + w), xs - c), 0)
    dy = np.maximum(np.maximum(b - (ys + h), ys - d), 0)
    apart = (dx >= 1) | (dy >= 1)
    if bounds is not None and bounds[2] - bounds[0] >= w and bounds[3] - bounds[1] >= h:
        apart &= (xs >= bounds[0]) & (ys >= bounds[1]) & (xs + w <= bounds[2])
        apart &= ys + h <= bounds[3]
        if not apart.any():
            apart = (dx >= 1) | (dy >= 1)
    dist = np.hypot(dx, dy)
    ix, iy = inward
    along = (xs + w / 2 - (a + c) / 2) * ix + (ys + h / 2 - (b + d) / 2) * iy
    # prefer the room side, then the sides along the wall; nearest first
    cost = dist + np.where(along > 0, 0.0, 0.5 * h)
    cov = _coverage(occ, xs, ys, w, h)
    if text is not None:  # never over another label or past the frame's edge
        apart &= _coverage(text, xs, ys, w, h) == 0
        if not apart.any():
            return None
    free = apart & (cov == 0)
    if free.any():
        i = int(np.argmin(np.where(free, cost, np.inf)))
    else:
        i = int(np.argmin(np.where(apart, cov * 1000.0 + cost, np.inf)))
    return int(xs[i]), int(ys[i])


def _intersects(p: Box, q: Box) -> bool:
    return p[0] <= q[2] and q[0] <= p[2] and p[1] <= q[3] and q[1] <= p[3]


def _mark(occ: np.ndarray, box: Box) -> None:
    h, w = occ.shape
    x0, y0, x1, y1 = box
    occ[max(y0, 0):min(y1, h), max(x0, 0):min(x1, w)] = True


def _overlap_area(x0: int, y0: int, x1: int, y1: int, boxes: np.ndarray) -> int:
    """Total area of ``(x0, y0, x1, y1)`` shared with each of ``boxes`` (an (n, 4) array)."""
    if not len(boxes):
        return 0
    dx = np.minimum(x1, boxes[:, 2]) - np.maximum(x0, boxes[:, 0])
    dy = np.minimum(y1, boxes[:, 3]) - np.maximum(y0, boxes[:, 1])
    return int((np.maximum(dx, 0) * np.maximum(dy, 0)).sum())


#: What one pixel of overlap costs in :func:`_best`: another label's text (a label must never
#: hide another) and a figure, against 1 for a pixel of furniture or wall.
LABEL_COST = 60
FIGURE_COST = 400


def _best(sat: np.ndarray, cands: Sequence[Box], bounds: Box | None = None,
          avoid: Sequence[Box] = (), placed: Sequence[Box] = ()) -> tuple[int, int]:
    """Top-left corner of the first free candidate box, else the least costly one.

    ``sat`` is the summed-area table of the occupancy grid (see :func:`_sat`): a covered pixel
    of it costs 1. All candidates have the same size. With ``bounds`` (e.g. a room), each box
    is first shifted inside it when it fits. A pixel over a box of ``placed`` (labels already
    drawn) costs :data:`LABEL_COST`, over a box of ``avoid`` (e.g. a figure)
    :data:`FIGURE_COST`; pixels outside the frame cost 4 each.
    """
    if not cands:
        raise ValueError("no candidate positions")
    w, h = cands[0][2] - cands[0][0], cands[0][3] - cands[0][1]
    c = np.asarray(cands, dtype=np.int64).reshape(-1, 4)
    xs, ys = c[:, 0].copy(), c[:, 1].copy()
    if bounds is not None:
        bx0, by0, bx1, by1 = bounds
        if w <= bx1 - bx0:
            xs += np.maximum(0, bx0 - xs) - np.maximum(0, xs + w - bx1)
        if h <= by1 - by0:
            ys += np.maximum(0, by0 - ys) - np.maximum(0, ys + h - by1)
    cost = _box_costs(sat, xs, ys, w, h)
    cost += LABEL_COST * _areas(xs, ys, w, h, placed) + FIGURE_COST * _areas(xs, ys, w, h, avoid)
    free = np.flatnonzero(cost == 0)
    i = int(free[0]) if free.size else int(np.argmin(cost))
    return int(xs[i]), int(ys[i])


def _box_costs(sat: np.ndarray, xs: np.ndarray, ys: np.ndarray, w: int, h: int) -> np.ndarray:
    """Occupied pixels under each ``w``x``h`` box at ``(xs, ys)`` (from the summed-area table
    ``sat``), pixels outside the frame counting 4 each."""
    H, W = sat.shape[0] - 1, sat.shape[1] - 1
    mn, mx = np.minimum, np.maximum  # (np.clip has a large per-call overhead)
    x0, y0 = mn(mx(xs, 0), W), mn(mx(ys, 0), H)
    x1, y1 = mn(mx(xs + w, 0), W), mn(mx(ys + h, 0), H)
    cost = (sat[y1, x1] - sat[y0, x1] - sat[y1, x0] + sat[y0, x0]).astype(np.int64)
    return cost + 4 * (w * h - (x1 - x0) * (y1 - y0))



def _hits(box: Box, placed: Sequence[Box], avoid: Sequence[Box] = ()) -> int:
    """Pixels of ``box`` over the labels of ``placed`` and the figures of ``avoid``."""
    x0, y0, x1, y1 = box
    return (_overlap_area(x0, y0, x1, y1, np.asarray(placed, dtype=np.int64).reshape(-1, 4))
            + _overlap_area(x0, y0, x1, y1, np.asarray(avoid, dtype=np.int64).reshape(-1, 4)))


def _areas(xs: np.ndarray, ys: np.ndarray, w: int, h: int, boxes: Sequence[Box]) -> np.ndarray:
    """Area each ``w``x``h`` box at ``(xs, ys)`` shares with ``boxes``, summed."""
    if not len(boxes):
        return np.zeros(xs.shape, dtype=np.int64)
    b = np.asarray(boxes, dtype=np.int64).reshape(-1, 4)
    dx = np.minimum(xs[:, None] + w, b[None, :, 2]) - np.maximum(xs[:, None], b[None, :, 0])
    dy = np.minimum(ys[:, None] + h, b[None, :, 3]) - np.maximum(ys[:, None], b[None, :, 1])
    return (np.maximum(dx, 0) * np.maximum(dy, 0)).sum(axis=1)


def _within(boxes: Sequence[Box], region: Box) -> np.ndarray:
    """The boxes that reach into ``region``, as an (n, 4) array."""
    b = np.asarray(boxes, dtype=np.int64).reshape(-1, 4)
    keep = (b[:, 0] < region[2]) & (b[:, 2] > region[0]) & (b[:, 1] < region[3]) \
        & (b[:, 3] > region[1])
    return b[keep]


def _covered(boxes: Sequence[Box], tops: Sequence[Box]) -> np.ndarray:
    """For each of ``boxes``, whether one of ``tops`` overlaps it."""
    b = np.asarray(boxes, dtype=np.int64).reshape(-1, 4)
    t = np.asarray(tops, dtype=np.int64).reshape(-1, 4)
    if not len(b) or not len(t):
        return np.zeros(len(b), dtype=bool)
    dx = np.minimum(b[:, None, 2], t[None, :, 2]) - np.maximum(b[:, None, 0], t[None, :, 0])
    dy = np.minimum(b[:, None, 3], t[None, :, 3]) - np.maximum(b[:, None, 1], t[None, :, 1])
    return ((dx > 0) & (dy > 0)).any(axis=1)


#: What a pixel of distance between a label and its figure costs in :func:`_best_near`.
DISTANCE_COST = 2


def _best_near(sat: np.ndarray, center: tuple[int, int], w: int, h: int, *, reach: int,
               step: int, bounds: Box | None, placed: Sequence[Box],
               avoid: Sequence[Box]) -> tuple[int, int]:
    """Top-left corner of the cheapest ``w``x``h`` box on a grid within ``reach`` pixels of
    ``center``: :func:`_best`'s costs (occupied pixels 1, outside the frame 4, over a label
    :data:`LABEL_COST`, over a figure :data:`FIGURE_COST`) plus :data:`DISTANCE_COST` per
    pixel between the box and ``center``. Boxes stay inside ``bounds`` when some fit there.
    For a label that the few spots next to its figure cannot hold without covering another;
    deterministic (ties go to the first box in grid order)."""
    cx, cy = center
    gx = np.arange(cx - reach - w, cx + reach + 1, step, dtype=np.int64)
    gy = np.arange(cy - reach - h, cy + reach + 1, step, dtype=np.int64)
    xs = np.repeat(gx[None, :], gy.size, axis=0).ravel()
    ys = np.repeat(gy[:, None], gx.size, axis=1).ravel()
    if bounds is not None:
        inside = (xs >= bounds[0]) & (ys >= bounds[1]) & (xs + w <= bounds[2]) \
            & (ys + h <= bounds[3])
        if inside.any():
            xs, ys = xs[inside], ys[inside]
    cost = _box_costs(sat, xs, ys, w, h)
    region = (int(xs.min()), int(ys.min()), int(xs.max()) + w, int(ys.max()) + h)
    cost += LABEL_COST * _areas(xs, ys, w, h, _within(placed, region))
    cost += FIGURE_COST * _areas(xs, ys, w, h, _within(avoid, region))
    dx = np.maximum(np.maximum(xs - cx, cx - (xs + w)), 0)
    dy = np.maximum(np.maximum(ys - cy, cy - (ys + h)), 0)
    i = int(np.argmin(cost + DISTANCE_COST * np.hypot(dx, dy)))
    return int(xs[i]), int(ys[i])
