"""Natural-language narration of world events (the text observation and ``ansi`` render)."""

from __future__ import annotations

import re
import string
from typing import Any

from mindhelper_env.world.world import Event, World

__all__ = ["CHARSET", "clean_text", "narrate_event", "describe_scene", "event_dict"]

#: Characters of every text observation (``spaces.Text`` charset).
CHARSET = frozenset(string.printable)
_NON_PRINTABLE = re.compile(r"[^\t\n\r\x0b\x0c\x20-\x7e]")


def clean_text(text: str, max_length: int) -> str:
    """Map characters outside :data:`CHARSET` to ``?`` and cut to ``max_length``."""
    text = _NON_PRINTABLE.sub("?", text)
    if len(text) > max_length:
        text = text[: max_length - 4] + " ..."
    return text


def _who(world: World, cid: int, names: dict[int, str]) -> str:
    if cid == 0:
        return "Someone"
    return names.get(cid, world.name(cid))


def _thing(world: World, nid: int, names: dict[int, str]) -> str:
    if nid in names:
        return f"{names[nid]} ({nid})"
    n = world.graph.nodes.get(nid)
    return f"the {n.class_name} ({nid})" if n else f"node {nid}"


def _room(world: World, rid: int | None) -> str:
    if rid is None:
        return "nowhere"
    return world.name(rid)


def narrate_event(world: World, ev: Event, names: dict[int, str]) -> str:
    """One sentence for an event, as the robot would describe what it saw."""
    who = _who(world, ev.actor, names)
    a = [_thing(world, x, names) for x in ev.args]
    v = ev.verb
    if not ev.ok:
        if v == "search":
            where = f" at {a[0]}" if a else ""
            return f"{who} searched{where} and did not find what they were looking for."
        if v == "giveup":
            return f"{who} gave up and looks frustrated."
        what = " ".join(a) if a else ""
        return f"{who} tried to {v} {what} but failed: {ev.reason}.".replace("  ", " ")
    if v in ("walk", "find"):
        if ev.done:
            return f"{who} went to {a[0]} in the {_room(world, ev.room)}."
        return f"{who} walked into the {_room(world, ev.room)}."
    if v == "open":
        inside = ev.revealed
        extra = ""
        if inside:
            extra = " Inside: " + ", ".join(_thing(world, x, names) for x in inside) + "."
        return f"{who} opened {a[0]}.{extra}"
    if v == "close":
        return f"{who} closed {a[0]}."
    if v == "grab":
        src = f" from {_thing(world, ev.source[1], names)}" if ev.source else ""
        return f"{who} took {a[0]}{src}."
    if v == "putin":
        return f"{who} put {a[0]} in {a[1]}."
    if v == "putback":
        return f"{who} put {a[0]} on {a[1]}."
    if v == "drop":
        return f"{who} dropped {a[0]}."
    if v == "switchon":
        return f"{who} switched on {a[0]}."
    if v == "switchoff":
        return f"{who} switched off {a[0]}."
    if v == "sit":
        return f"{who} sat down on {a[0]}."
    if v == "standup":
        return f"{who} stood up."
    if v == "give":
        return f"{who} gave {a[0]} to {a[1]}."
    if v == "tell":
        return f"{who} told {a[0]} that {a[1]} is at {a[2]}."
    if v == "move":
        return f"{who} moved {a[0]} to {a[1]} in the {_room(world, ev.room)}."
    if v == "done":
        return f"{who} finished what they were doing."
    return f"{who} did {v} {' '.join(a)}."


def event_dict(world: World, ev: Event, names: dict[int, str]) -> dict[str, Any]:
    """A structured, JSON-ready event."""
    return {
        "tick": ev.tick,
        "actor": ev.actor,
        "actor_name": _who(world, ev.actor, names),
        "verb": ev.verb,
        "args": [
            {"id": x, "class": world.graph.nodes[x].class_name if x in world.graph.nodes else "?"}
            for x in ev.args
        ],
        "ok": ev.ok,
        "room": ev.room,
        "reason": ev.reason,
    }


def describe_scene(world: World, rooms: list[int], names: dict[int, str], robot: int) -> str:
    """What the robot sees at the start: rooms, people, and visible objects with places."""
    lines = ["The home has: " + ", ".join(world.name(r) for r in world.rooms) + "."]
    for r in rooms:
        people = [c for c in sorted(world.room_nodes(r)) if c in world.chars and c != robot]
        objs = [
            n for n in sorted(world.room_nodes(r))
            if "GRABBABLE" in world.graph.nodes[n].properties and not world.is_hidden(n)
        ]
        parts = []
        if people:
            parts.append("people: " + ", ".join(_thing(world, p, names) for p in people))
        if objs:
            parts.append("objects: " + ", ".join(
                f"{_thing(world, o, names)} {_where(world, o, names)}" for o in objs))
        if parts:
            lines.append(f"In the {world.name(r)}: " + "; ".join(parts) + ".")
    rr = world.chars[robot].room
    lines.append(f"You (the robot, {robot}) are in the {_room(world, rr)}.")
    return "\n".join(lines)


def _where(world: World, obj: int, names: dict[int, str]) -> str:
    h = world.holder(obj)
    if h is not None:
        return f"held by {_who(world, h, names)}"
    p = world.placement(obj)
    if p is None:
        return ""
    rel, par = p
    if par in world.rooms:
        return "on the floor"
    return ("in " if rel == "INSIDE" else "on ") + _thing(world, par, names)
