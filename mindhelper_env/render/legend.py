"""The legend of the vision track's picture language: every glyph, pose, cell and icon of an
``obs_mode="rgb"`` frame, drawn by the sprites themselves, each with its name in words.

The frames hold no words (docs/vision.md); a reader of the frames (a person, a
vision-language model) needs to know what each mark means. :func:`render_legend` draws one
image of them all from :mod:`mindhelper_env.render.sprites`, so the legend always shows the
sprites the frames are drawn with: it iterates over what the module exposes (the person
kinds of ``KIND_COLORS``, the pose flags of ``POSES``, the keys of ``ACTION_GLYPHS`` and
``STATE_GLYPHS``, the classes of ``OBJECT_CLASSES``, ``FURNITURE_CLASSES`` and
``ROOM_CLASSES``), so a new glyph or pose appears in the legend without a change here. Known
names get a short description (:data:`ACTION_WORDS`, :data:`POSE_WORDS`,
:data:`STATE_WORDS`); a new one is shown under its key.

Sections, top to bottom: people (each kind standing and in each pose), action glyphs, state
cells and cell colours, a furniture row and door rows as the frames draw them (shortened),
the balloons of the talk row (walk to a person, give, tell, move), the id-mark digits, and
the object, furniture and room icons. Glyphs are drawn as in a frame (on the row background,
pure palette colours, no antialiasing) at ``scale`` pixels a canvas pixel; the words are
black, drawn without antialiasing by Pillow (imported only here, when a legend is drawn).

The legend is no observation: it holds words, and the agents that send it
(``direct-vlm:legend=true``, ``mindclaw-vlm:legend=true``) send it beside the frames as a
separate image (docs/vision.md, "Legend").

>>> from mindhelper_env.render.legend import render_legend
>>> img = render_legend(scale=2)  # doctest: +SKIP
>>> img.shape, img.dtype  # doctest: +SKIP
((..., ..., 3), dtype('uint8'))
"""

from __future__ import annotations

import functools
import os
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mindhelper_env.render import sprites as sp

__all__ = ["Legend", "build_legend", "render_legend", "write_legend", "legend_png",
           "ACTION_WORDS", "POSE_WORDS", "STATE_WORDS", "KIND_WORDS", "DEFAULT_SCALE"]

#: Canvas pixels to legend pixels (a glyph of 5 x 5 pixels is 20 x 20 at 4).
DEFAULT_SCALE = 4

#: What each action glyph means (keys of ``sprites.ACTION_GLYPHS``; a key missing here is
#: shown under its own name).
ACTION_WORDS: dict[str, str] = {
    "walk": "walk: arrived (at the row it went to)",
    "walk_on": "walk under way (entered a room)",
    "find": "find: arrived",
    "open": "open", "close": "close",
    "grab": "grab (take)",
    "putin": "put in a container",
    "putback": "put on a surface",
    "drop": "drop on the floor",
    "switchon": "switch on", "switchoff": "switch off",
    "sit": "sit down", "standup": "stand up",
    "give": "give (and a balloon)",
    "tell": "tell where (and a balloon)",
    "look": "look around (a struggle)",
    "stretch": "reach up (a struggle)",
    "stand": "stand at a shut container, hands full",
    "phone": "a phone call starts",
    "hangup": "hang up",
    "chore": "a chore starts (back turned)",
    "chore_done": "chore done",
    "move": "moved by no one seen (balloon)",
}
#: What each pose flag of ``sprites.POSES`` shows.
POSE_WORDS: dict[str, str] = {
    "sit": "sitting",
    "back": "back turned (chore)",
    "phone": "phone at the ear",
    "reach": "reaching up",
    "look": "looking around",
}
#: What each state-cell glyph means (keys of ``sprites.STATE_GLYPHS``).
STATE_WORDS: dict[str, str] = {
    "open": "container open: contents drawn in its slots",
    "closed": "container closed: slots brown, contents not drawn",
    "on": "switched on",
    "off": "switched off",
    "door_open": "door open",
    "door_closed": "door closed",
}
#: The person kinds (keys of ``sprites.KIND_COLORS``).
KIND_WORDS: dict[str, str] = {
    "adult": "adult", "child": "child", "wheelchair": "wheelchair user", "robot": "robot",
}

_WHITE = (255, 255, 255)
_MARGIN = 3  # legend pixels x scale around the content
_PAGE_W = 300  # the legend's width in canvas pixels (x scale)


