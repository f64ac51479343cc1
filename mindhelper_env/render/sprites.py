"""The picture language of the vision track (``obs_mode="rgb"``): palette, sprites, id-mark
digits and the frame layout, as plain data.

Everything here is a pure function of public data (the classes and ids an episode lists in
``info["candidates"]``): the module imports nothing from the world, the actors or the
scenarios, so a pixel parser (:mod:`mindhelper_env.perception`) may import it and rebuild the
exact layout of an episode's frames from its candidates (:func:`build_layout`).

**Pixels.** Frames are drawn at scale 1 on a *canvas* of palette indices (:data:`PALETTE`,
every colour a pure RGB triple, no antialiasing) and turned into RGB by a table lookup. A
frame of ``frame_size`` pixels shows the canvas at the largest integer scale that fits,
centred (:func:`frame_map`); when the canvas is larger than the frame it is sampled to the
nearest pixel, which keeps the colours pure but may lose marks (``Layout.lossless_size`` is
the smallest lossless frame size).

**Layout** (fixed for an episode, :func:`build_layout`). One *panel* per room, arranged in
columns. A panel is a stack of *rows* of :data:`ROW_H` pixels:

1. the room's header row: room icon, room id mark, then the objects on the floor and the
   people in the room who stand at no piece of furniture; then :data:`FLOOR_ROWS` - 1
   continuation rows (no icon, no mark) with the next floor objects and people;
2. one row per piece of furniture of the room, by id: furniture icon, id mark, *state cell*
   (open or closed container, switched on or off), :data:`OBJ_SLOTS` object slots (what is
   on or in it; the slot area is filled with :data:`CLOSED` while a container is closed and
   its contents are not drawn), then :data:`PERSON_SLOTS` person slots (who is at it);
3. one row per door whose lower-id room is this room, by id: door icon, door id mark,
   state cell (door open or closed), then the icon and id mark of the room on the other
   side;
4. an *interaction row*: one balloon per tell, give, unseen move or walk that ended at a
   person in the room at that tick (:data:`BALLOON_SLOTS`), each ``[verb glyph][actor mark]
   [arrow][listener mark][object icon][object mark][place icon][place mark]`` on
   :data:`BALLOON`, outlined in :data:`BORDER` (:meth:`Layout.balloon_parts`; cells the
   event has nothing for stay empty: a give has no place; a move no actor, no listener; a
   walk to a person only the walker and the person).

After the room panels, the *spill panel* (no top or bottom border; only when the episode has more grabbable objects
than :data:`OBJ_SLOTS`): :func:`spill_rows` rows of ``Layout.spill_slots`` *spill slots*
``[object icon][object mark][place mark]``, for the objects beyond a place's own slots (a
furniture row's :data:`OBJ_SLOTS`, a floor's :data:`FLOOR_ROWS` x :data:`OBJ_SLOTS`): place
by place in row order, each place's objects by id, from the left of the first spill row.
There are enough of them for every object of the episode to be drawn at any tick (a place
that spills keeps :data:`OBJ_SLOTS` objects, so at most ``n_objects - OBJ_SLOTS`` spill), and
the layout stays a function of ``info["candidates"]`` alone.

An object slot is ``[object icon][id mark]``; objects fill the slots from the left by id. A
person slot is ``[action glyph][person sprite][id mark][held icon][held mark][held icon]
[held mark]``; people fill the slots from the left by id (the robot too); the held objects
are in ``holding`` order (right hand first, then left). The action glyph
shows the verb of what the person did at that tick (:data:`ACTION_GLYPHS`; empty when they
did nothing visible); the sprite shows their kind (colour and shape), the way they face
(eyes: facing the room; back turned, at a chore) and their pose (standing, sitting, reaching
up, looking around, phone at the ear): in picture 6 (:data:`PICTURE`) each pose adds a mark
of its own colour (:data:`POSE_COLORS`, :func:`person_sprite`). A person is drawn in the row of the furniture
they are at (or sit on) from the very frame they arrive; in their room's floor rows while
they are at no furniture (a walk under way too); next to another person they walked to, in
that person's row.

Inside a row, icons, glyphs and marks start :data:`ICON_DY` pixels below its top, person
sprites :data:`SPRITE_DY`.

**Marks.** The only glyphs are the id marks: digits of :data:`DIGITS` (3 x 5 pixels, one
pixel apart) in :data:`INK`, each mark right-aligned in a field of ``Layout.mark_w`` pixels.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "PALETTE", "PALETTE_NAMES", "VOID", "PANEL", "INK", "BORDER", "UNSEEN", "CLOSED",
    "OPEN_IN", "BALLOON", "ROW_BG", "ROBOT", "KIND_COLORS", "ACTION", "DIGITS", "mark_bitmap",
    "mark_width", "OBJECT_CLASSES", "FURNITURE_CLASSES", "ROOM_CLASSES", "object_icon",
    "furniture_icon", "room_icon", "DOOR_ICON", "STATE_GLYPHS", "ACTION_GLYPHS", "ARROW",
    "POSES", "person_sprite", "ROW_H", "ICON", "OBJ_SLOTS", "PERSON_SLOTS", "BALLOON_SLOTS", "FLOOR_ROWS", "ICON_DY", "SPRITE_DY",
    "spill_rows", "spill_slot_width",
    "Row", "Panel", "Layout", "build_layout", "frame_map", "frame_scale", "palette_index",
    "canvas_of", "SPRITES_VERSION", "PICTURES", "PICTURE", "check_picture", "POSE_COLORS",
]

#: Bumped whenever a sprite, colour or layout rule changes (parsers check it).
SPRITES_VERSION = 6
#: The pictures a renderer can draw: ``5`` is 0.8.0's picture (sprites v5: poses change one
#: or two pixels of the body), byte for byte; ``6`` (the default) gives every pose a mark of
#: its own colour (:data:`POSE_COLORS`). Layouts, marks, icons and glyphs are the same in both.
PICTURES = (5, 6)
#: The default picture (:data:`SPRITES_VERSION`).
PICTURE = 6


def check_picture(picture: Any) -> int:
    """``picture`` as an int of :data:`PICTURES`; ``ValueError`` otherwise."""
    if isinstance(picture, bool) or picture not in PICTURES:
        raise ValueError(f"picture must be one of {list(PICTURES)}, got {picture!r}")
    return int(picture)

# ----------------------------------------------------------------------------- palette
_COLORS: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("void", (40, 40, 48)),
    ("panel", (228, 228, 220)),
    ("ink", (0, 0, 0)),
    ("border", (96, 96, 96)),
    ("unseen", (150, 150, 150)),
    ("closed", (120, 84, 48)),
    ("open_in", (255, 255, 255)),
    ("balloon", (255, 255, 200)),
    ("row_bg", (244, 244, 236)),
    ("robot", (220, 30, 30)),
    ("adult", (30, 80, 220)),
    ("child", (240, 150, 20)),
    ("wheelchair", (140, 60, 200)),
    ("skin", (250, 205, 160)),
    ("hair", (90, 60, 30)),
    ("phone", (20, 200, 60)),
    ("action", (200, 0, 120)),
    ("door_open", (60, 180, 180)),
    ("door_closed", (70, 40, 10)),
    ("switch_on", (255, 220, 0)),
    ("switch_off", (60, 60, 60)),
    ("furn_a", (150, 110, 70)),
    ("furn_b", (90, 120, 150)),
    ("furn_c", (110, 150, 90)),
    ("room_a", (180, 100, 100)),
    ("room_b", (100, 150, 170)),
    ("obj_0", (230, 40, 40)),
    ("obj_1", (250, 170, 0)),
    ("obj_2", (40, 170, 40)),
    ("obj_3", (30, 110, 240)),
    ("obj_4", (170, 60, 220)),
    ("obj_5", (0, 170, 170)),
    # picture 6: the pose marks (each used by its pose only)
    ("pose_back", (255, 0, 255)),
    ("pose_look", (0, 255, 255)),
    ("pose_reach", (128, 255, 0)),
    ("pose_seat", (110, 0, 0)),
)
#: Colour names, by palette index.
PALETTE_NAMES: tuple[str, ...] = tuple(n for n, _ in _COLORS)
#: ``(n, 3)`` uint8: the RGB of each palette index. Every frame pixel is one of these.
PALETTE: np.ndarray = np.array([c for _, c in _COLORS], dtype=np.uint8)
PALETTE.setflags(write=False)
_IDX = {n: i for i, n in enumerate(PALETTE_NAMES)}
VOID, PANEL, INK, BORDER, UNSEEN, CLOSED, OPEN_IN, BALLOON, ROW_BG, ROBOT = (
    _IDX[n] for n in ("void", "panel", "ink", "border", "unseen", "closed", "open_in",
                      "balloon", "row_bg", "robot"))
ACTION = _IDX["action"]
#: Body colour of each person kind (``"robot"`` included).
KIND_COLORS: dict[str, int] = {k: _IDX[k] for k in ("adult", "child", "wheelchair", "robot")}
_OBJ_COLORS = tuple(_IDX[f"obj_{i}"] for i in range(6))
_FURN_COLORS = (_IDX["furn_a"], _IDX["furn_b"], _IDX["furn_c"])
_ROOM_COLORS = (_IDX["room_a"], _IDX["room_b"])
#: Picture 6: the palette colour of each pose's mark (``phone``: the phone; ``back``: the
#: back of the head; ``look``: the face turned aside; ``reach``: the raised arm; ``sit``: the
#: seat under the legs). No other part of a frame uses these colours.
POSE_COLORS: dict[str, int] = {"sit": _IDX["pose_seat"], "back": _IDX["pose_back"],
                               "phone": _IDX["phone"], "reach": _IDX["pose_reach"],
                               "look": _IDX["pose_look"]}


def _bits(*rows: str) -> np.ndarray:
    """A bool bitmap from rows of ``X`` (ink) and ``.`` (transparent)."""
    return np.array([[c == "X" for c in r] for r in rows], dtype=bool)


# ----------------------------------------------------------------------------- digits
#: 3 x 5 bitmaps of the digits of the id marks.
DIGITS: dict[str, np.ndarray] = {
    "0": _bits("XXX", "X.X", "X.X", "X.X", "XXX"),
    "1": _bits(".X.", "XX.", ".X.", ".X.", "XXX"),
    "2": _bits("XXX", "..X", "XXX", "X..", "XXX"),
    "3": _bits("XXX", "..X", ".XX", "..X", "XXX"),
    "4": _bits("X.X", "X.X", "XXX", "..X", "..X"),
    "5": _bits("XXX", "X..", "XXX", "..X", "XXX"),
    "6": _bits("XXX", "X..", "XXX", "X.X", "XXX"),
    "7": _bits("XXX", "..X", ".X.", ".X.", ".X."),
    "8": _bits("XXX", "X.X", "XXX", "X.X", "XXX"),
    "9": _bits("XXX", "X.X", "XXX", "..X", "XXX"),
}


def mark_width(n_digits: int) -> int:
    """Pixels taken by a mark of ``n_digits`` digits."""
    return 4 * n_digits - 1


def mark_bitmap(node_id: int) -> np.ndarray:
    """The ``(5, mark_width(len(str(node_id))))`` bool bitmap of an id mark."""
    if isinstance(node_id, bool) or int(node_id) < 0:
        raise ValueError(f"an id mark is a non-negative int, got {node_id!r}")
    s = str(int(node_id))
    out = np.zeros((5, mark_width(len(s))), dtype=bool)
    for k, ch in enumerate(s):
        out[:, 4 * k:4 * k + 3] = DIGITS[ch]
    return out


# ----------------------------------------------------------------------------- icons
ICON = 5  #: icons and glyphs are ICON x ICON pixels

#: Object classes of the generators (generated and TDW houses): each has its own shape and
#: colour pair, distinct from every other's. Other classes get one by a hash of their name.
OBJECT_CLASSES: tuple[str, ...] = (
    "apple", "bananas", "milk", "juice", "cupcake", "chips", "mug", "wineglass", "plate",
    "remotecontrol", "book", "cellphone", "glasses", "towel", "toothbrush", "toothpaste",
    "pillow", "folder", "magazine", "wallet")
#: Furniture classes of the generators, each with its own icon.
FURNITURE_CLASSES: tuple[str, ...] = (
    "fridge", "kitchencabinet", "kitchencounter", "microwave", "dishwasher", "kitchentable",
    "wallshelf", "sofa", "coffeetable", "tvstand", "tv", "cabinet", "bookshelf", "bed",
    "nightstand", "closet", "desk", "chair", "bathroomcabinet", "bathroomcounter", "toilet",
    "computer")
ROOM_CLASSES: tuple[str, ...] = (
    "kitchen", "livingroom", "bedroom", "bathroom", "diningroom", "homeoffice", "office",
    "hallway", "entrance")

_SHAPES: tuple[np.ndarray, ...] = (
    _bits(".XXX.", "XXXXX", "XXXXX", "XXXXX", ".XXX."),  # disc
    _bits("XXXXX", "XXXXX", "XXXXX", "XXXXX", "XXXXX"),  # square
    _bits("..X..", ".XXX.", "XXXXX", ".XXX.", "..X.."),  # diamond
    _bits("..X..", ".XXX.", ".XXX.", "XXXXX", "XXXXX"),  # triangle
    _bits(".XXX.", ".XXX.", ".XXX.", ".XXX.", ".XXX."),  # bar (tall)
    _bits(".....", "XXXXX", "XXXXX", "XXXXX", "....."),  # slab (wide)
    _bits("XXXXX", "X...X", "X...X", "X...X", "XXXXX"),  # ring (square)
    _bits("X...X", ".X.X.", "..X..", ".X.X.", "X...X"),  # cross
    _bits("XXXXX", "X....", "XXXXX", "....X", "XXXXX"),  # zigzag
    _bits("X.X.X", "X.X.X", "X.X.X", "X.X.X", "X.X.X"),  # stripes
    _bits("XXXXX", "..X..", "..X..", "..X..", "..X.."),  # tee
    _bits("X....", "XX...", "XXX..", "XXXX.", "XXXXX"),  # wedge
)


def _two_tone(shape: np.ndarray, color: int, accent: int) -> np.ndarray:
    """A palette-index icon (0 = transparent): the shape in ``color``, its centre pixel in
    ``accent``."""
    out = np.where(shape, color, 0).astype(np.uint8)
    if shape[2, 2]:
        out[2, 2] = accent
    return out


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _combo(cls: str, known: Sequence[str], n_shapes: int, n_colors: int) -> tuple[int, int]:
    if cls in known:
        i = known.index(cls)
    else:
        i = len(known) + zlib.crc32(cls.encode()) % max(1, n_shapes * n_colors - len(known))
    i %= n_shapes * n_colors
    return i % n_shapes, i // n_shapes


@functools.lru_cache(maxsize=1024)
def object_icon(cls: str) -> np.ndarray:
    """The ``(5, 5)`` palette-index icon of an object class (0 = transparent). The classes of
    :data:`OBJECT_CLASSES` have pairwise distinct icons."""
    s, c = _combo(cls, OBJECT_CLASSES, len(_SHAPES), len(_OBJ_COLORS))
    return _frozen(_two_tone(_SHAPES[s], _OBJ_COLORS[c], INK))


@functools.lru_cache(maxsize=1024)
def furniture_icon(cls: str) -> np.ndarray:
    """The ``(5, 5)`` palette-index icon of a furniture class (0 = transparent): a shape in one
    of three furniture browns/blues/greens with a white centre; distinct across
    :data:`FURNITURE_CLASSES`."""
    s, c = _combo(cls, FURNITURE_CLASSES, len(_SHAPES), len(_FURN_COLORS))
    return _frozen(_two_tone(_SHAPES[s], _FURN_COLORS[c], OPEN_IN))


@functools.lru_cache(maxsize=1024)
def room_icon(cls: str) -> np.ndarray:
    """The ``(5, 5)`` palette-index icon of a room class (0 = transparent)."""
    s, c = _combo(cls, ROOM_CLASSES, len(_SHAPES), len(_ROOM_COLORS))
    return _frozen(_two_tone(_SHAPES[s], _ROOM_COLORS[c], OPEN_IN))


def _glyph(color: int, *rows: str) -> np.ndarray:
    return np.where(_bits(*rows), color, 0).astype(np.uint8)


#: The door icon of a door row (its state is in the state cell).
DOOR_ICON = _glyph(_IDX["door_closed"], "XXXXX", "X...X", "X...X", "X..XX", "X...X")

#: State-cell glyphs: ``open``/``closed`` (containers), ``on``/``off`` (switches),
#: ``door_open``/``door_closed``.
STATE_GLYPHS: dict[str, np.ndarray] = {
    "open": _glyph(INK, "X...X", "X...X", "X...X", "X...X", "XXXXX"),
    "closed": _glyph(CLOSED, "XXXXX", "XXXXX", "XXXXX", "XXXXX", "XXXXX"),
    "on": _glyph(_IDX["switch_on"], ".XXX.", "XXXXX", "XXXXX", "XXXXX", ".XXX."),
    "off": _glyph(_IDX["switch_off"], ".XXX.", "X...X", "X...X", "X...X", ".XXX."),
    "door_open": _glyph(_IDX["door_open"], "X...X", "X...X", "X...X", "X...X", "X...X"),
    "door_closed": _glyph(_IDX["door_closed"], "XXXXX", "XXXXX", "XXXXX", "XXXXX", "XXXXX"),
}

#: The action glyph of each event verb (in :data:`ACTION`), shown in the actor's person slot
#: at the tick of the event. ``walk`` (and ``find``) at its end (arrived: the event has its
#: target in ``args``); ``walk_on``: a walk or find still under way (the person entered a
#: room on the way: the event has no ``args``).
ACTION_GLYPHS: dict[str, np.ndarray] = {
    verb: _glyph(ACTION, *rows) for verb, rows in {
        "walk": ("X....", "X..X.", "...X.", "X....", "X..X."),
        "walk_on": ("X.X..", ".X.X.", "..X.X", ".X.X.", "X.X.."),
        "find": ("XXX..", "X.X..", "XXX..", "...X.", "....X"),
        "open": ("X...X", "X...X", "X...X", "X...X", "XXXXX"),
        "close": ("XXXXX", "X...X", "X...X", "X...X", "XXXXX"),
        "grab": ("..X..", ".XXX.", "X.X.X", "..X..", "..X.."),
        "putin": ("..X..", "X.X.X", "XXXXX", "X...X", "XXXXX"),
        "putback": ("..X..", "..X..", "X.X.X", ".XXX.", "XXXXX"),
        "drop": ("..X..", "..X..", "X.X.X", ".XXX.", "..X.."),
        "switchon": ("..X..", "X.X.X", "X.X.X", "X...X", ".XXX."),
        "switchoff": (".....", ".XXX.", "X...X", "X...X", ".XXX."),
        "sit": ("X....", "X....", "XXXXX", "X...X", "X...X"),
        "standup": ("..X..", ".XXX.", "..X..", "..X..", "XXXXX"),
        "give": ("..X..", "...X.", "XXXXX", "...X.", "..X.."),
        "tell": ("XXXXX", "X...X", "XXXXX", ".X...", "X...."),
        "look": (".....", ".XXX.", "X.X.X", ".XXX.", "....."),
        "stretch": ("X...X", "X...X", ".X.X.", "..X..", "..X.."),
        "stand": ("X.X.X", "X.X.X", "XXXXX", "XXXXX", ".XXX."),
        "phone": ("XXX..", "X....", "X....", "X....", "XXX.."),
        "hangup": ("X...X", ".X.X.", "..X..", ".X.X.", "X...X"),
        "chore": ("...XX", "..XX.", ".X...", "XXX..", "XXX.."),
        "chore_done": ("....X", "...X.", "X.X..", ".X...", "....."),
        "move": ("..X..", ".XXX.", "XXXXX", ".XXX.", "..X.."),
    }.items()
}
#: The arrow between the actor's and the listener's marks in a balloon.
ARROW = _glyph(INK, "..X..", "...X.", "XXXXX", "...X.", "..X..")

# ----------------------------------------------------------------------------- people
#: Pose flags a person sprite combines: ``sit``, ``back`` (facing away, at a chore),
#: ``phone`` (phone at the ear), ``reach`` (arms up: stretching, or taking from high up),
#: ``look`` (looking around: eyes to the side).
POSES = ("sit", "back", "phone", "reach", "look")
_SPRITE_H, _SPRITE_W = 7, 5


def person_sprite(kind: str, *, sit: bool = False, back: bool = False, phone: bool = False,
                  reach: bool = False, look: bool = False, picture: int = PICTURE) -> np.ndarray:
    """The ``(7, 5)`` palette-index sprite (0 = transparent) of a person of ``kind``
    (``adult``, ``child``, ``wheelchair`` or ``robot``) in a pose.

    Picture 6 (default): every pose adds a mark of its own colour (:data:`POSE_COLORS`) in a
    place of its own, so poses combine and each stays whole: ``back`` and ``look`` colour the
    head (the two rows of face and eyes, 6 px; ``back`` wins when both are set), ``reach`` the
    left column from the row above the eyes down (the raised arm, 4 px), ``phone`` the right
    column there (4 px), ``sit`` the bottom row (the seat, 5 px; the legs drawn forward above
    it). Picture 5: 0.8.0's sprites (hair, eyes aside, raised arms and the phone change one or
    two pixels)."""
    if kind not in KIND_COLORS:
        raise ValueError(f"unknown person kind {kind!r}; expected one of {list(KIND_COLORS)}")
    picture = check_picture(picture)
    rows, eye = _base_sprite(kind)
    grid = [list(r) for r in rows]
    if picture == 5:
        _pose_v5(grid, kind, eye, sit, back, phone, reach, look)
    else:
        if sit:  # legs forward above a seat
            if kind != "wheelchair":
                grid[-2] = list("BBBB.")
            grid[-1] = list("CCCCC")
        for y in range(eye - 1, eye + 3):
            if reach:
                grid[y][0] = "A"
            if phone:
                grid[y][4] = "P"
        if back or look:
            for y in (eye - 1, eye):
                grid[y][1:4] = ["K" if back else "L"] * 3
    body = KIND_COLORS[kind]
    code = {".": 0, "S": _IDX["skin"], "B": body, "H": _IDX["hair"], "E": INK, "R": INK,
            "P": _IDX["phone"], "A": POSE_COLORS["reach"], "C": POSE_COLORS["sit"],
            "K": POSE_COLORS["back"], "L": POSE_COLORS["look"]}
    return np.array([[code[c] for c in r] for r in grid], dtype=np.uint8)


def _base_sprite(kind: str) -> tuple[list[str], int]:
    """A standing person's rows and the row of the eyes."""
    if kind == "robot":
        return ["..E..", "BBBBB", "BEBEB", "BBBBB", ".BBB.", ".B.B.", ".B.B."], 2
    if kind == "child":
        return [".....", ".....", ".SSS.", ".ESE.", "BBBBB", ".BBB.", ".B.B."], 3
    if kind == "wheelchair":
        return [".SSS.", ".ESE.", "BBBBB", ".BBB.", "RRRRR", "R...R", ".RRR."], 1
    return [".SSS.", ".ESE.", "BBBBB", ".BBB.", ".BBB.", ".B.B.", ".B.B."], 1


