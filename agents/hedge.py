"""Hedges: wrappers that change *when* (or whether) an agent's decision reaches the env.

A benchmark that needs a mind must not reward hedging, and these wrappers are how the
validity instruments check it (docs/validity.md). Each wraps any agent and plays as
``NAME+<hedge>K`` in the registry (``make_agent``, ``evaluate``, ``mindhelper evaluate
--agents``), nested ones too (``physical-rules+wait3+prefix8``):

* ``+prefixN`` — :class:`MovementPrefix`: ``N`` free ``[walk]`` lines in front of every
  program. Were an intervention timed by the first *executed* acting line, an agent could put
  free moves in front of every program, so that in an episode that ends before the act comes
  up the robot is scored silent. The benchmark closes that door twice — the intervention is
  the *issue* of the first program containing an acting line, and every episode runs to its
  horizon (docs/metrics.md) — and this wrapper checks it: it changes when the act is
  executed, never whether the agent committed to it. The lines are ``[walk] <room> (id)`` to
  the room the robot stands in (a real place from ``info``, so each executes as one tick of
  movement; a location in view when the robot's room is unknown); the env runs at most 64
  lines of a program and prefixed lines count toward that;
* ``+waitK`` — :class:`WaitAndSee`: hold the agent's program until ``K`` ticks after the
  struggle it answers (the latest struggle of the person it helps in the window that produced
  it; else ``K`` ticks after it was issued) and send it only if that person has not resolved
  the struggle meanwhile (see :meth:`WaitAndSee.resolved`); dropped otherwise. Programs
  go out at decisions (one per window), so the wait ends at the first decision at or after
  that tick;
* ``+repeatN`` — :class:`OnRepeat`: hold the program until the person it helps has shown
  ``N`` struggles (looks that took nothing, stretches, full-handed stops) in all;
* ``+delayK`` — :class:`Delay`: send the program ``K`` windows later, whatever happens.

Every wrapper reads only ``obs`` and ``info``; ``reset`` and ``usage`` are the wrapped
agent's (``trigger_ops`` and ``trace`` too, when it has them), and ``name`` is
``"<agent name>+<hedge><K>"``. The wrapped agent sees every window as before; while one of
its programs is held, the programs it issues are not sent (the held one goes out, or is
dropped, first). Each holding wrapper counts what it ``released`` and ``dropped``.
"""

from __future__ import annotations

import re
from typing import Any

from mindhelper_env.world.script import is_silence

__all__ = ["MovementPrefix", "WaitAndSee", "OnRepeat", "Delay", "HEDGES", "PREFIX_SUFFIX",
           "HEDGE_SUFFIX", "split_prefix_suffix", "split_hedge_suffix", "strip_hedges",
           "make_hedge"]

#: ``NAME+prefixN``: the registry agent ``NAME`` wrapped in ``MovementPrefix(lines=N)``.
PREFIX_SUFFIX = re.compile(r"^(?P<base>.+)\+prefix(?P<lines>\d{1,3})$")


def split_prefix_suffix(name: str) -> tuple[str, int | None]:
    """``("reactive", 10)`` for ``"reactive+prefix10"``; ``(name, None)`` without a suffix."""
    m = PREFIX_SUFFIX.match(name) if isinstance(name, str) else None
    if m is None:
        return name, None
    return m.group("base"), int(m.group("lines"))


class MovementPrefix:
    """Prefix every non-``"none"`` program of ``agent`` with ``lines`` free ``[walk]`` lines.

    ``reset`` and ``usage`` are the wrapped agent's (``trigger_ops`` and ``trace`` too, when
    it has them); ``name`` is ``"<agent name>+prefix<lines>"``.
    """

    def __init__(self, agent: Any, lines: int = 8) -> None:
        if isinstance(lines, bool) or not isinstance(lines, int) or not 0 <= lines <= 63:
            raise ValueError(f"lines must be an int from 0 to 63, got {lines!r}")
        if not callable(getattr(agent, "act", None)):
            raise TypeError(f"agent must have an act(obs, info) method, got {type(agent).__name__}")
        self.agent = agent
        self.lines = lines
        self.name = f"{getattr(agent, 'name', type(agent).__name__)}+prefix{lines}"

    @property
    def usage(self) -> Any:
        return self.agent.usage

    def __getattr__(self, attr: str) -> Any:
        # trigger_ops, trace, ... of the wrapped agent (only for attributes not set here)
        if attr == "agent":
            raise AttributeError(attr)
        return getattr(self.agent, attr)

    def reset(self, *, seed: int | None = None) -> None:
        self.agent.reset(seed=seed)

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        program = self.agent.act(observation, info)
        if not isinstance(program, str) or is_silence(program) or not program.strip() \
                or self.lines == 0:
            return program
        walk = _walk_line(info)
        if walk is None:
            return program
        return "\n".join([walk] * self.lines + [program])


