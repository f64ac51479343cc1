"""Narration of what the robot sees: the text observation, the events JSON and captions.

The narration contract (docs/narration.md): sentences describe **behaviour, as a camera would
show it** — who went where, who opened, closed, took, put, looked over, stretched toward or
stood holding what — and what is visibly where. They never state intentions, what someone
was looking for, whether a search succeeded or why an attempt failed. Each behaviour has
several phrasings; which one is used is fixed by the episode's *style* number and the event,
so the same episode always reads the same, but a parser has to understand the sentences
rather than match one template.

The env narrates every window, so the phrases naming nodes ("the fridge (12)") are built
once per episode (:class:`Labels`); the events JSON is ``json.dumps`` output, which is
already printable ASCII, so it is only cut to length (:func:`cut_text`).
"""

from __future__ import annotations

import json
import re
import string
import zlib
from json.encoder import encode_basestring_ascii as _json_str
from typing import Any

from mindhelper_env.world.world import Event, World

__all__ = ["CHARSET", "Labels", "clean_text", "cut_text", "narrate_event", "describe_scene", "event_dict",
           "events_json", "window_events", "style_of", "KIND_WORDS", "EVENT_VERBS",
           "SIGHT_EVENT_VERBS", "describe_doors"]

#: Characters of every text observation (``spaces.Text`` charset).
CHARSET = frozenset(string.printable)
_NON_PRINTABLE = re.compile(r"[^\t\n\r\x0b\x0c\x20-\x7e]")

#: How a person of each kind is described (what anyone can see).
KIND_WORDS = {"adult": "an adult", "child": "a child", "wheelchair": "a wheelchair user"}

#: Verbs that can appear in the events JSON.
EVENT_VERBS = ("walk", "find", "open", "close", "grab", "putin", "putback", "drop", "switchon",
               "switchoff", "sit", "standup", "give", "tell", "look", "stretch", "stand",
               "phone", "hangup")
#: The verbs episodes with sight perception (``mh-gen-3.1``) add to :data:`EVENT_VERBS`: a
#: chore done facing away starts and ends.
SIGHT_EVENT_VERBS = ("chore", "chore_done")

# Furniture whose top or inside is above a child's head: taking from it is "reaching up".
_HIGH = frozenset({"wallshelf", "kitchencabinet", "bathroomcabinet"})

_PHRASES: dict[str, tuple[str, ...]] = {
    "arrive": ("{who} went to {a0} in the {room}.", "{who} walked over to {a0} in the {room}.",
               "{who} made their way to {a0} in the {room}."),
    "arrive_room": ("{who} went to the {room}.", "{who} walked to the {room}."),
    "enter": ("{who} walked into the {room}.", "{who} came into the {room}.",
              "{who} entered the {room}."),
    "open": ("{who} opened {a0}.", "{who} pulled {a0} open.", "{who} opened up {a0}."),
    "close": ("{who} closed {a0}.", "{who} shut {a0}.", "{who} pushed {a0} closed."),
    "grab": ("{who} took {a0}{src}.", "{who} picked up {a0}{src}.", "{who} grabbed {a0}{src}."),
    "grab_high": ("{who} reached up and took {a0}{src}.",
                  "{who} stretched up and lifted {a0}{src}."),
    "putin": ("{who} put {a0} in {a1}.", "{who} placed {a0} inside {a1}.",
              "{who} put {a0} away in {a1}."),
    "putback": ("{who} put {a0} on {a1}.", "{who} set {a0} down on {a1}.",
                "{who} left {a0} on {a1}."),
    "drop": ("{who} dropped {a0}.", "{who} let go of {a0}; it fell to the floor."),
    "switchon": ("{who} switched on {a0}.", "{who} turned on {a0}."),
    "switchoff": ("{who} switched off {a0}.", "{who} turned off {a0}."),
    "sit": ("{who} sat down on {a0}.", "{who} took a seat on {a0}."),
    "standup": ("{who} stood up.", "{who} got up."),
    "give": ("{who} gave {a0} to {a1}.", "{who} handed {a0} to {a1}."),
    "tell": ("{who} told {a0} that {a1} is at {a2}.",
             "{who} said to {a0}: {a1} is at {a2} now.",
             "{who} let {a0} know that {a1} is at {a2}."),
    "phone": ("{who} took a phone call.", "{who} answered the phone and started talking.",
              "{who} got on the phone."),
    "hangup": ("{who} hung up the phone.", "{who} ended the call.", "{who} put the phone away."),
    "chore": ("{who} turned to {a0} and started tidying it, back to the room.",
              "{who} got busy at {a0}, facing away from the room.",
              "{who} started wiping down {a0}, back turned to the room."),
    "chore_done": ("{who} finished at {a0} and turned around.",
                   "{who} was done at {a0} and turned back to the room.",
                   "{who} turned away from {a0}, the chore done."),
    "look": ("{who} looked over {a0}.", "{who} looked around {a0}.", "{who} glanced over {a0}."),
    "look_in": ("{who} looked inside {a0}.", "{who} peered into {a0}."),
    "stretch": ("{who} stretched up toward {a0} on {a1}.", "{who} reached up toward {a0} on {a1}.",
                "{who} stood at {a1}, arms raised toward {a0}."),
    "stretch_box": ("{who} stretched up toward {a0}.", "{who} reached up toward the handle of {a0}."),
    "stretch_place": ("{who} stretched up toward {a0}.", "{who} reached up toward {a0}.",
                      "{who} stood at {a0}, arms raised toward it."),
    "stand": ("{who}, holding {held}, stood at {a0}.", "{who} stood at {a0} with {held} in hand.",
              "{who} stopped at {a0}, holding {held}."),
    "stand_one": ("{who}, holding {held}, stood at {a0}.", "{who} stood at {a0} with {held}."),
    "move": ("{who} moved {a0} to {a1} in the {room}.",),
}
#: The robot's own actions where a person's phrase would not fit a machine (narration 1,
#: ``MindHelper-VirtualHome-v3``): as many options as :data:`_PHRASES` has for the key, so
#: the choice among them is the same.
_ROBOT_PHRASES: dict[str, tuple[str, ...]] = {
    "arrive": ("{who} went to {a0} in the {room}.", "{who} walked over to {a0} in the {room}.",
               "{who} made its way to {a0} in the {room}."),
}


