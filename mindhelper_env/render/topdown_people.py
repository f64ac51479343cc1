"""The people and the robot on a top-down frame (:mod:`mindhelper_env.render.topdown`):
where each figure stands (beside the furniture it is at, spread along the wall when several
share a spot) and where its label goes.

A label (the name, and ``+apple`` for what the character holds) sits beside its figure. It
never covers a figure or another person's label; it avoids the other labels (rooms,
furniture, objects) and, where the room leaves no such spot, covers one of them, which the
frame then leaves out (:meth:`TopDownRenderer.render`): a frame never shows two labels over
each other. Deterministic: every ordering is by node id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mindhelper_env.render import topdown_geometry as geo
from mindhelper_env.render import topdown_style as st
from mindhelper_env.render.topdown_style import CHARACTER_KINDS, ROBOT_COLOR

if TYPE_CHECKING:
    from mindhelper_env.world.world import World


@dataclass(slots=True)
class _Person:
    """A character on one frame: its figure and its label."""

    x: int
    y: int
    kind: str
    color: st.Color
    name: str
    box: st.Box  # the label's background box
    t_name: geo._Text
    t_held: geo._Text | None


class _People:
    """The character methods of :class:`~mindhelper_env.render.topdown.TopDownRenderer`
    (a mixin: it reads the renderer's sizes, fonts and text cache)."""

    size: int
    small: bool
    _fig_r: float
    _u: float
    _line_h: int
    _font_px: int
    _font_big_px: int
    _text: Any
    _ink: Any

    def _char_anchor(
        self, world: World, lay: geo._Layout, cid: int, placement: geo._ObjPlacement, depth: int = 0
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
                stacked = max(placement.extent.get(f.id, 0), geo._label_depth(f))
                gap = min(stacked, 2 * self._line_h) + r + 3
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

    def _place_people(
        self,
        world: World,
        lay: geo._Layout,
        placement: geo._ObjPlacement,
        held: Mapping[int, list[int]],
        actors: Mapping[int, tuple[str, str]],
        seen: frozenset[int] | None = None,
    ) -> list[_Person]:
        """Where each person and the robot stand and where their labels go (by id)."""
        chars = world.chars
        if seen is not None:
            chars = {c: st for c, st in chars.items() if st.room in seen}
        if not chars:
            return []
        r = self._fig_r
        bases: dict[int, tuple[tuple[float, float], tuple[int, int], Any]] = {}
        for cid in sorted(chars):
            if chars[cid].room is None:
                continue
            pos, inward, group = self._char_anchor(world, lay, cid, placement)
            bases[cid] = (pos, inward, (chars[cid].room, group, round(pos[0]), round(pos[1])))
        # spread characters that share a spot along the wall (deterministic: by id), then nudge
        # each one to the nearest spot that does not cover a label
        groups: dict[Any, list[int]] = {}
        for cid, (_, _, gk) in bases.items():
            groups.setdefault(gk, []).append(cid)
        wanted: dict[int, tuple[float, float, int, int]] = {}
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
                wanted[cid] = (x, y, ix, iy)
        sat = placement.sat
        positions: dict[int, tuple[int, int]] = {}
        figures: list[st.Box] = []
        # the static layer's labels and the objects: a person's label avoids them where it can
        placed = np.array([lb.box for lb in lay.room_labels] + [b for b, _ in placement.boxes]
                          + [f.label_box for f in lay.furniture.values() if f.label],
                          dtype=np.int64).reshape(-1, 4)
        ri = math.ceil(r)
        step = 1.3 * r
        for cid in sorted(wanted):
            x, y, ix, iy = wanted[cid]
            ax, ay = (1, 0) if ix == 0 else (0, 1)  # direction along the wall
            room_box = lay.interiors.get(chars[cid].room)  # type: ignore[arg-type]
            cands: list[st.Box] = []
            for da, di in st._NUDGES:
                cx = x + step * (da * ax + di * ix)
                cy = y + step * (da * ay + di * iy)
                if room_box is not None:
                    cx = min(max(cx, room_box[0] + ri + 1), room_box[2] - ri - 1)
                    cy = min(max(cy, room_box[1] + ri + 1), room_box[3] - ri - 1)
                cands.append((round(cx) - ri, round(cy) - ri, round(cx) + ri + 1,
                              round(cy) + ri + 1))
            bx, by = geo._best(sat, cands, avoid=figures)
            figures.append((bx, by, bx + 2 * ri + 1, by + 2 * ri + 1))
            positions[cid] = (bx + ri, by + ri)
        person_idx = {
            cid: k for k, cid in enumerate(c for c in sorted(chars) if not chars[c].robot)
        }
        styles: dict[int, tuple[str, str, st.Color]] = {}
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
                color = st._PERSON_COLORS[person_idx[cid] % len(st._PERSON_COLORS)]
            styles[cid] = (str(name), kind, color)
        people: list[_Person] = []
        others = list(figures)  # figures and the people's labels: never covered
        for cid in sorted(positions):
            x, y = positions[cid]
            name, kind, color = styles[cid]
            box, t_name, t_held = self._place_char_label(
                sat, x, y, name, held.get(cid, []), world,
                lay.interiors.get(chars[cid].room),  # type: ignore[arg-type]
                others, placed)
            others.append(box)
            people.append(_Person(x, y, kind, color, name, box, t_name, t_held))
        return people

    def _draw_people(self, draw: Any, img: Any, people: Sequence[_Person]) -> None:
        """The labels, then the figures (never hidden behind another's label)."""
        top_n, ih_n = self._ink(self._font_big_px)
        top_h, _ = self._ink(self._font_px)
        for p in people:
            lx, ly, rx, by = p.box
            draw.rectangle((lx, ly, rx - 1, by - 1), fill=st._LABEL_BG)
            img.paste(p.color, (lx + 1, ly + 1 - top_n), p.t_name.mask)
            if p.t_held is not None:
                img.paste(st._HELD_TEXT, (lx + 1, ly + 2 + ih_n - top_h), p.t_held.mask)
        for p in people:
            st._draw_figure(draw, p.x, p.y, p.kind, p.color, self._fig_r, self._u)

    def _place_char_label(
        self,
        sat: np.ndarray,
        x: int,
        y: int,
        name: str,
        held: list[int],
        world: World,
        bounds: st.Box | None,
        others: Sequence[st.Box],
        placed: Sequence[st.Box],
    ) -> tuple[st.Box, geo._Text, geo._Text | None]:
        """The box of a character's label (name, and what it holds) beside its figure at
        ``(x, y)``: over no figure nor another person's label (``others``) and, where the
        room allows, over no other label (``placed``); its name and held-items texts."""
        small = self.small
        t_name = self._text(name[:8] if small else name[:16], self._font_big_px)
        t_held = None
        if held:
            names = ",".join(st._display(st._OBJ_NAMES, world.graph.nodes[o].key, small) for o in held)
            t_held = self._text("+" + names, self._font_px)
        _, ih_n = self._ink(self._font_big_px)
        _, ih_h = self._ink(self._font_px)
        w = max(t_name.w, t_held.w if t_held else 0) + 2
        h = ih_n + 2 + (ih_h + 1 if t_held else 0)
        r = round(self._fig_r)
        cands: list[tuple[int, int]] = []
        for extra in (0, 2 * r, 4 * r):  # next to the figure, then farther out
            g = r + 2 + extra
            cands += [
                (x + g, y - h // 2),
                (x - g - w, y - h // 2),
                (x - w // 2, y + g),
                (x - w // 2, y - g - h),
                (x + g, y - h),
                (x - g - w, y - h),
                (x + g, y),
                (x - g - w, y),
            ]
        lx, ly = geo._best(sat, [(cx, cy, cx + w, cy + h) for cx, cy in cands],
                           bounds=bounds or (0, 0, self.size, self.size), avoid=others,
                           placed=placed)
        frame = (0, 0, self.size, self.size)
        if geo._hits((lx, ly, lx + w, ly + h), placed, others):  # search farther around
            lx, ly = geo._best_near(sat, (x, y), w, h, reach=8 * r, step=max(2, r - 1),
                                    bounds=bounds or frame, placed=placed, avoid=others)
        outside = lx < 0 or ly < 0 or lx + w > self.size or ly + h > self.size
        if outside or geo._hits((lx, ly, lx + w, ly + h), (), others):  # past its walls
            lx, ly = geo._best_near(sat, (x, y), w, h, reach=16 * r, step=max(2, r - 1),
                                    bounds=frame, placed=placed, avoid=others)
        return (lx, ly, lx + w, ly + h), t_name, t_held