def _walk_line(info: Any) -> str | None:
    """``[walk]`` to the robot's room (else to the first location in view), or None."""
    if not isinstance(info, dict):
        return None
    cands = info.get("candidates") or {}
    robot = info.get("robot") or {}
    room = robot.get("room")
    for r in cands.get("rooms") or []:
        if r.get("id") == room:
            return f"[walk] <{r['class']}> ({r['id']})"
    for loc in cands.get("locations") or []:
        return f"[walk] <{loc['class']}> ({loc['id']})"
    return None


# ---------------------------------------------------------------------- holding hedges
#: ``NAME+<hedge>K``: the registry agent ``NAME`` wrapped in the hedge (:data:`HEDGES`).
HEDGE_SUFFIX = re.compile(r"^(?P<base>.+)\+(?P<kind>prefix|wait|repeat|delay)(?P<k>\d{1,3})$")

_CHARACTER = re.compile(r"<character>\s*\((\d+)\)")
_LINE = re.compile(r"^\s*\[(\w+)\]\s*<([^>]*)>\s*\((\d+)\)")


def _program_parts(program: str) -> tuple[int | None, set[int], set[str], set[int]]:
    """The person a program helps (its first ``<character>``), the objects it takes or
    gives and their classes, and the containers it opens."""
    person = None
    objects: set[int] = set()
    classes: set[str] = set()
    boxes: set[int] = set()
    for line in re.split(r"[\n;]", program):
        m = _CHARACTER.search(line)
        if m is not None and person is None:
            person = int(m.group(1))
        head = _LINE.match(line)
        if head is None:
            continue
        verb, cls, first = head.group(1), head.group(2).strip(), int(head.group(3))
        if verb in ("grab", "give"):
            objects.add(first)
            classes.add(cls)
        elif verb == "open":
            boxes.add(first)
    return person, objects, classes, boxes


def _events(obs: Any) -> list[dict[str, Any]]:
    from mindhelper_env.agents.tracker import parse_events

    return parse_events(obs) if isinstance(obs, dict) else []


def _ids(ev: dict[str, Any]) -> list[int]:
    return [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]


class _Holding:
    """Shared plumbing: forward every window to the wrapped agent, hold what it issues, and
    release (or drop) it when :meth:`_release` says so."""

    kind = "hold"

    def __init__(self, agent: Any, k: int) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 999:
            raise ValueError(f"{self.kind} takes an int from 0 to 999, got {k!r}")
        if not callable(getattr(agent, "act", None)):
            raise TypeError(f"agent must have an act(obs, info) method, got {type(agent).__name__}")
        self.agent = agent
        self.k = k
        self.name = f"{getattr(agent, 'name', type(agent).__name__)}+{self.kind}{k}"
        self._reset_state()

    @property
    def usage(self) -> Any:
        return self.agent.usage

    def __getattr__(self, attr: str) -> Any:
        if attr == "agent":
            raise AttributeError(attr)
        return getattr(self.agent, attr)

    def _reset_state(self) -> None:
        self.held: str | None = None
        self.held_at = 0
        self.held_window = 0
        self.window = 0
        #: how many held programs were sent and how many dropped (resolved meanwhile)
        self.released = 0
        self.dropped = 0

    def reset(self, *, seed: int | None = None) -> None:
        self.agent.reset(seed=seed)
        self._reset_state()

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        program = self.agent.act(observation, info)
        tick = info.get("tick", 0) if isinstance(info, dict) else 0
        tick = tick if isinstance(tick, int) else 0
        self.window += 1
        events = _events(observation)
        if self.held is not None:
            verdict = self._release(events, tick)
            if verdict is not None:
                out, self.held = self.held, None
                if verdict:
                    self.released += 1
                    return out
                self.dropped += 1
        if isinstance(program, str) and program.strip() and not is_silence(program) \
                and self.held is None:
            self.held, self.held_at, self.held_window = program, tick, self.window
            self._hold(program, events)
            verdict = self._release(events, tick)
            if verdict is not None:
                out, self.held = self.held, None
                if verdict:
                    self.released += 1
                    return out
                self.dropped += 1
        return "none"

    def _hold(self, program: str, events: list[dict[str, Any]]) -> None:
        """Called when a program is first held (``events``: the window that produced it)."""

    def _release(self, events: list[dict[str, Any]], tick: int) -> bool | None:
        """True: send the held program now; False: drop it; None: keep holding."""
        raise NotImplementedError