def clean_text(text: str, max_length: int) -> str:
    """Map characters outside :data:`CHARSET` to ``?`` and cut to ``max_length``."""
    # the usual case, checked in C: printable ASCII and newlines only, nothing to map
    if not (text.isascii() and text.replace("\n", "").isprintable()):
        text = _NON_PRINTABLE.sub("?", text)
    return cut_text(text, max_length)


def cut_text(text: str, max_length: int) -> str:
    """Cut ``text`` to ``max_length`` characters (ending in `` ...``) as :func:`clean_text`
    does, for text already in :data:`CHARSET` (e.g. ``json.dumps`` output, which escapes
    every character outside ``\\x20-\\x7e``)."""
    if len(text) > max_length:
        text = text[: max_length - 4] + " ..."
    return text


def style_of(key: str | int) -> int:
    """The phrasing style number of an episode (from its seed or id)."""
    return zlib.crc32(str(key).encode()) & 0x7FFFFFFF


#: ``a0``, ``a1``, ...: the format fields naming an event's arguments
_ARG_KEYS = tuple(f"a{i}" for i in range(8))


def _who(world: World, cid: int, names: dict[int, str]) -> str:
    if cid == 0:
        return "Someone"
    return names[cid] if cid in names else world.name(cid)


def _thing(world: World, nid: int, names: dict[int, str]) -> str:
    if nid in names:
        return f"{names[nid]} ({nid})"
    n = world.graph.nodes.get(nid)
    return f"the {n.class_name} ({nid})" if n else f"node {nid}"


def _room(world: World, rid: int | None) -> str:
    if rid is None:
        return "nowhere"
    n = world.graph.nodes.get(rid)
    return f"{n.class_name} ({rid})" if n else f"room {rid}"


