"""The frame size of the vision track (``obs_mode="rgb"``): lossless by default.

A frame shows the episode's canvas (:mod:`mindhelper_env.render.sprites`) at the largest
integer scale that fits, centred; a frame smaller than the canvas samples it down and id marks
and pose marks lose pixels. Gymnasium needs one observation space per env, so the default
``frame_size`` is decided when the env is made, from the houses it can play:

* generated VirtualHome houses (``house=None``): :data:`GENERATED_FRAME_SIZE`, the largest
  canvas :func:`~mindhelper_env.world.house.generate_house` can lead to (six rooms, every
  optional piece of furniture, six doors and :func:`max_objects` objects);
* a named house set (``house="tdw"``, ``"virtualhome:scene1"``, graph files): the largest
  canvas over its houses, each with its own rooms, furniture and doors and
  :func:`max_objects` objects (:func:`house_frame_size`);
* a suite (``mindhelper evaluate``, Inspect, ``mindhelper play``): the largest canvas over
  its episodes (:func:`mindhelper_env.evaluation.frame_sizes.suite_frame_size`; a suite's
  episodes carry their own houses).

An explicit ``frame_size`` below an episode's canvas still works (frames are sampled down,
nearest pixel): :func:`warn_lossy` says so once per process.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from mindhelper_env.render import sprites as sp

__all__ = ["GENERATED_FRAME_SIZE", "EXTRA_OBJECTS", "max_objects", "layout_size",
           "generated_frame_size", "house_frame_size", "default_frame_size",
           "warn_lossy", "LossyFrameWarning", "TEXT_FRAME_SIZE"]

#: ``frame_size`` of the text modes (``text+rgb``'s captioned top-down frame), as before.
TEXT_FRAME_SIZE = 128
#: Objects a scenario adds to a house's scattered everyday objects, at most: the family's
#: task objects and spares, bystanders' carried things and the scenery (found at most 9 in
#: the v5 suites and in pool draws; ``tests/test_frame_size.py`` checks both).
EXTRA_OBJECTS = 12
#: Scattered everyday objects per room, at most (:func:`~mindhelper_env.world.house.
#: scatter_objects`).
_SCATTER_PER_ROOM = 4


def max_objects(n_rooms: int) -> int:
    """The most grabbable objects an episode in a house of ``n_rooms`` rooms holds."""
    return _SCATTER_PER_ROOM * int(n_rooms) + EXTRA_OBJECTS


def layout_size(rooms: Iterable[Mapping[str, Any]], locations: Iterable[Mapping[str, Any]],
                doors: Iterable[Mapping[str, Any]], *, n_objects: int, max_id: int) -> int:
    """The lossless frame size of an episode with these rooms, furniture and doors (shaped
    like ``info["candidates"]``), ``n_objects`` grabbable objects and ids up to
    ``max_id``."""
    lay = sp.build_layout(list(rooms), list(locations), list(doors), [int(max_id)],
                          n_objects=int(n_objects))
    return lay.lossless_size


def _max_node_id(n_nodes: int) -> int:
    """The largest id an episode of ``n_nodes`` nodes can have: scenarios give every node
    but the robot a random id below ``2 + 4 * n_nodes``
    (:meth:`~mindhelper_env.scenarios.draft.Draft.shuffle_ids`)."""
    return 2 + 4 * int(n_nodes)


@functools.lru_cache(maxsize=1)
def generated_frame_size() -> int:
    """The largest canvas of an episode in a generated house: the most rooms
    (:data:`~mindhelper_env.world.house.ROOM_TYPES`, six), every piece of furniture a room
    can get, a door per room (a spanning tree and one extra link), :func:`max_objects`
    objects and three people."""
    from mindhelper_env.world.house import _ROOM_FURNITURE, ROOM_TYPES

    rooms, locations, doors = [], [], []
    nid = 100
    for rtype in ROOM_TYPES:
        rooms.append({"id": nid, "class": rtype})
        rid, nid = nid, nid + 1
        must, optional = _ROOM_FURNITURE[rtype]
        for cls in (*must, *optional):
            locations.append({"id": nid, "class": cls, "room": rid})
            nid += 1
    ids = [r["id"] for r in rooms]
    for k in range(len(ids)):  # as many doors as rooms (where they are drawn: the height is
        doors.append({"id": nid, "rooms": [ids[0], ids[1 + k % (len(ids) - 1)]]})  # a sum)
        nid += 1
    n_obj = max_objects(len(rooms))
    n_nodes = nid - 100 + n_obj + 4
    return layout_size(rooms, locations, doors, n_objects=n_obj,
                       max_id=_max_node_id(n_nodes))


#: ``frame_size`` of ``obs_mode="rgb"`` for generated houses (``house=None``).
GENERATED_FRAME_SIZE = 528


def house_frame_size(houses: Any) -> int:
    """The largest lossless frame size over the houses of a
    :class:`~mindhelper_env.world.houses.HouseSet` (None: generated houses)."""
    if houses is None:
        return generated_frame_size()
    return max(_house_size(h.digest, h) for h in houses.houses)


_SIZES: dict[str, int] = {}


def _house_size(digest: str, house: Any) -> int:
    got = _SIZES.get(digest)
    if got is None:
        from mindhelper_env.world.world import World

        w = World(house.scene_graph())
        nodes = w.graph.nodes
        rooms = [{"id": r, "class": nodes[r].class_name} for r in w.rooms]
        locations = [{"id": i, "class": n.class_name, "room": w.room_of(i)}
                     for i, n in sorted(nodes.items()) if n.category == "Furniture"]
        doors = [{"id": d, "rooms": list(rs)} for d, rs in sorted(w.doors.items())]
        n_obj = max_objects(len(rooms))
        n_nodes = len(nodes) + n_obj + 4
        got = _SIZES[digest] = layout_size(rooms, locations, doors, n_objects=n_obj,
                                           max_id=max(max(nodes, default=0),
                                                      _max_node_id(n_nodes)))
    return got


def default_frame_size(obs_mode: str, houses: Any) -> int:
    """``frame_size`` when the env is made without one: lossless for ``rgb``
    (:func:`house_frame_size`), :data:`TEXT_FRAME_SIZE` for the text modes."""
    if obs_mode != "rgb":
        return TEXT_FRAME_SIZE
    return house_frame_size(houses)


#: Set in the environment once a lossy frame size was warned about, so that the worker
#: processes of a run (which inherit it) do not warn again.
_WARNED_ENV = "MINDHELPER_LOSSY_FRAME_WARNED"


class LossyFrameWarning(UserWarning):
    """A frame smaller than the episode's canvas: frames are sampled down."""


def warn_lossy(frame_size: int, need: int) -> bool:
    """Warn that ``frame_size`` samples a ``need`` px canvas down, once per run (the
    process and the workers it starts), in plain text (no terminal colour codes). Returns
    whether it warned."""
    if os.environ.get(_WARNED_ENV):
        return False
    os.environ[_WARNED_ENV] = "1"
    warnings.warn(LossyFrameWarning(
        f"obs_mode='rgb': frame_size={frame_size} is smaller than the picture ({need} px): "
        "frames are sampled down and id and pose marks lose pixels; leave frame_size out "
        "for the lossless default (docs/vision.md)"), stacklevel=3)
    return True
