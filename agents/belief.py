"""Reference agents that read only ``obs`` and ``info``: the belief tracker and the shortcuts.

``belief-tracker`` (:class:`BeliefTrackerAgent`) keeps per-person belief tables from
perception (:class:`~mindhelper_env.agents.tracker.BeliefTracker`), judges every visible
struggle with the observer's rules and, the first time someone is judged blocked, issues the
minimal helpful program. No model.

The **shortcut baselines** show what a benchmark would reward if it could be passed without
tracking minds; each must stay far below the belief tracker (docs/validity.md):

* ``reactive`` (:class:`ReactiveAgent`) intervenes on the first visible struggle — a
  container opened and closed with nothing taken, a place looked over, a stretch toward a
  high shelf, standing at a closed container with full hands — with its best-guess program;
* ``moved-absent`` (:class:`MovedAbsentAgent`) intervenes whenever an object is put down
  somewhere new while the person who last used it is in another room, returning it to them;
* ``prior`` (:class:`PriorAgent`) decides from the reset observation alone (someone holding
  two things, a child or wheelchair user and something on a high shelf, an object lying
  where nobody keeps it) and acts at a fixed window.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from mindhelper_env.agents.base import Usage
from mindhelper_env.agents.tracker import BeliefTracker, parse_events
from mindhelper_env.scenarios.observer import Need, is_usual_place

__all__ = ["BeliefTrackerAgent", "GoalBlindAgent", "ReactiveAgent", "MovedAbsentAgent", "PriorAgent"]


class _OnceAgent:
    """Shared plumbing: a tracker for visual facts, one intervention per episode, usage."""

    name = "once"

    def __init__(self) -> None:
        self.tracker = BeliefTracker()
        self.usage = Usage()
        self.acted = False

    def reset(self, *, seed: int | None = None) -> None:
        self.tracker.reset()
        self.usage = Usage()
        self.acted = False

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        t0 = time.perf_counter()
        self.usage.decisions += 1
        try:
            cues = self.tracker.update(observation, info)
            program: list[str] = []
            if not self.acted:
                program = self.decide(observation, info, cues)
        except (KeyError, TypeError, ValueError):
            self.usage.fallbacks += 1
            program = []
        self.usage.seconds += time.perf_counter() - t0
        if program:
            self.acted = True
            return "\n".join(program)
        return "none"

    def decide(self, observation: Mapping[str, Any], info: Mapping[str, Any],
               cues: list[Any]) -> list[str]:
        raise NotImplementedError

    def first_help(self, cues: list[Any]) -> list[str]:
        """The help program of the first cue judged blocked (empty if none)."""
        for cue in cues:
            if cue.need is not None:
                program = self.tracker.help_program(cue.need)
                if program:
                    return program
        return []

    def give(self, obj: int, person: int) -> list[str]:
        return self.tracker.help_program(Need("implicit_goal", person, obj, "give"))

    def open_box(self, box: int) -> list[str]:
        return self.tracker.help_program(Need("implicit_goal", -1, box, "stand"))


class BeliefTrackerAgent(_OnceAgent):
    """Theory of mind without a model: intervene when a struggle is judged blocked.

    ``trace`` lists, per window, the cues seen and the belief-table changes (for inspection
    and for MindClaw-style traces).
    """

    name = "belief-tracker"

    def reset(self, *, seed: int | None = None) -> None:
        super().reset(seed=seed)
        self.trace: list[dict[str, Any]] = []

    def belief_snapshot(self) -> dict[int, dict[int, int]]:
        """Every person's belief table now (read-only copy of the tracker's)."""
        return self.tracker.belief_snapshot()

    def decide(self, observation: Mapping[str, Any], info: Mapping[str, Any],
               cues: list[Any]) -> list[str]:
        self.trace.append({
            "tick": info.get("tick"),
            "cues": [{"tick": c.tick, "person": c.person, "kind": c.kind, "place": c.place,
                      "blocked": None if c.need is None else c.need.kind} for c in cues],
            "belief_changes": len(self.tracker.changes),
        })
        return self.first_help(cues)


class GoalBlindAgent(BeliefTrackerAgent):
    """The belief tracker without the task's earlier steps (the goal-inference ablation):
    it tracks every person's beliefs and attention as the tracker does, but does not read
    what a person wants from what they took before. A stretch toward a place is then for the
    first object the robot knows lies there (the likeliest guess without a goal), and a look
    that took nothing is judged against every class kept at that place."""

    name = "ablation-goal-blind"

    def __init__(self) -> None:
        super().__init__()
        self.tracker.goal_inference = False


class ReactiveAgent(_OnceAgent):
    """Intervene on the first visible struggle, whoever shows it, with a best guess.

    ``min_struggles=k`` waits until one person has struggled ``k`` times (the agent that
    "waits for repeated failure"; with the deadline at onset + 5 ticks it is mostly late).
    """

    name = "reactive"

    def __init__(self, min_struggles: int = 1) -> None:
        super().__init__()
        if int(min_struggles) < 1:
            raise ValueError(f"min_struggles must be >= 1, got {min_struggles!r}")
        self.min_struggles = int(min_struggles)

    def decide(self, observation: Mapping[str, Any], info: Mapping[str, Any],
               cues: list[Any]) -> list[str]:
        t = self.tracker
        for cue in cues:
            self._count[cue.person] = self._count.get(cue.person, 0) + 1
            if self._count[cue.person] < self.min_struggles:
                continue
            if cue.kind == "stand":
                return self.open_box(cue.place)
            if cue.kind == "stretch":
                return self.give(cue.place, cue.person) or self._reach_for(cue.place)
            # a look that took nothing: guess what they want
            guess = self._guess(cue.place, cue.person)
            if guess is not None:
                return self.give(guess, cue.person)
            return [f"[walk] <character> ({cue.person})",
                    f"[open] <{t.classes.get(cue.place, 'container')}> ({cue.place})"]
        return []

    def _reach_for(self, obj: int) -> list[str]:
        """Go and take the object anyway (someone else may already have it)."""
        t = self.tracker
        c = t.classes.get(obj, "object")
        return [f"[walk] <{c}> ({obj})", f"[grab] <{c}> ({obj})"]

    def _guess(self, place: int, person: int) -> int | None:
        t = self.tracker
        taken = [o for o, loc in self._was_at.items() if loc == place and t.where.get(o) != place]
        if taken:
            return taken[-1]
        pc = t.classes.get(place, "")
        for obj, loc in sorted(t.where.items()):
            c = t.classes.get(obj, "")
            if loc == person or loc in t.people or loc == t.robot_id:
                continue
            if is_usual_place(c, pc) and not is_usual_place(c, t.classes.get(loc, "")):
                return obj
        return None

    def reset(self, *, seed: int | None = None) -> None:
        super().reset(seed=seed)
        self._was_at: dict[int, int] = {}
        self._count: dict[int, int] = {}

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        # remember where objects were taken from (before the tracker applies the window)
        for ev in parse_events(observation):
            if ev.get("verb") == "grab" and ev.get("args"):
                obj = int(ev["args"][0]["id"])
                if obj in self.tracker.where:
                    self._was_at[obj] = self.tracker.where[obj]
        return super().act(observation, info)


class MovedAbsentAgent(_OnceAgent):
    """Return an object to its last user when someone else moves it while they are away."""

    name = "moved-absent"

    def reset(self, *, seed: int | None = None) -> None:
        super().reset(seed=seed)
        self._user: dict[int, int] = {}

    def decide(self, observation: Mapping[str, Any], info: Mapping[str, Any],
               cues: list[Any]) -> list[str]:
        t = self.tracker
        for ev in parse_events(observation):
            verb = ev.get("verb")
            args = [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict)]
            who = int(ev.get("actor", -1))
            if verb not in ("putin", "putback") or not args or who not in t.people:
                continue
            obj = args[0]
            last = self._user.get(obj)  # who last put it down
            self._user[obj] = who
            if last is None or last == who:
                continue
            owner = t.people.get(last)
            if owner is not None and owner.room != ev.get("room"):
                return self.give(obj, last) or [
                    f"[walk] <character> ({last})",
                    f"[tell] <character> ({last}) <{t.classes.get(obj, 'object')}> ({obj}) "
                    f"<{t.classes.get(args[1], 'place')}> ({args[1]})"]
        return []


class PriorAgent(_OnceAgent):
    """Decide from the reset observation alone; act at window ``act_window``."""

    name = "prior"

    def __init__(self, act_window: int = 4) -> None:
        super().__init__()
        self.act_window = int(act_window)

    def reset(self, *, seed: int | None = None) -> None:
        super().reset(seed=seed)
        self._plan: list[str] | None = None
        self._window = 0

    def decide(self, observation: Mapping[str, Any], info: Mapping[str, Any],
               cues: list[Any]) -> list[str]:
        if self._plan is None:
            self._plan = self._from_reset()
        self._window += 1
        if self._window - 1 >= self.act_window:
            return self._plan
        return []

    def _from_reset(self) -> list[str]:
        t = self.tracker
        people = sorted(t.people.values(), key=lambda p: p.id)
        for p in people:
            if len(p.holding) >= 2:
                boxes = sorted(b for b in t.is_container if t.room_of.get(b) == p.room
                               and not t.open.get(b, False)) or sorted(t.is_container)
                if boxes:
                    return self.open_box(boxes[0])
        shelves = {pl for pl, c in t.classes.items() if c == "wallshelf"}
        for p in people:
            if p.kind in ("child", "wheelchair"):
                for obj, loc in sorted(t.where.items()):
                    if loc in shelves:
                        return self.give(obj, p.id)
        for obj, loc in sorted(t.where.items()):
            if loc in t.people or loc == t.robot_id or loc in t.rooms:
                continue
            if not is_usual_place(t.classes.get(obj, ""), t.classes.get(loc, "")) and people:
                return self.give(obj, people[0].id)
        return []