def _and(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


class Labels:
    """The phrases naming nodes in one episode's narration (``Emma (3)``, ``the fridge
    (12)``, ``kitchen (4)``), built once per node: names and classes do not change within
    an episode (nodes are never added or removed). Make one per episode and pass it to
    :func:`narrate_event`. ``robot``: the robot's node id, whose own actions are then
    narrated as a machine's ("made its way"); None: as a person's (``MindHelper-*-v0``)."""

    __slots__ = ("world", "names", "robot", "_things", "_rooms", "_json", "_style")

    def __init__(self, world: World, names: dict[int, str], robot: int | None = None) -> None:
        self.world = world
        self.names = names
        self.robot = robot
        self._things: dict[int, str] = {}
        self._rooms: dict[int | None, str] = {}
        self._json: dict[Any, str] = {}
        self._style: tuple[int, int] | None = None  # (style, crc32 of f"{style}:")

    def thing(self, nid: int) -> str:
        label = self._things.get(nid)
        if label is None:
            label = self._things[nid] = _thing(self.world, nid, self.names)
        return label

    def room(self, rid: int | None) -> str:
        label = self._rooms.get(rid)
        if label is None:
            label = self._rooms[rid] = _room(self.world, rid)
        return label


def narrate_event(world: World, ev: Event, names: dict[int, str], style: int = 0,
                  labels: Labels | None = None) -> str:
    """One sentence for an event: the behaviour a camera would have shown. ``labels``
    (optional, for ``world`` and ``names``) saves rebuilding node phrases at every event."""
    if labels is None:
        labels = Labels(world, names)
    thing = labels.thing
    actor = ev.actor
    who = "Someone" if actor == 0 else names[actor] if actor in names else world.name(actor)
    args = ev.args
    v = ev.verb
    # labels.room() and labels.thing(), from their caches when the label is there
    fields: dict[str, Any] = {"who": who,
                              "room": labels._rooms.get(ev.room) or labels.room(ev.room)}
    if len(args) == 1:
        fields["a0"] = labels._things.get(args[0]) or thing(args[0])
    elif len(args) <= len(_ARG_KEYS):
        fields.update(zip(_ARG_KEYS, [thing(x) for x in args], strict=False))
    else:
        fields.update({f"a{i}": thing(x) for i, x in enumerate(args)})
    key = v
    extra = ""
    if v == "walk" or v == "find":
        if not ev.done or not args:
            key = "enter"
        elif args[0] == ev.room:
            key = "arrive_room"
        else:
            key = "arrive"
    elif v == "open":
        inside = [thing(x) for x in ev.revealed]
        extra = (" Inside: " + ", ".join(inside) + ".") if inside else " It was empty."
    elif v == "grab":
        src = ""
        if ev.source and ev.source[1] in world.graph.nodes:
            src = f" from {thing(ev.source[1])}"
            if world.graph.nodes[ev.source[1]].key in _HIGH:
                key = "grab_high"
        fields["src"] = src
    elif v == "look":
        if args and args[0] in world.graph.nodes and world.is_open(args[0]) \
                and "CONTAINERS" in world.graph.nodes[args[0]].properties:
            key = "look_in"
    elif v == "stretch":
        if len(args) < 2 or args[0] == args[1]:
            key = "stretch_box"
            if args and args[0] in world.graph.nodes \
                    and "CONTAINERS" not in world.graph.nodes[args[0]].properties:
                key = "stretch_place"
    elif v == "stand":
        held = [thing(x) for x in args[1:]]
        fields["held"] = _and(held) or "something"
        key = "stand" if len(held) > 1 else "stand_one"
    options = _PHRASES.get(key)
    if actor == labels.robot and key in _ROBOT_PHRASES:
        options = _ROBOT_PHRASES[key]
    if options is not None:
        if len(options) == 1:
            template = options[0]
        else:  # the phrasing: crc32 of style, tick, actor, verb and args (the style
            # prefix's crc32 is kept per episode)
            prefix = labels._style
            if prefix is None or prefix[0] != style:
                prefix = labels._style = (style, zlib.crc32(f"{style}:".encode()))
            mix = zlib.crc32(f"{ev.tick}:{actor}:{v}:{args}".encode(), prefix[1])
            template = options[mix % len(options)]
        try:
            return template.format_map(fields) + extra
        except (KeyError, IndexError):
            pass
    a = [thing(x) for x in args]
    return f"{who} did {v} {' '.join(a)}.".replace("  ", " ")


def event_dict(world: World, ev: Event, names: dict[int, str]) -> dict[str, Any]:
    """A structured, JSON-ready event: the same behaviour as the narration, no more.

    ``{"tick", "actor", "actor_name", "verb", "args": [{"id", "class"}], "room"}``, plus
    ``"contents"`` (what became visible) for ``open``. A walk still under way has no
    ``args``: only the room the person entered is visible, not where they are heading.
    """
    args = ev.args if (ev.verb not in ("walk", "find") or ev.done) else ()
    out: dict[str, Any] = {
        "tick": ev.tick,
        "actor": ev.actor,
        "actor_name": _who(world, ev.actor, names),
        "verb": ev.verb,
        "args": [
            {"id": x, "class": world.graph.nodes[x].class_name if x in world.graph.nodes else "?"}
            for x in args
        ],
        "room": ev.room,
    }
    if ev.verb == "open":
        out["contents"] = [{"id": x, "class": world.graph.nodes[x].class_name}
                           for x in ev.revealed if x in world.graph.nodes]
    return out


_EVENT_KEYS = ("tick", "actor", "actor_name", "verb", "args", "room")
_OPEN_EVENT_KEYS = (*_EVENT_KEYS, "contents")


class _NotPlain(Exception):
    """An event dict that is not exactly what :func:`event_dict` makes."""


def _nodes_json(items: Any, cache: dict[Any, str]) -> str:
    if type(items) is not list:
        raise _NotPlain
    parts = []
    for item in items:
        if type(item) is not dict or len(item) != 2:
            raise _NotPlain
        nid, cls = item.get("id"), item.get("class")
        key = ("node", nid, cls)
        text = cache.get(key)
        if text is None:
            if type(nid) is not int or type(cls) is not str or tuple(item) != ("id", "class"):
                raise _NotPlain
            text = cache[key] = f'{{"id": {nid}, "class": {_json_str(cls)}}}'
        parts.append(text)
    return "[" + ", ".join(parts) + "]"


def _event_json(d: dict[str, Any], cache: dict[Any, str]) -> str:
    keys = tuple(d)
    if keys != _EVENT_KEYS and keys != _OPEN_EVENT_KEYS:
        raise _NotPlain
    tick, actor, name, verb, room = d["tick"], d["actor"], d["actor_name"], d["verb"], d["room"]
    if type(tick) is not int or type(actor) is not int or type(name) is not str \
            or type(verb) is not str or (room is not None and type(room) is not int):
        raise _NotPlain
    text = (f'{{"tick": {tick}, "actor": {actor}, "actor_name": {_json_str(name)}, '
            f'"verb": {_json_str(verb)}, "args": {_nodes_json(d["args"], cache)}, '
            f'"room": {"null" if room is None else room}')
    if len(keys) == 7:
        text += f', "contents": {_nodes_json(d["contents"], cache)}'
    return text + "}"


def events_json(events: list[dict[str, Any]], labels: Labels | None = None) -> str:
    """``json.dumps(events)`` for dicts made by :func:`event_dict` — the same text, built
    from per-episode fragments (``labels`` keeps them); anything else goes to ``json.dumps``."""
    cache = labels._json if labels is not None else {}
    try:
        return "[" + ", ".join([_event_json(d, cache) for d in events]) + "]"
    except _NotPlain:
        return json.dumps(events)


def window_events(world: World, events: list[Event], names: dict[int, str], style: int,
                  labels: Labels, narrate: bool = True, encode: bool = True
                  ) -> tuple[list[str], list[dict[str, Any]], str | None]:
    """For a window's events: the narration lines (``[t=..] `` + :func:`narrate_event`;
    none with ``narrate=False``), the :func:`event_dict` of each and their JSON,
    ``json.dumps`` of the dicts (built from per-episode fragments kept in ``labels``;
    None with ``encode=False``)."""
    lines, dicts, parts = [], [], []
    plain = encode
    nodes = world.graph.nodes
    cache = labels._json
    for ev in events:
        if narrate:
            lines.append(f"[t={ev.tick}] " + narrate_event(world, ev, names, style, labels))
        # event_dict(world, ev, names), inlined
        actor, verb = ev.actor, ev.verb
        args = ev.args if (verb not in ("walk", "find") or ev.done) else ()
        d = {
            "tick": ev.tick,
            "actor": actor,
            "actor_name": "Someone" if actor == 0 else names[actor] if actor in names
            else world.name(actor),
            "verb": verb,
            "args": [{"id": x, "class": nodes[x].class_name if x in nodes else "?"}
                     for x in args],
            "room": ev.room,
        }
        if verb == "open":
            d["contents"] = [{"id": x, "class": nodes[x].class_name}
                             for x in ev.revealed if x in nodes]
        dicts.append(d)
        if plain:
            try:
                parts.append(_event_fragment(world, ev, d, cache))
            except _NotPlain:
                plain = False
    if not encode:
        return lines, dicts, None
    return lines, dicts, "[" + ", ".join(parts) + "]" if plain else json.dumps(dicts)


def _node_fragment(world: World, nid: Any, cache: dict[Any, str]) -> str:
    if type(nid) is not int:  # (an equal numpy integer would find the int's fragment)
        raise _NotPlain
    text = cache.get(nid)
    if text is None:
        n = world.graph.nodes.get(nid)
        cls = n.class_name if n is not None else "?"
        if type(cls) is not str:
            raise _NotPlain
        text = cache[nid] = f'{{"id": {nid}, "class": {_json_str(cls)}}}'
    return text


def _event_fragment(world: World, ev: Event, d: dict[str, Any], cache: dict[Any, str]) -> str:
    """``json.dumps(d)`` for ``d = event_dict(world, ev, ...)``."""
    tick, actor, room, verb = ev.tick, ev.actor, ev.room, ev.verb
    name = d["actor_name"]
    if type(tick) is not int or type(actor) is not int or type(name) is not str \
            or type(verb) is not str or (room is not None and type(room) is not int):
        raise _NotPlain
    args = ev.args if (verb not in ("walk", "find") or ev.done) else ()
    if len(args) == 1 and type(args[0]) is int:
        arg_text = cache.get(args[0]) or _node_fragment(world, args[0], cache)
    else:
        arg_text = ", ".join([_node_fragment(world, x, cache) for x in args])
    text = (f'{{"tick": {tick}, "actor": {actor}, "actor_name": {_json_str(name)}, '
            f'"verb": {_json_str(verb)}, "args": [{arg_text}], '
            f'"room": {"null" if room is None else room}')
    if verb == "open":
        nodes = world.graph.nodes
        inside = ", ".join([_node_fragment(world, x, cache) for x in ev.revealed if x in nodes])
        text += f', "contents": [{inside}]'
    return text + "}"


def describe_doors(world: World, labels: Labels) -> str:
    """One line naming every door of the house, the two rooms it joins and whether it is
    open (episodes with sight perception: what one sees through from the next room)."""
    parts = []
    for did in sorted(world.doors):
        a, b = world.doors[did]
        state = "closed" if "CLOSED" in world.graph.nodes[did].states else "open"
        parts.append(f"the {labels.room(a)} and the {labels.room(b)} ({state})")
    return ("Doors between " + "; ".join(parts) + ".") if parts else "There are no doors."


def describe_scene(world: World, rooms: list[int], names: dict[int, str], robot: int,
                   kinds: dict[int, str] | None = None, labels: Labels | None = None,
                   doors: bool = False) -> str:
    """What the robot sees at the start: rooms, people, and visible objects with places.
    ``labels`` (optional, for ``world`` and ``names``) shares node phrases with the
    episode's narration. ``doors``: also name the doors and whether each is open
    (:func:`describe_doors`; episodes with sight perception)."""
    kinds = kinds or {}
    nodes = world.graph.nodes
    if labels is None:
        labels = Labels(world, names)
    thing = labels.thing
    chars, holder, is_hidden = world.chars, world._holder, world.is_hidden
    parent, room_ids = world._parent, world._room_members
    lines = ["The home has: " + ", ".join([labels.room(r) for r in world.rooms]) + "."]
    if doors:
        lines.append(describe_doors(world, labels))
    for r in rooms:
        members = sorted(world.room_nodes(r))
        people = [c for c in members if c in chars and c != robot]
        # visible objects nobody holds, each with where it is (is_hidden and placement
        # inlined: an object on nothing or standing in a room is not hidden)
        objs = []
        for n in members:
            if "GRABBABLE" not in nodes[n].properties or n in holder:
                continue
            p = parent.get(n)
            if p is None:
                where = ""
            elif p[1] in room_ids:
                where = "on the floor"
            elif is_hidden(n):
                continue
            else:
                where = ("in " if p[0] == "INSIDE" else "on ") + thing(p[1])
            objs.append(f"{thing(n)} {where}")
        parts = []
        if people:
            descr = []
            for p in people:
                d = thing(p)
                if p in kinds:
                    d = f"{d}, {KIND_WORDS.get(kinds[p], kinds[p])}"
                held = world.held_by(p)
                if held:
                    d += ", holding " + _and([thing(h) for h in held])
                descr.append(d)
            parts.append("people: " + "; ".join(descr))
        if objs:
            parts.append("objects: " + ", ".join(objs))
        if parts:
            lines.append(f"In the {labels.room(r)}: " + "; ".join(parts) + ".")
    rr = world.chars[robot].room
    lines.append(f"You (the robot, {robot}) are in the {labels.room(rr)}.")
    return "\n".join(lines)
