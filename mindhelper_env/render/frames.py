"""The frames of the vision track (``obs_mode="rgb"``): a schematic, word-free picture of
the household drawn with the sprites and layout of :mod:`mindhelper_env.render.sprites`.

:class:`FrameRenderer` builds an episode's layout and its static layer once
(:meth:`~FrameRenderer.begin`), then draws each tick (:meth:`~FrameRenderer.frame`) by
redrawing only the rows whose content changed, on a canvas of palette indices, and turning
the changed bands into RGB with one table lookup. No text is rasterised: the only glyphs are
the id marks, pre-drawn bitmaps of :data:`~mindhelper_env.render.sprites.DIGITS`
(:meth:`FrameRenderer.draw_mark` draws every one of them, so a test can hook it).

What is drawn is what the narration can say, no more: objects inside a closed container are
not drawn (the slot area shows the closed lid), rooms the robot does not see
(``observability="room"``) are greyed out with no people, objects or container states, and
the action glyphs and balloons show only the events the robot sees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mindhelper_env.render import sprites as sp
from mindhelper_env.world.world import Event, World

__all__ = ["FrameRenderer", "HIGH_FURNITURE", "visible_state"]

#: Furniture whose top or inside is above a child's head: taking from it is reaching up (the
#: narration's "reached up and took").
HIGH_FURNITURE = frozenset({"wallshelf", "kitchencabinet", "bathroomcabinet"})

_PAL = np.concatenate([sp.PALETTE, sp.PALETTE[sp.VOID][None]], axis=0)  # index -1: margin


def visible_state(world: World, objects: Mapping[int, str], rooms: Iterable[int],
                  people: Iterable[int]) -> dict[str, Any]:
    """What a frame shows of the world (for tests and parsers' checks): ``at`` (object id
    -> the furniture or room row it is drawn in), ``held`` (person -> held object ids),
    ``people`` (person id -> row node)."""
    room_set = set(rooms)
    held = {c: world.held_by(c) for c in people if world.chars[c].room in room_set}
    at = {}
    for o in objects:
        r = world.room_of(o)
        if r not in room_set or world.holder(o) is not None or world.is_hidden(o):
            continue
        at[o] = world.anchor(o)
    return {"at": at, "held": held}


class FrameRenderer:
    """Draws the ``size`` x ``size`` RGB frames of one episode at a time.

    Call :meth:`begin` at every reset (it builds the layout from the episode's public
    lists), then :meth:`frame` after every tick. The object is not thread-safe; each env
    owns one. ``stats["overflow"]`` counts, at each redraw of a row, the items that found
    no free slot in it (an overflowing item is not drawn; none in the v4 dev suites with
    the robot silent)."""

    def __init__(self, size: int, *, picture: int = sp.PICTURE) -> None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 16:
            raise ValueError(f"size must be an int >= 16, got {size!r}")
        self.size = int(size)
        #: the picture drawn (:data:`~mindhelper_env.render.sprites.PICTURES`; 5: 0.8.0's)
        self.picture = sp.check_picture(picture)
        self.stats = {"overflow": 0, "frames": 0, "rows_drawn": 0}
        self.layout: sp.Layout | None = None
        self._marks: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ episode
    def begin(self, world: World, *, rooms: Sequence[Mapping[str, Any]],
              locations: Sequence[Mapping[str, Any]], doors: Sequence[Mapping[str, Any]],
              objects: Mapping[int, str], people: Mapping[int, str]) -> None:
        """Start an episode: ``rooms``, ``locations``, ``doors`` as in ``info["candidates"]``,
        ``objects`` ``{id: class}`` (every grabbable object), ``people`` ``{id: kind}`` (the
        robot's kind is ``"robot"``)."""
        lay = sp.build_layout(rooms, locations, doors, [*objects, *people],
                              n_objects=len(objects))
        self.layout = lay
        self._world = world
        self._objects = dict(sorted(objects.items()))
        self._people = dict(sorted(people.items()))
        self._cls: dict[int, str] = {**{int(r["id"]): str(r["class"]) for r in rooms},
                                     **{int(f["id"]): str(f["class"]) for f in locations}}
        self._room_ids = {int(r["id"]) for r in rooms}
        self._furn_keys = {int(f["id"]): world.graph.nodes[int(f["id"])].key
                           for f in locations if int(f["id"]) in world.graph.nodes}
        self._row_room = {row.node: panel.room for panel in lay.panels for row in panel.rows
                          if row.kind in ("room", "furniture")}
        self._busy: dict[int, set[str]] = {p: set() for p in people}  # "phone", "back"
        self._marks = {}
        canvas = np.full((lay.height + 1, lay.width + 1), sp.VOID, dtype=np.uint8)
        canvas[-1, :] = sp.VOID
        canvas[:, -1] = sp.VOID
        for panel in lay.panels:
            x0, y0, x1, y1 = panel.box
            canvas[y0:y1, x0:x1] = sp.BORDER
            for row in panel.rows:
                self._static_row(canvas, row)
        self._static = canvas
        self._canvas = canvas.copy()
        rows, cols = sp.frame_map(lay, self.size)
        self._rows = rows
        self._cols = cols
        # the frame rows showing each canvas band (bands are rows of the layout)
        self._bands: dict[int, slice] = {}
        for panel in lay.panels:
            for row in panel.rows:
                hit = np.nonzero((rows >= row.y) & (rows < row.y + sp.ROW_H))[0]
                self._bands[row.y] = slice(int(hit[0]), int(hit[-1]) + 1) if len(hit) else \
                    slice(0, 0)
        self._rgb = _PAL[canvas[rows][:, cols]]
        self._keys: dict[tuple[str, int], Any] = {}
        self._rows_by_key: dict[tuple[str, int], list[sp.Row]] = {}
        for panel in lay.panels:
            for row in panel.rows:
                sk = (("r" if row.kind in ("room", "furniture") else row.kind[0]),
                      row.node if row.kind != "talk" else row.other)
                self._rows_by_key.setdefault(sk, []).append(row)
        self._all_keys = frozenset(self._rows_by_key)
        self._sig: Any = None
        self._base: dict[tuple[str, int], Any] = {}
        self._last_dynamic: set[tuple[str, int]] = set()

    def _mark(self, node: int) -> np.ndarray:
        m = self._marks.get(node)
        if m is None:
            assert self.layout is not None
            bits = sp.mark_bitmap(node)
            m = np.zeros((5, self.layout.mark_w), dtype=bool)
            m[:, self.layout.mark_w - bits.shape[1]:] = bits  # right-aligned
            self._marks[node] = m
        return m

    def draw_mark(self, canvas: np.ndarray, y: int, x: int, node: int) -> None:
        """Draw the id mark of ``node`` with its field's top-left pixel at ``(y, x)``: the
        only glyphs a frame holds."""
        m = self._mark(node)
        canvas[y:y + 5, x:x + m.shape[1]][m] = sp.INK

    @staticmethod
    def _blit(canvas: np.ndarray, y: int, x: int, icon: np.ndarray) -> None:
        h, w = icon.shape
        region = canvas[y:y + h, x:x + w]
        np.copyto(region, icon, where=icon != 0)

    def _static_row(self, canvas: np.ndarray, row: sp.Row) -> None:
        lay = self.layout
        assert lay is not None
        y, x = row.y, row.x
        canvas[y:y + sp.ROW_H - 1, x:x + lay.row_w] = sp.ROW_BG if row.kind != "talk" \
            else sp.PANEL
        if row.kind in ("talk", "spill") or (row.kind == "room" and row.other > 0):
            return
        icon = (sp.room_icon(row.cls) if row.kind == "room" else sp.DOOR_ICON
                if row.kind == "door" else sp.furniture_icon(row.cls))
        self._blit(canvas, y + 1, x + 1, icon)
        self.draw_mark(canvas, y + 1, x + lay.x_mark, row.node)
        if row.kind == "door":
            ox = x + lay.x_objects
            self._blit(canvas, y + 1, ox, sp.room_icon(self._cls.get(row.other, "")))
            self.draw_mark(canvas, y + 1, ox + sp.ICON + 1, row.other)

    # ------------------------------------------------------------------ frames
    def frame(self, world: World, events: Sequence[Event], seen: Sequence[Event],
              rooms: Iterable[int] | None = None, *, out: np.ndarray | None = None
              ) -> np.ndarray:
        """The RGB frame (a new ``(size, size, 3)`` uint8 array, or ``out`` filled) of the
        world after a tick.
        ``events``: every event of the tick (they keep calls and chores going: a person on
        the phone is drawn so until they hang up); ``seen``: the events the robot saw (their
        action glyphs and balloons are drawn); ``rooms``: the rooms in view (None: all)."""
        lay = self.layout
        if lay is None:
            raise RuntimeError("FrameRenderer.begin() must be called before frame()")
        for ev in events:
            busy = self._busy.get(ev.actor)
            if busy is None:
                continue
            v = ev.verb
            if v == "phone":
                busy.add("phone")
            elif v == "hangup":
                busy.discard("phone")
            elif v == "chore":
                busy.add("back")
            elif v == "chore_done":
                busy.discard("back")
        if rooms is None:
            in_view, view_key = self._room_ids, None
        else:
            in_view = set(rooms) & self._room_ids
            view_key = tuple(sorted(in_view))
        sig = (world.version, world.states_version, view_key)
        if sig != self._sig:  # where objects are, or what is open, or the view changed
            self._sig = sig
            self._base = self._static_content(world, in_view)
            check = self._all_keys
        else:
            check = self._last_dynamic
        people, balloons = self._dynamic(world, seen, in_view)
        dynamic = set(people) | {("t", r) for r in balloons}
        check = set(check) | dynamic
        self._last_dynamic = dynamic
        base = self._base
        canvas = self._canvas
        redraw = []
        for sk in check:
            kind = sk[0]
            if kind == "r":
                key = (*base[sk], people.get(sk, ()))
            elif kind in ("d", "s"):
                key = base[sk]
            else:
                key = (sk[1] in in_view, tuple(balloons.get(sk[1], ())))
            if self._keys.get(sk) == key:
                continue
            self._keys[sk] = key
            for row in self._rows_by_key[sk]:
                self._draw_row(canvas, row, key)
                redraw.append(row.y)
        for y in sorted(set(redraw)):
            band = self._bands[y]
            if band.stop > band.start:
                self._rgb[band] = _PAL[canvas[self._rows[band]][:, self._cols]]
        self.stats["frames"] += 1
        if out is not None:
            np.copyto(out, self._rgb)
            return out
        return self._rgb.copy()

    def _static_content(self, world: World, in_view: set[int]) -> dict[tuple[str, int], Any]:
        """Per row key: ``(in view, state, objects)`` for furniture and room rows, the state
        glyph for door rows; depends only on the world's versions and the view."""
        lay = self.layout
        assert lay is not None
        nodes = world.graph.nodes
        out: dict[tuple[str, int], Any] = {}
        objs: dict[int, list[int]] = {}
        for o in self._objects:
            if o not in nodes or world.holder(o) is not None:
                continue
            r = world.room_of(o)
            if r not in in_view or world.is_hidden(o):
                continue
            a = world.anchor(o)
            if a not in lay.row_of:
                a = r
            if a in lay.row_of:
                objs.setdefault(a, []).append(o)
        spill: list[tuple[int, int]] = []  # (object, place) beyond the place's own slots
        for nid, row in lay.row_of.items():
            cap = lay.obj_slots * (sp.FLOOR_ROWS if row.kind == "room" else 1)
            got = objs.get(nid, [])
            if len(got) > cap:
                objs[nid] = got[:cap]
                spill.extend((o, nid) for o in got[cap:])
        per = lay.spill_slots
        for k, row in enumerate(lay.spill):
            out[("s", row.node)] = tuple(spill[k * per:(k + 1) * per])
        self.stats["overflow"] += max(0, len(spill) - per * len(lay.spill))
        for nid, row in lay.row_of.items():
            vis = self._row_room[nid] in in_view
            st = None
            if vis and row.kind == "furniture":
                n = nodes.get(nid)
                if n is not None:
                    if "CAN_OPEN" in n.properties:
                        st = "open" if "OPEN" in n.states else "closed"
                    elif "HAS_SWITCH" in n.properties:
                        st = "on" if "ON" in n.states else "off"
            out[("r", nid)] = (vis, st, tuple(objs.get(nid, ())))
        for did in lay.door_rows:
            n = nodes.get(did)
            out[("d", did)] = ("door_closed" if n is not None and "CLOSED" in n.states
                               else "door_open")
        return out

    def _dynamic(self, world: World, seen: Sequence[Event], in_view: set[int]
                 ) -> tuple[dict[tuple[str, int], tuple[Any, ...]], dict[int, list[Any]]]:
        """The people of each row key (in slot order) and the balloons of each room."""
        lay = self.layout
        assert lay is not None
        nodes = world.graph.nodes
        chars = world.chars
        acts: dict[int, str] = {}
        flags: dict[int, set[str]] = {}
        balloons: dict[int, list[tuple[Any, ...]]] = {}
        for ev in seen:
            v = ev.verb
            a = ev.actor
            if v in ("tell", "give", "move"):
                args = list(ev.args)
                if v == "tell" and len(args) >= 3:
                    b: tuple[Any, ...] | None = (v, a, args[0], args[1], args[2])
                elif v == "give" and len(args) >= 2:
                    b = (v, a, args[1], args[0], -1)
                elif v == "move" and len(args) >= 2:
                    b = (v, -1, -1, args[0], args[1])
                else:
                    b = None
                if b is not None and ev.room in self._room_ids:
                    balloons.setdefault(ev.room, []).append(b)
            if v in ("walk", "find") and ev.done and ev.args and ev.args[0] in self._people \
                    and ev.room in self._room_ids:  # a walk that ended at a person
                balloons.setdefault(ev.room, []).append((v, a, ev.args[0], -1, -1))
            if a in self._people and v in sp.ACTION_GLYPHS:
                if v in ("walk", "find"):
                    if a in acts:
                        continue  # another verb of the same tick says more
                    if not ev.done:
                        v = "walk_on"  # entered a room on the way: no target shown
                acts[a] = v
                f = flags.setdefault(a, set())
                if v == "stretch":
                    f.add("reach")
                elif v == "look":
                    f.add("look")
                elif v == "grab" and ev.source is not None \
                        and self._furn_keys.get(ev.source[1]) in HIGH_FURNITURE:
                    f.add("reach")
        people: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        for p, kind in self._people.items():
            c = chars.get(p)
            if c is None or c.room not in in_view:
                continue
            target = c.sitting_on if c.sitting_on is not None else c.near
            row_node = c.room
            if target is not None:
                a = world.anchor(target) if target in nodes else target
                if a in chars and a != p:
                    other = chars[a]
                    a = other.sitting_on if other.sitting_on is not None else other.near
                    a = world.anchor(a) if a is not None and a in nodes else a
                if a in lay.row_of and self._row_room[a] == c.room:
                    row_node = a
            busy = self._busy.get(p, set())
            f = flags.get(p, set())
            held = tuple((h, self._objects.get(h, nodes[h].class_name if h in nodes else ""))
                         for h in world.held_by(p)[:2])
            people.setdefault(("r", row_node), []).append(
                (p, kind, acts.get(p), c.sitting_on is not None, "back" in busy,
                 "phone" in busy, "reach" in f, "look" in f, held))
        return {k: tuple(v) for k, v in people.items()}, balloons

    def _draw_row(self, canvas: np.ndarray, row: sp.Row, key: Any) -> None:
        lay = self.layout
        assert lay is not None
        self.stats["rows_drawn"] += 1
        y, x = row.y, row.x
        canvas[y:y + sp.ROW_H, x:x + lay.row_w] = self._static[y:y + sp.ROW_H, x:x + lay.row_w]
        if row.kind == "door":
            self._blit(canvas, y + 1, x + lay.x_state, sp.STATE_GLYPHS[key])
            return
        if row.kind == "spill":  # [object icon][object mark][place mark] per slot
            for k, (o, place) in enumerate(key):
                ox = x + 1 + k * lay.spill_slot_w
                self._blit(canvas, y + 1, ox, sp.object_icon(self._objects[o]))
                self.draw_mark(canvas, y + 1, ox + sp.ICON + 1, o)
                self.draw_mark(canvas, y + 1, ox + sp.ICON + 1 + lay.mark_w + 1, place)
            return
        if row.kind == "talk":
            vis, balloons = key
            if not vis:
                canvas[y:y + sp.ROW_H - 1, x:x + lay.row_w] = sp.UNSEEN
                return
            for k, b in enumerate(balloons):
                if k >= sp.BALLOON_SLOTS:
                    self.stats["overflow"] += 1
                    break
                self._balloon(canvas, y, x + k * (lay.balloon_w + 1), b)
            return
        vis, state, objs, people = key
        x_obj = x + lay.x_objects
        if row.kind == "room":  # floor row k: the k-th group of floor objects and people
            k = row.other
            last = k == sp.FLOOR_ROWS - 1
            objs = objs[k * lay.obj_slots:None if last else (k + 1) * lay.obj_slots]
            people = people[k * lay.person_slots:None if last else (k + 1) * lay.person_slots]
        if not vis:
            canvas[y:y + sp.ROW_H - 1, x + lay.x_state:x + lay.row_w] = sp.UNSEEN
            return
        if state is not None:
            self._blit(canvas, y + 1, x + lay.x_state, sp.STATE_GLYPHS[state])
            area = sp.CLOSED if state == "closed" else sp.OPEN_IN if state == "open" else None
            if area is not None:
                canvas[y:y + sp.ROW_H - 1, x_obj - 1:x_obj + lay.obj_slots * lay.obj_slot_w - 1] \
                    = area
        for k, o in enumerate(objs):
            if k >= lay.obj_slots:
                self.stats["overflow"] += len(objs) - k
                break
            ox = x_obj + k * lay.obj_slot_w
            self._blit(canvas, y + 1, ox, sp.object_icon(self._objects[o]))
            self.draw_mark(canvas, y + 1, ox + sp.ICON + 1, o)
        parts = lay.person_parts()
        for k, (p, kind, act, sit, back, phone, reach, look, held) in enumerate(people):
            if k >= lay.person_slots:
                self.stats["overflow"] += len(people) - k
                break
            px = x + lay.x_people + k * lay.person_slot_w
            if act is not None:
                self._blit(canvas, y + 1, px + parts["action"], sp.ACTION_GLYPHS[act])
            self._blit(canvas, y, px + parts["sprite"],
                       _sprite(self.picture, kind, sit, back, phone, reach, look))
            self.draw_mark(canvas, y + 1, px + parts["mark"], p)
            for h, (obj, cls) in enumerate(held):
                hx = px + parts[f"held{h}"]
                self._blit(canvas, y + 1, hx, sp.object_icon(cls))
                self.draw_mark(canvas, y + 1, px + parts[f"held{h}_mark"], obj)

    def _balloon(self, canvas: np.ndarray, y: int, x: int, b: tuple[Any, ...]) -> None:
        lay = self.layout
        assert lay is not None
        verb, actor, listener, obj, place = b
        w = lay.balloon_w
        canvas[y:y + sp.ROW_H - 1, x:x + w] = sp.BORDER  # the balloon outline
        canvas[y + 1:y + sp.ROW_H - 2, x + 1:x + w - 1] = sp.BALLOON
        parts = lay.balloon_parts()
        self._blit(canvas, y + 1, x + parts["verb"], sp.ACTION_GLYPHS[verb])
        if actor >= 0:
            self.draw_mark(canvas, y + 1, x + parts["actor"], actor)
        self._blit(canvas, y + 1, x + parts["arrow"], sp.ARROW)
        if listener >= 0:
            self.draw_mark(canvas, y + 1, x + parts["listener"], listener)
        if obj >= 0:
            self._blit(canvas, y + 1, x + parts["object"],
                       sp.object_icon(self._objects.get(obj, "")))
            self.draw_mark(canvas, y + 1, x + parts["object_mark"], obj)
        if place >= 0:
            cls = self._cls.get(place)
            icon = sp.room_icon(cls) if place in self._room_ids else sp.furniture_icon(cls or "")
            self._blit(canvas, y + 1, x + parts["place"], icon)
            self.draw_mark(canvas, y + 1, x + parts["place_mark"], place)


_SPRITES: dict[tuple[Any, ...], np.ndarray] = {}


def _sprite(picture: int, kind: str, *flags: bool) -> np.ndarray:
    s = _SPRITES.get((picture, kind, *flags))
    if s is None:
        s = _SPRITES[(picture, kind, *flags)] = sp.person_sprite(
            kind, picture=picture, **dict(zip(sp.POSES, flags, strict=True)))
    return s
