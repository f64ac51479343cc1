"""What a perceived window is, and the text-track observation it stands for.

:class:`Perceived` holds one window as the parser read it from the frames: its events (the
package's event schema) and the state the last frame shows. :func:`text_view` turns it into
the ``(obs, info)`` pair an agent written for ``obs_mode="text"`` reads — ``obs["events"]``,
``info["events"]``, and ``info["candidates"]`` / ``info["robot"]`` / ``info["doors"]`` with
the state fields (rooms, holding, locations, open) that ``rgb`` mode leaves out — so that
such an agent runs unchanged on the vision track. ``obs["narration"]`` is empty: the
perceived track has events, not sentences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Perceived", "SceneState", "text_view"]


@dataclass
class SceneState:
    """The state one frame shows (what text mode's ``info`` carries besides the events).

    ``rooms``: actor or robot id -> room id; ``near``: person -> the furniture (or person)
    they stand at; ``holding``: actor or robot id -> held object ids (right hand first, as
    text mode lists them); ``location``: every visible object -> furniture, holder or room;
    ``open``: container -> open; ``doors``: door -> open; ``poses``: person -> the pose
    flags their sprite shows, joined by ``+`` (of ``sit``, ``back``: at a chore, ``phone``,
    ``reach``, ``look``; ``stand`` for none); ``kinds``: person -> the kind their sprite
    shows (``adult``, ``child``, ``wheelchair``, ``robot``); ``switched``: switchable
    furniture -> on.
    """

    rooms: dict[int, int | None] = field(default_factory=dict)
    near: dict[int, int | None] = field(default_factory=dict)
    holding: dict[int, list[int]] = field(default_factory=dict)
    location: dict[int, int] = field(default_factory=dict)
    open: dict[int, bool] = field(default_factory=dict)
    doors: dict[int, bool] = field(default_factory=dict)
    poses: dict[int, str] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    switched: dict[int, bool] = field(default_factory=dict)


@dataclass
class Perceived:
    """One window read from pixels: its events, tick by tick, and the last frame's state."""

    tick: int
    events: list[dict[str, Any]]
    state: SceneState
    #: anomalies of this window (marks that could not be read, events whose arguments
    #: could not be resolved): counted, never raised
    unreadable: int = 0


def _room_of(place: int, state: SceneState, furniture_room: Mapping[int, Any],
             rooms: set[int]) -> Any:
    if place in rooms:
        return place
    if place in state.rooms:  # held by a person or the robot
        return state.rooms[place]
    return furniture_room.get(place)


def text_view(perceived: Perceived, info: Mapping[str, Any], robot_id: int = 1,
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``(obs, info)`` text mode would have given for this window, rebuilt from what the
    frames showed and from rgb mode's ``info`` (candidate ids and classes, the public rule).

    The candidates are shaped as in text mode with ``observability="home"``: actors with
    ``room`` and ``holding``; visible objects (none inside a closed container) with
    ``location`` and ``room``, by id; locations with ``open`` (``None`` for what cannot
    open); rooms; ``info["robot"]`` with ``room`` and ``holding``; ``info["doors"]`` with
    ``open`` where the episode's perception is ``"sight"``."""
    cands = info.get("candidates") or {}
    st = perceived.state
    rooms = {int(r["id"]) for r in cands.get("rooms", []) or []}
    furniture_room = {int(loc["id"]): loc.get("room") for loc in cands.get("locations", []) or []}
    classes = {int(o["id"]): str(o["class"]) for o in cands.get("objects", []) or []}
    actors = [{"id": int(a["id"]), "name": a.get("name"), "kind": a.get("kind"),
               "room": st.rooms.get(int(a["id"])), "holding": list(st.holding.get(int(a["id"]), []))}
              for a in cands.get("actors", []) or [] if int(a["id"]) != robot_id]
    objects = []
    for oid in sorted(st.location):
        if oid not in classes:
            continue
        place = st.location[oid]
        objects.append({"id": oid, "class": classes[oid], "location": place,
                        "room": _room_of(place, st, furniture_room, rooms)})
    locations = [{"id": int(loc["id"]), "class": loc["class"], "room": loc.get("room"),
                  "open": st.open.get(int(loc["id"]))}
                 for loc in sorted(cands.get("locations", []) or [], key=lambda d: int(d["id"]))]
    out_info: dict[str, Any] = {k: v for k, v in info.items() if k not in ("candidates", "doors")}
    out_info["events"] = perceived.events
    out_info["candidates"] = {
        "actors": actors, "objects": objects, "locations": locations,
        "rooms": [{"id": int(r["id"]), "class": r["class"]} for r in cands.get("rooms", []) or []],
    }
    out_info["robot"] = {"id": robot_id, "room": st.rooms.get(robot_id),
                         "holding": list(st.holding.get(robot_id, []))}
    if info.get("perception") == "sight" or "doors" in info:
        out_info["doors"] = [{"id": int(d["id"]), "rooms": list(d.get("rooms", [])),
                              "open": bool(st.doors.get(int(d["id"]), False))}
                             for d in sorted(cands.get("doors", info.get("doors")) or [],
                                             key=lambda d: int(d["id"]))]
    obs = {"narration": "", "events": perceived.events, "tick": perceived.tick}
    return obs, out_info