def _pose_v5(grid: list[list[str]], kind: str, eye: int, sit: bool, back: bool, phone: bool,
             reach: bool, look: bool) -> None:
    """0.8.0's poses (picture 5), in place."""
    if back:  # the back of the head: hair (a robot: plain body), no eyes
        for y in (eye - 1, eye):
            grid[y] = [("H" if c in "SE" else c) for c in grid[y]]
        if kind == "robot":
            grid[eye] = list("BBBBB")
    elif look:  # eyes to the side
        grid[eye] = list(".SEE." if kind != "robot" else "BBEEB")
    if sit and kind != "wheelchair":  # legs forward, at seat level
        grid[-2] = list("BBBB.")
        grid[-1] = list(".....")
    if reach:  # arms up beside the head
        for y in range(max(eye - 2, 0), eye):
            grid[y][0] = "B"
            grid[y][4] = "B"
    if phone:  # the phone at the right ear
        grid[eye][4] = "P"
        grid[eye - 1][4] = "P"


# ----------------------------------------------------------------------------- layout
ROW_H = 8  #: a row: 7 pixels of content, then a 1-pixel separator
OBJ_SLOTS = 6  #: object slots in a row
PERSON_SLOTS = 4  #: person slots in a row (the robot and three people at one table)
ICON_DY = 1  #: icons, glyphs and marks (5 px tall) start 1 px below a row's top
SPRITE_DY = 0  #: person sprites (7 px tall) start at a row's top
BALLOON_SLOTS = 4  #: balloons in an interaction row
#: rows of a room's floor: the header row, then continuation rows (no icon, no mark) for
#: the people and floor objects beyond the header row's slots
FLOOR_ROWS = 2
_GAP = 2  #: columns between panels


