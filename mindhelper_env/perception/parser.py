"""The pixel parser: frames + ``info["candidates"]`` -> the window's events and state.

:class:`PixelPerception` reads the vision track's frames (``obs_mode="rgb"``) with nothing
but the picture language of :mod:`mindhelper_env.render.sprites` (palette, bitmaps and the
layout, which is a pure function of the candidate lists) and the candidates' ids and
classes. It never sees the world.

Per frame it rebuilds the layout's canvas from the frame (the inverse of
:func:`~mindhelper_env.render.sprites.frame_scale`; exact when ``frame_size`` is at least the
layout's ``lossless_size``), converts it to palette indices, and reads each row: the state
cell (container open or closed, switch on or off, door open or closed), the object slots
(icon and id mark: what lies on or in the furniture, or on the room's floor), the person
slots (action glyph, sprite: kind and pose, id mark, held objects) and the talk row's
balloons (tell, give). Rows are decoded once per distinct picture (a cache keyed by the
row's pixels), so a frame where little changed costs little.

Events follow from one frame and the one before it: the action glyph in a person's slot is
the verb of what they did at that tick; its arguments are read from where the person is
drawn (the furniture row they stand at), from what left or entered their hands between the
two frames, and from the balloons. :data:`ARGS_FROM` says which for each verb.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mindhelper_env.perception.view import Perceived, SceneState
from mindhelper_env.render import sprites as sp

__all__ = ["PixelPerception", "PerceptionError", "FrameRead", "ARGS_FROM",
           "READS_SPRITES_VERSION", "MIN_FRAME_SIZE"]

#: A frame size that shows every v4 house without losing a pixel (the largest layout of the
#: released v4 suites is 690 px; a frame must be at least its episode's ``lossless_size``).
MIN_FRAME_SIZE = 768

#: The version of the picture language (:data:`~mindhelper_env.render.sprites.SPRITES_VERSION`)
#: this parser reads; a test fails when the sprites change without the parser.
READS_SPRITES_VERSION = 6

#: Where each verb's arguments come from (docs/vision.md, "The pixel parser").
ARGS_FROM: dict[str, str] = {
    "walk": "none for the walk-on glyph (a walk under way); for the walk glyph (arrived), "
            "the walk balloon's target (a person), else the furniture row the walker is "
            "drawn in",
    "find": "as walk (a find under way shows the walk-on glyph and reads as walk)",
    "grab": "the object that entered the actor's hands",
    "putin": "the object that left the actor's hands, and the row it is drawn in now (the "
             "actor's row when it is not drawn: the container was closed at the same tick)",
    "putback": "the object that left the actor's hands, and the row it is drawn in now",
    "drop": "the object that left the actor's hands",
    "give": "the give balloon (object, receiver)",
    "tell": "the tell balloon (listener, object, place)",
    "open": "the actor's furniture row; contents: the objects drawn in it now that nobody "
            "held on the frame before",
    "close": "the actor's furniture row",
    "sit": "the actor's furniture row", "look": "the actor's furniture row",
    "chore": "the actor's furniture row", "chore_done": "the actor's furniture row",
    "switchon": "the actor's furniture row", "switchoff": "the actor's furniture row",
    "stretch": "the actor's furniture row, twice",
    "stand": "the actor's furniture row, then the objects in the actor's hands",
    "standup": "none", "phone": "none", "hangup": "none",
    "move": "the move balloon (object, place; actor 0: moved by no one seen)",
}
#: The pixel rows of a layout row that hold icons, glyphs and marks; and person sprites.
_IC = slice(sp.ICON_DY, sp.ICON_DY + sp.ICON)
_SP = slice(sp.SPRITE_DY, sp.SPRITE_DY + 7)
#: Verbs whose only argument is the furniture the actor is drawn at.
_AT_ROW = frozenset({"open", "close", "sit", "look", "chore", "chore_done", "switchon",
                     "switchoff"})


class PerceptionError(ValueError):
    """Frames the parser cannot read at all (wrong shape, a frame smaller than the layout)."""


@dataclass
class _Person:
    row: int            # the room or furniture id of the row the person is drawn in
    room: int
    act: str | None
    kind: str
    pose: tuple[bool, ...]  # sprites.POSES flags
    held: tuple[int, ...]


@dataclass
class FrameRead:
    """What one frame shows: people, where every visible object is drawn, states, balloons
    (``(room, verb, actor, listener, object, place)``, ``-1`` for an empty cell)."""

    people: dict[int, _Person] = field(default_factory=dict)
    at: dict[int, int] = field(default_factory=dict)
    open: dict[int, bool] = field(default_factory=dict)
    switched: dict[int, bool] = field(default_factory=dict)
    doors: dict[int, bool] = field(default_factory=dict)
    balloons: list[tuple[int, str, int, int, int, int]] = field(default_factory=list)
    unreadable: int = 0


def _bg_key(cell: np.ndarray, bg: int) -> bytes:
    return np.where(cell == bg, 0, cell).astype(np.uint8).tobytes()


class _Tables:
    """Bitmap lookups shared by every episode (built once)."""

    def __init__(self) -> None:
        self.digits = {bm.astype(bool).tobytes(): d for d, bm in sp.DIGITS.items()}
        self.states = {g.tobytes(): name for name, g in sp.STATE_GLYPHS.items()}
        self.actions: dict[bytes, str] = {}
        for verb, g in sp.ACTION_GLYPHS.items():
            self.actions.setdefault((g != 0).tobytes(), verb)
        # the sprites of every picture (the default first): no sprite of one picture is a
        # sprite of another in a different pose, so frames of either picture read alike
        self.sprites: dict[bytes, tuple[str, tuple[bool, ...]]] = {}
        n = len(sp.POSES)
        for picture in sorted(sp.PICTURES, key=lambda p: p != sp.PICTURE):
            for kind in sp.KIND_COLORS:
                for bits in range(1 << n):
                    flags = tuple(bool(bits >> i & 1) for i in range(n))
                    s = sp.person_sprite(kind, picture=picture,
                                         **dict(zip(sp.POSES, flags, strict=True)))
                    self.sprites.setdefault(s.tobytes(), (kind, flags))


_TABLES: _Tables | None = None


def _tables() -> _Tables:
    global _TABLES
    if _TABLES is None:
        _TABLES = _Tables()
    return _TABLES


class _Episode:
    """The layout of one episode and the frame pixels that show each canvas pixel."""

    def __init__(self, info: Mapping[str, Any], size: int) -> None:
        cands = info.get("candidates") or {}
        rooms = cands.get("rooms") or []
        locations = cands.get("locations") or []
        doors = cands.get("doors") or info.get("doors") or []
        actors = cands.get("actors") or []
        objects = cands.get("objects") or []
        robot = info.get("robot") or {}
        self.robot_id = int(robot.get("id", 1)) if isinstance(robot, Mapping) else 1
        people = [int(a["id"]) for a in actors]
        if self.robot_id not in people:
            people.append(self.robot_id)
        self.layout = sp.build_layout(rooms, locations, doors,
                                      [*(int(o["id"]) for o in objects), *people],
                                      n_objects=len(objects))
        lay = self.layout
        if lay.lossless_size > size:
            raise PerceptionError(
                f"frames of {size} px cannot show this episode's {lay.width} x {lay.height} "
                f"layout without losing pixels: make the env with frame_size >= "
                f"{lay.lossless_size}")
        k, y0, x0 = sp.frame_scale(lay, size)
        #: the frame pixels that show the canvas (one per canvas pixel: views, no copy)
        self.rsel = slice(y0, y0 + lay.height * k, k)
        self.csel = slice(x0, x0 + lay.width * k, k)
        self.rooms = {int(r["id"]) for r in rooms}
        self.room_of = {row.node: panel.room for panel in lay.panels for row in panel.rows
                        if row.kind in ("room", "furniture")}
        self.furniture = {int(loc["id"]) for loc in locations}
        self.classes = {int(o["id"]): str(o["class"]) for o in objects}
        self.classes.update({int(loc["id"]): str(loc["class"]) for loc in locations})
        self.classes.update({int(r["id"]): str(r["class"]) for r in rooms})
        self.people = set(people)
        self.order = {pid: k for k, pid in enumerate([self.robot_id, *(int(a["id"]) for a in actors
                                                                       if int(a["id"]) != self.robot_id)])}
        self.names = {int(a["id"]): str(a.get("name", a["id"])) for a in actors}
        self.names.setdefault(self.robot_id, "Robot")
        self.cache: dict[tuple[int, int, bytes], Any] = {}
        #: the last frame's canvas and decoded rows (in layout order)
        self.prev_canvas: np.ndarray | None = None
        self.prev_rows: list[Any] = [None] * sum(len(p.rows) for p in self.layout.panels)
        self.columns = sorted({row.x for p in self.layout.panels for row in p.rows})
        #: slots per row (the layout's own counts where it has them)
        self.obj_slots = int(getattr(lay, "obj_slots", sp.OBJ_SLOTS))
        self.person_slots = int(getattr(lay, "person_slots", sp.PERSON_SLOTS))
        self.parts = lay.person_parts()
        self.balloon = lay.balloon_parts()


class PixelPerception:
    """The pixel-perception reference (see the module docstring).

    ``reset(frames, info)`` at the first observation of an episode, then
    ``observe(frames, info)`` once per window; each returns a
    :class:`~mindhelper_env.perception.view.Perceived` (the window's events, tick by tick, in
    the package's event schema, and the state the last frame shows).
    :func:`~mindhelper_env.perception.view.text_view` turns it into text mode's ``obs`` and
    ``info``. ``stats`` counts windows, frames and what could not be read.
    """

    def __init__(self) -> None:
        self.stats = {"windows": 0, "frames": 0, "unreadable": 0}
        self._ep: _Episode | None = None
        self._last: FrameRead | None = None
        self._tick = 0

    # ------------------------------------------------------------------ API
    def reset(self, frames: np.ndarray, info: Mapping[str, Any]) -> Perceived:
        """Start an episode from the reset observation (its frames all show the start)."""
        frames = self._check(frames)
        self._ep = _Episode(info, frames.shape[1])
        self._tick = int(info.get("tick", 0) or 0)
        read = self._read(frames[-1])
        self._last = read
        self.stats["windows"] += 1
        self.stats["unreadable"] += read.unreadable
        return Perceived(self._tick, [], self._state(read), read.unreadable)

    def observe(self, frames: np.ndarray, info: Mapping[str, Any]) -> Perceived:
        """The events and end state of one window. Frame ``k`` shows the world after tick
        ``start + k`` (``start``: the tick of the last observation); a window cut short
        repeats its last frame, and only the ticks that happened (``info["tick"] - start``)
        are read."""
        if self._ep is None or self._last is None:
            raise RuntimeError("PixelPerception.reset() must be called before observe()")
        frames = self._check(frames)
        tick = info.get("tick")
        if isinstance(tick, (int, np.integer)) and not isinstance(tick, bool):
            n = max(0, min(len(frames), int(tick) - self._tick))
        else:  # no tick to go by: every frame is a tick of its own
            n = len(frames)
        events: list[dict[str, Any]] = []
        unreadable = 0
        prev = self._last
        for k in range(n):
            read = self._read(frames[k])
            evs, bad = self._events(prev, read, self._tick + k)
            events.extend(evs)
            unreadable += read.unreadable + bad
            prev = read
        self._last = prev
        self._tick += n
        self.stats["windows"] += 1
        self.stats["unreadable"] += unreadable
        return Perceived(self._tick, events, self._state(prev), unreadable)

    # ------------------------------------------------------------------ frames
    @staticmethod
    def _check(frames: Any) -> np.ndarray:
        if not isinstance(frames, np.ndarray) or frames.dtype != np.uint8 or frames.ndim != 4 \
                or frames.shape[-1] != 3 or frames.shape[1] != frames.shape[2] or not len(frames):
            raise PerceptionError("expected the frames of obs_mode='rgb': a uint8 array "
                                  f"(ticks, S, S, 3), got {getattr(frames, 'shape', frames)!r}")
        return frames

    def _read(self, frame: np.ndarray) -> FrameRead:
        ep = self._ep
        assert ep is not None
        self.stats["frames"] += 1
        canvas_rgb = frame[ep.rsel, ep.csel]
        lay = ep.layout
        out = FrameRead()
        prev = ep.prev_canvas
        # the rows whose pixels changed since the last frame read are decoded again (from
        # the cache when the row showed the same picture before)
        # (h, w * 3): a view where the scale is 1 (a frame row holds a canvas row's RGB
        # bytes in a row); frames are not written to after they are returned, so the last
        # one is kept as it is
        canvas_rgb = canvas_rgb.reshape(canvas_rgb.shape[0], -1)
        changed: dict[int, list[bool]] | None = None
        if prev is not None:
            diff = canvas_rgb != prev
            # per column of panels: which canvas rows changed
            changed = {x: diff[:, 3 * x:3 * (x + lay.row_w)].any(axis=1).tolist()
                       for x in ep.columns}
        decoded = ep.prev_rows
        k = 0
        for panel in lay.panels:
            for row in panel.rows:
                y, x = row.y, row.x
                if changed is None or True in changed[x][y:y + sp.ROW_H - 1]:
                    band = canvas_rgb[y:y + sp.ROW_H - 1, 3 * x:3 * (x + lay.row_w)]
                    key = (y, x, band.tobytes())
                    got = ep.cache.get(key)
                    if got is None:
                        got = ep.cache[key] = self._row(row, sp.palette_index(band.reshape(
                            band.shape[0], -1, 3)))
                    decoded[k] = got
                self._merge(out, row, panel.room, decoded[k])
                k += 1
        ep.prev_canvas = canvas_rgb
        return out

    def _mark(self, cells: np.ndarray) -> int | None:
        """The id of a mark field (5 x mark_w palette indices), None when empty or unreadable
        (-2)."""
        ink = cells == sp.INK
        if not ink.any():
            return None
        digits = _tables().digits
        w = ink.shape[1]
        s = ""
        end = w
        while end >= 3:
            block = ink[:, end - 3:end]
            if not block.any():
                break
            d = digits.get(block.tobytes())
            if d is None:
                return -2
            s = d + s
            end -= 4
        if ink[:, :max(end, 0)].any() or not s:
            return -2
        return int(s)

    def _row(self, row: sp.Row, p: np.ndarray) -> tuple[Any, ...]:
        """Decode one row (palette indices, 7 x row_w): ``(state, objects, people,
        balloons, unreadable)``."""
        ep = self._ep
        assert ep is not None
        lay, t = ep.layout, _tables()
        bad = 0
        if row.kind == "talk":
            balloons = []
            bw, parts = lay.balloon_w, ep.balloon
            for k in range(sp.BALLOON_SLOTS):
                bx = k * (bw + 1)
                # the balloons fill the row from the left; the column after the verb glyph is
                # the balloon's own colour
                if p[sp.ICON_DY, bx + parts["verb"] + sp.ICON] != sp.BALLOON:
                    break
                verb = t.actions.get((p[_IC, bx + parts["verb"]:bx + parts["verb"] + 5]
                                      == sp.ACTION).tobytes())
                ids = []
                for name in ("actor", "listener", "object_mark", "place_mark"):
                    x = bx + parts[name]
                    m = self._mark(p[_IC, x:x + lay.mark_w])
                    ids.append(-1 if m is None else m)
                if verb is None or -2 in ids:
                    bad += 1
                    continue
                balloons.append((verb, *ids))
            return (None, (), (), tuple(balloons), bad)
        if row.kind == "spill":  # [object icon][object mark][place mark] per slot
            pairs = []
            for k in range(lay.spill_slots):
                ox = 1 + k * lay.spill_slot_w + sp.ICON + 1
                o = self._mark(p[_IC, ox:ox + lay.mark_w])
                if o is None:
                    break
                px = ox + lay.mark_w + 1
                place = self._mark(p[_IC, px:px + lay.mark_w])
                if o < 0 or place is None or place < 0:
                    bad += 1
                    continue
                pairs.append((o, place))
            return (None, tuple(pairs), (), (), bad)
        state = None
        if row.kind in ("furniture", "door"):
            cell = p[_IC, lay.x_state:lay.x_state + sp.ICON]
            if (cell != sp.ROW_BG).any():
                state = t.states.get(_bg_key(cell, sp.ROW_BG))
                if state is None:
                    bad += 1
        if row.kind == "door":
            return (state, (), (), (), bad)
        objects = self._objects(p, ep.obj_slots)
        bad += objects.count(-2)
        objects = [m for m in objects if m >= 0]
        people = []
        parts = lay.person_parts()
        for k in range(ep.person_slots):
            px = lay.x_people + k * lay.person_slot_w
            m = self._mark(p[_IC, px + parts["mark"]:px + parts["mark"] + lay.mark_w])
            if m is None:
                break
            sprite = t.sprites.get(_bg_key(p[_SP, px + parts["sprite"]:px + parts["sprite"] + 5],
                                           sp.ROW_BG))
            act_cell = p[_IC, px + parts["action"]:px + parts["action"] + sp.ICON]
            act = None
            if (act_cell == sp.ACTION).any():
                act = t.actions.get((act_cell == sp.ACTION).tobytes())
                if act is None:
                    bad += 1
            held = []
            for h in (0, 1):
                x = px + parts[f"held{h}_mark"]
                hm = self._mark(p[_IC, x:x + lay.mark_w])
                if hm is None:
                    break
                if hm < 0:
                    bad += 1
                    continue
                held.append(hm)
            if m < 0 or sprite is None:
                bad += 1
                continue
            people.append((m, act, sprite[0], sprite[1], tuple(held)))
        return (state, tuple(objects), tuple(people), (), bad)

    def _objects(self, p: np.ndarray, slots: int) -> list[int]:
        """The object marks of a row's object slots, from the left (-2: unreadable)."""
        ep = self._ep
        assert ep is not None
        lay = ep.layout
        out = []
        for k in range(slots):
            mx = lay.x_objects + k * lay.obj_slot_w + sp.ICON + 1
            m = self._mark(p[_IC, mx:mx + lay.mark_w])
            if m is None:
                break
            out.append(m)
        return out

    def _merge(self, out: FrameRead, row: sp.Row, room: int, got: tuple[Any, ...]) -> None:
        state, objects, people, balloons, bad = got
        out.unreadable += bad
        if row.kind == "talk":
            for b in balloons:
                out.balloons.append((row.other, *b))
            return
        if row.kind == "spill":
            for o, place in objects:
                out.at[o] = place
            return
        if row.kind == "door":
            if state in ("door_open", "door_closed"):
                out.doors[row.node] = state == "door_open"
            return
        if state in ("open", "closed"):
            out.open[row.node] = state == "open"
        elif state in ("on", "off"):
            out.switched[row.node] = state == "on"
        for o in objects:
            out.at[o] = row.node
        for pid, act, kind, pose, held in people:
            out.people[pid] = _Person(row.node, room, act, kind, pose, held)
            for h in held:
                out.at[h] = pid

    # ------------------------------------------------------------------ state and events
    def _state(self, read: FrameRead) -> SceneState:
        st = SceneState()
        for pid, p in read.people.items():
            st.rooms[pid] = p.room
            st.near[pid] = p.row if p.row != p.room else None
            st.holding[pid] = list(p.held)
            st.poses[pid] = "+".join(f for f, on in zip(sp.POSES, p.pose, strict=True)
                                     if on) or "stand"
            st.kinds[pid] = p.kind
        st.location = dict(read.at)
        st.open = dict(read.open)
        st.switched = dict(read.switched)
        st.doors = dict(read.doors)
        return st

    def _events(self, prev: FrameRead, cur: FrameRead, tick: int
                ) -> tuple[list[dict[str, Any]], int]:
        ep = self._ep
        assert ep is not None
        bad = 0
        out: list[tuple[int, dict[str, Any]]] = []
        by_actor: dict[tuple[str, int], tuple[int, ...]] = {}
        for room, verb, actor, listener, obj, place in cur.balloons:
            if verb == "tell":
                by_actor[("tell", actor)] = (room, listener, obj, place)
            elif verb == "give":
                by_actor[("give", actor)] = (room, listener, obj)
            elif verb in ("walk", "find"):  # a walk that ended at a person
                by_actor[("walk", actor)] = (room, listener)
        for pid, p in cur.people.items():
            verb = p.act
            if verb is None:
                continue
            before = prev.people.get(pid)
            held_before = set(before.held) if before is not None else set()
            at_row = p.row if p.row != p.room else None
            args: list[int] | None = []
            extra: dict[str, Any] = {}
            if verb == "walk_on":  # a walk under way: it entered a room, no target shown
                verb = "walk"
            elif verb in ("walk", "find"):  # arrived
                target = by_actor.get(("walk", pid))
                if target is not None:
                    args = [target[1]]
                elif at_row is not None:
                    args = [at_row]
                else:
                    args = None
            elif verb == "grab":
                new = [h for h in p.held if h not in held_before]
                args = new[:1] if len(new) == 1 else None
            elif verb in ("putin", "putback", "drop"):
                gone = [h for h in (before.held if before else ()) if h not in p.held]
                if len(gone) != 1:
                    args = None
                elif verb == "drop":
                    args = gone
                else:
                    # where it is drawn now; where it is not (someone closed the container at
                    # the same tick), the furniture the actor stands at
                    place = cur.at.get(gone[0], at_row)
                    args = None if place is None else [gone[0], place]
            elif verb == "give":
                b = by_actor.get(("give", pid))
                args = None if b is None else [b[2], b[1]]
            elif verb == "tell":
                b = by_actor.get(("tell", pid))
                args = None if b is None else [b[1], b[2], b[3]]
            elif verb in _AT_ROW:
                args = None if at_row is None else [at_row]
                if verb == "open" and at_row is not None:
                    # what it held when it opened: not what someone put in at the same tick
                    # (held by someone on the frame before)
                    held = {h for q in prev.people.values() for h in q.held}
                    extra["contents"] = sorted(o for o, r in cur.at.items()
                                               if r == at_row and o not in held)
            elif verb == "stretch":
                args = None if at_row is None else [at_row, at_row]
            elif verb == "stand":
                args = None if at_row is None else [at_row, *p.held]
            if args is None:
                bad += 1
                continue
            ev: dict[str, Any] = {
                "tick": tick, "actor": pid, "actor_name": ep.names.get(pid, str(pid)),
                "verb": verb,
                "args": [{"id": a, "class": self._class(a)} for a in args],
                "room": p.room,
            }
            if verb == "open":
                ev["contents"] = [{"id": o, "class": self._class(o)}
                                  for o in extra.get("contents", [])]
            out.append((ep.order.get(pid, len(ep.order)), ev))
        for room, verb, _actor, _listener, obj, place in cur.balloons:
            if verb == "move" and obj >= 0 and place >= 0:
                # an object moved by no one seen (actor 0; the background events of older
                # generators): before every actor's event, as the simulation orders them
                out.append((-1, {"tick": tick, "actor": 0, "actor_name": "Someone",
                                 "verb": "move",
                                 "args": [{"id": obj, "class": self._class(obj)},
                                          {"id": place, "class": self._class(place)}],
                                 "room": room}))
        out.sort(key=lambda x: x[0])
        return [ev for _, ev in out], bad

    def _class(self, node: int) -> str:
        ep = self._ep
        assert ep is not None
        if node in ep.people:
            return "character"
        return ep.classes.get(node, "?")