def _words(key: str, table: dict[str, str]) -> str:
    return table.get(key) or key.replace("_", " ")


def _poses() -> tuple[str, ...]:
    """The pose flags ``person_sprite`` takes (``sprites.POSES``; else its keyword-only
    boolean parameters)."""
    poses = getattr(sp, "POSES", None)
    if poses:
        return tuple(poses)
    import inspect

    sig = inspect.signature(sp.person_sprite)
    return tuple(n for n, p in sig.parameters.items()
                 if p.kind is p.KEYWORD_ONLY and isinstance(p.default, bool))


# ----------------------------------------------------------------------------- words
class _Font:
    """Black words without antialiasing (every pixel black or the background)."""

    def __init__(self, px: int) -> None:
        try:
            from PIL import Image, ImageDraw, ImageFont
        except ImportError as err:  # pragma: no cover - depends on the installation
            raise ImportError("the legend's words need Pillow: pip install "
                              "'mindhelper-env[api]' (or pillow>=10.1)") from err
        self._Image, self._Draw = Image, ImageDraw
        try:
            self.font = ImageFont.load_default(size=px)
        except (TypeError, OSError, AttributeError):  # Pillow without FreeType
            self.font = ImageFont.load_default()
        box = self.font.getbbox("Ag|(")
        self.height = int(box[3]) + 2
        self._cache: dict[tuple[str, tuple[int, int, int]], np.ndarray] = {}
        self.char_w = max(1, -(-self.width("abcdefghij klmnopqrs") // 20))

    def width(self, text: str) -> int:
        return self.draw(text, _WHITE).shape[1]

    def draw(self, text: str, bg: tuple[int, int, int]) -> np.ndarray:
        """The words on ``bg``, cropped after their last pixel (without antialiasing the
        hinted glyphs run wider than ``getlength`` says)."""
        key = (text, bg)
        if key not in self._cache:
            wide = int(self.font.getlength(text) * 1.3) + 4 * self.height
            img = self._Image.new("RGB", (max(1, wide), self.height), bg)
            draw = self._Draw.Draw(img)
            draw.fontmode = "1"  # no antialiasing: pure black on the background
            draw.text((0, 0), text, fill=(0, 0, 0), font=self.font)
            a = np.asarray(img, dtype=np.uint8)
            ink = np.nonzero((a != np.asarray(bg, np.uint8)).any(axis=2).any(axis=0))[0]
            end = int(ink[-1]) + 2 if len(ink) else 1
            self._cache[key] = a[:, :end].copy()
        return self._cache[key]


# ----------------------------------------------------------------------------- tiles
def _rgb(canvas: np.ndarray) -> np.ndarray:
    return sp.PALETTE[canvas]


def _up(rgb: np.ndarray, k: int) -> np.ndarray:
    return np.repeat(np.repeat(rgb, k, axis=0), k, axis=1)


def _blit(canvas: np.ndarray, y: int, x: int, icon: np.ndarray) -> None:
    h, w = icon.shape
    np.copyto(canvas[y:y + h, x:x + w], icon, where=icon != 0)


def _tile(icon: np.ndarray, bg: int = sp.ROW_BG) -> np.ndarray:
    """A glyph on a row-background tile with a one-pixel margin (palette indices)."""
    h, w = icon.shape
    t = np.full((h + 2, w + 2), bg, dtype=np.uint8)
    _blit(t, 1, 1, icon)
    return t


def _mark_field(node: int, mark_w: int) -> np.ndarray:
    bits = sp.mark_bitmap(node)
    m = np.zeros((5, mark_w), dtype=bool)
    m[:, mark_w - bits.shape[1]:] = bits  # right-aligned, as in a frame
    return m


def _mark(canvas: np.ndarray, y: int, x: int, node: int, mark_w: int) -> None:
    m = _mark_field(node, mark_w)
    canvas[y:y + 5, x:x + mark_w][m] = sp.INK


def _sample_layout() -> sp.Layout:
    return sp.Layout(width=1, height=1, mark_w=sp.mark_width(2), panels=())


def _furniture_row() -> np.ndarray:
    """A furniture row as a frame draws it, shortened to two object slots and one person
    slot: an open fridge (12) holding an apple (31) and milk (33); an adult (5) at it who
    just grabbed, holding juice (34)."""
    lay = _sample_layout()
    n_obj = 2
    x_people = lay.x_objects + n_obj * lay.obj_slot_w + 1
    width = x_people + lay.person_slot_w + 1
    c = np.full((sp.ROW_H - 1, width), sp.ROW_BG, dtype=np.uint8)
    _blit(c, sp.ICON_DY, 1, sp.furniture_icon("fridge"))
    _mark(c, sp.ICON_DY, lay.x_mark, 12, lay.mark_w)
    _blit(c, sp.ICON_DY, lay.x_state, sp.STATE_GLYPHS["open"])
    x_obj = lay.x_objects
    c[:, x_obj - 1:x_obj + n_obj * lay.obj_slot_w - 1] = sp.OPEN_IN
    for k, (oid, cls) in enumerate(((31, "apple"), (33, "milk"))):
        ox = x_obj + k * lay.obj_slot_w
        _blit(c, sp.ICON_DY, ox, sp.object_icon(cls))
        _mark(c, sp.ICON_DY, ox + sp.ICON + 1, oid, lay.mark_w)
    parts = lay.person_parts()
    _blit(c, sp.ICON_DY, x_people + parts["action"], sp.ACTION_GLYPHS["grab"])
    _blit(c, sp.SPRITE_DY, x_people + parts["sprite"], sp.person_sprite("adult"))
    _mark(c, sp.ICON_DY, x_people + parts["mark"], 5, lay.mark_w)
    _blit(c, sp.ICON_DY, x_people + parts["held0"], sp.object_icon("juice"))
    _mark(c, sp.ICON_DY, x_people + parts["held0_mark"], 34, lay.mark_w)
    return c


def _door_row(state: str) -> np.ndarray:
    """A door row: door icon, door id (40), state cell, the room on the other side
    (a kitchen, 2)."""
    lay = _sample_layout()
    width = lay.x_objects + sp.ICON + 1 + lay.mark_w + 2
    c = np.full((sp.ROW_H - 1, width), sp.ROW_BG, dtype=np.uint8)
    _blit(c, sp.ICON_DY, 1, sp.DOOR_ICON)
    _mark(c, sp.ICON_DY, lay.x_mark, 40, lay.mark_w)
    _blit(c, sp.ICON_DY, lay.x_state, sp.STATE_GLYPHS[state])
    _blit(c, sp.ICON_DY, lay.x_objects, sp.room_icon("kitchen"))
    _mark(c, sp.ICON_DY, lay.x_objects + sp.ICON + 1, 2, lay.mark_w)
    return c


def _spill_row() -> np.ndarray:
    """Two spill slots (objects beyond their place's slots): a mug (36) on the kitchentable
    (14), a plate (37) in the cabinet (15)."""
    lay = _sample_layout()
    width = 1 + 2 * lay.spill_slot_w
    c = np.full((sp.ROW_H - 1, width), sp.ROW_BG, dtype=np.uint8)
    for k, (oid, cls, place) in enumerate(((36, "mug", 14), (37, "plate", 15))):
        ox = 1 + k * lay.spill_slot_w
        _blit(c, sp.ICON_DY, ox, sp.object_icon(cls))
        _mark(c, sp.ICON_DY, ox + sp.ICON + 1, oid, lay.mark_w)
        _mark(c, sp.ICON_DY, ox + sp.ICON + 1 + lay.mark_w + 1, place, lay.mark_w)
    return c


#: The balloons of the legend: (name, verb, actor, listener, (object id, class),
#: (place id, class, is a room), words).
_BALLOONS: tuple[tuple[str, str, int, int, tuple[int, str] | None,
                       tuple[int, str] | None, str], ...] = (
    ("walk-to", "walk", 5, 7, None, None, "walk to a person: walker 5, arrow, person 7"),
    ("give", "give", 1, 5, (31, "apple"), None,
     "give: giver 1, arrow, receiver 5, the object (apple 31)"),
    ("tell", "tell", 1, 5, (31, "apple"), (12, "fridge"),
     "tell: speaker 1, arrow, listener 5, the object (apple 31), the place (fridge 12)"),
    ("move", "move", -1, -1, (31, "apple"), (14, "kitchentable"),
     "move (by no one seen): the object (apple 31), its new place (kitchentable 14)"),
)


def _balloon(verb: str, actor: int, listener: int, obj: tuple[int, str] | None,
             place: tuple[int, str] | None) -> np.ndarray:
    """One balloon of the talk row, drawn as a frame draws it."""
    lay = _sample_layout()
    w = lay.balloon_w
    c = np.full((sp.ROW_H - 1, w + 2), sp.PANEL, dtype=np.uint8)
    x = 1
    c[0:sp.ROW_H - 1, x:x + w] = sp.BORDER
    c[1:sp.ROW_H - 2, x + 1:x + w - 1] = sp.BALLOON
    parts = lay.balloon_parts()
    _blit(c, 1, x + parts["verb"], sp.ACTION_GLYPHS[verb])
    if actor >= 0:
        _mark(c, 1, x + parts["actor"], actor, lay.mark_w)
    _blit(c, 1, x + parts["arrow"], sp.ARROW)
    if listener >= 0:
        _mark(c, 1, x + parts["listener"], listener, lay.mark_w)
    if obj is not None:
        _blit(c, 1, x + parts["object"], sp.object_icon(obj[1]))
        _mark(c, 1, x + parts["object_mark"], obj[0], lay.mark_w)
    if place is not None:
        _blit(c, 1, x + parts["place"], sp.furniture_icon(place[1]))
        _mark(c, 1, x + parts["place_mark"], place[0], lay.mark_w)
    return c


# ----------------------------------------------------------------------------- the sheet
@dataclass
class Legend:
    """A drawn legend: ``image`` (``(H, W, 3)`` uint8 RGB); ``tiles``: each entry's
    picture in palette indices at scale 1 (``"action:grab"``, ``"person:child:sit"``,
    ``"object:apple"``, ...); ``cells``: where each is drawn, ``(y, x, h, w)`` in legend
    pixels (``h, w``: the tile's shape times ``scale``, or twice ``scale`` for the people,
    the rows and the balloons); ``scale``; ``sprites_version``: the
    ``SPRITES_VERSION`` of the sprites it shows."""

    image: np.ndarray
    tiles: dict[str, np.ndarray] = field(default_factory=dict)
    cells: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    scale: int = DEFAULT_SCALE
    sprites_version: int = sp.SPRITES_VERSION


class _Sheet:
    """Places blocks top to bottom, in grids that flow left to right."""

    def __init__(self, scale: int, font: _Font) -> None:
        self.k = scale
        self.font = font
        self.width = _PAGE_W * scale
        self.pad = _MARGIN * scale
        self.y = self.pad
        self.items: list[tuple[int, int, np.ndarray]] = []
        self.legend = Legend(image=np.zeros((0, 0, 3), np.uint8), scale=scale)

    def text(self, words: str, *, gap: int = 0, indent: int = 0) -> None:
        chars = max(20, (self.width - 2 * self.pad - indent) // self.font.char_w)
        for line in textwrap.wrap(words, chars) or [""]:
            self.items.append((self.y, self.pad + indent, self.font.draw(line, _WHITE)))
            self.y += self.font.height
        self.y += gap

    def title(self, words: str) -> None:
        self.y += 2 * self.k
        self.text(words, gap=self.k)

    def _place_tile(self, key: str, tile: np.ndarray, y: int, x: int,
                    zoom: int = 1) -> tuple[int, int]:
        img = _up(_rgb(tile), self.k * zoom)
        self.items.append((y, x, img))
        self.legend.tiles[key] = tile
        self.legend.cells[key] = (y, x, img.shape[0], img.shape[1])
        return img.shape[0], img.shape[1]

    def grid(self, entries: Sequence[tuple[str, np.ndarray, str]], *,
             label_w: int | None = None) -> None:
        """``(key, tile, words)`` entries in columns: the tile, then its words."""
        if not entries:
            return
        gap = 2 * self.k
        tile_w = max(t.shape[1] for _, t, _ in entries) * self.k
        tile_h = max(t.shape[0] for _, t, _ in entries) * self.k
        words_w = label_w or max(self.font.width(w) for _, _, w in entries)
        cell_w = tile_w + gap + words_w + 3 * gap
        cols = max(1, (self.width - 2 * self.pad + 3 * gap) // cell_w)
        row_h = max(tile_h, self.font.height) + gap
        for i, (key, tile, words) in enumerate(entries):
            r, c = divmod(i, cols)
            y = self.y + r * row_h
            x = self.pad + c * cell_w
            self._place_tile(key, tile, y, x)
            ty = y + max(0, (tile.shape[0] * self.k - self.font.height) // 2)
            self.items.append((ty, x + tile_w + gap, self.font.draw(words, _WHITE)))
        self.y += -(-len(entries) // cols) * row_h

    def table(self, header: Sequence[str], rows: Sequence[tuple[str, Sequence[tuple[str,
              np.ndarray]]]]) -> None:
        """A table of tiles: a header of words, then rows of (words, tiles)."""
        gap, z = 2 * self.k, 2  # people at twice the scale
        first_w = max(self.font.width(r[0]) for r in rows) + gap
        tile_w = max(t.shape[1] for _, ts in rows for _, t in ts) * self.k * z
        tile_h = max(t.shape[0] for _, ts in rows for _, t in ts) * self.k * z
        col_w = max(tile_w, *(self.font.width(h) for h in header)) + 2 * gap
        for j, h in enumerate(header):
            self.items.append((self.y, self.pad + first_w + j * col_w,
                               self.font.draw(h, _WHITE)))
        self.y += self.font.height + self.k
        for words, tiles in rows:
            self.items.append((self.y + max(0, (tile_h - self.font.height) // 2), self.pad,
                               self.font.draw(words, _WHITE)))
            for j, (key, tile) in enumerate(tiles):
                self._place_tile(key, tile, self.y, self.pad + first_w + j * col_w, z)
            self.y += tile_h + gap

    def picture(self, key: str, tile: np.ndarray, words: str) -> None:
        """A wide tile at twice the scale, its words below it."""
        h, _ = self._place_tile(key, tile, self.y, self.pad, 2)
        self.y += h + self.k
        self.text(words, gap=2 * self.k)

    def finish(self) -> Legend:
        height = self.y + self.pad
        width = max([self.width] + [x + a.shape[1] + self.pad for _, x, a in self.items])
        img = np.full((height, width, 3), 255, dtype=np.uint8)
        for y, x, a in self.items:
            img[y:y + a.shape[0], x:x + a.shape[1]] = a
        self.legend.image = img
        return self.legend


def _check(scale: Any, kinds: Iterable[str] | None) -> tuple[int, tuple[str, ...]]:
    if isinstance(scale, bool) or not isinstance(scale, (int, np.integer)) \
            or not 1 <= int(scale) <= 16:
        raise ValueError(f"scale must be an int from 1 to 16, got {scale!r}")
    known = tuple(sp.KIND_COLORS)
    if kinds is None:
        return int(scale), known
    if isinstance(kinds, str):
        kinds = [k.strip() for k in kinds.split(",") if k.strip()]
    chosen = tuple(dict.fromkeys(kinds))
    bad = [k for k in chosen if k not in known]
    if bad or not chosen:
        raise ValueError(f"kinds must be some of {list(known)}, got {list(chosen)!r}")
    return int(scale), chosen


def build_legend(scale: int = DEFAULT_SCALE, *, kinds: Iterable[str] | None = None) -> Legend:
    """Draw the legend (see the module docstring) at ``scale`` legend pixels a canvas pixel
    (1 to 16), with the person ``kinds`` given (default: every kind of
    ``sprites.KIND_COLORS``). ``ImportError`` without Pillow (the words)."""
    k, kinds = _check(scale, kinds)
    font = _Font(max(10, 3 * k + 4))
    s = _Sheet(k, font)
    s.text(f"Legend of the vision track's frames (sprites version {sp.SPRITES_VERSION}). "
           "A frame is columns of room panels; each panel is a stack of rows: the room's "
           "floor rows (room icon and id, then objects on the floor and people at no "
           "furniture), one row per piece of furniture, one row per door, and a talk row of "
           "balloons. Every id in a frame is a number drawn in black digits.", gap=k)
    poses = _poses()
    s.title("People: the kind is the colour and shape; the pose shows what they are doing")
    header = ["standing", *(_words(p, POSE_WORDS) for p in poses)]
    rows = []
    for kind in kinds:
        tiles = [(f"person:{kind}:standing", _tile(sp.person_sprite(kind)))]
        tiles += [(f"person:{kind}:{p}", _tile(sp.person_sprite(kind, **{p: True})))
                  for p in poses]
        rows.append((_words(kind, KIND_WORDS), tiles))
    s.table(header, rows)
    s.text("Each pose adds a mark of its own colour to the standing sprite (picture 6): magenta "
           "face (back turned), cyan face (looking around), green right column (phone), lime "
           "left column (reaching up), dark red seat row (sitting).", gap=k)
    s.title("Action glyphs: left of a person's sprite, at the tick of what they did")
    s.grid([(f"action:{v}", _tile(g), _words(v, ACTION_WORDS))
            for v, g in sp.ACTION_GLYPHS.items()])
    s.title("State cells (after the id of a furniture or door row) and cell colours")
    cells = [(f"state:{n}", _tile(g), _words(n, STATE_WORDS))
             for n, g in sp.STATE_GLYPHS.items()]
    cells.append(("fill:closed", np.full((7, 7), sp.CLOSED, np.uint8),
                  "object slots of a closed container"))
    cells.append(("fill:unseen", np.full((7, 7), sp.UNSEEN, np.uint8),
                  "a room out of view (observability=room)"))
    s.grid(cells)
    s.title("Rows (shortened: a furniture row has 6 object slots and 4 person slots)")
    s.picture("row:furniture", _furniture_row(),
              "Furniture row: furniture icon (fridge), its id 12, state cell (open), object "
              "slots (apple 31, milk 33), then a person slot: action glyph (grab), sprite "
              "(adult), id 5, what they hold (juice 34; two hands).")
    s.picture("row:door_open", _door_row("door_open"),
              "Door row: door icon, door id 40, state cell (open), the room on the other "
              "side (kitchen icon, room id 2).")
    s.picture("row:door_closed", _door_row("door_closed"), "The same door, closed.")
    s.picture("row:spill", _spill_row(),
              "Spill panel (after the rooms): objects beyond their place's six slots, each "
              "object icon, object id, then the id of the place it is on or in (mug 36 on "
              "kitchentable 14, plate 37 in cabinet 15).")
    s.title("Balloons (the room's talk row): verb, actor id, arrow, the other person's id, "
            "object icon and id, place icon and id")
    for name, verb, actor, listener, obj, place, words in _BALLOONS:
        s.picture(f"balloon:{name}", _balloon(verb, actor, listener, obj, place), words)
    s.title("Id-mark digits (3 x 5 pixels, right-aligned in the row's id field)")
    s.grid([(f"digit:{d}", _tile(np.where(bits, sp.INK, 0).astype(np.uint8)), d)
            for d, bits in sp.DIGITS.items()])
    s.title("Object icons")
    s.grid([(f"object:{c}", _tile(sp.object_icon(c)), c) for c in sp.OBJECT_CLASSES])
    s.title("Furniture icons")
    s.grid([(f"furniture:{c}", _tile(sp.furniture_icon(c)), c)
            for c in sp.FURNITURE_CLASSES])
    s.grid([("door", _tile(sp.DOOR_ICON), "door")])
    s.title("Room icons")
    s.grid([(f"room:{c}", _tile(sp.room_icon(c)), c) for c in sp.ROOM_CLASSES])
    return s.finish()


@functools.lru_cache(maxsize=8)
def _cached(scale: int, kinds: tuple[str, ...]) -> Legend:
    legend = build_legend(scale, kinds=kinds)
    legend.image.setflags(write=False)
    return legend


def render_legend(scale: int = DEFAULT_SCALE, *, kinds: Iterable[str] | None = None
                  ) -> np.ndarray:
    """The legend image, ``(H, W, 3)`` uint8 RGB (read-only; cached per ``scale`` and
    ``kinds``): :func:`build_legend`'s ``image``."""
    k, chosen = _check(scale, kinds)
    return _cached(k, chosen).image


def legend_png(scale: int = DEFAULT_SCALE, *, kinds: Iterable[str] | None = None) -> bytes:
    """The legend as PNG bytes. Text chunks: ``sprites_version`` (the sprites it shows) and
    ``cells`` (JSON ``{entry: [y, x, h, w]}``, :attr:`Legend.cells`), so a check can find
    each entry's pixels in the file whatever font drew its words."""
    import io
    import json

    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    k, chosen = _check(scale, kinds)
    legend = _cached(k, chosen)
    meta = PngInfo()
    meta.add_text("Title", "MindHelper vision track legend")
    meta.add_text("sprites_version", str(legend.sprites_version))
    meta.add_text("cells", json.dumps(legend.cells, sort_keys=True, separators=(",", ":")))
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(legend.image)).save(buf, format="PNG", optimize=True,
                                                              pnginfo=meta)
    return buf.getvalue()


def write_legend(path: str | os.PathLike[str], scale: int = DEFAULT_SCALE, *,
                 kinds: Iterable[str] | None = None) -> Path:
    """Write the legend as a PNG file (folders made as needed); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(legend_png(scale, kinds=kinds))
    return out