class WaitAndSee(_Holding):
    """Send the agent's program ``k`` ticks after the struggle it answers (see the module),
    unless the person it helps resolved the struggle meanwhile (:meth:`resolved`)."""

    kind = "wait"

    def _hold(self, program: str, events: list[dict[str, Any]]) -> None:
        self.person, self.objects, self.classes, self.boxes = _program_parts(program)
        # the wait runs from the person's latest struggle in the window, when it shows one
        struggles = [int(ev["tick"]) for ev in events if ev.get("actor") == self.person
                     and ev.get("verb") in ("look", "stretch", "stand", "close")]
        if struggles:
            self.held_at = max(struggles)

    def resolved(self, ev: dict[str, Any]) -> bool:
        """Does ``ev`` resolve the struggle? Anyone but the robot takes one of the program's
        objects; the person takes another object of one of their classes, or is handed
        something; someone opens the program's container."""
        who, verb, args = ev.get("actor"), ev.get("verb"), _ids(ev)
        if who == 1 or not args:  # the robot's own moves resolve nothing
            return False
        if verb == "grab" and args[0] in self.objects:
            return True
        if verb == "grab" and who == self.person and any(
                isinstance(a, dict) and a.get("class") in self.classes
                for a in ev.get("args", [])[:1]):
            return True
        if verb == "give" and len(args) >= 2 and args[1] == self.person:
            return True
        return verb == "open" and args[0] in self.boxes

    def _release(self, events: list[dict[str, Any]], tick: int) -> bool | None:
        if any(self.held_at < int(ev["tick"]) and self.resolved(ev) for ev in events):
            return False
        return True if tick >= self.held_at + self.k else None


class OnRepeat(_Holding):
    """Send the agent's program once the person it helps has shown ``times`` struggles (a
    look that took nothing, a stretch, a full-handed stop), counted from the episode's start;
    a program that names nobody is sent at once."""

    kind = "repeat"

    def _reset_state(self) -> None:
        super()._reset_state()
        self.counts: dict[int, int] = {}
        self._open: set[tuple[int, int]] = set()
        self.person: int | None = None

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        for ev in _events(observation):  # count struggles before deciding
            who, verb, args = ev.get("actor"), ev.get("verb"), _ids(ev)
            if not isinstance(who, int):
                continue
            if verb == "open" and args:
                self._open.add((who, args[0]))
            elif verb in ("grab", "putin"):
                self._open = {k for k in self._open if k[0] != who}
            elif verb in ("look", "stretch", "stand") or \
                    (verb == "close" and args and (who, args[0]) in self._open):
                self._open.discard((who, args[0]) if args else (who, -1))
                self.counts[who] = self.counts.get(who, 0) + 1
        return super().act(observation, info)

    def _hold(self, program: str, events: list[dict[str, Any]]) -> None:
        self.person = _program_parts(program)[0]

    def _release(self, events: list[dict[str, Any]], tick: int) -> bool | None:
        if self.person is None or self.counts.get(self.person, 0) >= self.k:
            return True
        return None


class Delay(_Holding):
    """Send the agent's program ``windows`` windows after it was issued."""

    kind = "delay"

    def _release(self, events: list[dict[str, Any]], tick: int) -> bool | None:
        return True if self.window >= self.held_window + self.k else None


def _prefix(agent: Any, k: int) -> Any:
    return MovementPrefix(agent, lines=k)


#: hedge name -> ``wrapper(agent, k)``
HEDGES = {"prefix": _prefix, "wait": WaitAndSee, "repeat": OnRepeat, "delay": Delay}


def split_hedge_suffix(name: str) -> tuple[str, str | None, int | None]:
    """``("reactive", "wait", 3)`` for ``"reactive+wait3"``; ``(name, None, None)`` without
    a hedge suffix (the outermost suffix only: ``"a+wait3+prefix8"`` gives ``("a+wait3",
    "prefix", 8)``)."""
    m = HEDGE_SUFFIX.match(name) if isinstance(name, str) else None
    if m is None:
        return name, None, None
    return m.group("base"), m.group("kind"), int(m.group("k"))


def strip_hedges(name: str) -> tuple[str, list[str]]:
    """The agent under every hedge suffix and the suffixes, innermost first:
    ``("physical-rules", ["wait3", "prefix8"])`` for ``"physical-rules+wait3+prefix8"``."""
    hedges: list[str] = []
    while True:
        base, kind, k = split_hedge_suffix(name)
        if kind is None:
            return name, hedges[::-1]
        hedges.append(f"{kind}{k}")
        name = base


def make_hedge(agent: Any, kind: str, k: int) -> Any:
    """``agent`` wrapped in the hedge ``kind`` (:data:`HEDGES`) with parameter ``k``."""
    if kind not in HEDGES:
        raise ValueError(f"unknown hedge {kind!r}; known: {sorted(HEDGES)}")
    return HEDGES[kind](agent, k)
