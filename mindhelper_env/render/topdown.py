"""Top-down RGB floor plans of a symbolic household (the ``rgb_array`` render mode).

:class:`TopDownRenderer` draws a :class:`~mindhelper_env.world.world.World` as a floor plan:

* rooms as tinted floors with walls and their names; doors as gaps in the shared wall (a closed
  door is a bar across the gap);
* furniture as labelled rectangles. Openable containers are drawn **filled dark with a lid bar
  when closed** and **hollow (outline only) when open**. A ``^`` after a label marks furniture
  whose centre is above 1.3 m (out of reach of a child or a wheelchair user);
* visible objects (not inside a closed container, not held) as gold dots with short labels,
  stacked next to the furniture they are in or on (objects on the floor stack at the room's
  centre). Objects hidden in closed containers are never drawn: a frame shows what the home
  camera network sees, nothing more;
* each person as a figure in their own colour, labelled with their name: adults full size,
  children smaller, wheelchair users with a wheel ring. The robot is a red square figure. What a
  character holds is listed under its name (``+apple``);
* a caption strip at the bottom with the window's event lines (the newest ones when they do not
  all fit) and an optional title line at the top.

Drawing is deterministic: no randomness, every ordering is by node id, and overlapping labels
are resolved by a greedy placer over fixed candidate positions. Everything that does not change
during an episode (walls, room names, furniture outlines and labels, label occupancy) is drawn
once per house into a cached base image; each frame copies the base and draws the dynamic layer
on top. Text is rasterised once per string and pasted as a mask afterwards.

Pillow is imported lazily, so ``import mindhelper_env.render`` works without the ``video`` extra.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from PIL import Image as PILImage
    from PIL import ImageFont

    from mindhelper_env.world.world import World

__all__ = ["TopDownRenderer", "actor_labels", "CHARACTER_KINDS", "ROBOT_COLOR"]

log = logging.getLogger(__name__)

_INSTALL_HINT = "install the video extra: pip install 'mindhelper-env[video]'"

#: Kinds of characters the renderer knows how to draw.
CHARACTER_KINDS = ("adult", "child", "wheelchair", "robot")

#: Colour of the robot figure (the only red thing in a frame).
ROBOT_COLOR = (220, 30, 30)

Color = tuple[int, int, int]
Box = tuple[int, int, int, int]

# -- palette (no reds except the robot, so "red pixels" means "robot") -----------------------
_BG = (228, 228, 224)
_HEADER_TEXT = (40, 40, 40)
_CAPTION_BG = (34, 38, 46)
_CAPTION_TEXT = (236, 236, 236)
_CAPTION_DIM = (150, 156, 166)
_WALL = (70, 70, 76)
_ROOM_TEXT = (85, 85, 95)
_DOOR = (246, 246, 240)
_DOOR_CLOSED = (120, 80, 40)
_FURN_FILL = (214, 204, 186)
_FURN_EDGE = (128, 114, 96)
_FURN_TEXT = (70, 60, 50)
_BOX_CLOSED = (139, 100, 62)
_BOX_CLOSED_EDGE = (78, 52, 28)
_BOX_CLOSED_TEXT = (250, 244, 232)
_BOX_OPEN_FILL = (252, 250, 244)
_BOX_OPEN_EDGE = (139, 100, 62)
_OBJ_DOT = (236, 170, 0)
_OBJ_EDGE = (96, 66, 0)
_OBJ_TEXT = (92, 62, 10)
_FIGURE_EDGE = (25, 25, 30)
_LABEL_BG = (255, 255, 255)
_HELD_TEXT = (60, 60, 60)
_PERSON_COLORS: tuple[Color, ...] = (
    (38, 92, 204),   # blue
    (24, 140, 64),   # green
    (132, 60, 176),  # purple
    (0, 134, 140),   # teal
    (196, 120, 0),   # amber
    (90, 90, 90),    # grey
)
_ROOM_TINT: dict[str, Color] = {
    "kitchen": (252, 246, 226),
    "livingroom": (240, 246, 232),
    "bedroom": (236, 238, 250),
    "bathroom": (228, 244, 248),
    "diningroom": (250, 240, 232),
    "homeoffice": (244, 240, 250),
    "office": (244, 240, 250),
}
_ROOM_TINT_DEFAULT = (244, 244, 240)

# -- display names: (short for small frames, longer for large frames) -------------------------
_ROOM_NAMES: dict[str, tuple[str, str]] = {
    "kitchen": ("kitchen", "kitchen"),
    "livingroom": ("living", "living room"),
    "bedroom": ("bedroom", "bedroom"),
    "bathroom": ("bath", "bathroom"),
    "diningroom": ("dining", "dining room"),
    "homeoffice": ("office", "home office"),
    "office": ("office", "office"),
    "hallway": ("hall", "hallway"),
    "entrance": ("entry", "entrance"),
}
_FURN_NAMES: dict[str, tuple[str, str]] = {
    "fridge": ("fridge", "fridge"),
    "kitchencabinet": ("kcab", "kitchen cab."),
    "kitchencounter": ("cntr", "counter"),
    "microwave": ("mwave", "microwave"),
    "dishwasher": ("dishw", "dishwasher"),
    "kitchentable": ("table", "table"),
    "wallshelf": ("shelf", "wall shelf"),
    "sofa": ("sofa", "sofa"),
    "coffeetable": ("ctbl", "coffee tbl"),
    "tvstand": ("tvst", "tv stand"),
    "tv": ("tv", "tv"),
    "cabinet": ("cab", "cabinet"),
    "bookshelf": ("books", "bookshelf"),
    "bed": ("bed", "bed"),
    "nightstand": ("nstd", "nightstand"),
    "closet": ("closet", "closet"),
    "desk": ("desk", "desk"),
    "chair": ("chair", "chair"),
    "bathroomcabinet": ("bcab", "bath cab."),
    "bathroomcounter": ("sink", "sink"),
    "toilet": ("wc", "toilet"),
    "computer": ("pc", "computer"),
}
_OBJ_NAMES: dict[str, tuple[str, str]] = {
    "apple": ("apple", "apple"),
    "bananas": ("banana", "bananas"),
    "milk": ("milk", "milk"),
    "juice": ("juice", "juice"),
    "cupcake": ("cake", "cupcake"),
    "chips": ("chips", "chips"),
    "mug": ("mug", "mug"),
    "wineglass": ("glass", "wineglass"),
    "plate": ("plate", "plate"),
    "remotecontrol": ("remote", "remote"),
    "book": ("book", "book"),
    "cellphone": ("phone", "cellphone"),
    "glasses": ("specs", "glasses"),
    "towel": ("towel", "towel"),
    "toothbrush": ("brush", "toothbrush"),
    "toothpaste": ("paste", "toothpaste"),
    "pillow": ("pillow", "pillow"),
    "folder": ("folder", "folder"),
    "magazine": ("mag", "magazine"),
    "wallet": ("wallet", "wallet"),
}
_FURNITURE_CATEGORIES = frozenset({"furniture", "appliances", "electronics"})
_FURNITURE_PROPS = frozenset({"CONTAINERS", "SURFACES", "SITTABLE"})
_HIGH = 1.3  # metres: furniture centred above this is marked "^"
_ROOM_FALLBACK = 5.0  # metres: cell size for rooms without a bounding box
_MAX_TEXT_CACHE = 4096
_MAX_LAYOUTS = 16


def _require_pil() -> Any:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"TopDownRenderer needs Pillow; {_INSTALL_HINT}") from err
    return Image, ImageDraw, ImageFont


def _abbrev(key: str, limit: int) -> str:
    """A short deterministic abbreviation for class names without a table entry."""
    if len(key) <= limit:
        return key
    head, rest = key[0], key[1:]
    consonants = "".join(c for c in rest if c not in "aeiou")
    return (head + consonants)[:limit]


def _display(table: Mapping[str, tuple[str, str]], key: str, small: bool) -> str:
    names = table.get(key)
    if names is not None:
        return names[0] if small else names[1]
    return _abbrev(key, 5 if small else 12)


def actor_labels(actors: Iterable[Any]) -> dict[int, tuple[str, str]]:
    """Build the ``actors`` argument of :meth:`TopDownRenderer.render` from actor objects.

    Accepts anything with ``.id``, ``.name`` and ``.kind`` attributes (e.g.
    :class:`mindhelper_env.actors.actor.Actor`).
    """
    return {int(a.id): (str(a.name), str(a.kind)) for a in actors}


# ------------------------------------------------------------------------------------ layout
@dataclass(slots=True)
class _Text:
    """A rasterised string: an ``L`` mask and its size."""

    mask: PILImage.Image
    w: int
    h: int


@dataclass(slots=True)
class _Furn:
    """Static drawing data of one piece of furniture."""

    id: int
    room: int | None
    rect: Box
    inward: tuple[int, int]
    container: bool
    label: _Text | None
    label_pos: tuple[int, int] | None
    label_inside: bool
    stack_origin: tuple[int, int]


@dataclass(slots=True)
class _ObjPlacement:
    """Cached placement of the visible objects for one configuration of the house."""

    items: list[tuple[Box, _Text, tuple[int, int]]]  # dot box, label, label position
    occupancy: np.ndarray
    extent: dict[int, int]  # furniture id -> farthest stacked pixel along its inward axis


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
    placements: OrderedDict[tuple[tuple[int, int], ...], _ObjPlacement] = field(
        default_factory=OrderedDict
    )


# ------------------------------------------------------------------------------------ renderer
class TopDownRenderer:
    """Render a household :class:`~mindhelper_env.world.world.World` as a top-down floor plan.

    Parameters
    ----------
    size:
        width and height of the square frame in pixels (64-4096). Labels are abbreviated below
        384 pixels.
    caption_lines:
        number of event lines in the caption strip (default 3 below 384 pixels, else 4).

    Example
    -------
    >>> renderer = TopDownRenderer(256)                                     # doctest: +SKIP
    >>> frame = renderer.render(world, actors={2: ("Alice", "adult")},      # doctest: +SKIP
    ...                         captions=["Alice walks to the fridge (112)"], title="tick 4")
    >>> frame.shape, frame.dtype                                             # doctest: +SKIP
    ((256, 256, 3), dtype('uint8'))
    """

    def __init__(self, size: int = 256, *, caption_lines: int | None = None) -> None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise TypeError(f"size must be an int, got {type(size).__name__}")
        if not 64 <= int(size) <= 4096:
            raise ValueError(f"size must be between 64 and 4096 pixels, got {size}")
        self.size = int(size)
        self.small = self.size < 384
        if caption_lines is None:
            caption_lines = 3 if self.small else 4
        if not 0 <= caption_lines <= 20:
            raise ValueError(f"caption_lines must be between 0 and 20, got {caption_lines}")
        self.caption_lines = int(caption_lines)
        u = self.size / 256.0
        self._u = u
        self._font_px = max(7, round(8 + 5 * (u - 1)))  # labels
        self._font_big_px = max(8, round(9 + 5 * (u - 1)))  # names, captions, title
        self._wall = max(1, round(2 * u))
        self._fig_r = max(3.0, 5.0 * u)
        self._fonts: dict[int, ImageFont.FreeTypeFont | ImageFont.ImageFont] = {}
        self._text_cache: dict[tuple[str, int], _Text] = {}
        self._layouts: OrderedDict[tuple[int, Hashable], _Layout] = OrderedDict()
        self._line_h = self._font_px + 2
        self._line_big = self._font_big_px + 3
        self._header_h = self._line_big + 2
        self._caption_h = self.caption_lines * self._line_big + (4 if self.caption_lines else 0)

    # -------------------------------------------------------------------------- public API
    def render(
        self,
        world: World,
        *,
        actors: Mapping[int, tuple[str, str]] | None = None,
        captions: Sequence[str] = (),
        title: str | None = None,
        cache_key: Hashable = None,
    ) -> np.ndarray:
        """Draw one frame of ``world``; returns a fresh ``uint8`` array of shape (size, size, 3).

        Parameters
        ----------
        world:
            the household to draw.
        actors:
            optional ``char_id -> (name, kind)`` with kind in ``adult``, ``child``,
            ``wheelchair``; characters not listed use their node's ``name`` and are drawn as
            adults. Robots (``world.chars[i].robot``) are always drawn as the red robot.
        captions:
            event lines of the window, oldest first; the newest ones that fit are shown.
        title:
            a short line drawn at the top (e.g. ``"tick 12-15 · window 3"``).
        cache_key:
            a per-episode token (e.g. the episode id or reset counter). The static layer is
            cached per ``(id(world.graph), cache_key)``; pass a new token whenever furniture
            may have changed for the same graph object.
        """
        if isinstance(captions, str):
            raise TypeError("captions must be a sequence of strings, not a single string")
        _, ImageDraw, _ = _require_pil()
        layout = self._layout(world, cache_key)
        img = layout.base.copy()
        draw = ImageDraw.Draw(img)
        self._draw_doors(draw, world, layout)
        self._draw_containers(draw, img, world, layout)
        placement, held = self._place_objects(world, layout)
        for dot, text, pos in placement.items:
            draw.ellipse(dot, fill=_OBJ_DOT, outline=_OBJ_EDGE)
            img.paste(_OBJ_TEXT, pos, text.mask)
        self._draw_characters(draw, img, world, layout, placement, held, actors or {})
        if title:
            t = self._fit_text(str(title), self._font_big_px, self.size - 8)
            img.paste(_HEADER_TEXT, (4, 1), t.mask)
        if self.caption_lines:
            self._draw_captions(img, captions)
        return np.array(img, dtype=np.uint8)

    def clear_cache(self) -> None:
        """Forget cached static layers and rasterised text."""
        self._layouts.clear()
        self._text_cache.clear()

    # -------------------------------------------------------------------------- text
    def _font(self, px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
        f = self._fonts.get(px)
        if f is None:
            _, _, ImageFont = _require_pil()
            try:
                f = ImageFont.load_default(size=px)
            except TypeError:  # Pillow < 10.1: bitmap default font without sizes
                log.warning("Pillow < 10.1: using the fixed-size bitmap font; upgrade Pillow")
                f = ImageFont.load_default()
            self._fonts[px] = f
        return f

    def _text(self, s: str, px: int) -> _Text:
        key = (s, px)
        t = self._text_cache.get(key)
        if t is not None:
            return t
        Image, ImageDraw, _ = _require_pil()
        font = self._font(px)
        w = max(1, math.ceil(font.getlength(s))) if s else 1
        h = px + max(2, px // 4)
        mask = Image.new("L", (w, h), 0)
        if s:
            ImageDraw.Draw(mask).text((0, 0), s, fill=255, font=font)
        t = _Text(mask, w, h)
        if len(self._text_cache) >= _MAX_TEXT_CACHE:
            self._text_cache.clear()
        self._text_cache[key] = t
        return t

    def _fit_text(self, s: str, px: int, max_w: int) -> _Text:
        """Rasterise ``s``, cut with ``...`` so that it is at most ``max_w`` pixels wide."""
        t = self._text(s, px)
        if t.w <= max_w or len(s) <= 1:
            return t
        font = self._font(px)
        lo, hi = 0, len(s)
        while lo < hi:  # longest prefix that fits with the ellipsis
            mid = (lo + hi + 1) // 2
            if font.getlength(s[:mid] + "...") <= max_w:
                lo = mid
            else:
                hi = mid - 1
        return self._text(s[:lo].rstrip() + "...", px)

    # -------------------------------------------------------------------------- static layer
    def _layout(self, world: World, cache_key: Hashable) -> _Layout:
        g = world.graph
        key = (id(g), cache_key)
        lay = self._layouts.get(key)
        if lay is not None and lay.graph is g and lay.n_nodes == len(g.nodes):
            self._layouts.move_to_end(key)
            return lay
        lay = self._build_layout(world)
        self._layouts[key] = lay
        self._layouts.move_to_end(key)
        while len(self._layouts) > _MAX_LAYOUTS:
            self._layouts.popitem(last=False)
        return lay

    def _room_boxes(self, world: World) -> dict[int, tuple[float, float, float, float]]:
        """Room extents in metres ``(x0, z0, x1, z1)``; rooms without a box go on a grid."""
        boxes: dict[int, tuple[float, float, float, float]] = {}
        missing: list[int] = []
        for r in world.rooms:
            b = _xz_box(world.graph.nodes[r].bounding_box)
            if b is None or b[2] - b[0] <= 0 or b[3] - b[1] <= 0:
                missing.append(r)
            else:
                boxes[r] = b
        if missing:
            z_base = max((b[3] for b in boxes.values()), default=0.0)
            x_base = min((b[0] for b in boxes.values()), default=0.0)
            cols = max(1, math.ceil(math.sqrt(len(missing))))
            for i, r in enumerate(missing):
                x0 = x_base + (i % cols) * _ROOM_FALLBACK
                z0 = z_base + (i // cols) * _ROOM_FALLBACK
                boxes[r] = (x0, z0, x0 + _ROOM_FALLBACK, z0 + _ROOM_FALLBACK)
        return boxes

    def _build_layout(self, world: World) -> _Layout:
        Image, ImageDraw, _ = _require_pil()
        g = world.graph
        S = self.size
        small = self.small
        rooms_m = self._room_boxes(world)
        if rooms_m:
            mx0 = min(b[0] for b in rooms_m.values())
            mz0 = min(b[1] for b in rooms_m.values())
            mx1 = max(b[2] for b in rooms_m.values())
            mz1 = max(b[3] for b in rooms_m.values())
        else:
            mx0, mz0, mx1, mz1 = 0.0, 0.0, 1.0, 1.0
        pad = max(2, round(3 * self._u))
        ax0, ay0 = pad, self._header_h
        ax1, ay1 = S - pad, S - self._caption_h - pad
        scale = min((ax1 - ax0) / max(mx1 - mx0, 1e-6), (ay1 - ay0) / max(mz1 - mz0, 1e-6))
        ox = ax0 + ((ax1 - ax0) - scale * (mx1 - mx0)) / 2 - scale * mx0
        oy = ay0 + ((ay1 - ay0) - scale * (mz1 - mz0)) / 2 - scale * mz0

        def px(x: float, z: float) -> tuple[int, int]:
            return round(ox + scale * x), round(oy + scale * z)

        wall = self._wall
        rooms: dict[int, Box] = {}
        interiors: dict[int, Box] = {}
        for r, (x0, z0, x1, z1) in rooms_m.items():
            a, b = px(x0, z0)
            c, d = px(x1, z1)
            rooms[r] = (a, b, c, d)
            interiors[r] = (a + wall, b + wall, c - wall, d - wall)

        img = Image.new("RGB", (S, S), _BG)
        draw = ImageDraw.Draw(img)
        occ = np.ones((S, S), dtype=bool)  # True = no room for labels
        for r in sorted(rooms):
            key = g.nodes[r].key
            draw.rectangle(rooms[r], fill=_ROOM_TINT.get(key, _ROOM_TINT_DEFAULT))
            a, b, c, d = interiors[r]
            occ[max(b, 0):max(d, 0), max(a, 0):max(c, 0)] = False
        for r in sorted(rooms):
            draw.rectangle(rooms[r], outline=_WALL, width=wall)

        # doors: a gap in the shared wall (drawn here; closed doors get a bar per frame)
        doors: list[tuple[int, Box]] = []
        door_half = max(3, round(0.45 * scale))
        for did in sorted(world.doors):
            ra, rb = world.doors[did]
            if ra not in rooms_m or rb not in rooms_m:
                continue
            gap = _door_gap(rooms_m[ra], rooms_m[rb], g.nodes[did].bounding_box)
            if gap is None:
                continue
            (gx, gz), vertical = gap
            cx, cy = px(gx, gz)
            if vertical:  # wall runs along z: the gap spans y
                box = (cx - wall - 1, cy - door_half, cx + wall, cy + door_half)
            else:
                box = (cx - door_half, cy - wall - 1, cx + door_half, cy + wall)
            draw.rectangle(box, fill=_DOOR)
            doors.append((did, box))

        # room names, top-left inside each room
        for r in sorted(rooms):
            name = _display(_ROOM_NAMES, g.nodes[r].key, small)
            t = self._text(name, self._font_px)
            a, b, _, _ = interiors[r]
            pos = (a + 2, b + 1)
            img.paste(_ROOM_TEXT, pos, t.mask)
            _mark(occ, (pos[0], pos[1], pos[0] + t.w, pos[1] + t.h))

        # furniture rectangles (metres -> pixels, kept inside the room, overlaps trimmed)
        furn_m = self._furniture_boxes(world, rooms_m)
        furniture: dict[int, _Furn] = {}
        min_px = max(3, round(3 * self._u))
        for fid, (room, (x0, z0, x1, z1)) in sorted(furn_m.items()):
            a, b = px(x0, z0)
            c, d = px(x1, z1)
            if c - a < min_px:
                m = (a + c) // 2
                a, c = m - min_px // 2, m - min_px // 2 + min_px
            if d - b < min_px:
                m = (b + d) // 2
                b, d = m - min_px // 2, m - min_px // 2 + min_px
            rect = (a, b, c, d)
            node = g.nodes[fid]
            container = "CAN_OPEN" in node.properties
            inward = _inward(rect, interiors.get(room, rect) if room is not None else rect)
            furniture[fid] = _Furn(fid, room, rect, inward, container, None, None, False,
                                   (rect[0], rect[1]))
            if not container:
                draw.rectangle(rect, fill=_FURN_FILL, outline=_FURN_EDGE)
            _mark(occ, rect)
        # furniture labels: inside the rectangle when they fit, else beside it (greedy placer)
        for fid in sorted(furniture):
            f = furniture[fid]
            node = g.nodes[fid]
            name = _display(_FURN_NAMES, node.key, small)
            h = node.height
            if h is not None and h > _HIGH:
                name += "^"
            t = self._text(name, self._font_px)
            a, b, c, d = f.rect
            inside = t.w <= (c - a) + 2 and t.h - 3 <= (d - b)
            if inside:
                pos = ((a + c - t.w) // 2 + 1, (b + d - t.h) // 2 + 1)
            else:
                cands = _side_candidates(f.rect, f.inward, t.w, t.h, gap=1)
                pos = _best(occ, cands)
                _mark(occ, (pos[0], pos[1], pos[0] + t.w, pos[1] + t.h))
            f.label, f.label_pos, f.label_inside = t, pos, inside
            if not f.container:
                img.paste(_FURN_TEXT, pos, t.mask)
            f.stack_origin = _stack_origin(f)

        objects = sorted(
            n.id for n in g.nodes.values()
            if "GRABBABLE" in n.properties and n.id not in world.chars
        )
        cap_top = S - self._caption_h
        if self.caption_lines:
            draw.rectangle((0, cap_top, S, S), fill=_CAPTION_BG)
        log.debug("built top-down layout: %d rooms, %d furniture, %d objects",
                  len(rooms), len(furniture), len(objects))
        return _Layout(
            graph=g, n_nodes=len(g.nodes), base=img, occupancy=occ, scale=scale,
            origin=(ox, oy), rooms=rooms, interiors=interiors, furniture=furniture,
            containers=sorted(fid for fid, f in furniture.items() if f.container),
            doors=doors, objects=objects,
        )

    def _furniture_boxes(
        self, world: World, rooms_m: Mapping[int, tuple[float, float, float, float]]
    ) -> dict[int, tuple[int | None, tuple[float, float, float, float]]]:
        """Furniture footprints in metres, rotated to their wall when needed, inside the room."""
        g = world.graph
        out: dict[int, tuple[int | None, tuple[float, float, float, float]]] = {}
        no_box: dict[int, list[int]] = {}
        for n in g.nodes.values():
            if not _is_furniture(n, world):
                continue
            room = world.room_of(n.id)
            box = _xz_box(n.bounding_box)
            if box is None or room not in rooms_m:
                if room in rooms_m:
                    no_box.setdefault(room, []).append(n.id)
                continue
            rb = rooms_m[room]
            box = _fit_in_room(box, rb)
            out[n.id] = (room, box)
        # furniture without a bounding box: evenly around the room's walls, by id
        for room, ids in no_box.items():
            x0, z0, x1, z1 = rooms_m[room]
            for k, fid in enumerate(sorted(ids)):
                t = (k + 0.5) / len(ids)
                per = 2 * ((x1 - x0) + (z1 - z0))
                d = t * per
                m = 0.5
                if d < x1 - x0:
                    cx, cz = x0 + d, z0 + m
                elif d < (x1 - x0) + (z1 - z0):
                    cx, cz = x1 - m, z0 + d - (x1 - x0)
                elif d < 2 * (x1 - x0) + (z1 - z0):
                    cx, cz = x1 - (d - (x1 - x0) - (z1 - z0)), z1 - m
                else:
                    cx, cz = x0 + m, z1 - (d - 2 * (x1 - x0) - (z1 - z0))
                out[fid] = (room, (cx - 0.3, cz - 0.3, cx + 0.3, cz + 0.3))
        # trim overlaps between neighbours so that each piece stays visible and labelled
        by_room: dict[int | None, list[int]] = {}
        for fid, (room, _) in out.items():
            by_room.setdefault(room, []).append(fid)
        for ids in by_room.values():
            ids.sort()
            boxes = {fid: list(out[fid][1]) for fid in ids}
            for _ in range(3):
                changed = False
                for i, p in enumerate(ids):
                    for q in ids[i + 1:]:
                        changed |= _separate(boxes[p], boxes[q])
                if not changed:
                    break
            for fid in ids:
                b = boxes[fid]
                out[fid] = (out[fid][0], (b[0], b[1], b[2], b[3]))
        return out

    # -------------------------------------------------------------------------- dynamic layer
    def _draw_doors(self, draw: Any, world: World, lay: _Layout) -> None:
        nodes = world.graph.nodes
        for did, box in lay.doors:
            if "CLOSED" in nodes[did].states:
                draw.rectangle(box, fill=_DOOR_CLOSED)

    def _draw_containers(self, draw: Any, img: Any, world: World, lay: _Layout) -> None:
        nodes = world.graph.nodes
        lid = max(1, round(1.5 * self._u))
        for fid in lay.containers:
            f = lay.furniture[fid]
            closed = "OPEN" not in nodes[fid].states
            a, b, c, d = f.rect
            if closed:
                draw.rectangle(f.rect, fill=_BOX_CLOSED, outline=_BOX_CLOSED_EDGE)
                # lid bar along the side facing the room
                ix, iy = f.inward
                if ix > 0:
                    bar = (c - lid + 1, b, c, d)
                elif ix < 0:
                    bar = (a, b, a + lid - 1, d)
                elif iy < 0:
                    bar = (a, b, c, b + lid - 1)
                else:
                    bar = (a, d - lid + 1, c, d)
                draw.rectangle(bar, fill=_BOX_CLOSED_EDGE)
            else:
                draw.rectangle(f.rect, fill=_BOX_OPEN_FILL, outline=_BOX_OPEN_EDGE,
                               width=max(1, round(self._u)))
            if f.label is not None and f.label_pos is not None:
                color = _BOX_CLOSED_TEXT if (closed and f.label_inside) else _FURN_TEXT
                img.paste(color, f.label_pos, f.label.mask)

    def _place_objects(
        self, world: World, lay: _Layout
    ) -> tuple[_ObjPlacement, dict[int, list[int]]]:
        """Where the visible objects go (cached per configuration) and who holds what."""
        held: dict[int, list[int]] = {}
        config: list[tuple[int, int]] = []
        chars = world.chars
        for obj in lay.objects:
            h = world.holder(obj)
            if h is not None:
                held.setdefault(h, []).append(obj)
                continue
            if world.is_hidden(obj):
                continue
            anchor = world.anchor(obj)
            if anchor in chars:
                held.setdefault(anchor, []).append(obj)
                continue
            config.append((anchor, obj))
        key = tuple(config)
        pl = lay.placements.get(key)
        if pl is None:
            pl = self._compute_placement(world, lay, config)
            lay.placements[key] = pl
            if len(lay.placements) > 64:
                lay.placements.popitem(last=False)
        return pl, held

    def _compute_placement(
        self, world: World, lay: _Layout, config: list[tuple[int, int]]
    ) -> _ObjPlacement:
        occ = lay.occupancy.copy()
        g = world.graph
        small = self.small
        dot_r = max(2, round(2 * self._u))
        lh = self._line_h
        groups: dict[int, list[int]] = {}
        for anchor, obj in config:
            groups.setdefault(anchor, []).append(obj)
        items: list[tuple[Box, _Text, tuple[int, int]]] = []
        extent: dict[int, int] = {}
        for anchor in sorted(groups):
            objs = sorted(groups[anchor])
            f = lay.furniture.get(anchor)
            if f is not None:
                ox, oy = f.stack_origin
                inward = f.inward
            else:
                room = world.room_of(anchor)
                box = lay.interiors.get(room) if room is not None else None
                if box is None:
                    continue
                ox, oy = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2 + lh
                inward = (0, 1)
            far = 0
            for k, obj in enumerate(objs):
                name = _display(_OBJ_NAMES, g.nodes[obj].key, small)
                t = self._text(name, self._font_px)
                w = 2 * dot_r + 2 + t.w
                h = max(t.h - 2, 2 * dot_r)
                cands = _stack_candidates(ox, oy, inward, k, w, h, lh)
                x, y = _best(occ, cands)
                _mark(occ, (x, y, x + w, y + h))
                cy = y + (t.h - 2) // 2
                dot = (x, cy - dot_r, x + 2 * dot_r, cy + dot_r)
                items.append((dot, t, (x + 2 * dot_r + 2, y - 1)))
                if f is not None:
                    ix, iy = inward
                    if ix > 0:
                        far = max(far, x + w - f.rect[2])
                    elif ix < 0:
                        far = max(far, f.rect[0] - x)
                    elif iy > 0:
                        far = max(far, y + h - f.rect[3])
                    else:
                        far = max(far, f.rect[1] - y)
            if f is not None:
                extent[anchor] = far
        return _ObjPlacement(items, occ, extent)

    def _char_anchor(
        self, world: World, lay: _Layout, cid: int, placement: _ObjPlacement, depth: int = 0
    ) -> tuple[tuple[float, float], tuple[int, int], int | None]:
        """Base pixel position of a character, the direction to spread along, group key."""
        c = world.chars[cid]
        r = self._fig_r
        if c.sitting_on is not None and c.sitting_on in lay.furniture:
            f = lay.furniture[c.sitting_on]
            a, b, cc, d = f.rect
            return ((a + cc) / 2, (b + d) / 2), f.inward, f.id
        near = c.near
        if near is not None and near in world.graph.nodes and near not in world.chars:
            anchor = world.anchor(near)
            if anchor in world.chars and depth < 2 and anchor != cid:
                (x, y), inw, _ = self._char_anchor(world, lay, anchor, placement, depth + 1)
                return (x + 2.6 * r, y), inw, None
            f = lay.furniture.get(anchor)
            if f is not None:
                a, b, cc, d = f.rect
                ix, iy = f.inward
                gap = max(placement.extent.get(f.id, 0), _label_depth(f)) + r + 3
                if ix > 0:
                    return (cc + gap, (b + d) / 2), f.inward, f.id
                if ix < 0:
                    return (a - gap, (b + d) / 2), f.inward, f.id
                if iy > 0:
                    return ((a + cc) / 2, d + gap), f.inward, f.id
                return ((a + cc) / 2, b - gap), f.inward, f.id
        if near is not None and near in world.chars and depth < 2 and near != cid:
            (x, y), inw, _ = self._char_anchor(world, lay, near, placement, depth + 1)
            return (x + 2.6 * r, y), inw, None
        room = c.room
        box = lay.interiors.get(room) if room is not None else None
        if box is None:
            return (self.size / 2, self.size / 2), (0, 1), None
        return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2 - self._line_h), (0, 1), -1

    def _draw_characters(
        self,
        draw: Any,
        img: Any,
        world: World,
        lay: _Layout,
        placement: _ObjPlacement,
        held: Mapping[int, list[int]],
        actors: Mapping[int, tuple[str, str]],
    ) -> None:
        chars = world.chars
        if not chars:
            return
        r = self._fig_r
        bases: dict[int, tuple[tuple[float, float], tuple[int, int], Any]] = {}
        for cid in sorted(chars):
            if chars[cid].room is None:
                continue
            pos, inward, group = self._char_anchor(world, lay, cid, placement)
            bases[cid] = (pos, inward, (chars[cid].room, group, round(pos[0]), round(pos[1])))
        # spread characters that share a spot along the wall (deterministic: by id)
        groups: dict[Any, list[int]] = {}
        for cid, (_, _, gk) in bases.items():
            groups.setdefault(gk, []).append(cid)
        positions: dict[int, tuple[int, int]] = {}
        spacing = 2.6 * r
        for members in groups.values():
            members.sort()
            n = len(members)
            for k, cid in enumerate(members):
                (x, y), (ix, iy), _ = bases[cid]
                off = (k - (n - 1) / 2) * spacing
                if ix != 0:  # along a side wall: spread along y
                    y += off
                else:
                    x += off
                box = lay.interiors.get(chars[cid].room)  # type: ignore[arg-type]
                if box is not None:
                    x = min(max(x, box[0] + r + 1), box[2] - r - 1)
                    y = min(max(y, box[1] + r + 1), box[3] - r - 1)
                positions[cid] = (round(x), round(y))
        occ = placement.occupancy.copy()
        person_idx = 0
        styles: dict[int, tuple[str, str, Color]] = {}
        for cid in sorted(positions):
            node = world.graph.nodes.get(cid)
            extra_name = node.extra.get("name") if node is not None else None
            if chars[cid].robot:
                name, kind = actors.get(cid, ("robot", "robot"))[0], "robot"
                color = ROBOT_COLOR
            else:
                if cid in actors:
                    name, kind = actors[cid]
                else:
                    name = str(extra_name) if extra_name else f"char {cid}"
                    kind = str(node.extra.get("kind", "adult")) if node is not None else "adult"
                if kind not in CHARACTER_KINDS:
                    raise ValueError(
                        f"unknown kind {kind!r} for character {cid}; "
                        f"expected one of {CHARACTER_KINDS}"
                    )
                color = _PERSON_COLORS[person_idx % len(_PERSON_COLORS)]
                person_idx += 1
            styles[cid] = (str(name), kind, color)
        for cid in sorted(positions):  # figures first so that labels can avoid all of them
            x, y = positions[cid]
            _mark(occ, (round(x - r), round(y - r), round(x + r) + 1, round(y + r) + 1))
        for cid in sorted(positions):
            x, y = positions[cid]
            name, kind, color = styles[cid]
            self._draw_figure(draw, x, y, kind, color)
            self._draw_char_label(img, draw, occ, x, y, name, color, held.get(cid, []), world)

    def _draw_figure(self, draw: Any, x: int, y: int, kind: str, color: Color) -> None:
        r = self._fig_r
        edge = _FIGURE_EDGE
        if kind == "robot":
            s = r * 1.05
            draw.rectangle((x - s, y - s, x + s, y + s), fill=color, outline=edge)
            e = max(1.0, r * 0.28)
            draw.rectangle((x - s * 0.55, y - s * 0.45, x - s * 0.55 + e, y - s * 0.45 + e),
                           fill=(255, 255, 255))
            draw.rectangle((x + s * 0.55 - e, y - s * 0.45, x + s * 0.55, y - s * 0.45 + e),
                           fill=(255, 255, 255))
            draw.line((x, y - s, x, y - s - r * 0.5), fill=edge, width=max(1, round(self._u)))
            return
        if kind == "child":
            r *= 0.68
        head = r * 0.42
        if kind == "wheelchair":
            wr = r * 0.7
            wx, wy = x + r * 0.2, y + r * 0.35
            draw.ellipse((wx - wr, wy - wr, wx + wr, wy + wr), outline=edge,
                         width=max(1, round(1.2 * self._u)))
            draw.ellipse((x - r * 0.62, y - r * 0.35, x + r * 0.62, y + r * 0.55),
                         fill=color, outline=edge)
            draw.ellipse((x - head, y - r * 0.35 - 2 * head + 1, x + head, y - r * 0.35 + 1),
                         fill=color, outline=edge)
            return
        draw.ellipse((x - r * 0.62, y - r * 0.2, x + r * 0.62, y + r), fill=color, outline=edge)
        draw.ellipse((x - head, y - r * 0.2 - 2 * head + 1, x + head, y - r * 0.2 + 1),
                     fill=color, outline=edge)

    def _draw_char_label(
        self,
        img: Any,
        draw: Any,
        occ: np.ndarray,
        x: int,
        y: int,
        name: str,
        color: Color,
        held: list[int],
        world: World,
    ) -> None:
        small = self.small
        t_name = self._text(name[:8] if small else name[:16], self._font_big_px)
        t_held = None
        if held:
            names = ",".join(_display(_OBJ_NAMES, world.graph.nodes[o].key, small) for o in held)
            t_held = self._text("+" + names, self._font_px)
        w = max(t_name.w, t_held.w if t_held else 0) + 2
        h = t_name.h - 1 + (t_held.h - 2 if t_held else 0)
        r = round(self._fig_r)
        cands = [
            (x + r + 2, y - t_name.h // 2),
            (x - r - 2 - w, y - t_name.h // 2),
            (x - w // 2, y + r + 2),
            (x - w // 2, y - r - 2 - h),
            (x + r + 2, y - h),
            (x - r - 2 - w, y - h),
            (x + r + 2, y),
            (x - r - 2 - w, y),
        ]
        lx, ly = _best(occ, [(cx, cy, cx + w, cy + h) for cx, cy in cands], clamp=self.size)
        _mark(occ, (lx, ly, lx + w, ly + h))
        draw.rectangle((lx, ly, lx + w - 1, ly + h - 1), fill=_LABEL_BG)
        img.paste(color, (lx + 1, ly - 1), t_name.mask)
        if t_held is not None:
            img.paste(_HELD_TEXT, (lx + 1, ly + t_name.h - 3), t_held.mask)

    def _draw_captions(self, img: Any, captions: Sequence[str]) -> None:
        n = self.caption_lines
        lines = [str(c) for c in captions]
        shown: list[tuple[str, Color]]
        if len(lines) > n:
            hidden = len(lines) - (n - 1)
            shown = [(f"(+{hidden} earlier)", _CAPTION_DIM)] if n > 1 else []
            shown += [(s, _CAPTION_TEXT) for s in lines[len(lines) - (n - 1 if n > 1 else 1):]]
        else:
            shown = [(s, _CAPTION_TEXT) for s in lines]
        top = self.size - self._caption_h + 2
        for i, (s, color) in enumerate(shown):
            t = self._fit_text(s.replace("\n", " "), self._font_big_px, self.size - 8)
            img.paste(color, (4, top + i * self._line_big), t.mask)


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


def _label_depth(f: _Furn) -> int:
    """How far the furniture's own label reaches into the room beyond its rectangle."""
    if f.label is None or f.label_pos is None or f.label_inside:
        return 0
    x, y = f.label_pos
    ix, iy = f.inward
    if ix > 0:
        return max(0, x + f.label.w - f.rect[2])
    if ix < 0:
        return max(0, f.rect[0] - x)
    if iy > 0:
        return max(0, y + f.label.h - f.rect[3])
    return max(0, f.rect[1] - y)


