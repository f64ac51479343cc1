"""Running script lines in a :class:`~mindhelper_env.world.world.World`: the result types
(:class:`Event`, :class:`ActionResult`), a character's state, and the verb handlers
(:class:`VerbHandlers`, the part of ``World`` that executes ``[verb]`` lines: preconditions,
effects and the reasons a line fails). See :mod:`mindhelper_env.world.world` for the
semantics and the deliberate differences from VirtualHome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mindhelper_env.world.script import (
    ROBOT_ONLY_VERBS,
    VERB_ARITY,
    ScriptLine,
    ScriptParseError,
    parse_line,
)

__all__ = ["Event", "ActionResult", "VerbHandlers", "DEFAULT_REACH"]

#: Reach height of a character whose reach was never set (metres).
DEFAULT_REACH = 2.1
_PLACEMENT = ("INSIDE", "ON")
#: How many may sit on a seat of a class at once (objects on it count too, as in VirtualHome);
#: other sittable classes seat one.
_SEATS = {"couch": 4, "sofa": 4, "bed": 4, "loveseat": 2, "bench": 2, "pianobench": 2}
#: The method that executes each verb.
_HANDLERS = {verb: "_do_" + verb for verb in VERB_ARITY}


@dataclass(slots=True)
class Event:
    """Something a character did (or failed to do) at a tick."""

    tick: int
    actor: int
    verb: str
    args: tuple[int, ...]
    ok: bool
    room: int | None
    reason: str | None = None
    #: for grab/give: where the object was before (``(relation, parent_id)``)
    source: tuple[str, int] | None = None
    #: False while a walk is still under way (the character moved one door closer)
    done: bool = True
    #: for open: what the opened container held at that moment
    revealed: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "tick": self.tick,
            "actor": self.actor,
            "verb": self.verb,
            "args": list(self.args),
            "ok": self.ok,
            "room": self.room,
            "reason": self.reason,
        }


@dataclass(slots=True)
class ActionResult:
    """Outcome of one script line. ``done`` is False while a walk is still under way."""

    ok: bool
    reason: str | None = None
    line: ScriptLine | None = None
    done: bool = True
    event: Event | None = None

    def __bool__(self) -> bool:
        return self.ok


@dataclass(slots=True)
class _Char:
    room: int | None
    near: int | None = None
    sitting_on: int | None = None
    reach: float = DEFAULT_REACH
    robot: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class VerbHandlers:
    """The verb handlers of :class:`~mindhelper_env.world.world.World` (a mixin: every
    method works on the world's own state)."""

    __slots__ = ()

    def execute(
        self, char_id: int, line: str | ScriptLine, *, max_hops: int | None = None
    ) -> ActionResult:
        """Execute one script line for a character. Never raises on a bad line."""
        if char_id not in self.chars:
            return ActionResult(False, f"node {char_id} is not a character")
        if isinstance(line, str):
            try:
                line = parse_line(line)
            except ScriptParseError as err:
                return self._fail(char_id, None, str(err))
        c = self.chars[char_id]
        for cls, nid in line.args:
            node = self.graph.nodes.get(nid)
            if node is None:
                return self._fail(char_id, line, f"unknown node id {nid}")
            key = node.key  # normalized: no "_" or " ", so cls == key needs no replace()
            if cls != key and key != cls.replace("_", "").replace(" ", "") and not (
                cls == "character" and nid in self.chars
            ):
                return self._fail(
                    char_id, line, f"node {nid} is a {node.class_name}, not a {cls}"
                )
        if line.verb in ROBOT_ONLY_VERBS and not c.robot:
            return self._fail(char_id, line, f"only the robot can [{line.verb}]")
        if c.room is None:
            return self._fail(char_id, line, "character is not in any room")
        handler = getattr(self, _HANDLERS.get(line.verb) or "_do_" + line.verb)
        return handler(char_id, c, line, max_hops)

    def _fail(self, char_id: int, line: ScriptLine | None, reason: str) -> ActionResult:
        c = self.chars.get(char_id)
        ev = Event(
            self.tick, char_id, line.verb if line else "?", line.ids if line else (), False,
            c.room if c else None, reason,
        )
        return ActionResult(False, reason, line, True, ev)

    def _ok(self, char_id: int, line: ScriptLine, *, done: bool = True,
            source: tuple[str, int] | None = None) -> ActionResult:
        args = line.args
        ids = (args[0][1],) if len(args) == 1 else tuple([a[1] for a in args])
        ev = Event(self.tick, char_id, line.verb, ids, True, self.chars[char_id].room, None,
                   source, done)
        return ActionResult(True, None, line, done, ev)

    def _do_walk(self, cid: int, c: _Char, line: ScriptLine, max_hops: int | None) -> ActionResult:
        target = line.args[0][1]
        if target == cid:
            return self._fail(cid, line, "cannot walk to itself")
        if c.sitting_on is not None:
            return self._fail(cid, line, "character is sitting; [standup] first")
        if target not in self._room_members:
            if self._holder.get(target) not in (None, cid):
                return self._fail(cid, line, f"{self.name(target)} is held by someone")
            if self.is_hidden(target):
                return self._fail(cid, line, f"{self.name(target)} is inside a closed container")
        dest = self.room_of(target)
        if dest is None:
            return self._fail(cid, line, f"{self.name(target)} is not in any room")
        hops = self._dist.get((c.room, dest), 0) if c.room is not None else 0
        if max_hops is not None and hops > max_hops:
            room = c.room
            for _ in range(max_hops):
                room = self.next_room(room, dest)
            self._move_char(cid, c, room)
            self._set_near(cid, None)
            return self._ok(cid, line, done=False)
        self._move_char(cid, c, dest)
        self._set_near(cid, None if target in self._room_members else target)
        return self._ok(cid, line)

    _do_find = _do_walk

    def _move_char(self, cid: int, c: _Char, room: int) -> None:
        if c.room == room:
            return
        c.room = room
        self._set_room(cid, room)
        for obj in self.held_by(cid):
            self._set_room(obj, room)

    def _do_open(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None,
                 *, opening: bool = True) -> ActionResult:
        t = line.args[0][1]
        n = self.graph.nodes[t]
        if "CAN_OPEN" not in n.properties:
            return self._fail(cid, line, f"{self.name(t)} cannot be opened or closed")
        if not self.is_close(cid, t):
            return self._fail(cid, line, f"not close to {self.name(t)}; [walk] to it first")
        if opening and "OPEN" in n.states:
            return self._fail(cid, line, f"{self.name(t)} is already open")
        if not opening and "CLOSED" in n.states:
            return self._fail(cid, line, f"{self.name(t)} is already closed")
        if opening and self.free_hand(cid) is None:  # closing needs no free hand
            return self._fail(cid, line, "both hands are full")
        if not self.reachable(cid, t):
            return self._fail(cid, line, f"{self.name(t)} is out of reach")
        self.set_state(t, "OPEN" if opening else "CLOSED")
        res = self._ok(cid, line)
        if opening and res.event is not None:
            res.event.revealed = tuple(sorted(self._contents.get(t, ())))
        return res

    def _do_close(self, cid: int, c: _Char, line: ScriptLine, mh: int | None) -> ActionResult:
        return self._do_open(cid, c, line, mh, opening=False)

    def _do_grab(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        t = line.args[0][1]
        n = self.graph.nodes[t]
        if "GRABBABLE" not in n.properties:
            return self._fail(cid, line, f"{self.name(t)} cannot be grabbed")
        holder = self._holder.get(t)
        if holder == cid:
            return self._fail(cid, line, f"already holding {self.name(t)}")
        if holder is not None:
            return self._fail(cid, line, f"{self.name(t)} is held by someone else")
        if self.is_hidden(t):
            return self._fail(cid, line, f"{self.name(t)} is inside a closed container")
        if not self.is_close(cid, t):
            return self._fail(cid, line, f"not close to {self.name(t)}; [walk] to it first")
        hand = self.free_hand(cid)
        if hand is None:
            return self._fail(cid, line, "both hands are full")
        if not self.reachable(cid, t):
            return self._fail(cid, line, f"{self.name(t)} is out of reach")
        src = self._unplace(t)
        self.graph.add_edge(cid, hand, t)
        self.version += 1
        self._holder[t] = cid
        self._set_room(t, c.room)
        return self._ok(cid, line, source=src)

    def _put(self, cid: int, c: _Char, line: ScriptLine, rel: str) -> ActionResult:
        obj, dst = line.args[0][1], line.args[1][1]
        if self._holder.get(obj) != cid:
            return self._fail(cid, line, f"not holding {self.name(obj)}")
        if obj == dst:
            return self._fail(cid, line, "cannot put an object on or in itself")
        d = self.graph.nodes[dst]
        if dst in self.chars:
            return self._fail(cid, line, f"{self.name(dst)} is a character; use [give]")
        if rel == "INSIDE":
            if "CONTAINERS" not in d.properties:
                return self._fail(cid, line, f"{self.name(dst)} is not a container")
            if "CLOSED" in d.states:
                return self._fail(cid, line, f"{self.name(dst)} is closed; [open] it first")
        elif "SURFACES" not in d.properties:
            return self._fail(cid, line, f"{self.name(dst)} is not a surface")
        if self._holder.get(dst) is not None:
            return self._fail(cid, line, f"{self.name(dst)} is being held")
        if self.is_hidden(dst):
            return self._fail(cid, line, f"{self.name(dst)} is inside a closed container")
        if not self.is_close(cid, dst):
            return self._fail(cid, line, f"not close to {self.name(dst)}; [walk] to it first")
        if not self.reachable(cid, dst, top=rel == "ON"):
            return self._fail(cid, line, f"{self.name(dst)} is out of reach")
        self._release(cid, obj)
        self._place(obj, rel, dst)
        return self._ok(cid, line)

    def _do_putback(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        return self._put(cid, c, line, "ON")

    def _do_putin(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        return self._put(cid, c, line, "INSIDE")

    def _do_drop(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        obj = line.args[0][1]
        if self._holder.get(obj) != cid:
            return self._fail(cid, line, f"not holding {self.name(obj)}")
        self._release(cid, obj)
        self._place(obj, "INSIDE", c.room)  # type: ignore[arg-type]  # execute() checked the room
        return self._ok(cid, line)

    def _switch(self, cid: int, line: ScriptLine, on: bool) -> ActionResult:
        t = line.args[0][1]
        n = self.graph.nodes[t]
        if "HAS_SWITCH" not in n.properties:
            return self._fail(cid, line, f"{self.name(t)} has no switch")
        if not self.is_close(cid, t):
            return self._fail(cid, line, f"not close to {self.name(t)}; [walk] to it first")
        want = "ON" if on else "OFF"
        if want in n.states:
            return self._fail(cid, line, f"{self.name(t)} is already {want.lower()}")
        if ("OFF" if on else "ON") not in n.states:
            return self._fail(cid, line, f"{self.name(t)} is neither on nor off")
        if on and "PLUGGED_OUT" in n.states:
            return self._fail(cid, line, f"{self.name(t)} is unplugged")
        self.set_state(t, want)
        return self._ok(cid, line)

    def _do_switchon(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        return self._switch(cid, line, True)

    def _do_switchoff(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        return self._switch(cid, line, False)

    def _do_sit(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        t = line.args[0][1]
        if "SITTABLE" not in self.graph.nodes[t].properties:
            return self._fail(cid, line, f"{self.name(t)} is not something to sit on")
        if c.sitting_on is not None:
            return self._fail(cid, line, "already sitting")
        if not self.is_close(cid, t):
            return self._fail(cid, line, f"not close to {self.name(t)}; [walk] to it first")
        taken = len(self.graph.sources(t, "ON"))
        taken += sum(1 for o in self.chars.values() if o.sitting_on == t)
        if taken >= _SEATS.get(self.graph.nodes[t].key, 1):
            return self._fail(cid, line, f"no room to sit on {self.name(t)}")
        c.sitting_on = t
        self.graph.add_edge(cid, "SITTING", t)
        self.graph.nodes[cid].states.add("SITTING")
        self.states_version += 1
        return self._ok(cid, line)

    def _do_standup(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        if c.sitting_on is None:
            return self._fail(cid, line, "not sitting")
        self.graph.remove_edge(cid, "SITTING", c.sitting_on)
        self.graph.nodes[cid].states.discard("SITTING")
        self.states_version += 1
        c.sitting_on = None
        return self._ok(cid, line)

    def _do_give(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        obj, to = line.args[0][1], line.args[1][1]
        if to not in self.chars or to == cid:
            return self._fail(cid, line, f"{self.name(to)} is not another character")
        if self._holder.get(obj) != cid:
            return self._fail(cid, line, f"not holding {self.name(obj)}; [grab] it first")
        if self.chars[to].room != c.room:
            return self._fail(cid, line, f"{self.name(to)} is in another room; [walk] to them first")
        hand = self.free_hand(to)
        if hand is None:
            return self._fail(cid, line, f"{self.name(to)} has no free hand")
        self._release(cid, obj)
        self.graph.add_edge(to, hand, obj)
        self.version += 1
        self._holder[obj] = to
        self._set_near(cid, to)
        return self._ok(cid, line, source=("HOLDS_RH", cid))

    def _do_tell(self, cid: int, c: _Char, line: ScriptLine, _mh: int | None) -> ActionResult:
        to, obj, loc = (a[1] for a in line.args)
        if to not in self.chars or to == cid:
            return self._fail(cid, line, f"{self.name(to)} is not another character")
        if self.chars[to].room != c.room:
            return self._fail(cid, line, f"{self.name(to)} is in another room; [walk] to them first")
        if obj in self.chars or obj in self._room_members:
            return self._fail(cid, line, f"{self.name(obj)} is not an object")
        del loc
        return self._ok(cid, line)
