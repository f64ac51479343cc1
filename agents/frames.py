"""Frames for agents that watch: the window's frames of an ``rgb`` observation, contact
sheets, and the id lists a prompt gives next to the pictures.

In ``obs_mode="rgb"`` an observation is a ``uint8`` array ``(window_ticks, S, S, 3)``: frame
*k* is the home after tick *k* of the window (docs/vision.md). :func:`window_frames` returns
them as a list of ``S x S x 3`` frames; :func:`contact_sheet` tiles them into one image
(row-major, oldest top left, frames separated by a ``gap``-pixel white line) for models or
budgets that take one image a request. :data:`FRAME_MODES` are the two ways model-backed
agents send a window: ``"all"`` (one image part per frame) and ``"sheet"`` (one contact
sheet). :func:`id_lists` writes ``info["candidates"]`` of the rgb track (ids, names and
classes only) as the two text blocks of a prompt. :func:`legend_image` is the picture
legend (:mod:`mindhelper_env.render.legend`) an agent sends before the frames with
``legend=True``, and :data:`LEGEND_INTRO` the sentence that introduces it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["FRAME_MODES", "is_rgb_observation", "window_frames", "contact_sheet",
           "frame_parts", "id_lists", "legend_image", "LEGEND_INTRO"]

#: How a window's frames go to a model: one image per frame, or one contact sheet.
FRAME_MODES = ("all", "sheet")


#: How a prompt introduces the legend, the first picture of a request that sends it.
LEGEND_INTRO = ("The first picture is the legend of the picture language: every glyph, pose, "
                "cell and icon of the frames with its name in words; it is not part of the "
                "home. ")


def legend_image(legend: Any, scale: int = 3) -> np.ndarray | None:
    """The legend image an agent sends before a request's frames (``legend=True``), or
    ``None`` (``legend=False``); ValueError for a ``legend`` that is not a boolean or a
    ``scale`` out of 1 to 16. Drawn once per process and scale (Pillow draws its words)."""
    if not isinstance(legend, (bool, np.bool_)):
        raise ValueError(f"legend must be true or false, got {legend!r}")
    if not legend:
        return None
    from mindhelper_env.render.legend import render_legend

    return render_legend(scale)


def is_rgb_observation(observation: Any) -> bool:
    """True for an observation of the ``rgb`` track (frames, no text)."""
    return isinstance(observation, np.ndarray) and observation.ndim in (3, 4) \
        and observation.shape[-1] == 3


def window_frames(observation: Any) -> list[np.ndarray]:
    """The frames of an ``rgb`` observation (one ``H x W x 3`` frame, or a ``(T, H, W, 3)``
    window), oldest first; ValueError for anything else."""
    arr = np.asarray(observation)
    if arr.dtype != np.uint8 or arr.ndim not in (3, 4) or arr.shape[-1] != 3:
        raise ValueError(f"an rgb observation is a uint8 (ticks, H, W, 3) array, got dtype "
                         f"{arr.dtype} and shape {arr.shape}")
    frames = [arr] if arr.ndim == 3 else list(arr)
    return [np.ascontiguousarray(f) for f in frames]


def contact_sheet(frames: list[np.ndarray], gap: int = 2) -> np.ndarray:
    """One image of ``frames`` on a grid of ``ceil(sqrt(n))`` columns, row-major, with
    ``gap`` white pixels between them (and none around); unused cells stay white."""
    if not frames:
        raise ValueError("a contact sheet needs at least one frame")
    h, w = frames[0].shape[:2]
    if any(f.shape != frames[0].shape for f in frames):
        raise ValueError("the frames of a contact sheet must share one shape")
    cols = math.ceil(math.sqrt(len(frames)))
    rows = math.ceil(len(frames) / cols)
    sheet = np.full((rows * h + (rows - 1) * gap, cols * w + (cols - 1) * gap, 3), 255,
                    dtype=np.uint8)
    for i, frame in enumerate(frames):
        r, c = divmod(i, cols)
        sheet[r * (h + gap): r * (h + gap) + h, c * (w + gap): c * (w + gap) + w] = frame
    return sheet


def frame_parts(observation: Any, mode: str = "all") -> tuple[list[np.ndarray], str]:
    """The image parts of a window and the sentence that introduces them in a prompt."""
    if mode not in FRAME_MODES:
        raise ValueError(f"frames must be one of {FRAME_MODES}, got {mode!r}")
    frames = window_frames(observation)
    if mode == "sheet" and len(frames) > 1:
        cols = math.ceil(math.sqrt(len(frames)))
        return [contact_sheet(frames)], (
            f"The picture below shows the {len(frames)} ticks of this window on one sheet, "
            f"{cols} per row, left to right and top to bottom, oldest first.")
    n = len(frames)
    return frames, (f"The {n} pictures below show the {n} ticks of this window, oldest first."
                    if n > 1 else "The picture below shows this window.")


def _rows(c: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [d for d in c.get(key) or [] if isinstance(d, Mapping) and "id" in d]


def id_lists(info: Mapping[str, Any]) -> tuple[str, str]:
    """``(places, things)``: the rooms, furniture and doors, then the people, the objects and
    the robot, from ``info["candidates"]`` (ids, names and classes: what the rgb track's
    ``info`` holds; any state a text-track ``info`` adds is left out)."""
    c = info.get("candidates") or {}
    rooms = {r["id"]: str(r.get("class", "?")) for r in _rows(c, "rooms")}
    places = ["Rooms: " + ", ".join(f"<{cls}> ({i})" for i, cls in rooms.items())]
    places.append("Furniture:")
    places += [f"- <{loc.get('class', '?')}> ({loc['id']}) in the "
               f"{rooms.get(loc.get('room'), '?')}" for loc in _rows(c, "locations")]
    doors = _rows(c, "doors") or [d for d in info.get("doors") or []
                                  if isinstance(d, Mapping) and "id" in d]
    if doors:
        places.append("Doors: " + ", ".join(
            f"({d['id']}) between the " + " and the ".join(rooms.get(r, "?")
                                                             for r in d.get("rooms") or [])
            for d in doors))
    things = ["People (use <character> (id)):"]
    things += [f"- {a.get('name', '?')} ({a['id']}), {a.get('kind', 'adult')}"
               for a in _rows(c, "actors")]
    things.append("Objects: " + ", ".join(f"<{o.get('class', '?')}> ({o['id']})"
                                          for o in _rows(c, "objects")))
    robot = info.get("robot") or {}
    things.append(f"You are the robot ({robot.get('id', '?')}).")
    return "\n".join(places), "\n".join(things)
