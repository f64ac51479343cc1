"""Simulated people: perception, belief tables, and a task policy that plans from beliefs.

An :class:`Actor` is a policy, not a recording. Every tick the simulation asks it for one script
line (:meth:`Actor.act`), executes it in the world, tells it the result
(:meth:`Actor.feedback`) and lets it perceive what happened in its room
(:meth:`Actor.perceive`). The actor's belief table maps objects to where it believes they are;
it changes only through the actor's own perception, through what the robot tells it, and
through what it is handed. Plans are made from beliefs, never from the true state, so an actor
whose object was moved while it was away walks to the old place, fails, searches plausible
places in a seeded order and gives up when its patience is spent.

Activities (JSON dicts, in order):

* ``{"type": "goto", "target": id, "stay": k, "use": "sit" | "switchon" | None}`` — walk to a
  room or a piece of furniture, optionally sit on it or switch it on, stay ``k`` ticks.
* ``{"type": "fetch", "object": id, "dest": id | None, "search": [ids], "alternatives":
  [ids]}`` — get the object, or one of the equally good ``alternatives`` (from belief, else
  by searching ``search`` in order) and, if ``dest`` is set, put it there.
* ``{"type": "deliver", "objects": [ids], "dest": id}`` — put the held objects in/on ``dest``
  (opening it first if it is closed, which needs a free hand).
* ``{"type": "idle", "ticks": k}``.
* ``{"type": "check", "target": id}`` — walk to a place and look: open a closed container, look
  inside and close it again, or look over a surface; take nothing.
* ``{"type": "assist", "person": id, "anchor": id, "object": id | None, "container": id | None,
  "max_wait": k}`` — walk to ``anchor`` and wait (at most ``max_wait`` ticks) until ``person``
  is seen struggling there; then hand them ``object`` or open ``container`` for them.
* ``{"type": "phone", "ticks": k}`` — take a phone call where one stands and talk for ``k``
  ticks (visible: ``phone`` when it starts, ``hangup`` when it ends). Someone on the phone
  notices nothing around them; with **attention perception** (below) they also see and hear
  nothing of what others do meanwhile.
* ``{"type": "chore", "target": id, "ticks": k}`` — walk to a piece of furniture and do a
  chore there for ``k`` ticks, facing it and so with one's back to the room (visible:
  ``chore`` when it starts, ``chore_done`` when it ends). Like a phone call, a chore keeps
  one from noticing anything; with attention perception one also sees nothing of what
  others do meanwhile (``mh-gen-3.1``).
* ``{"type": "tell", "person": id, "object": id, "place": id}`` — go to ``person`` and tell
  them where ``object`` is (``place``). Everyone in the room hears it (earshot is the room),
  the robot's cameras included.

``fetch`` may carry ``"habit_first": true``: look in the first ``search`` place before going
to where one believes the object (or an alternative) is — people check the usual place first.

**Noticing.** An adult who is not on the phone, has a free hand and stays in a room where
someone stretches toward something out of reach or stands at a closed container with full
hands notices it (at the tick it happens). They finish what they are doing first — they
stay where they are for :data:`NOTICE_DELAY` ticks, nothing visible — and then help: fetch
what the person is reaching for and hand it over, or open the container; then they go back
to what they were doing. The delay is longer than the window in which the robot must
decide, so that a robot cannot wait to see whether anyone comes: whether someone noticed
must be read off the scene at the struggle (who is in the room, on the phone, with a free
hand). What a stretching person wants is known to the people of the house (they share the
task), not to the robot: a stretch names only the place.

**Attention perception** (``attention=True``; episodes whose spec says ``"perception":
"attention"``, generator ``mh-gen-3.0`` on). Presence is not perception: a person on the
phone perceives none of the others' events in the room (a move, a put, an opened container,
a tell said to someone else); what changed meanwhile they learn as anyone would, from what
they see happen next or on entering a room. Without it (the default,
the episodes of ``mh-gen-2.x``) everyone in a room perceives everything that happens there.

**Sight perception** (``sight=True``; ``"perception": "sight"``, generator ``mh-gen-3.1``):
attention perception, and a person also sees the objects others take, put and give in a
room next door through an open door between the two rooms (not through a closed one; what
is said there is out of earshot, and a struggle there goes unnoticed). Someone busy on the
phone or at a chore sees nothing next door either.

**Visible behaviour.** People use the containers they open and close them again. Besides
script lines an actor emits three behaviour events (``outbox``), all of them things a camera
shows and none of them a reason or an outcome: ``look`` (looked over a surface, or into a
container that was already open, and took nothing), ``stretch`` (stretched up toward an
object it cannot reach) and ``stand`` (stood at a closed container, hands full). A line that
fails is not an event at all: nothing visible happened.

Kinds: ``adult`` (reach 2.0 m), ``child`` (1.2 m), ``wheelchair`` (1.3 m).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from mindhelper_env.world.script import ScriptLine

if TYPE_CHECKING:
    from mindhelper_env.world.world import ActionResult, Event, World

__all__ = ["Actor", "ACTOR_KINDS", "ACTIVITY_KEYS", "Marker", "NOTICE_DELAY"]

#: Reach height (metres) of each kind of person.
ACTOR_KINDS: dict[str, float] = {"adult": 2.0, "child": 1.2, "wheelchair": 1.3}

#: Activity types and the keys each needs.
ACTIVITY_KEYS: dict[str, tuple[str, ...]] = {
    "goto": ("target",),
    "fetch": ("object",),
    "deliver": ("objects", "dest"),
    "idle": (),
    "check": ("target",),
    "assist": ("person", "anchor"),
    "phone": (),
    "chore": ("target",),
    "tell": ("person", "object", "place"),
}

#: Ticks an adult who noticed someone struggling takes before starting to help (longer than
#: the generator's ``DEADLINE_TICKS``, which checks it).
NOTICE_DELAY = 7


@lru_cache(maxsize=4096)
def _walk_line(class_name: str, target: int) -> ScriptLine:
    """``[walk] <class_name> (target)`` (script lines are immutable: people walking share
    them instead of building one per tick)."""
    return ScriptLine("walk", ((class_name, target),))


#: What a person sees happen in the next room through an open door (sight perception).
_SEEN_THROUGH_DOORS = frozenset({"grab", "putback", "putin", "drop", "give", "move"})

#: The policy method of each activity type.
_ACT_METHODS = {kind: "_act_" + kind for kind in ACTIVITY_KEYS}

#: How many ticks a person waits for the robot that walked up to them.
_WAIT_FOR_ROBOT = 2


@dataclass(slots=True)
class Marker:
    """A milestone in an actor's task, used to measure onset and deadline."""

    tick: int
    kind: str  # activity_start | attempt_failed | gave_up | done
    activity: int
    detail: str = ""