@dataclass(frozen=True, slots=True)
class Row:
    """One row of a panel: ``kind`` (``"room"``, ``"furniture"``, ``"door"``, ``"talk"``),
    the node it shows (the room for the interaction row), its class, and ``other``: for a
    door the room on the other side, for a room row its index among the room's floor rows
    (0: the header); ``y`` and ``x`` are the canvas coordinates of its top-left pixel."""

    kind: str
    node: int
    cls: str
    y: int
    x: int
    other: int = -1


@dataclass(frozen=True, slots=True)
class Panel:
    """The panel of one room: its id, class, box ``(x0, y0, x1, y1)`` and rows; the spill
    panel has ``room == -1`` and ``cls == "spill"``."""

    room: int
    cls: str
    box: tuple[int, int, int, int]
    rows: tuple[Row, ...]


@dataclass(slots=True)
class Layout:
    """Where everything is drawn for one episode (see the module docstring)."""

    width: int
    height: int
    mark_w: int
    panels: tuple[Panel, ...]
    #: furniture or room id -> its (first) row; door id -> its rows (one)
    row_of: dict[int, Row] = field(default_factory=dict)
    door_rows: dict[int, tuple[Row, ...]] = field(default_factory=dict)
    talk_row: dict[int, Row] = field(default_factory=dict)
    #: the spill rows, in order (empty when no place can hold more objects than its slots)
    spill: tuple[Row, ...] = ()
    #: object slots in a furniture row, a floor row and a spill row
    obj_slots: int = OBJ_SLOTS
    #: person slots in a furniture or floor row
    person_slots: int = PERSON_SLOTS

    @property
    def row_w(self) -> int:
        return row_width(self.mark_w)

    @property
    def lossless_size(self) -> int:
        """The smallest square frame that shows the canvas without losing a pixel."""
        return max(self.width, self.height)

    # x offsets inside a row (add row.x)
    @property
    def x_mark(self) -> int:
        return 1 + ICON + 1

    @property
    def x_state(self) -> int:
        return self.x_mark + self.mark_w + 1

    @property
    def x_objects(self) -> int:
        return self.x_state + ICON + 2

    @property
    def obj_slot_w(self) -> int:
        return ICON + 1 + self.mark_w + 2

    @property
    def x_people(self) -> int:
        return self.x_objects + OBJ_SLOTS * self.obj_slot_w + 1

    @property
    def person_slot_w(self) -> int:
        return ICON + 1 + _SPRITE_W + 1 + self.mark_w + 1 + 2 * (ICON + 1 + self.mark_w + 1)

    @property
    def spill_slot_w(self) -> int:
        return spill_slot_width(self.mark_w)

    @property
    def spill_slots(self) -> int:
        """Slots in a spill row; they start at ``x = 1``: ``[object icon][object mark][place
        mark]``, the place mark at ``ICON + 1 + mark_w + 1``."""
        return (self.row_w - 1) // self.spill_slot_w

    def person_parts(self) -> dict[str, int]:
        """x offsets inside a person slot: ``action``, ``sprite``, ``mark``, ``held0``,
        ``held0_mark``, ``held1``, ``held1_mark``."""
        a = 0
        s = a + ICON + 1
        m = s + _SPRITE_W + 1
        h0 = m + self.mark_w + 1
        h1 = h0 + ICON + 1 + self.mark_w + 1
        return {"action": a, "sprite": s, "mark": m, "held0": h0, "held0_mark": h0 + ICON + 1,
                "held1": h1, "held1_mark": h1 + ICON + 1}

    @property
    def balloon_w(self) -> int:
        return 4 * (ICON + 1) + 4 * (self.mark_w + 1) + 2

    def balloon_parts(self) -> dict[str, int]:
        """x offsets inside a balloon: ``verb``, ``actor``, ``arrow``, ``listener``,
        ``object``, ``object_mark``, ``place``, ``place_mark``."""
        out, x = {}, 1
        for name, w in (("verb", ICON), ("actor", self.mark_w), ("arrow", ICON),
                        ("listener", self.mark_w), ("object", ICON),
                        ("object_mark", self.mark_w), ("place", ICON),
                        ("place_mark", self.mark_w)):
            out[name] = x
            x += w + 1
        return out


