"""A PettingZoo view of the household: the robot and every person are agents.

:class:`MindHelperParallelEnv` (built by :func:`mindhelper_env.envs.parallel_env`) is a
``pettingzoo.ParallelEnv`` over ``MindHelper-VirtualHome-v3``: one ``step`` is one
observation window for everyone. The agents are ``"robot"`` and ``"person_0"`` ..
``"person_{n-1}"``, the episode's people in id order (``possible_agents`` lists
``max_people`` of them, 8 by default; an episode with more raises).

* **The robot** is the single-agent env's agent, unchanged: the same observation, reward,
  termination and ``info`` (the final one with ``episode_record``) as
  ``gym.make("MindHelper-VirtualHome-v3", **kwargs)`` gives for the same seed and actions.
* **People** act by their scripted policies (:class:`~mindhelper_env.actors.Actor`) unless
  ``people={"person_k": controller}`` says otherwise: a callable
  ``policy(observation, info) -> action`` (called by the env each step with that person's
  latest observation and info: learned or LLM-driven people), or ``"external"`` (the action
  comes from ``step(actions)``). A scripted person's entry in ``actions`` is ignored.
* **A person's action** is a program of VirtualHome-style script lines, as the robot's
  (``Text``; ``"none"`` keeps the current program running, a new program replaces what is
  left of it), executed one line per tick (a ``walk`` crosses one door per tick) with
  every verb but the robot's own ``tell``.
  An invalid action never raises: a value that is not a string, a malformed line, a line
  cut beyond 64, or a line the world refuses is skipped and counted in that person's
  ``infos[...]["invalid_actions"]`` (this episode so far), with the reasons in
  ``"action_error"``.
* **A person observes** what it would see from where it stands: the events of the window
  in the room it was in at each tick (and its own), narrated and listed as the robot's
  observation is (``narration``, ``events``, ``tick``); at ``reset`` its own room
  described. Its ``info`` has its ``name``, ``kind``, ``id``, ``room``, ``holding``,
  ``status`` (``active``/``done``/``gave_up``; a person not run by its script stays
  ``active``), ``controller``, ``pending_program``, ``action_error``, ``invalid_actions``
  and ``candidates`` (the objects and places in its room, and the rooms).
* **Rewards**: the robot's are the household env's; people get 0 (the benchmark scores the
  robot; a learned person brings its own reward, e.g. from ``status``).
* Every agent terminates (or is truncated) when the household episode does.

Needs the ``pettingzoo`` extra (``pip install "mindhelper-env[pettingzoo]"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

try:
    from pettingzoo import ParallelEnv
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError("the PettingZoo view needs pettingzoo: "
                      "pip install 'mindhelper-env[pettingzoo]'") from err
from gymnasium import spaces

from mindhelper_env.envs.virtualhome import (
    ACTION_MAX,
    MAX_PROGRAM_LINES,
    NARRATION_MAX,
    MindHelperEnv,
)
from mindhelper_env.render.text import clean_text, cut_text, describe_scene, window_events
from mindhelper_env.world.script import is_silence, parse_program

__all__ = ["MindHelperParallelEnv", "ROBOT", "CONTROLLERS"]

#: The robot's agent name.
ROBOT = "robot"
#: Named controllers of a person (besides a callable policy).
CONTROLLERS = ("scripted", "external")
_QUIET = "Nothing happened that you could see."


class _Puppet:
    """A person whose lines come from outside: stands in for the scripted policy's ``act``
    and ``feedback`` on the simulation's :class:`~mindhelper_env.actors.Actor` (which keeps
    perceiving and believing as before)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self.pending: list[Any] = []
        self.current: Any = None
        self.invalid = 0
        self.errors: list[str] = []

    def act(self, world: Any, robot: int | None = None) -> Any:
        self.current = self.pending[0] if self.pending else None
        return self.current

    def feedback(self, world: Any, line: Any, result: Any) -> None:
        # called for every failed line (and for putin/putback): a failed line is skipped
        if self.current is None:
            return
        if not result.ok:
            self.invalid += 1
            self.errors.append(f"line '{line}' at tick {world.tick}: {result.reason}")
        if not result.ok or result.done:
            self.pending.pop(0)
            self.current = None

    def after_tick(self, events: list[Any]) -> None:
        """The line of this tick worked (no feedback): drop it unless a walk goes on."""
        if self.current is None:
            return
        me = self.actor.id
        going = any(ev.actor == me and ev.ok and not ev.done for ev in events)
        if not going:
            self.pending.pop(0)
        self.current = None

    def issue(self, action: Any) -> None:
        if isinstance(action, bytes):
            action = action.decode("utf-8", "replace")
        if not isinstance(action, str):
            self.invalid += 1
            self.errors.append(f"action must be a string ('none' or script lines), got "
                               f"{type(action).__name__}; skipped")
            return
        if is_silence(action) or not action.strip():  # "" is silence, as "none"
            return
        if len(action) > ACTION_MAX:
            self.invalid += 1
            self.errors.append(f"action longer than {ACTION_MAX} characters; the rest was "
                               f"ignored")
            action = action[:ACTION_MAX]
        lines, bad = parse_program(action)
        if not lines and not bad:
            bad = [("", "empty program")]
        if len(lines) > MAX_PROGRAM_LINES:
            self.invalid += len(lines) - MAX_PROGRAM_LINES
            self.errors.append(f"program longer than {MAX_PROGRAM_LINES} lines; the rest was "
                               f"ignored")
            del lines[MAX_PROGRAM_LINES:]
        self.invalid += len(bad)
        self.errors.extend(f"line '{raw}': {why}" for raw, why in bad[:8])
        if len(bad) > 8:
            self.errors.append(f"... and {len(bad) - 8} more malformed lines")
        self.pending = lines


