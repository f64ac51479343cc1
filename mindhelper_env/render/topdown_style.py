"""The look of the top-down frames (:mod:`mindhelper_env.render.topdown`): palette,
display names of rooms, furniture and objects, the character kinds, and Pillow's import."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["CHARACTER_KINDS", "ROBOT_COLOR", "actor_labels"]

log = logging.getLogger("mindhelper_env.render.topdown")

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
_UNSEEN = (150, 150, 150)  # rooms outside the viewer's sight
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
# A short name is a word of the class name or of the long name (``cabinet``, ``counter``), or
# its first letters ending in "." (``dishw.``): never squeezed consonants, which read as noise
# at 256 px. Furniture above :data:`_HIGH` gets "^", explained by a legend in the header.
_ROOM_NAMES: dict[str, tuple[str, str]] = {
    "kitchen": ("kitchen", "kitchen"),
    "livingroom": ("living", "living room"),
    "bedroom": ("bedroom", "bedroom"),
    "bathroom": ("bath", "bathroom"),
    "diningroom": ("dining", "dining room"),
    "homeoffice": ("office", "home office"),
    "office": ("office", "office"),
    "hallway": ("hall", "hallway"),
    "entrance": ("entrance", "entrance"),
}
_FURN_NAMES: dict[str, tuple[str, str]] = {
    "fridge": ("fridge", "fridge"),
    "kitchencabinet": ("cabinet", "kitchen cabinet"),
    "kitchencounter": ("counter", "counter"),
    "microwave": ("microw.", "microwave"),
    "dishwasher": ("dishw.", "dishwasher"),
    "kitchentable": ("table", "table"),
    "wallshelf": ("shelf", "wall shelf"),
    "sofa": ("sofa", "sofa"),
    "coffeetable": ("table", "coffee table"),
    "tvstand": ("tv stand", "tv stand"),
    "tv": ("tv", "tv"),
    "cabinet": ("cabinet", "cabinet"),
    "bookshelf": ("shelf", "bookshelf"),
    "bed": ("bed", "bed"),
    "nightstand": ("nightst.", "nightstand"),
    "closet": ("closet", "closet"),
    "desk": ("desk", "desk"),
    "chair": ("chair", "chair"),
    "bathroomcabinet": ("cabinet", "bath cabinet"),
    "bathroomcounter": ("sink", "sink"),
    "toilet": ("toilet", "toilet"),
    "computer": ("computer", "computer"),
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
    "glasses": ("glasses", "glasses"),
    "towel": ("towel", "towel"),
    "toothbrush": ("brush", "toothbrush"),
    "toothpaste": ("paste", "toothpaste"),
    "pillow": ("pillow", "pillow"),
    "folder": ("folder", "folder"),
    "magazine": ("mag.", "magazine"),
    "wallet": ("wallet", "wallet"),
}
_FURNITURE_CATEGORIES = frozenset({"furniture", "appliances", "electronics"})
_FURNITURE_PROPS = frozenset({"CONTAINERS", "SURFACES", "SITTABLE"})
_HIGH = 1.3  # metres: furniture centred above this is marked "^"
#: The header's explanation of the "^" mark (drawn when a label carries it).
HIGH_LEGEND = "^ = high up"
_ROOM_FALLBACK = 5.0  # metres: cell size for rooms without a bounding box
_MAX_TEXT_CACHE = 4096
_MAX_LAYOUTS = 16
#: Where a character may stand relative to its spot: (steps along the wall, steps into the room).
_NUDGES = ((0, 0), (1, 0), (-1, 0), (0, 1), (1, 1), (-1, 1), (2, 0), (-2, 0), (0, 2), (2, 1),
           (-2, 1), (1, 2), (-1, 2), (0, -1), (2, 2), (-2, 2), (3, 0), (-3, 0), (0, 3), (3, 1),
           (-3, 1), (1, 3), (-1, 3), (3, 2), (-3, 2), (2, 3), (-2, 3), (1, -1), (-1, -1))


def _require_pil() -> Any:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"TopDownRenderer needs Pillow; {_INSTALL_HINT}") from err
    return Image, ImageDraw, ImageFont


def _abbrev(key: str, limit: int) -> str:
    """A short deterministic abbreviation for class names without a table entry: the name,
    or its first ``limit - 1`` letters and "." (``kitchencounterdishwasher`` ->
    ``kitch.``)."""
    if len(key) <= limit:
        return key
    return key[:max(1, limit - 1)] + "."


def _display(table: Mapping[str, tuple[str, str]], key: str, small: bool) -> str:
    names = table.get(key)
    if names is not None:
        return names[0] if small else names[1]
    return _abbrev(key, 6 if small else 12)


def actor_labels(actors: Iterable[Any]) -> dict[int, tuple[str, str]]:
    """Build the ``actors`` argument of :meth:`TopDownRenderer.render` from actor objects.

    Accepts anything with ``.id``, ``.name`` and ``.kind`` attributes (e.g.
    :class:`mindhelper_env.actors.actor.Actor`).
    """
    return {int(a.id): (str(a.name), str(a.kind)) for a in actors}

def _to_array(img: Any) -> np.ndarray:
    """A fresh, writable ``uint8`` H x W x 3 copy of an RGB image.

    Streams Pillow's raw encoder straight into a new array: one allocation instead of the
    two (a ``bytes`` object, then the array) that ``np.array(img)`` makes, which matters for
    large frames. Falls back to ``np.array`` if Pillow's encoder API ever changes.
    """
    w, h = img.size
    try:
        from PIL import Image

        out = np.empty((h, w, 3), dtype=np.uint8)
        view = memoryview(out).cast("B")
        encoder = Image._getencoder("RGB", "raw", "RGB", ())
        encoder.setimage(img.im)
        bufsize = max(65536, w * 4)
        pos = 0
        while True:
            _, err, data = encoder.encode(bufsize)
            view[pos:pos + len(data)] = data
            pos += len(data)
            if err:
                break
        if err < 0 or pos != out.nbytes:
            raise RuntimeError(f"raw encoder error {err}")
        return out
    except (AttributeError, TypeError, ValueError, RuntimeError) as exc:
        log.debug("falling back to np.array for frame conversion: %s", exc)
        return np.array(img, dtype=np.uint8)


def _draw_figure(draw: Any, x: int, y: int, kind: str, color: Color, r: float, u: float) -> None:
    """A character's figure at ``(x, y)``: the robot, an adult, a child or a wheelchair user
    (``r``: the figure radius, ``u``: the size unit of the frame)."""
    edge = _FIGURE_EDGE
    if kind == "robot":
        s = r * 1.05
        draw.rectangle((x - s, y - s, x + s, y + s), fill=color, outline=edge)
        e = max(1.0, r * 0.28)
        draw.rectangle((x - s * 0.55, y - s * 0.45, x - s * 0.55 + e, y - s * 0.45 + e),
                       fill=(255, 255, 255))
        draw.rectangle((x + s * 0.55 - e, y - s * 0.45, x + s * 0.55, y - s * 0.45 + e),
                       fill=(255, 255, 255))
        draw.line((x, y - s, x, y - s - r * 0.5), fill=edge, width=max(1, round(u)))
        return
    if kind == "child":
        r *= 0.68
    head = r * 0.42
    if kind == "wheelchair":
        wr = r * 0.7
        wx, wy = x + r * 0.2, y + r * 0.35
        draw.ellipse((wx - wr, wy - wr, wx + wr, wy + wr), outline=edge,
                     width=max(1, round(1.2 * u)))
        draw.ellipse((x - r * 0.62, y - r * 0.35, x + r * 0.62, y + r * 0.55),
                     fill=color, outline=edge)
        draw.ellipse((x - head, y - r * 0.35 - 2 * head + 1, x + head, y - r * 0.35 + 1),
                     fill=color, outline=edge)
        return
    draw.ellipse((x - r * 0.62, y - r * 0.2, x + r * 0.62, y + r), fill=color, outline=edge)
    draw.ellipse((x - head, y - r * 0.2 - 2 * head + 1, x + head, y - r * 0.2 + 1),
                 fill=color, outline=edge)


def _figure_box(x: int, y: int, r: float) -> Box:
    """The pixels a character's figure at ``(x, y)`` takes (``r``: the figure radius)."""
    ri = math.ceil(r)
    return (x - ri, y - ri, x + ri + 1, y + ri + 1)