def spill_slot_width(mark_w: int) -> int:
    """A spill slot: ``[object icon][object mark][place mark]``."""
    return ICON + 1 + mark_w + 1 + mark_w + 2


def row_width(mark_w: int) -> int:
    obj = ICON + 1 + mark_w + 2
    person = ICON + 1 + _SPRITE_W + 1 + mark_w + 1 + 2 * (ICON + 1 + mark_w + 1)
    return 1 + ICON + 1 + mark_w + 1 + ICON + 2 + OBJ_SLOTS * obj + 1 + PERSON_SLOTS * person


def spill_rows(n_objects: int, per_row: int) -> int:
    """The spill rows of ``per_row`` slots that a layout needs so that ``n_objects`` objects
    are always drawn: a place that spills keeps at least :data:`OBJ_SLOTS` objects in its own
    slots, so at most ``n_objects - OBJ_SLOTS`` objects spill in all."""
    return -(-max(0, int(n_objects) - OBJ_SLOTS) // max(1, per_row))


def build_layout(rooms: Iterable[Mapping[str, Any]], locations: Iterable[Mapping[str, Any]],
                 doors: Iterable[Mapping[str, Any]], ids: Iterable[int] = (), *,
                 n_objects: int | None = None) -> Layout:
    """The layout of an episode from its public lists, shaped like ``info["candidates"]`` in
    ``rgb`` mode: ``rooms`` ``[{"id", "class"}]``, ``locations`` (furniture) ``[{"id",
    "class", "room"}]``, ``doors`` ``[{"id", "rooms": [a, b]}]``; ``ids``: every other id that
    gets a mark (people, objects), for the width of the mark field; ``n_objects``: the number
    of grabbable objects (``len(info["candidates"]["objects"])``; default ``len(set(ids))``),
    which bounds the objects on one place and so the number of spill rows
    (:func:`spill_rows`).

    Rooms are ordered by id, their furniture and doors by id. Panels go into the number of
    columns (1 to 4) that makes the canvas closest to square, each room in turn into the
    shortest column. The spill panel (when there are spill rows) comes last."""
    rooms = sorted(({"id": int(r["id"]), "class": str(r["class"])} for r in rooms),
                   key=lambda r: r["id"])
    furn: dict[int, list[tuple[int, str]]] = {r["id"]: [] for r in rooms}
    for loc in locations:
        if loc.get("room") in furn:
            furn[loc["room"]].append((int(loc["id"]), str(loc["class"])))
    door_list = [(int(d["id"]), [int(x) for x in d["rooms"]]) for d in doors]
    ids = [int(i) for i in ids]
    n_objects = len(set(ids)) if n_objects is None else int(n_objects)
    all_ids = [r["id"] for r in rooms] + [i for f in furn.values() for i, _ in f] \
        + [d for d, _ in door_list] + [int(i) for i in ids]
    digits = max((len(str(i)) for i in all_ids), default=1)
    mark_w = mark_width(digits)
    rw = row_width(mark_w)
    n_spill = spill_rows(n_objects, (rw - 1) // spill_slot_width(mark_w))
    room_cls = {r["id"]: r["class"] for r in rooms}
    specs = []
    for r in rooms:
        rid = r["id"]
        fs = sorted(furn[rid])
        ds = sorted((d, next((x for x in rs if x != rid), rid)) for d, rs in door_list
                    if rid == min(rs))  # a door shows once: in its lower-id room's panel
        specs.append((rid, r["class"], fs, ds))
    heights = [2 + ROW_H * (1 + FLOOR_ROWS + len(fs) + len(ds)) for _, _, fs, ds in specs]
    if n_spill:  # the spill panel has no top or bottom border
        heights.append(ROW_H * n_spill)
    panel_w = rw + 2
    best = None
    for ncols in range(1, 5):
        cols = [0] * ncols
        where = []
        for h in heights:
            c = min(range(ncols), key=lambda k: (cols[k], k))
            where.append((c, cols[c]))
            cols[c] += h + _GAP
        width = ncols * panel_w + (ncols - 1) * _GAP
        height = max(cols) - _GAP if heights else 0
        score = (max(width, height), ncols)
        if best is None or score < best[0]:
            best = (score, width, height, where)
    assert best is not None
    _, width, height, where = best
    panels = []
    lay = Layout(width=max(width, 1), height=max(height, 1), mark_w=mark_w, panels=())
    for (rid, cls, fs, ds), (c, y0) in zip(specs, where[:len(specs)], strict=True):
        x0 = c * (panel_w + _GAP)
        rows = []
        y = y0 + 1
        for k in range(FLOOR_ROWS):
            rows.append(Row("room", rid, cls, y, x0 + 1, k))
            y += ROW_H
        for fid, fcls in fs:
            rows.append(Row("furniture", fid, fcls, y, x0 + 1))
            y += ROW_H
        for did, other in ds:
            rows.append(Row("door", did, "door", y, x0 + 1, other))
            y += ROW_H
        rows.append(Row("talk", rid, "", y, x0 + 1, rid))
        y += ROW_H
        panels.append(Panel(rid, cls, (x0, y0, x0 + panel_w, y + 1), tuple(rows)))
        for row in rows:
            if row.kind in ("room", "furniture") and row.other <= 0:
                lay.row_of[row.node] = row
            elif row.kind == "door":
                lay.door_rows[row.node] = (*lay.door_rows.get(row.node, ()), row)
            else:
                lay.talk_row[rid] = row
    if n_spill:
        c, y0 = where[-1]
        x0 = c * (panel_w + _GAP)
        spill = tuple(Row("spill", k, "", y0 + k * ROW_H, x0 + 1, k) for k in range(n_spill))
        panels.append(Panel(-1, "spill", (x0, y0, x0 + panel_w, y0 + ROW_H * n_spill), spill))
        lay.spill = spill
    lay.panels = tuple(panels)
    _ = room_cls
    return lay


def frame_map(layout: Layout, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)``: for each frame row (column), the canvas row (column) it shows, or
    ``-1`` for the margin. The canvas is scaled by the largest integer that fits in ``size``
    and centred; a canvas larger than ``size`` is sampled to the nearest pixel."""
    w, h = layout.width, layout.height
    k = size // max(w, h)
    if k >= 1:
        def axis(n: int) -> np.ndarray:
            off = (size - n * k) // 2
            a = np.arange(size) - off
            return np.where((a >= 0) & (a < n * k), a // k, -1).astype(np.int64)
        return axis(h), axis(w)
    scale = max(w, h) / size

    def shrink(n: int) -> np.ndarray:
        used = int(np.ceil(n / scale))
        off = (size - used) // 2
        a = np.arange(size) - off
        idx = np.floor((a + 0.5) * scale).astype(np.int64)
        return np.where((a >= 0) & (a < used) & (idx < n), idx, -1)
    return shrink(h), shrink(w)


def frame_scale(layout: Layout, size: int) -> tuple[int, int, int]:
    """``(k, y0, x0)``: a frame of ``size`` pixels shows canvas pixel ``(y, x)`` in the
    ``k`` x ``k`` block whose top-left pixel is ``(y0 + k y, x0 + k x)``. ``ValueError`` when
    ``size`` is below ``layout.lossless_size`` (the frame is then sampled down)."""
    k = size // max(layout.width, layout.height)
    if k < 1:
        raise ValueError(f"a {size} px frame samples this layout's {layout.lossless_size} px "
                         "canvas down: no exact canvas to recover")
    return k, (size - layout.height * k) // 2, (size - layout.width * k) // 2


_PAL_KEYS = (PALETTE[:, 0].astype(np.int64) << 16) | (PALETTE[:, 1].astype(np.int64) << 8) \
    | PALETTE[:, 2].astype(np.int64)
_PAL_ORDER = np.argsort(_PAL_KEYS)


def palette_index(rgb: np.ndarray) -> np.ndarray:
    """The palette index of each pixel of an ``(..., 3)`` uint8 array (int16; ``-1`` where
    a pixel is not a palette colour)."""
    a = np.asarray(rgb, dtype=np.int64)
    key = (a[..., 0] << 16) | (a[..., 1] << 8) | a[..., 2]
    sorted_keys = _PAL_KEYS[_PAL_ORDER]
    pos = np.clip(np.searchsorted(sorted_keys, key), 0, len(sorted_keys) - 1)
    idx = _PAL_ORDER[pos].astype(np.int16)
    return np.where(sorted_keys[pos] == key, idx, np.int16(-1))


def canvas_of(frame: np.ndarray, layout: Layout) -> np.ndarray:
    """The ``(layout.height, layout.width)`` canvas of palette indices that a lossless frame
    (``(S, S, 3)``, ``S >= layout.lossless_size``) shows: what the renderer drew, recovered
    exactly (``-1`` for a pixel that is no palette colour)."""
    frame = np.asarray(frame)
    k, y0, x0 = frame_scale(layout, frame.shape[0])
    block = frame[y0:y0 + layout.height * k:k, x0:x0 + layout.width * k:k]
    return palette_index(block)
