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

Drawing is deterministic: no randomness, every ordering is by node id. Labels never cover one
another and stay inside the frame: a greedy placer tries fixed candidate positions, then a
grid around the thing labelled; a furniture or object label with no free spot is left out
(the object keeps its dot), and a person's label, which is always drawn, hides for that frame
the room, furniture or object label it cannot avoid (:mod:`mindhelper_env.render.topdown_people`).
``render(..., labels=[])`` lists the boxes of the labels drawn. Everything that does not change
during an episode (walls, room names, furniture outlines and labels, label occupancy) is drawn
once per house into a cached base image; each frame copies the base and draws the dynamic layer
on top. Text is rasterised once per string and pasted as a mask afterwards.

Pillow is imported lazily, so ``import mindhelper_env.render`` works without the ``video`` extra.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from PIL import ImageFont

    from mindhelper_env.world.world import World

from mindhelper_env.render import topdown_geometry as geo
from mindhelper_env.render import topdown_style as st
from mindhelper_env.render.topdown_people import _People
from mindhelper_env.render.topdown_style import CHARACTER_KINDS, ROBOT_COLOR, actor_labels

__all__ = ["TopDownRenderer", "actor_labels", "CHARACTER_KINDS", "ROBOT_COLOR"]

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------ renderer
class TopDownRenderer(_People):
    """Render a household :class:`~mindhelper_env.world.world.World` as a top-down floor plan.

    Parameters
    ----------
    size:
        width and height of the square frame in pixels (64-4096). Labels are abbreviated below
        384 pixels; below 192 pixels furniture and objects are drawn without labels.
    caption_lines:
        number of event lines in the caption strip. ``None`` (default) uses the height the
        floor plan leaves free: at least 3 lines below 384 pixels (4 above), at most 8.

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
        self.tiny = self.size < 192  # too small for furniture and object labels
        if caption_lines is not None and not 0 <= caption_lines <= 20:
            raise ValueError(f"caption_lines must be between 0 and 20, got {caption_lines}")
        self.caption_lines = None if caption_lines is None else int(caption_lines)
        u = self.size / 256.0
        self._u = u
        self._font_px = max(7, round(8 + 5 * (u - 1)))  # labels
        self._font_big_px = max(8, round(9 + 5 * (u - 1)))  # names, captions, title
        self._wall = max(1, round(2 * u))
        self._fig_r = max(3.0, 5.0 * u)
        self._fonts: dict[int, ImageFont.FreeTypeFont | ImageFont.ImageFont] = {}
        self._text_cache: dict[tuple[str, int], geo._Text] = {}
        self._glyphs: dict[tuple[str, int], geo._Glyph] = {}
        self._heights: dict[int, int] = {}
        self._inks: dict[int, tuple[int, int]] = {}
        self._layouts: OrderedDict[tuple[int, Hashable], geo._Layout] = OrderedDict()
        self._line_h = self._font_px + 2
        # the least room between two labels on one line, so that they never read as one word
        self._gap = max(2, round(2 * u))
        self._line_big = self._font_big_px + 3
        self._header_h = self._line_big + 2

    # -------------------------------------------------------------------------- public API
    def render(
        self,
        world: World,
        *,
        actors: Mapping[int, tuple[str, str]] | None = None,
        captions: Sequence[str] = (),
        title: str | None = None,
        cache_key: Hashable = None,
        rooms: Collection[int] | None = None,
        labels: list[geo.LabelBox] | None = None,
    ) -> np.ndarray:
        """Draw one frame of ``world``; returns a fresh ``uint8`` array of shape (size, size, 3).

        Parameters
        ----------
        world:
            the household to draw.
        actors:
            optional ``char_id -> (name, kind)`` with kind in ``adult``, ``child``,
            ``wheelchair``; characters not listed use their node's ``name`` and ``kind``
            extra keys (default: adult). Robots (``world.chars[i].robot``) are always drawn
            as the red robot. Raises ``ValueError`` for an unknown kind.
        captions:
            event lines of the window, oldest first; the newest ones that fit are shown.
        title:
            a short line drawn at the top (e.g. ``"tick 12-15 · window 3"``).
        cache_key:
            a per-episode token (e.g. the episode id or reset counter). The static layer is
            cached per ``(id(world.graph), cache_key)``; pass a new token whenever furniture
            may have changed for the same graph object.
        rooms:
            the rooms the viewer can see (e.g. the robot's own room with
            ``observability="room"``). Other rooms are greyed out and the people and objects
            in them are not drawn. ``None`` (default) shows the whole home.
        labels:
            a list to which every label of the frame is appended as a
            :class:`~mindhelper_env.render.topdown_geometry.LabelBox` (for tests and tools).
        """
        if isinstance(captions, str):
            raise TypeError("captions must be a sequence of strings, not a single string")
        _, ImageDraw, _ = st._require_pil()
        layout = self._layout(world, cache_key)
        img = layout.base.copy()
        draw = ImageDraw.Draw(img)
        seen = None if rooms is None else frozenset(rooms)
        placement, held = self._place_objects(world, layout, seen)
        people = self._place_people(world, layout, placement, held, actors or {}, seen)
        # a label under a person's label or figure is left out of this frame, never cut
        tops = [p.box for p in people] + [st._figure_box(p.x, p.y, self._fig_r) for p in people]
        static = layout.static_labels
        hidden = {static[i].box for i in np.flatnonzero(geo._covered(layout.static_boxes, tops))}
        for box in hidden:  # the static layer without that label
            img.paste(layout.clean.crop(box), box[:2])
        self._draw_doors(draw, world, layout)
        self._draw_furniture(draw, img, world, layout, hidden)
        shown = [lb for lb in static if lb.box not in hidden]
        under = geo._covered(placement.label_boxes, tops)
        for (dot, text, pos), (_, lb), cov in zip(placement.items, placement.boxes, under,
                                                  strict=True):
            draw.ellipse(dot, fill=st._OBJ_DOT, outline=st._OBJ_EDGE)
            if text is not None and lb is not None and not cov:
                img.paste(st._OBJ_TEXT, pos, text.mask)
                shown.append(lb)
        self._draw_people(draw, img, people)
        if labels is not None:
            labels += shown + [geo.LabelBox("person", p.name, p.box) for p in people]
        if seen is not None:
            for rid, box in layout.rooms.items():
                if rid not in seen:
                    draw.rectangle(box, fill=st._UNSEEN)
        room = self.size - 8
        if any(lb.kind == "furniture" and lb.text.endswith("^") for lb in shown):
            legend = self._text(st.HIGH_LEGEND, self._font_px)  # what "^" means, top right
            top, ih = self._ink(self._font_px)
            lx = self.size - 4 - legend.w
            ly = max(1, (self._header_h - ih) // 2 - top)
            img.paste(st._ROOM_TEXT, (lx, ly), legend.mask)
            room = lx - 4 - 8
            if labels is not None:
                labels.append(geo.LabelBox("legend", st.HIGH_LEGEND,
                                           (lx, ly + top, lx + legend.w, ly + top + ih)))
        if title:
            t = self._fit_text(str(title), self._font_big_px, max(room, 16))
            img.paste(st._HEADER_TEXT, (4, 1), t.mask)
            if labels is not None:
                top, ih = self._ink(self._font_big_px)
                labels.append(geo.LabelBox("title", str(title),
                                           (4, 1 + top, 4 + t.w, 1 + top + ih)))
        if layout.caption_lines:
            shown = self._draw_captions(img, captions, layout.caption_lines)
            labels is not None and labels.extend(shown)
        return st._to_array(img)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle only the settings: caches (fonts, glyphs, static layers) are rebuilt."""
        return {"size": self.size, "caption_lines": self.caption_lines}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["size"], caption_lines=state["caption_lines"])  # type: ignore[misc]

    def clear_cache(self) -> None:
        """Forget cached static layers and rasterised text."""
        self._layouts.clear()
        self._text_cache.clear()
        self._glyphs.clear()
        self._inks.clear()

    # -------------------------------------------------------------------------- text
    def _font(self, px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
        f = self._fonts.get(px)
        if f is None:
            _, _, ImageFont = st._require_pil()
            try:
                f = ImageFont.load_default(size=px)
            except TypeError:  # Pillow < 10.1: bitmap default font without sizes
                log.warning("Pillow < 10.1: using the fixed-size bitmap font; upgrade Pillow")
                f = ImageFont.load_default()
            self._fonts[px] = f
        return f

    def _glyph(self, ch: str, px: int) -> geo._Glyph:
        """One character rasterised once (FreeType is slow: ~15 us per glyph per call)."""
        key = (ch, px)
        g = self._glyphs.get(key)
        if g is not None:
            return g
        Image, ImageDraw, _ = st._require_pil()
        font = self._font(px)
        adv = float(font.getlength(ch))
        h = self._text_h(px)
        if ch.isspace():
            g = geo._Glyph(np.zeros((h, 0), dtype=np.uint8), adv, 0)
        else:
            pad = 2
            right = font.getbbox(ch)[2]
            w = max(1, math.ceil(max(right, adv))) + 2 * pad
            img = Image.new("L", (w, h), 0)
            ImageDraw.Draw(img).text((pad, 0), ch, fill=255, font=font)
            g = geo._Glyph(np.asarray(img, dtype=np.uint8).copy(), adv, -pad)
        if len(self._glyphs) >= st._MAX_TEXT_CACHE:
            self._glyphs.clear()
        self._glyphs[key] = g
        return g

    def _text_h(self, px: int) -> int:
        """Height of a text mask: the font's ascent plus descent."""
        h = self._heights.get(px)
        if h is None:
            font = self._font(px)
            try:
                ascent, descent = font.getmetrics()  # type: ignore[union-attr]
                h = int(ascent + descent)
            except AttributeError:  # bitmap font
                h = px + max(2, px // 4)
            self._heights[px] = h
        return h

    def _ink(self, px: int) -> tuple[int, int]:
        """``(top, height)`` of the rows that carry ink in a text mask (ascenders to
        descenders); layout boxes use these so that neighbouring labels can sit close."""
        ink = self._inks.get(px)
        if ink is None:
            a = np.asarray(self._text("Ahgjy|^(", px).mask)
            rows = np.flatnonzero(a.max(axis=1) > 40)
            ink = (int(rows[0]), int(rows[-1] - rows[0] + 1)) if rows.size else (0, a.shape[0])
            self._inks[px] = ink
        return ink

    def _advances(self, s: str, px: int) -> np.ndarray:
        """Pen position after each character of ``s`` (pixels)."""
        return np.cumsum([self._glyph(ch, px).adv for ch in s]) if s else np.zeros(0)

    def _text(self, s: str, px: int) -> geo._Text:
        """``s`` as a cached ``L`` mask, composed from cached glyphs (no kerning)."""
        key = (s, px)
        t = self._text_cache.get(key)
        if t is not None:
            return t
        Image, _, _ = st._require_pil()
        h = self._text_h(px)
        glyphs = [self._glyphs.get((ch, px)) or self._glyph(ch, px) for ch in s]
        w = max(1, math.ceil(sum(g.adv for g in glyphs)))
        margin = 2 + max((g.mask.shape[1] for g in glyphs), default=0)
        canvas = np.zeros((h, w + 2 * margin), dtype=np.uint8)
        maximum = np.maximum
        pen = float(margin)
        for g in glyphs:
            m = g.mask
            if m.shape[1]:
                x0 = round(pen) + g.left  # the margins keep every glyph inside the canvas
                sl = canvas[:, x0:x0 + m.shape[1]]
                maximum(sl, m, out=sl)
            pen += g.adv
        canvas = canvas[:, margin:margin + w]
        # a 2-D uint8 array becomes an "L" image
        t = geo._Text(Image.fromarray(np.ascontiguousarray(canvas)), w, h)
        if len(self._text_cache) >= st._MAX_TEXT_CACHE:
            self._text_cache.clear()
        self._text_cache[key] = t
        return t

    def _fit_text(self, s: str, px: int, max_w: int) -> geo._Text:
        """Rasterise ``s``, cut with ``...`` so that it is at most ``max_w`` pixels wide."""
        t = self._text(s, px)
        if t.w <= max_w or len(s) <= 1:
            return t
        ell = float(self._advances("...", px)[-1])
        pen = self._advances(s, px)
        n = int(np.searchsorted(pen, max_w - ell, side="right"))  # chars that fit
        return self._text(s[:n].rstrip() + "...", px)

    # -------------------------------------------------------------------------- static layer
    def _layout(self, world: World, cache_key: Hashable) -> geo._Layout:
        g = world.graph
        key = (id(g), cache_key)
        lay = self._layouts.get(key)
        if lay is not None and lay.graph is g and lay.n_nodes == len(g.nodes):
            self._layouts.move_to_end(key)
            return lay
        lay = self._build_layout(world)
        self._layouts[key] = lay
        self._layouts.move_to_end(key)
        while len(self._layouts) > st._MAX_LAYOUTS:
            self._layouts.popitem(last=False)
        return lay

    def _room_boxes(self, world: World) -> dict[int, tuple[float, float, float, float]]:
        """Room extents in metres ``(x0, z0, x1, z1)``; rooms without a box go on a grid."""
        boxes: dict[int, tuple[float, float, float, float]] = {}
        missing: list[int] = []
        for r in world.rooms:
            b = geo._xz_box(world.graph.nodes[r].bounding_box)
            if b is None or b[2] - b[0] <= 0 or b[3] - b[1] <= 0:
                missing.append(r)
            else:
                boxes[r] = b
        if missing:
            z_base = max((b[3] for b in boxes.values()), default=0.0)
            x_base = min((b[0] for b in boxes.values()), default=0.0)
            cols = max(1, math.ceil(math.sqrt(len(missing))))
            for i, r in enumerate(missing):
                x0 = x_base + (i % cols) * st._ROOM_FALLBACK
                z0 = z_base + (i // cols) * st._ROOM_FALLBACK
                boxes[r] = (x0, z0, x0 + st._ROOM_FALLBACK, z0 + st._ROOM_FALLBACK)
        return boxes

    def _build_layout(self, world: World) -> geo._Layout:
        Image, ImageDraw, _ = st._require_pil()
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
        span_x, span_z = max(mx1 - mx0, 1e-6), max(mz1 - mz0, 1e-6)
        pad = max(2, round(3 * self._u))
        ax0, ay0, ax1 = pad, self._header_h, S - pad
        n_cap = self.caption_lines
        if n_cap is None:  # give the caption strip whatever the floor plan does not need
            map_h = (ax1 - ax0) / span_x * span_z
            free = S - ay0 - pad - map_h - 4
            n_cap = min(8, max(3 if small else 4, int(free // self._line_big)))
        cap_h = n_cap * self._line_big + 4 if n_cap else 0
        ay1 = S - cap_h - pad
        scale = min((ax1 - ax0) / span_x, (ay1 - ay0) / span_z)
        ox = ax0 + ((ax1 - ax0) - scale * span_x) / 2 - scale * mx0
        oy = ay0 + ((ay1 - ay0) - scale * span_z) / 2 - scale * mz0

        def px(x: float, z: float) -> tuple[int, int]:
            return round(ox + scale * x), round(oy + scale * z)

        wall = self._wall
        rooms: dict[int, st.Box] = {}
        interiors: dict[int, st.Box] = {}
        for r, (x0, z0, x1, z1) in rooms_m.items():
            a, b = px(x0, z0)
            c, d = px(x1, z1)
            rooms[r] = (a, b, c, d)
            interiors[r] = (a + wall, b + wall, c - wall, d - wall)

        img = Image.new("RGB", (S, S), st._BG)
        draw = ImageDraw.Draw(img)
        occ = np.ones((S, S), dtype=bool)  # True = no room for a label
        for r in sorted(rooms):
            draw.rectangle(rooms[r], fill=st._ROOM_TINT.get(g.nodes[r].key, st._ROOM_TINT_DEFAULT))
            a, b, c, d = interiors[r]
            occ[max(b, 0):max(d, 0), max(a, 0):max(c, 0)] = False
        for r in sorted(rooms):
            draw.rectangle(rooms[r], outline=st._WALL, width=wall)

        # doors: a gap in the shared wall (closed doors get a bar per frame)
        doors: list[tuple[int, st.Box]] = []
        door_half = max(3, round(0.45 * scale))
        for did in sorted(world.doors):
            ra, rb = world.doors[did]
            if ra not in rooms_m or rb not in rooms_m:
                continue
            gap = geo._door_gap(rooms_m[ra], rooms_m[rb], g.nodes[did].bounding_box)
            if gap is None:
                continue
            (gx, gz), vertical = gap
            cx, cy = px(gx, gz)
            if vertical:  # the wall runs along z: the gap spans y
                box = (cx - wall - 1, cy - door_half, cx + wall, cy + door_half)
            else:
                box = (cx - door_half, cy - wall - 1, cx + door_half, cy + wall)
            draw.rectangle(box, fill=st._DOOR)
            doors.append((did, box))

        # furniture rectangles (metres -> pixels, kept inside the room, overlaps trimmed)
        furn_m = self._furniture_boxes(world, rooms_m)
        furniture: dict[int, geo._Furn] = {}
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
            container = "CAN_OPEN" in g.nodes[fid].properties
            inward = geo._inward(rect, interiors[room] if room in interiors else rect)
            furniture[fid] = geo._Furn(fid, room, rect, inward, container, None, None, False)
            if not container:
                draw.rectangle(rect, fill=st._FURN_FILL, outline=st._FURN_EDGE)
            geo._mark(occ, (a, b, c + 1, d + 1))

        clean = img.copy()  # the static layer before its labels
        # room names: the first free spot along the walls, scanning from the top-left corner
        room_labels: list[geo.LabelBox] = []
        txt = np.zeros((S, S), dtype=bool)  # True = a label is there (labels never overlap)
        for r in sorted(rooms):
            t = self._text(st._display(st._ROOM_NAMES, g.nodes[r].key, small).upper(), self._font_px)
            top, ih = self._ink(self._font_px)
            a, b, c, d = interiors[r]
            step = max(1, round(self._u))
            xs = list(range(a + 1, max(a + 2, c - t.w), step))
            cands = [(x, b + 1) for x in xs] + [(x, d - ih - 1) for x in xs]
            cands += [(a + 1, y) for y in range(b + 1, max(b + 2, d - ih), step)]
            x, y = geo._first_free(occ, cands, t.w, ih)
            img.paste(st._ROOM_TEXT, (x, y - top), t.mask)
            geo._mark(occ, (x, y, x + t.w, y + ih))
            geo._mark(txt, (x - self._gap, y, x + t.w + self._gap, y + ih))
            room_labels.append(geo.LabelBox("room", g.nodes[r].class_name, (x, y, x + t.w, y + ih)))

        # furniture labels: inside the rectangle when they fit, else next to it
        lh = self._line_h
        for fid in sorted(furniture):
            if self.tiny:
                break
            f = furniture[fid]
            node = g.nodes[fid]
            name = st._display(st._FURN_NAMES, node.key, small)
            height = node.height
            if height is not None and height > st._HIGH:
                name += "^"
            t = self._text(name, self._font_px)
            top, th = self._ink(self._font_px)
            a, b, c, d = f.rect
            x, y = (a + c - t.w) // 2 + 1, (b + d - th + 1) // 2
            inside = t.w <= (c - a) + 2 and th <= (d - b) + 1 and not txt[
                max(y, 0):y + th, max(x, 0):x + t.w].any()
            if not inside:
                pos = geo._place_near(occ, f.rect, t.w, th, f.inward, step=max(1, lh // 5),
                                      reach=2 * lh, text=txt,
                                      bounds=interiors.get(f.room))  # type: ignore[arg-type]
                if pos is None:  # no spot that leaves the other labels readable: unlabelled
                    continue
                x, y = pos
                geo._mark(occ, (x, y, x + t.w, y + th))
            geo._mark(txt, (x - self._gap, y, x + t.w + self._gap, y + th))
            f.label, f.label_pos, f.label_inside = t, (x, y - top), inside
            f.label_box, f.label_text = (x, y, x + t.w, y + th), name
        # labels that a container (redrawn every frame) could cover are drawn per frame too
        crects = [f.rect for f in furniture.values() if f.container]
        dynamic_labels: list[int] = []
        for fid in sorted(furniture):
            f = furniture[fid]
            if f.label is None or f.label_pos is None:
                continue
            lbox = f.label_box
            if f.container or any(geo._intersects(lbox, cr) for cr in crects):
                dynamic_labels.append(fid)
            else:
                img.paste(st._FURN_TEXT, f.label_pos, f.label.mask)

        objects = sorted(
            n.id for n in g.nodes.values()
            if "GRABBABLE" in n.properties and n.id not in world.chars
        )
        static = room_labels + [geo.LabelBox("furniture", f.label_text, f.label_box)
                                for f in furniture.values() if f.label]
        if n_cap:
            draw.rectangle((0, S - cap_h, S, S), fill=st._CAPTION_BG)
        log.debug("built top-down layout: %d rooms, %d furniture, %d objects",
                  len(rooms), len(furniture), len(objects))
        return geo._Layout(
            graph=g, n_nodes=len(g.nodes), base=img, occupancy=occ, scale=scale,
            origin=(ox, oy), rooms=rooms, interiors=interiors, furniture=furniture,
            containers=sorted(fid for fid, f in furniture.items() if f.container),
            doors=doors, objects=objects, caption_lines=n_cap, dynamic_labels=dynamic_labels,
            room_labels=room_labels, text=txt, clean=clean, static_labels=static,
            static_boxes=np.array([lb.box for lb in static], dtype=np.int64).reshape(-1, 4),
        )

    def _furniture_boxes(
        self, world: World, rooms_m: Mapping[int, tuple[float, float, float, float]]
    ) -> dict[int, tuple[int | None, tuple[float, float, float, float]]]:
        """Furniture footprints in metres, rotated to their wall when needed, inside the room."""
        g = world.graph
        out: dict[int, tuple[int | None, tuple[float, float, float, float]]] = {}
        no_box: dict[int, list[int]] = {}
        for n in g.nodes.values():
            if not geo._is_furniture(n, world):
                continue
            room = world.room_of(n.id)
            box = geo._xz_box(n.bounding_box)
            if box is None or room not in rooms_m:
                if room in rooms_m:
                    no_box.setdefault(room, []).append(n.id)
                continue
            rb = rooms_m[room]
            box = geo._fit_in_room(box, rb)
            out[n.id] = (room, box)
        # furniture without a bounding box: evenly around the room's walls, by id
        for room, ids in no_box.items():
            x0, z0, x1, z1 = rooms_m[room]
            for k, fid in enumerate(sorted(ids)):
                per = 2 * ((x1 - x0) + (z1 - z0))
                # start mid-way along the top wall so that no piece lands in a corner
                d = ((k + 0.5) / len(ids) * per + (x1 - x0) / 2) % per
                m = 0.5
                if d < x1 - x0:
                    cx, cz = x0 + d, z0 + m
                elif d < (x1 - x0) + (z1 - z0):
                    cx, cz = x1 - m, z0 + d - (x1 - x0)
                elif d < 2 * (x1 - x0) + (z1 - z0):
                    cx, cz = x1 - (d - (x1 - x0) - (z1 - z0)), z1 - m
                else:
                    cx, cz = x0 + m, z1 - (d - 2 * (x1 - x0) - (z1 - z0))
                box = (cx - 0.3, cz - 0.3, cx + 0.3, cz + 0.3)
                out[fid] = (room, geo._fit_in_room(box, rooms_m[room]))
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
                        changed |= geo._separate(boxes[p], boxes[q])
                if not changed:
                    break
            for fid in ids:
                b = boxes[fid]
                out[fid] = (out[fid][0], (b[0], b[1], b[2], b[3]))
        return out

    # -------------------------------------------------------------------------- dynamic layer
    def _draw_doors(self, draw: Any, world: World, lay: geo._Layout) -> None:
        nodes = world.graph.nodes
        for did, box in lay.doors:
            if "CLOSED" in nodes[did].states:
                draw.rectangle(box, fill=st._DOOR_CLOSED)

    def _draw_furniture(self, draw: Any, img: Any, world: World, lay: geo._Layout,
                        hidden: Collection[st.Box] = ()) -> None:
        """Containers in their current state, then every furniture label on top (but those
        whose boxes are ``hidden``)."""
        nodes = world.graph.nodes
        lid = max(1, round(1.5 * self._u))
        closed_ids: set[int] = set()
        for fid in lay.containers:
            f = lay.furniture[fid]
            a, b, c, d = f.rect
            if "OPEN" not in nodes[fid].states:
                closed_ids.add(fid)
                draw.rectangle(f.rect, fill=st._BOX_CLOSED, outline=st._BOX_CLOSED_EDGE)
                ix, iy = f.inward  # lid bar along the side facing the room
                if ix > 0:
                    bar = (c - lid + 1, b, c, d)
                elif ix < 0:
                    bar = (a, b, a + lid - 1, d)
                elif iy < 0:
                    bar = (a, b, c, b + lid - 1)
                else:
                    bar = (a, d - lid + 1, c, d)
                draw.rectangle(bar, fill=st._BOX_CLOSED_EDGE)
            else:
                draw.rectangle(f.rect, fill=st._BOX_OPEN_FILL, outline=st._BOX_OPEN_EDGE,
                               width=max(1, round(self._u)))
        for fid in lay.dynamic_labels:
            f = lay.furniture[fid]
            if f.label_box in hidden:
                continue
            inside_closed = f.label_inside and fid in closed_ids
            img.paste(st._BOX_CLOSED_TEXT if inside_closed else st._FURN_TEXT, f.label_pos,
                      f.label.mask)

    def _place_objects(
        self, world: World, lay: geo._Layout, seen: frozenset[int] | None = None
    ) -> tuple[geo._ObjPlacement, dict[int, list[int]]]:
        """Where the visible objects go (cached per configuration) and who holds what."""
        held: dict[int, list[int]] = {}
        config: list[tuple[int, int]] = []
        chars = world.chars
        for obj in lay.objects:
            if seen is not None and world.room_of(obj) not in seen:
                continue
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
            if len(lay.placements) > 16:
                lay.placements.popitem(last=False)
        return pl, held

    def _compute_placement(
        self, world: World, lay: geo._Layout, config: list[tuple[int, int]]
    ) -> geo._ObjPlacement:
        occ = lay.occupancy.copy()
        txt = lay.text.copy() if lay.text is not None else np.zeros_like(occ)
        g = world.graph
        small = self.small
        dot_r = max(2, round(2 * self._u))
        lh = self._line_h
        groups: dict[int, list[int]] = {}
        for anchor, obj in config:
            groups.setdefault(anchor, []).append(obj)
        items: list[tuple[st.Box, geo._Text | None, tuple[int, int]]] = []
        boxes: list[tuple[st.Box, geo.LabelBox | None]] = []
        extent: dict[int, int] = {}
        for anchor in sorted(groups):
            f = lay.furniture.get(anchor)
            bounds: st.Box | None = None
            if f is not None:
                rect, inward = f.rect, f.inward
                bounds = lay.interiors.get(f.room)  # type: ignore[arg-type]
            else:  # on the floor (or on something not drawn): around the room's centre
                room = world.room_of(anchor)
                box = lay.interiors.get(room) if room is not None else None
                if box is None:
                    continue
                mx, my = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2 + 2 * lh
                rect, inward, bounds = (mx - 1, my - 1, mx + 1, my + 1), (0, 1), box
            far = 0
            for obj in sorted(groups[anchor]):
                top, th = self._ink(self._font_px)
                if self.tiny:  # dots only
                    t = None
                    w, h = 2 * dot_r + 1, 2 * dot_r + 1
                else:
                    t = self._text(st._display(st._OBJ_NAMES, g.nodes[obj].key, small), self._font_px)
                    w, h = 2 * dot_r + 2 + t.w, max(th, 2 * dot_r)
                pos = geo._place_near(occ, rect, w, h, inward, step=max(1, lh // 5),
                                      reach=3 * lh, bounds=bounds, text=txt)
                if pos is None:  # no room for its name beside the other labels: the dot only
                    t, w, h = None, 2 * dot_r + 1, 2 * dot_r + 1
                    pos = geo._place_near(occ, rect, w, h, inward, step=max(1, lh // 5),
                                          reach=3 * lh, bounds=bounds, text=txt) or geo._place_near(
                        occ, rect, w, h, inward, step=max(1, lh // 5), reach=3 * lh, bounds=bounds)
                x, y = pos  # type: ignore[misc]
                geo._mark(occ, (x, y, x + w, y + h))
                geo._mark(txt, (x - self._gap, y, x + w + self._gap, y + h))
                cy = y + h // 2
                items.append(((x, cy - dot_r, x + 2 * dot_r, cy + dot_r), t,
                              (x + 2 * dot_r + 2, y + (h - th) // 2 - top)))
                ty = y + (h - th) // 2
                boxes.append(((x, y, x + w, y + h), None if t is None else geo.LabelBox(
                    "object", g.nodes[obj].class_name, (x + 2 * dot_r + 2, ty, x + w, ty + th))))
                if f is not None:
                    far = max(far, geo._depth_along(rect, inward, (x, y, x + w, y + h)))
            if f is not None:
                extent[anchor] = far
        label_boxes = np.array([lb.box if lb else (0, 0, 0, 0) for _, lb in boxes],
                               dtype=np.int64).reshape(-1, 4)
        return geo._ObjPlacement(items, geo._sat(occ), extent, boxes, label_boxes)

    def _draw_captions(self, img: Any, captions: Sequence[str], n: int) -> list[geo.LabelBox]:
        lines = [str(c) for c in captions]
        shown: list[tuple[str, st.Color]]
        if len(lines) > n:
            hidden = len(lines) - (n - 1)
            shown = [(f"(+{hidden} earlier)", st._CAPTION_DIM)] if n > 1 else []
            shown += [(s, st._CAPTION_TEXT) for s in lines[len(lines) - (n - 1 if n > 1 else 1):]]
        else:
            shown = [(s, st._CAPTION_TEXT) for s in lines]
        top = self.size - n * self._line_big - 2
        ink, ih = self._ink(self._font_big_px)
        out = []
        for i, (s, color) in enumerate(shown):
            t = self._fit_text(s.replace("\n", " "), self._font_big_px, self.size - 8)
            img.paste(color, (4, top + i * self._line_big), t.mask)
            y = top + i * self._line_big + ink
            out.append(geo.LabelBox("caption", s, (4, y, 4 + t.w, y + ih)))
        return out
