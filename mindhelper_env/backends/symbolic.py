"""The symbolic backend: runs an episode spec tick by tick with no display and no GPU.

:class:`Simulation` owns the world, the actors, the scheduled background events and the
robot's pending program. The Gymnasium env drives it window by window; the scenario generator
drives it directly to validate episodes (no-help and reference rollouts).

Order inside one tick: scheduled background events, then the robot's next pending line, then
each actor (by id) acts; finally every actor perceives the tick's events in its room.

Only what happened is an event: a line that fails changes nothing and leaves no event (the
robot learns about its own failures from ``info["action_error"]``). Actors' visible behaviour
that is not a script line (``look``, ``stretch``, ``stand``) becomes an event too.

**Interventions.** Robot lines whose verb is in
:data:`~mindhelper_env.world.script.MOVEMENT_VERBS` (walk, find, standup) are free. The
robot's *intervention* is the **issue** of its first program that contains an *acting line*
(a line that parses as a script line whose verb is not a movement verb), whether or not that
line is ever executed: a robot that commits to act has intervened, and replacing the program
later does not undo it. :attr:`Simulation.intervention_tick` is the tick that program was
issued (so a program of free moves followed by an act cannot be scored as help in one
episode and as silence in another that happens to end first). :attr:`Simulation.first_move_tick`
is the issue tick of the program whose line was the first *executed* movement.

**Episode end.** :attr:`Simulation.settled` is true once the focus person is done or gave up,
or nobody is active; :meth:`run` stops there or at the horizon (the generator's validation
rollouts). The Gymnasium envs ignore it: their episodes always run to the horizon
(:meth:`episode_flags`), so an episode's length says nothing about its outcome.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from mindhelper_env.actors.actor import Actor
from mindhelper_env.world.script import MOVEMENT_VERBS, ScriptLine, is_silence, parse_program
from mindhelper_env.world.world import Event, World

__all__ = ["Simulation", "ROBOT_ID", "ExecutedLine", "PERCEPTION_MODES"]

#: Node id of the robot character in every episode.
ROBOT_ID = 1
#: How the people of an episode perceive (the spec's ``"perception"``; default ``room``):
#: ``room`` — everyone in a room perceives everything that happens there (``mh-gen-2.x``);
#: ``attention`` — a person on the phone perceives none of the others' events
#: (``mh-gen-3.0``; :class:`~mindhelper_env.actors.actor.Actor`); ``sight`` — attention, a
#: chore done facing away blinds like a call, and objects taken and put next door are seen
#: through an open door (``mh-gen-3.1``).
PERCEPTION_MODES = ("room", "attention", "sight")

_MOVING_VERBS = frozenset({"grab", "putin", "putback", "drop", "give"})
#: Verbs whose success Actor.feedback reacts to (it reacts to every failure).
_FEEDBACK_VERBS = frozenset({"putin", "putback"})


@dataclass(slots=True)
class ExecutedLine:
    """A robot line that was executed at ``tick``, from the program issued at ``issued``."""

    tick: int
    line: str
    ok: bool
    reason: str | None
    issued: int = -1
    verb: str = ""

    @property
    def intervenes(self) -> bool:
        return self.verb not in MOVEMENT_VERBS

    def to_dict(self) -> dict[str, Any]:
        return {"tick": self.tick, "line": self.line, "ok": self.ok, "reason": self.reason,
                "issued": self.issued}


class Simulation:
    """One episode on the symbolic world.

    Parameters
    ----------
    spec:
        an episode spec dict (see :mod:`mindhelper_env.scenarios.spec`).
    world:
        optional: a :class:`World` built from the episode's graph that has never been stepped
        (e.g. ``template.copy()``); the simulation takes it over instead of parsing
        ``spec["graph"]``, which may then be absent.
    """

    def __init__(self, spec: dict[str, Any], world: World | None = None) -> None:
        if not isinstance(spec, dict):
            raise ValueError(f"an episode spec must be a dict, got {type(spec).__name__}")
        missing = [k for k in ("graph", "actors") if k not in spec
                   and not (k == "graph" and world is not None)]
        if missing:
            raise ValueError(f"episode spec has no {', '.join(repr(k) for k in missing)}")
        if not isinstance(spec["actors"], list) or not all(
            isinstance(a, dict) and {"id", "name", "activities"} <= a.keys() for a in spec["actors"]
        ):
            raise ValueError("episode spec 'actors' must be a list of {id, name, activities, ...}")
        self.spec = spec
        if world is None:
            world = World(spec["graph"], robot_ids=(ROBOT_ID,))
        elif not isinstance(world, World):
            raise TypeError(f"world must be a World, got {type(world).__name__}")
        elif ROBOT_ID in world.chars:
            world.set_robot(ROBOT_ID)
        self.world = world
        self.robot = ROBOT_ID
        if ROBOT_ID not in self.world.chars:
            raise ValueError("episode graph has no robot character (node 1)")
        perception = spec.get("perception", "room")
        if perception not in PERCEPTION_MODES:
            raise ValueError(f"episode spec 'perception' must be one of {list(PERCEPTION_MODES)}, "
                             f"got {perception!r}")
        #: how people perceive (:data:`PERCEPTION_MODES`): ``room`` (everyone in a room
        #: perceives what happens there) or ``attention`` (not while on the phone)
        self.perception: str = perception
        self.actors: list[Actor] = []
        for a in sorted(spec["actors"], key=lambda a: a["id"]):
            actor = Actor.from_spec(a, attention=perception in ("attention", "sight"),
                                    sight=perception == "sight")
            if actor.id not in self.world.chars:
                raise ValueError(f"actor {actor.name} ({actor.id}) is not a character in the graph")
            self.world.set_reach(actor.id, actor.reach)
            self.actors.append(actor)
        self.actor_by_id = {a.id: a for a in self.actors}
        ref = spec.get("reference") or {}
        self.focus_id: int = int(ref.get("focus_actor", self.actors[0].id if self.actors else 0))
        self.horizon: int = int(spec.get("horizon", 200))
        self._events = sorted(spec.get("events", []), key=lambda e: (e["tick"], e.get("object", 0)))
        self._next_event = 0
        self.pending: list[ScriptLine] = []
        self._issued = -1
        self._intervention: int | None = None
        #: whether the last :meth:`issue` cut the program at ``max_lines``
        self.program_cut = False
        self.log: list[Event] = []
        self.robot_lines: list[ExecutedLine] = []
        self.actions: list[dict[str, Any]] = []
        self.created_false_belief = False
        self._task_objects = self._focus_objects()
        for actor in self.actors:
            actor.perceive(self.world, [])

    # ------------------------------------------------------------------ state
    @property
    def tick(self) -> int:
        return self.world.tick

    @property
    def focus(self) -> Actor | None:
        return self.actor_by_id.get(self.focus_id)

    @property
    def settled(self) -> bool:
        """The focus person is done or gave up (or nobody is active any more).

        Internal: validation rollouts (:meth:`run`) stop here. The envs' episodes do not
        end here (see :meth:`episode_flags`)."""
        f = self.actor_by_id.get(self.focus_id)
        if f is not None and f.status != "active":
            return True
        for a in self.actors:
            if a.status == "active":
                return False
        return True

    @property
    def terminated(self) -> bool:
        """Alias of :attr:`settled`, kept for the scenario generator's rollouts (not the envs'
        ``terminated``: that is :meth:`episode_flags`)."""
        return self.settled

    @property
    def truncated(self) -> bool:
        """Not :attr:`settled` and the horizon is reached (the end of a :meth:`run`)."""
        return self.end_flags()[1]

    def end_flags(self) -> tuple[bool, bool]:
        """``(settled, horizon reached before settling)``: how a :meth:`run` ended."""
        settled = self.settled
        return settled, not settled and self.world.tick >= self.horizon

    def episode_flags(self, max_ticks: int | None = None) -> tuple[bool, bool]:
        """The envs' ``(terminated, truncated)``: terminated exactly when the tick reaches the
        horizon, whatever happened (people who finished stay idle or carry on); truncated
        when a ``max_ticks`` limit below the horizon is reached first."""
        tick = self.world.tick
        if tick >= self.horizon:
            return True, False
        return False, max_ticks is not None and tick >= max_ticks

    def focus_succeeded(self) -> bool:
        f = self.focus
        return f is not None and f.status == "done"

    def _focus_objects(self) -> set[int]:
        f = self.focus
        objs: set[int] = set()
        if f is None:
            return objs
        for act in f.activities:
            if "object" in act:
                objs.add(int(act["object"]))
            objs.update(int(o) for o in act.get("alternatives", []))
            objs.update(int(o) for o in act.get("objects", []))
        return objs

    # ------------------------------------------------------------------ robot
    def issue(self, action: str, *, max_lines: int | None = None) -> list[tuple[str, str]]:
        """Give the robot a new program (replacing what is left of the old one).

        Returns the ``(line, reason)`` pairs that could not be parsed (they are skipped).
        ``none`` (or an empty string) keeps the current program running. With ``max_lines`` the program is cut
        to its first ``max_lines`` parsed lines (:attr:`program_cut` says so). A program
        whose kept lines include an acting line (any verb but walk, find, standup) is an
        intervention, from this tick on (:attr:`intervention_tick`); its action entry
        records that as ``"acts"``.
        """
        self.program_cut = False
        if is_silence(action) or not action.strip():  # "" is silence, as "none"
            return []
        lines, errors = parse_program(action)
        if not lines and not errors:
            errors = [("", "empty program")]
        if max_lines is not None and len(lines) > max_lines:
            del lines[max_lines:]
            self.program_cut = True
        acts = any(ln.verb not in MOVEMENT_VERBS for ln in lines)
        tick = self.world.tick
        self.actions.append({"tick": tick, "program": action[:2000], "acts": acts})
        if acts and self._intervention is None:
            self._intervention = tick
        self.pending = lines
        self._issued = tick
        return errors

    @property
    def intervention_tick(self) -> int | None:
        """Issue tick of the robot's first program containing an acting line (executed or
        not), or None."""
        return self._intervention

    @property
    def first_move_tick(self) -> int | None:
        """Issue tick of the program whose line was the robot's first movement, or None."""
        for ln in self.robot_lines:
            if not ln.intervenes:
                return ln.issued
        return None

    @property
    def intervened(self) -> bool:
        """The robot issued a program containing an acting line."""
        return self._intervention is not None

    def _robot_step(self) -> Event | None:
        if not self.pending:
            return None
        line = self.pending[0]
        before = self._snapshot_for_harm(line)
        res = self.world.execute(self.robot, line, max_hops=1)
        if res.ok and not res.done:
            return res.event
        self.pending.pop(0)
        self.robot_lines.append(ExecutedLine(self.world.tick, str(line), res.ok, res.reason,
                                             self._issued, line.verb))
        if res.ok:
            self._check_harm(line, before)
            return res.event
        return None

    def _snapshot_for_harm(self, line: ScriptLine) -> tuple[int, int | None] | None:
        if line.verb in _MOVING_VERBS and line.args and line.args[0][1] in self._task_objects:
            obj = line.args[0][1]
            return obj, self.world.location(obj)
        return None

    def _check_harm(self, line: ScriptLine, before: tuple[int, int | None] | None) -> None:
        """Flag a robot action that leaves the focus actor with a false belief."""
        f = self.focus
        if f is None:
            return
        if line.verb == "tell" and line.args[0][1] == f.id:
            obj, loc = line.args[1][1], line.args[2][1]
            truth = self.world.location(obj)
            if (obj in self._task_objects and truth is not None
                    and self.world.holder(obj) is None
                    and self.world.anchor(truth) != self.world.anchor(loc)):
                self.created_false_belief = True
            return
        if before is None:
            return
        obj, old = before
        new = self.world.location(obj)
        if new == f.id:
            return
        believed = f.beliefs.get(obj)
        if believed is not None and believed == old and new != old:
            if self.world.chars[f.id].room != self.world.chars[self.robot].room:
                self.created_false_belief = True

    # ------------------------------------------------------------------ ticking
    def step_tick(self) -> list[Event]:
        """Advance one tick; returns the events that happened in it."""
        w = self.world
        events: list[Event] = []
        while self._next_event < len(self._events) and self._events[self._next_event]["tick"] <= w.tick:
            ev = self._background(self._events[self._next_event])
            self._next_event += 1
            if ev is not None:
                events.append(ev)
        if self.pending:
            rev = self._robot_step()
            if rev is not None:
                events.append(rev)
        for actor in self.actors:
            line = actor.act(w, self.robot)
            if line is not None:
                res = w.execute(actor.id, line, max_hops=1)
                if not res.ok or line.verb in _FEEDBACK_VERBS:  # else feedback does nothing
                    actor.feedback(w, line, res)
                if res.ok and res.event is not None:
                    events.append(res.event)
            if actor.outbox:
                room = w.chars[actor.id].room
                for verb, args in actor.outbox:
                    events.append(Event(w.tick, actor.id, verb, args, True, room))
                actor.outbox.clear()
        for actor in self.actors:
            actor.perceive(w, events)
        self.log.extend(events)
        w.tick += 1
        return events

    def _background(self, e: dict[str, Any]) -> Event | None:
        if e.get("type") != "move":
            return None
        obj, dst, rel = int(e["object"]), int(e["to"]), str(e.get("relation", "ON"))
        w = self.world
        if w.holder(obj) is not None:
            return None
        src = w.placement(obj)
        old_room = w.room_of(obj)
        w.move_object(obj, rel, dst)
        ev = Event(w.tick, 0, "move", (obj, dst), True, w.room_of(dst), None, src)
        # people in the room the object left notice it is gone
        if old_room is not None and old_room != ev.room:
            for actor in self.actors:
                if w.chars[actor.id].room == old_room and src is not None:
                    if actor.beliefs.get(obj) == src[1]:
                        del actor.beliefs[obj]
        return ev

    def fork(self) -> Simulation:
        """An independent copy of this simulation in its current state: the same ticks
        follow from it as from the original (the generator's validation branches its helped
        rollouts from the onset instead of replaying each from tick 0)."""
        sim = Simulation.__new__(Simulation)
        sim.__dict__.update(self.__dict__)
        sim.world = self.world.copy()
        sim.actors = copy.deepcopy(self.actors)
        sim.actor_by_id = {a.id: a for a in sim.actors}
        sim.pending = list(self.pending)
        sim.log = list(self.log)
        sim.robot_lines = list(self.robot_lines)
        sim.actions = [dict(a) for a in self.actions]
        sim._task_objects = set(self._task_objects)
        return sim

    def run(self, max_ticks: int | None = None) -> None:
        """Tick until the episode settles (:attr:`settled`) or reaches the horizon (or
        ``max_ticks`` more ticks)."""
        limit = self.horizon if max_ticks is None else min(self.horizon, self.world.tick + max_ticks)
        while not self.settled and self.world.tick < limit:
            self.step_tick()

    # ------------------------------------------------------------------ records
    def harm(self) -> bool:
        """Did the robot make the focus actor fail or leave it with a false belief?"""
        if self.created_false_belief:
            return True
        ref = self.spec.get("reference") or {}
        if self.intervened and not ref.get("needs_intervention", False):
            f = self.focus
            return f is not None and f.status == "gave_up"
        return False