def _stack_origin(f: _Furn) -> tuple[int, int]:
    """Where the object stack of a piece of furniture starts (past its label)."""
    a, b, c, d = f.rect
    depth = _label_depth(f) + 2
    ix, iy = f.inward
    if ix > 0:
        return c + depth, (b + d) // 2
    if ix < 0:
        return a - depth, (b + d) // 2
    if iy > 0:
        return (a + c) // 2, d + depth
    return (a + c) // 2, b - depth


def _side_candidates(rect: Box, inward: tuple[int, int], w: int, h: int, gap: int) -> list[Box]:
    """Label boxes around ``rect``, the side facing the room first."""
    a, b, c, d = rect
    mx, my = (a + c) // 2, (b + d) // 2
    below = (mx - w // 2, d + gap)
    above = (mx - w // 2, b - gap - h)
    right = (c + gap, my - h // 2)
    left = (a - gap - w, my - h // 2)
    order = {
        (0, 1): [below, (below[0] - w // 2, below[1]), (below[0] + w // 2, below[1]), right, left],
        (0, -1): [above, (above[0] - w // 2, above[1]), (above[0] + w // 2, above[1]), right, left],
        (1, 0): [right, (right[0], right[1] - h), (right[0], right[1] + h), below, above],
        (-1, 0): [left, (left[0], left[1] - h), (left[0], left[1] + h), below, above],
    }[inward]
    return [(x, y, x + w, y + h) for x, y in order]


def _stack_candidates(ox: int, oy: int, inward: tuple[int, int], k: int, w: int, h: int,
                      lh: int) -> list[Box]:
    """Candidate boxes for the ``k``-th object of a stack starting at ``(ox, oy)``."""
    out: list[tuple[int, int]] = []
    ix, iy = inward
    if iy != 0:  # stack grows into the room, one line per object, centred on the furniture
        for s in range(k, k + 4):
            y = oy + s * lh if iy > 0 else oy - (s + 1) * lh
            for dx in (0, -(w // 2) - 2, w // 2 + 2):
                out.append((ox - w // 2 + dx, y))
    else:  # side wall: lines above and below the furniture's centre, then a second column
        offsets = [0, -1, 1, -2, 2, -3, 3]
        for col in range(2):
            for s in offsets[k:] + offsets[:k]:
                y = oy - lh // 2 + s * lh
                x = ox + col * (w + 3) if ix > 0 else ox - w - col * (w + 3)
                out.append((x, y))
    return [(x, y, x + w, y + h) for x, y in out]


def _mark(occ: np.ndarray, box: Box) -> None:
    h, w = occ.shape
    x0, y0, x1, y1 = box
    occ[max(y0, 0):min(y1, h), max(x0, 0):min(x1, w)] = True


def _best(occ: np.ndarray, cands: Sequence[Box], clamp: int | None = None) -> tuple[int, int]:
    """Top-left corner of the first free candidate box, else the least covered one."""
    h, w = occ.shape
    best: tuple[int, int] | None = None
    best_cost = -1
    for box in cands:
        x0, y0, x1, y1 = box
        if clamp is not None:  # keep the box inside the frame
            dx = max(0, -x0) - max(0, x1 - clamp)
            dy = max(0, -y0) - max(0, y1 - clamp)
            x0, x1, y0, y1 = x0 + dx, x1 + dx, y0 + dy, y1 + dy
        cx0, cy0, cx1, cy1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
        outside = (x1 - x0) * (y1 - y0) - max(0, cx1 - cx0) * max(0, cy1 - cy0)
        region = occ[cy0:cy1, cx0:cx1]
        if outside == 0 and not region.any():
            return x0, y0
        cost = int(region.sum()) + 4 * outside
        if best is None or cost < best_cost:
            best, best_cost = (x0, y0), cost
    if best is None:
        raise ValueError("no candidate positions")
    return best