class MindHelperParallelEnv(ParallelEnv):
    """The household as a PettingZoo ``ParallelEnv`` (see the module docstring).

    Args:
        people: ``{"person_k": "scripted" | "external" | policy}`` (default: every person
            scripted); ``policy(observation, info) -> action`` is called each step.
        max_people: the people in ``possible_agents`` (an episode with more raises).
        render_mode: passed to ``MindHelper-VirtualHome-v3``
            (:class:`~mindhelper_env.envs.MindHelperEnv`).
        **env_kwargs: passed to ``MindHelper-VirtualHome-v3`` too.
    """

    metadata = {"name": "mindhelper_household_v0", "render_modes": ["ansi", "rgb_array"],
                "render_fps": 4, "is_parallelizable": True}

    def __init__(self, people: Mapping[str, Any] | None = None, *, max_people: int = 8,
                 render_mode: str | None = None, **env_kwargs: Any) -> None:
        if isinstance(max_people, bool) or not isinstance(max_people, (int, np.integer)) \
                or max_people < 1:
            raise ValueError(f"max_people must be a positive int, got {max_people!r}")
        self.household = MindHelperEnv(render_mode=render_mode, **env_kwargs)
        self.render_mode = render_mode
        self.max_people = int(max_people)
        names = [f"person_{i}" for i in range(self.max_people)]
        self.possible_agents = [ROBOT, *names]
        self.controllers = self._check_people(people, names)
        text = self.household.observation_space
        person_space = spaces.Dict({k: text[k] for k in ("narration", "events", "tick")})
        self._observation_spaces = {ROBOT: text, **{n: person_space for n in names}}
        # one action space object per agent (PettingZoo seeds each one)
        robot_actions = self.household.action_space
        self._action_spaces = {ROBOT: robot_actions}
        for n in names:
            self._action_spaces[n] = spaces.Text(max_length=robot_actions.max_length,
                                                 min_length=0,
                                                 charset="".join(sorted(robot_actions.character_set)))
        self.agents: list[str] = []
        self._people: dict[str, Any] = {}
        self._puppets: dict[str, _Puppet] = {}
        self._last: dict[str, tuple[Any, dict[str, Any]]] = {}
        self._rooms: dict[int, dict[int, int | None]] = {}
        self._mark = 0

    @staticmethod
    def _check_people(people: Mapping[str, Any] | None, names: list[str]) -> dict[str, Any]:
        if people is None:
            return {}
        if not isinstance(people, Mapping):
            raise ValueError(f"people must be a dict {{'person_k': controller}}, got "
                             f"{type(people).__name__}")
        out = {}
        for name, ctl in people.items():
            if name not in names:
                raise ValueError(f"unknown person {name!r}; people are {names[0]} .. "
                                 f"{names[-1]} (raise max_people for more)")
            if not (callable(ctl) or ctl in CONTROLLERS):
                raise ValueError(f"controller of {name!r} must be 'scripted', 'external' or "
                                 f"a callable policy(observation, info), got {ctl!r}")
            out[name] = ctl
        return out

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    @property
    def simulation(self) -> Any:
        return self.household.simulation

    def person(self, agent: str) -> Any:
        """The simulation's :class:`~mindhelper_env.actors.Actor` of ``agent``."""
        return self._people[agent]

    def episode_record(self) -> dict[str, Any]:
        """The robot's scoring record of the episode so far (the household env's)."""
        return self.household.episode_record()

    # ------------------------------------------------------------------ API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.household.reset(seed=seed, options=options)
        sim = self.household.simulation
        if len(sim.actors) > self.max_people:
            raise ValueError(f"this episode has {len(sim.actors)} people; the view was made "
                             f"with max_people={self.max_people}")
        self._people = {f"person_{i}": a for i, a in enumerate(sim.actors)}
        self._puppets = {}
        for name, actor in self._people.items():
            if self.controllers.get(name, "scripted") != "scripted":
                puppet = _Puppet(actor)
                # instance attributes shadow the scripted policy for this episode only
                actor.act, actor.feedback = puppet.act, puppet.feedback
                self._puppets[name] = puppet
        self.household.on_tick = self._on_tick if self._puppets or self._people else None
        self.agents = [ROBOT, *self._people]
        observations = {ROBOT: obs}
        infos = {ROBOT: info}
        world = sim.world
        h = self.household
        for name, actor in self._people.items():
            room = world.chars[actor.id].room
            text = describe_scene(world, [room] if room is not None else [], h._names,
                                  actor.id, h._kinds, h._labels,
                                  doors=sim.perception == "sight")
            # its last line places the viewer, worded for the robot: worded for the person
            where = h._labels.room(room) if room is not None else "no room"
            text = text.rsplit("\n", 1)[0] + f"\nYou ({actor.name}, {actor.id}) are in the " \
                f"{where}."
            observations[name] = {"narration": clean_text(text, NARRATION_MAX),
                                  "events": "[]", "tick": obs["tick"]}
            infos[name] = self._person_info(name, None)
        self._last = {n: (observations[n], infos[n]) for n in self._people}
        return observations, infos

    def step(self, actions: Mapping[str, Any]):
        if not self.agents:
            raise RuntimeError("the episode is over; call reset() before step()")
        if not isinstance(actions, Mapping) or ROBOT not in actions:
            raise ValueError("actions must be a dict with the robot's action under 'robot'")
        for name, puppet in self._puppets.items():
            puppet.errors = []
            ctl = self.controllers[name]
            if ctl == "external":
                if name not in actions:
                    puppet.invalid += 1
                    puppet.errors.append("no action given; skipped")
                    continue
                action = actions[name]
            else:
                action = ctl(*self._last[name])
            puppet.issue(action)
        sim = self.household.simulation
        self._rooms = {}
        self._mark = start = len(sim.log)
        obs, reward, terminated, truncated, info = self.household.step(actions[ROBOT])
        window = sim.log[start:]
        observations = {ROBOT: obs}
        rewards = {ROBOT: reward}
        infos = {ROBOT: info}
        h = self.household
        for name, actor in self._people.items():
            me = actor.id
            seen = [ev for ev in window
                    if ev.actor == me or ev.room == self._rooms.get(ev.tick, {}).get(me)]
            if seen:
                lines, _dicts, events_text = window_events(sim.world, seen, h._names,
                                                           h._style, h._labels)
                text = clean_text("\n".join(lines), NARRATION_MAX)
                events_text = cut_text(events_text, h.observation_space["events"].max_length)
            else:
                text, events_text = _QUIET, "[]"
            observations[name] = {"narration": text, "events": events_text,
                                  "tick": obs["tick"]}
            rewards[name] = 0.0
            infos[name] = self._person_info(name, self._puppets.get(name))
        done = bool(terminated or truncated)
        terms = dict.fromkeys(self.agents, bool(terminated))
        truncs = dict.fromkeys(self.agents, bool(truncated))
        self._last = {n: (observations[n], infos[n]) for n in self._people}
        if done:
            self.agents = []
            self.household.on_tick = None
        return observations, rewards, terms, truncs, infos

    def _on_tick(self, sim: Any, _visible: list[Any]) -> None:
        tick = sim.world.tick - 1
        events = sim.log[self._mark:]
        self._mark = len(sim.log)
        chars = sim.world.chars
        self._rooms[tick] = {a.id: chars[a.id].room for a in self._people.values()}
        for puppet in self._puppets.values():
            puppet.after_tick(events)

    def _person_info(self, name: str, puppet: _Puppet | None) -> dict[str, Any]:
        actor = self._people[name]
        h = self.household
        sim = h.simulation
        w = sim.world
        room = w.chars[actor.id].room
        grabbable, furniture, rooms = h._node_lists(sim)
        here = {room} if room is not None else set()
        if puppet is None:
            puppet = self._puppets.get(name)
        ctl = self.controllers.get(name, "scripted")
        return {
            "tick": sim.tick,
            "window": h._window,
            "id": actor.id,
            "name": actor.name,
            "kind": actor.kind,
            "room": -1 if room is None else room,
            "holding": w.held_by(actor.id),
            "status": actor.status,
            "controller": ctl if isinstance(ctl, str) else "policy",
            "pending_program": [str(x) for x in puppet.pending] if puppet else [],
            "action_error": "; ".join(puppet.errors) if puppet and puppet.errors else None,
            "invalid_actions": puppet.invalid if puppet else 0,
            "candidates": {
                "objects": [{"id": nid, "class": cls, "location": loc}
                            for nid, cls, loc, _r in w.objects_in_with(grabbable, here)],
                "locations": [{"id": nid, "class": cls, "open": w.is_open(nid)
                               if can_open else None}
                              for nid, cls, can_open, r in furniture if r == room],
                "rooms": [{"id": r, "class": cls} for r, cls in rooms],
            },
        }

    def render(self) -> Any:
        return self.household.render()

    def close(self) -> None:
        self.household.close()

    def state(self) -> Any:
        raise NotImplementedError("the view has no global state array; use "
                                  "env.simulation (the symbolic world)")