@dataclass
class Actor:
    """A simulated person. Build from a spec dict with :meth:`from_spec`."""

    id: int
    name: str
    kind: str
    activities: list[dict[str, Any]]
    patience: int = 3
    retry_wait: int = 1
    #: ticks a person stays stuck (doing nothing visible) after their last failed attempt
    #: before giving up; help that arrives meanwhile (something handed over, a container
    #: opened, a place told) lets them carry on. 0: give up at once.
    linger: int = 0
    #: where a stuck person wanders to (furniture id; None: they stay put)
    stuck_walk: int | None = None
    #: where a person walks over to while they pause after a failed attempt (furniture id;
    #: None: they stand there), as a stuck person wanders (``mh-gen-3.0``)
    pause_walk: int | None = None
    beliefs: dict[int, int] = field(default_factory=dict)
    #: attention perception: on the phone, perceive nothing of others' events (module
    #: docstring)
    attention: bool = False
    #: sight perception: also see objects taken and put in the rooms next door through an
    #: open door (module docstring)
    sight: bool = False
    #: what the person goes on to do once their task is over, done or given up (the same
    #: kinds of activity; no markers, and a failure there only skips the activity): people
    #: carry on with their day either way, so what they do after a task shows nothing of
    #: how it ended
    after: list[dict[str, Any]] = field(default_factory=list)
    status: str = "active"  # active | done | gave_up
    markers: list[Marker] = field(default_factory=list)
    #: visible behaviour that is not a script line (``look``, ``stretch``, ``stand``):
    #: ``(verb, node ids)``; the simulation turns it into events each tick
    outbox: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    # policy state
    _idx: int = 0
    #: working through :attr:`after` (the task is over)
    _after: bool = False
    _started: bool = False
    _stay: int = 0
    _wait: int = 0
    _robot_wait: int = 0
    _failures: int = 0
    _checked: set[int] = field(default_factory=set)
    _target: int | None = None
    _used: bool = False
    _last_room: int | None = None
    _look: bool = True
    _doing: str = ""
    _activity_done: bool = False
    _closing: int | None = None
    _pause_walking: bool = False
    _opened: int | None = None
    _assist_go: bool = False
    #: on the phone or at a chore (notices nothing)
    busy: bool = False
    #: the help under way for someone noticed struggling: (person, object, container)
    _helping: tuple[int, int | None, int | None] | None = None
    #: ticks left before that help starts (:data:`NOTICE_DELAY`)
    _help_wait: int = 0
    #: (room, free hand, busy) at the start of the tick: what noticing is judged by
    _snap: tuple[int | None, bool, bool] | None = None
    #: the tick a stuck person gives up (None: not stuck)
    _give_up_at: int | None = None
    #: told where the object of the current fetch is since getting stuck
    _told: bool = False
    #: where a stuck person believed the objects of the fetch were when they got stuck
    _stuck_beliefs: dict[int, int | None] = field(default_factory=dict)

    @classmethod
    def from_spec(cls, spec: dict[str, Any], *, attention: bool = False,
                  sight: bool = False) -> Actor:
        kind = spec.get("kind", "adult")
        if kind not in ACTOR_KINDS:
            raise ValueError(f"unknown actor kind {kind!r}; expected one of {sorted(ACTOR_KINDS)}")
        for key in ("activities", "after"):
            for i, act in enumerate(spec.get(key, ())):
                kind_ = act.get("type") if isinstance(act, dict) else None
                if kind_ not in ACTIVITY_KEYS:
                    raise ValueError(f"actor {spec.get('name')!r}: {key} #{i} has unknown type "
                                     f"{kind_!r}; expected one of {sorted(ACTIVITY_KEYS)}")
                missing = [k for k in ACTIVITY_KEYS[kind_] if k not in act]
                if missing:
                    raise ValueError(f"actor {spec.get('name')!r}: {kind_} {key} #{i} needs "
                                     f"{', '.join(missing)}")
        return cls(
            id=int(spec["id"]),
            name=str(spec["name"]),
            kind=kind,
            activities=[dict(a) for a in spec["activities"]],
            after=[dict(a) for a in spec.get("after", ())],
            patience=int(spec.get("patience", 3)),
            retry_wait=int(spec.get("retry_wait", 1)),
            linger=int(spec.get("linger", 0)),
            stuck_walk=None if spec.get("stuck_walk") is None else int(spec["stuck_walk"]),
            pause_walk=None if spec.get("pause_walk") is None else int(spec["pause_walk"]),
            beliefs={int(k): int(v) for k, v in spec.get("beliefs", {}).items()},
            attention=bool(attention or sight),
            sight=bool(sight),
        )

    @property
    def reach(self) -> float:
        return ACTOR_KINDS[self.kind]

    @property
    def activity(self) -> dict[str, Any] | None:
        acts = self.after if self._after else self.activities
        if self._idx < len(acts):
            return acts[self._idx]
        return None

    @property
    def doing(self) -> str:
        """A short description of the current activity (as seen from outside)."""
        return self._doing

    @property
    def failures(self) -> int:
        return self._failures

    # ------------------------------------------------------------------ perception
    def perceive(self, world: World, events: list[Event]) -> None:
        """Update beliefs from what this actor can see this tick."""
        room = world.chars[self.id].room
        if self.attention and self.busy:
            return  # on the phone or at a chore: nothing of what happens reaches them
        if self.sight:
            self._see_next_door(world, room, events)
        if room != self._last_room or self._look:
            self._last_room = room
            self._look = False
            self._look_around(world, room)
            return
        for ev in events:
            if ev.room != room or not ev.ok:
                continue
            self._see_event(world, ev)
            if ev.verb in ("stretch", "stand") and ev.actor != self.id:
                self._notice(world, ev)

    def _see_next_door(self, world: World, room: int | None, events: list[Event]) -> None:
        """Sight perception: objects taken, put and given in a room seen through an open
        door."""
        views = None
        for ev in events:
            if ev.room == room or not ev.ok or ev.verb not in _SEEN_THROUGH_DOORS:
                continue
            if views is None:
                views = world.views(room)
            if ev.room in views:
                self._see_event(world, ev)

    def _notice(self, world: World, ev: Event) -> None:
        """Someone in this room struggles: an attentive adult with a free hand helps."""
        snap = self._snap
        if (self.kind != "adult" or self._helping is not None or snap is None
                or not snap[1] or snap[2] or snap[0] != ev.room):
            return
        self._help_wait = NOTICE_DELAY
        if ev.verb == "stand":
            self._helping = (ev.actor, None, ev.args[0])
            return
        place = ev.args[-1]
        wanted = world.chars[ev.actor].extra.get("wants") if ev.actor in world.chars else None
        if wanted is not None and wanted in world.graph.nodes and world.holder(wanted) is None:
            self._helping = (ev.actor, int(wanted), None)
        elif place in world.graph.nodes and world.is_closed_container(place):
            self._helping = (ev.actor, None, place)

    def _look_around(self, world: World, room: int | None) -> None:
        if room is None:
            return
        seen_places: set[int] = set()
        nodes, beliefs = world.graph.nodes, self.beliefs
        is_hidden = world.is_hidden
        # world.location and world.is_hidden, inlined where the answer is at hand: a held
        # object is not hidden, nor one whose place stands in a room
        holder, parent, rooms = world._holder, world._parent, world._room_members
        for nid in world.room_nodes(room):
            node = nodes[nid]
            props = node.properties
            if "GRABBABLE" in props:
                h = holder.get(nid)
                if h is not None:
                    beliefs[nid] = h
                    continue
                p = parent.get(nid)
                if p is None or (p[1] not in rooms and is_hidden(nid)):
                    continue
                beliefs[nid] = p[1]
            elif "SURFACES" in props or ("CONTAINERS" in props and "CLOSED" not in node.states):
                p = parent.get(nid)
                if p is None or p[1] in rooms or nid in holder or not is_hidden(nid):
                    seen_places.add(nid)
        # negative evidence: a believed place in view that does not hold the object
        if seen_places:
            for obj, loc in list(beliefs.items()):
                if loc in seen_places:
                    h = holder.get(obj)  # location(obj), inlined
                    if h is None:
                        p = parent.get(obj)
                        h = p[1] if p is not None else None
                    if h != loc:
                        del beliefs[obj]

    def _see_event(self, world: World, ev: Event) -> None:
        verb = ev.verb
        if verb in ("stretch", "stand"):
            act = self.activity
            if act is not None and act["type"] == "assist" and ev.actor == int(act["person"]):
                self._assist_go = True
            return
        if verb in ("grab", "putback", "putin", "drop", "give", "move"):
            obj = ev.args[0]
            loc = world.location(obj)
            if loc is not None:
                self.beliefs[obj] = loc
        elif verb == "open":
            for obj in ev.revealed:
                self.beliefs[obj] = ev.args[0]
            for obj, loc in list(self.beliefs.items()):
                if loc == ev.args[0] and world.location(obj) != loc:
                    del self.beliefs[obj]
        elif verb == "tell" and len(ev.args) >= 3:
            # everyone in earshot (the room) hears where something is
            _, obj, loc = ev.args
            self.beliefs[obj] = loc
            self._checked.discard(world.anchor(loc) if loc in world.graph.nodes else loc)
            self._target = None
            act = self.activity
            if act is not None and act.get("object") == obj:
                self._told = True

    # ------------------------------------------------------------------ policy
    def act(self, world: World, robot: int | None = None) -> ScriptLine | None:
        """The next script line, or None to do nothing this tick."""
        me = world.chars[self.id]
        self._snap = (me.room, world.free_hand(self.id) is not None, self.busy)
        if self._helping is not None:
            if self._help_wait > 0:
                self._help_wait -= 1
                return None
            line = self._help(world)
            if line is not None:
                return line
        if self.status != "active" and not self._after:
            return None
        if robot is not None:
            rc = world.chars.get(robot)
            if rc is not None and rc.near == self.id and rc.room == world.chars[self.id].room:
                # someone walked up to me: pause a moment to see what they want
                if self._robot_wait < _WAIT_FOR_ROBOT:
                    self._robot_wait += 1
                    self._doing = "waiting for the robot"
                    return None
            else:
                self._robot_wait = 0
        if self._closing is not None:
            box, self._closing = self._closing, None
            if (world.is_open(box) and world.is_close(self.id, box)
                    and world.free_hand(self.id) is not None):
                return self._line(world, "close", box)
        if self._give_up_at is not None:
            if self._help_arrived(world):
                self._give_up_at = None
                self._wait = 0
            elif world.tick >= self._give_up_at:
                self._give_up_at = None
                self.status = "gave_up"
                self._doing = "gave up"
                self.markers.append(Marker(world.tick, "gave_up", self._idx, "stuck"))
                self._start_after()
                return None
            else:
                return self._wander(world)
        if self._wait > 0:
            self._wait -= 1
            target = self.pause_walk
            if target is not None and target in world.graph.nodes:
                if world.is_close(self.id, target):
                    self.pause_walk = None  # once, as a stuck person wanders once
                elif world.chars[self.id].sitting_on is None:
                    self._pause_walking = True
                    return self._walk_to(world, target)
            return None
        activities = self.after if self._after else self.activities
        for _ in range(len(activities) + 1):
            act = activities[self._idx] if self._idx < len(activities) else None
            if act is None:
                if self._after:
                    self._after = False
                    self._doing = self.status.replace("_", " ")
                else:
                    self._finish(world)
                return None
            if self._activity_done:
                self._next_activity()
                continue
            if not self._started:
                self._started = True
                if not self._after:
                    self.markers.append(Marker(world.tick, "activity_start", self._idx,
                                               act["type"]))
            line = getattr(self, _ACT_METHODS.get(act["type"]) or "_act_" + act["type"])(world, act)
            if line is not None or (self.status != "active" and not self._after) \
                    or not self._activity_done or self.outbox:  # a visible look or struggle takes the whole tick
                return line
        return None

    def _next_activity(self) -> None:
        self._idx += 1
        self._started = False
        self._stay = 0
        self._used = False
        self._failures = 0
        self._checked = set()
        self._target = None
        self._activity_done = False
        self._opened = None
        self._assist_go = False

    def _complete(self) -> None:
        self._activity_done = True

    def _start_after(self) -> None:
        """The task is over (done or given up): go on with :attr:`after`, if anything."""
        if self.after:
            self._next_activity()
            self._idx = 0
            self._after = True
            self._wait = 0

    def _finish(self, world: World) -> None:
        if self.status == "active":
            self.status = "done"
            self._doing = "done"
            self.markers.append(Marker(world.tick, "done", self._idx))
            self._start_after()

    def _wander(self, world: World) -> ScriptLine | None:
        """A stuck person may walk over to other furniture once, doing nothing there."""
        target = self.stuck_walk
        if target is None or target not in world.graph.nodes or world.is_close(self.id, target):
            self.stuck_walk = None
            return None
        if world.chars[self.id].sitting_on is not None:
            return ScriptLine("standup", ())
        return self._walk_to(world, target)

    def _help_arrived(self, world: World) -> bool:
        """While stuck: has someone made the task possible again?"""
        act = self.activity
        if act is None:
            return False
        if act["type"] == "fetch":
            if self._told:
                return True
            wanted = [int(act["object"]), *[int(o) for o in act.get("alternatives", ())]]
            if any(world.holder(o) == self.id for o in wanted):
                return True
            # saw one put somewhere new (or learned of one) since getting stuck; one that
            # someone else picked up is not within reach yet (they may be bringing it over)
            for o in wanted:
                loc = self.beliefs.get(o)
                if loc is not None and loc != self._stuck_beliefs.get(o) \
                        and loc not in world.chars:
                    return True
            return False
        if act["type"] == "deliver":
            dest = int(act["dest"])
            return dest in world.graph.nodes and not world.is_closed_container(dest)
        return False

    def _fail_attempt(self, world: World, detail: str) -> None:
        if self._after:  # after the task: skip what cannot be done
            self._complete()
            return
        self._failures += 1
        self.markers.append(Marker(world.tick, "attempt_failed", self._idx, detail))
        self._told = False
        if self._failures >= self.patience and self.linger > 0:
            self._give_up_at = world.tick + self.linger
            self._doing = "stuck"
            self._checked.clear()
            act = self.activity
            if act is not None and act["type"] == "fetch":
                wanted = [int(act["object"]), *[int(o) for o in act.get("alternatives", ())]]
                self._stuck_beliefs = {o: self.beliefs.get(o) for o in wanted}
            return
        if self._failures >= self.patience:
            self.status = "gave_up"
            self._doing = "gave up"
            self.markers.append(Marker(world.tick, "gave_up", self._idx, detail))
            self._start_after()
        else:
            self._wait = self.retry_wait

    def _walk_to(self, world: World, target: int) -> ScriptLine:
        return _walk_line(world.graph.nodes[target].class_name, target)

    def _line(self, world: World, verb: str, *ids: int) -> ScriptLine:
        nodes = world.graph.nodes
        return ScriptLine(verb, tuple([(nodes[i].class_name, i) for i in ids]))

    def _stand_if_sitting(self, world: World) -> ScriptLine | None:
        if world.chars[self.id].sitting_on is not None:
            return ScriptLine("standup", ())
        return None

    # noticing ------------------------------------------------------------
    def _help(self, world: World) -> ScriptLine | None:
        """One step of the help for someone noticed struggling (None when it is over)."""
        assert self._helping is not None
        person, obj, box = self._helping
        me = world.chars[self.id]
        if box is not None:
            if world.is_closed_container(box) and me.room == world.room_of(box):
                if not world.is_close(self.id, box):
                    if me.sitting_on is not None:
                        return ScriptLine("standup", ())
                    return self._walk_to(world, box)
                self._helping = None
                return self._line(world, "open", box)
            self._helping = None
            return None
        assert obj is not None
        holder = world.holder(obj)
        if holder == self.id:
            if person not in world.chars or world.chars[person].room != me.room:
                self._helping = None
                return None
            self._helping = None
            return self._line(world, "give", obj, person)
        if holder is None and not world.is_hidden(obj) and world.room_of(obj) == me.room \
                and world.free_hand(self.id) is not None:
            if me.sitting_on is not None:
                return ScriptLine("standup", ())
            if not world.is_close(self.id, obj):
                return self._walk_to(world, world.anchor(obj))
            return self._line(world, "grab", obj)
        self._helping = None
        return None

    # phone and tell ------------------------------------------------------
    def _act_phone(self, world: World, act: dict[str, Any]) -> ScriptLine | None:
        return self._busy_for(act, "on the phone", ("phone", "hangup"), ())

    def _busy_for(self, act: dict[str, Any], doing: str, verbs: tuple[str, str],
                  args: tuple[int, ...]) -> None:
        """Busy (a call, a chore) for ``act["ticks"]`` ticks: ``verbs`` at start and end."""
        if not self.busy and self._stay == 0:
            self.busy = True
            self._doing = doing
            self.outbox.append((verbs[0], args))
        elif self._stay < int(act.get("ticks", 0)):
            self._stay += 1
        else:
            self.busy = False
            self.outbox.append((verbs[1], args))
            self._complete()
        return None

    def _act_chore(self, world: World, act: dict[str, Any]) -> ScriptLine | None:
        target = int(act["target"])
        what = world.graph.nodes[target].class_name
        if not self.busy and self._stay == 0 and not world.is_close(self.id, target):
            self._doing = f"going to the {what}"
            if world.chars[self.id].sitting_on is not None:
                return ScriptLine("standup", ())
            return self._walk_to(world, target)
        return self._busy_for(act, f"busy at the {what}, back to the room",
                              ("chore", "chore_done"), (target,))

    def _act_tell(self, world: World, act: dict[str, Any]) -> ScriptLine | None:
        person = int(act["person"])
        me = world.chars[self.id]
        if person not in world.chars:
            self._complete()
            return None
        if world.chars[person].room != me.room:
            if me.sitting_on is not None:
                return ScriptLine("standup", ())
            return self._walk_to(world, person)
        self._doing = "talking"
        self.outbox.append(("tell", (person, int(act["object"]), int(act["place"]))))
        self._complete()
        return None

    # goto ---------------------------------------------------------------
    def _act_goto(self, world: World, act: dict[str, Any]) -> ScriptLine | None:
        target = int(act["target"])
        me = world.chars[self.id]
        self._doing = f"going to the {world.graph.nodes[target].class_name}"
        arrived = (me.room == target) if target in world._room_members \
            else world.is_close(self.id, target)  # _room_members: world.rooms, as a dict
        if not arrived:
            if me.sitting_on is not None:
                return ScriptLine("standup", ())
            return self._walk_to(world, target)
        use = act.get("use")
        if use and not self._used:
            self._used = True
            if use == "sit" and me.sitting_on is None:
                return self._line(world, "sit", target)
            if use == "switchon" and "ON" not in world.graph.nodes[target].states:
                return self._line(world, "switchon", target)
        if self._stay < int(act.get("stay", 0)):
            self._stay += 1
            self._doing = f"spending time at the {world.graph.nodes[target].class_name}"
            return None
        if me.sitting_on is not None:
            self._complete()
            return ScriptLine("standup", ())
        self._complete()
        return None

    # idle ---------------------------------------------------------------
    def _act_idle(self, world: World, act: dict[str, Any]) -> ScriptLine | None:
        if self._stay < int(act.get("ticks", 0)):
            self._stay += 1
            self._doing = "idle"
            return None
        self._complete()
        return None

    # fetch --------------------------------------------------------------
    def _act_fetch(self, world: World, act: dict[str, Any]) -> ScriptLine | None:
        alternatives = act.get("alternatives")
        wanted = [int(act["object"])]
        if alternatives:
            nodes = world.graph.nodes
            wanted += [int(o) for o in alternatives if int(o) in nodes]
        obj = wanted[0]
        holder = world._holder  # world.holder(o), inlined
        held = None
        for o in wanted:
            if holder.get(o) == self.id:
                held = o
                break
        if held is not None:
            dest = act.get("dest")
            if dest is None:
                self._complete()
                return None
            self._doing = f"carrying the {world.graph.nodes[held].class_name}"
            return self._put(world, held, int(dest))
        stand = self._stand_if_sitting(world)
        if stand is not None:
            return stand
        self._doing = "looking for something"
        place = self._choose_place(world, act, obj)
        if place is None:
            self._fail_attempt(world, "nowhere left to look")
            if self.status == "active":
                # start the search over: maybe it came back
                self._checked.clear()
            return None
        if not world.is_close(self.id, place):
            return self._walk_to(world, place)
        # at the place
        if world.is_closed_container(place) and "CAN_OPEN" in world.graph.nodes[place].properties:
            blocked = self._cannot_open(world, place)
            if blocked is not None:
                self._fail_attempt(world, blocked)
                return None
            self._opened = place
            return self._line(world, "open", place)
        here = None
        for o in wanted:
            if world.location(o) is not None and world.anchor(o) == place \
                    and not world.is_hidden(o):
                here = o
                break
        if here is not None:
            obj = here
            if not world.reachable(self.id, obj):
                # a stretch shows where, not what: the people of the house know what
                # this person is after (noticing helpers fetch it), the robot must infer it
                spot = world.location(obj) or place
                world.chars[self.id].extra["wants"] = obj
                self.outbox.append(("stretch", (spot, spot)))
                self._fail_attempt(world, f"{obj} out of reach")
                return None
            if world.free_hand(self.id) is None:
                self.outbox.append(("stand", (place, *world.held_by(self.id))))
                self._fail_attempt(world, f"hands full at {place}")
                return None
            if self._opened == place:
                self._closing = place
                self._opened = None
            return self._line(world, "grab", obj)
        # not here: negative evidence
        self._checked.add(place)
        for o in wanted:
            if self.beliefs.get(o) is not None and world.anchor(self.beliefs[o]) == place:
                del self.beliefs[o]
        self._target = None
        self._fail_attempt(world, f"not at {place}")
        if self._opened == place and world.is_open(place):
            # looked inside what it opened: close it again (the visible end of the look)
            self._opened = None
            return self._line(world, "close", place)
        self.outbox.append(("look", (place,)))
        return None

    def _cannot_open(self, world: World, box: int) -> str | None:
        """Emit the visible struggle and return a failure detail if this person cannot open
        ``box`` now (hands full or out of reach); None if it can."""
        if world.free_hand(self.id) is None:
            self._doing = f"at the {world.graph.nodes[box].class_name} with full hands"
            self.outbox.append(("stand", (box, *world.held_by(self.id))))
            return f"hands full at {box}"
        if not world.reachable(self.id, box):
            world.chars[self.id].extra["wants"] = None
            self.outbox.append(("stretch", (box, box)))
            return f"{box} out of reach"
        return None

    def _choose_place(self, world: World, act: dict[str, Any], obj: int) -> int | None:
        # where it believes the object is; then finish looking where it is looking; then
        # where it believes an equally good one is
        alternatives = [int(x) for x in act.get("alternatives", ())]
        if act.get("habit_first"):
            search = act.get("search") or []
            if search and int(search[0]) not in self._checked and int(search[0]) in world.graph.nodes:
                self._target = int(search[0])
                return self._target
        for k, o in enumerate([obj, *alternatives]):
            if k == 1 and self._target is not None and self._target not in self._checked:
                return self._target
            believed = self.beliefs.get(o)
            if believed is None or believed not in world.graph.nodes or believed in world.chars:
                continue  # unknown, or with someone else: look where such things are kept
            anchor = world.anchor(believed)
            if anchor not in self._checked:
                self._target = anchor
                return anchor
        if self._target is not None and self._target not in self._checked:
            return self._target
        for p in act.get("search", []):
            if p not in self._checked and p in world.graph.nodes:
                self._target = int(p)
                return self._target
        return None

    def _put(self, world: World, obj: int, dest: int) -> ScriptLine | None:
        if not world.is_close(self.id, dest):
            return self._walk_to(world, dest)
        node = world.graph.nodes[dest]
        if "CONTAINERS" in node.properties:
            if "CLOSED" in node.states:
                blocked = self._cannot_open(world, dest)
                if blocked is not None:
                    self._fail_attempt(world, blocked)
                    return None
                return self._line(world, "open", dest)
            return self._line(world, "putin", obj, dest)
        return self._line(world, "putback", obj, dest)

    # deliver ------------------------------------------------------------
    def _act_deliver(self, world: World, act: dict[str, Any]) -> ScriptLine | None:
        dest = int(act["dest"])
        held = [o for o in act["objects"] if world.holder(int(o)) == self.id]
        if not held:
            self._complete()
            return None
        self._doing = f"carrying things to the {world.graph.nodes[dest].class_name}"
        return self._put(world, int(held[0]), dest)

    # check --------------------------------------------------------------
    def _act_check(self, world: World, act: dict[str, Any]) -> ScriptLine | None:
        place = int(act["target"])
        stand = self._stand_if_sitting(world)
        if stand is not None:
            return stand
        if not world.is_close(self.id, place):
            return self._walk_to(world, place)
        node = world.graph.nodes[place]
        if self._opened == place:
            self._opened = None
            self._complete()
            if world.is_open(place) and world.free_hand(self.id) is not None:
                return self._line(world, "close", place)
            return None
        if "CAN_OPEN" in node.properties and world.is_closed_container(place) \
                and world.free_hand(self.id) is not None and world.reachable(self.id, place):
            self._opened = place
            return self._line(world, "open", place)
        self.outbox.append(("look", (place,)))
        self._complete()
        return None

    # assist -------------------------------------------------------------
    def _act_assist(self, world: World, act: dict[str, Any]) -> ScriptLine | None:
        anchor = int(act["anchor"])
        person = int(act["person"])
        obj = act.get("object")
        box = act.get("container")
        if obj is not None and world.holder(int(obj)) == self.id:
            if world.chars[person].room != world.chars[self.id].room:
                return self._walk_to(world, person)
            self._complete()
            return self._line(world, "give", int(obj), person)
        if not self._assist_go:
            if not world.is_close(self.id, anchor):
                if self._stay > 0:  # already waited here and left: do not come back
                    self._complete()
                    return None
                return self._walk_to(world, anchor)
            if self._stay >= int(act.get("max_wait", 8)):
                self._complete()
                return None
            self._stay += 1
            self._doing = f"standing at the {world.graph.nodes[anchor].class_name}"
            return None
        if box is not None:
            self._complete()
            if world.is_closed_container(int(box)) and world.is_close(self.id, int(box)):
                return self._line(world, "open", int(box))
            return None
        if obj is not None and world.holder(int(obj)) is None and not world.is_hidden(int(obj)):
            if not world.is_close(self.id, int(obj)):
                return self._walk_to(world, world.anchor(int(obj)))
            return self._line(world, "grab", int(obj))
        self._complete()
        return None

    # ------------------------------------------------------------------ feedback
    def feedback(self, world: World, line: ScriptLine, result: ActionResult) -> None:
        """React to the outcome of the line this actor just tried."""
        if self._pause_walking:  # a walk while pausing is no attempt at the task
            self._pause_walking = False
            if not result.ok:
                self.pause_walk = None
            return
        if self._give_up_at is not None and line.verb in ("walk", "standup"):
            if not result.ok:
                self.stuck_walk = None  # a stuck person's wandering is no attempt at the task
            return
        if result.ok:
            if line.verb in ("putin", "putback") and self.activity is not None:
                act = self.activity
                if line.verb == "putin":
                    box = line.args[1][1]
                    more = act["type"] == "deliver" and any(
                        world.holder(int(o)) == self.id for o in act["objects"])
                    if not more:
                        self._closing = box
                if act["type"] == "fetch":
                    self._complete()
            return
        if line.verb in ("close", "give", "open") and self.activity is not None \
                and self.activity["type"] in ("assist", "check"):
            return  # a courtesy that did not work out is not a failed attempt at the task
        self._fail_attempt(world, result.reason or line.verb)
