"""``perspective-free``: full physical perception, no per-person visibility (a shortcut).

The agent sees everything the robot sees — where things are, who stands where holding what,
every struggle cue — but keeps no per-person belief tables: nobody is modelled as having seen
or missed anything. Its rules approximate the ideal observer's
(:mod:`mindhelper_env.scenarios.observer`) without perspectives:

* **expectation by authorship**: whoever put X at P expects X there (until they take X
  themselves); a look at P that took nothing, by someone who put an X there that the robot
  knows is now elsewhere, needs help: give them X;
* **search**: otherwise a look at P that took nothing needs help when P is a place where
  some class of object is kept and every object of that class the robot knows of lies
  somewhere nobody keeps it: give them one;
* **stretch / full-handed stop**: needs help unless another adult with a free hand stands at
  the same furniture in the same room.

Each cue is judged on the state just before its tick, as the observer does. The first cue
judged to need help gets the tracker's minimal help program. If a benchmark rewards this
agent, it can be passed without a theory of mind (docs/validity.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mindhelper_env.agents.belief import _OnceAgent
from mindhelper_env.agents.tracker import BeliefTracker, Cue
from mindhelper_env.scenarios.observer import ADULT_REACH, Need, classes_kept_at, is_usual_place

__all__ = ["PhysicalTracker", "PerspectiveFreeAgent"]


@dataclass(frozen=True)
class _Body:
    room: int | None
    near: int | None
    holding: tuple[int, ...]
    reach: float
    kind: str


def _ids(ev: Mapping[str, Any]) -> list[int]:
    return [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]


class PhysicalTracker(BeliefTracker):
    """The tracker's visual facts, with cues judged by the perspective-free rules.

    The per-person belief tables the base class keeps are never read.
    """

    def reset(self) -> None:
        super().reset()
        #: person -> {object: place they put it at}
        self.put_by: dict[int, dict[int, int]] = {}
        self._open_looks: set[tuple[int, int]] = set()

    def _tick(self, tick: int, events: list[dict[str, Any]]) -> list[Cue]:
        where = dict(self.where)
        bodies = {p.id: _Body(p.room, p.near, tuple(p.holding), p.reach, p.kind)
                  for p in self.people.values()}
        cues: list[Cue] = []
        for ev in events:
            who = int(ev.get("actor", -1))
            if who not in bodies:
                continue
            verb, args = ev.get("verb"), _ids(ev)
            if verb == "open" and args:
                self._open_looks.add((who, args[0]))
            elif verb in ("grab", "putin"):
                self._open_looks = {k for k in self._open_looks if k[0] != who}
            elif verb == "close" and args and (who, args[0]) in self._open_looks:
                self._open_looks.discard((who, args[0]))
                cues.append(Cue(tick, who, "look", args[0], self._judge_look(who, args[0], where)))
            elif verb == "look" and args:
                cues.append(Cue(tick, who, "look", args[0], self._judge_look(who, args[0], where)))
            elif verb == "stretch" and len(args) >= 2:
                anchor = self._anchor_in(where, args[1])
                cues.append(Cue(tick, who, "stretch", args[0],
                                self._judge_body(who, args[0], anchor, bodies, "stretch")))
            elif verb == "stand" and args:
                cues.append(Cue(tick, who, "stand", args[0],
                                self._judge_body(who, args[0], args[0], bodies, "stand")))
        super()._tick(tick, events)  # visual facts (its own cues are discarded)
        for ev in events:
            who, verb, args = int(ev.get("actor", -1)), ev.get("verb"), _ids(ev)
            if not args:
                continue
            if verb in ("putin", "putback") and len(args) >= 2:
                self.put_by.setdefault(who, {})[args[0]] = args[1]
            elif verb == "grab":
                self.put_by.get(who, {}).pop(args[0], None)
        return cues

    def _anchor_in(self, where: Mapping[int, int], place: int) -> int:
        loc = where.get(place)
        return place if loc is None or loc in self.rooms else loc

    def _judge_look(self, who: int, place: int, where: Mapping[int, int]) -> Need | None:
        cls = self.classes
        for obj, put_at in sorted(self.put_by.get(who, {}).items()):
            if put_at == place and obj in where and where[obj] != place:
                return Need("false_belief", who, obj, "look")
        for c in classes_kept_at(cls.get(place, "")):
            seen = [o for o, loc in sorted(where.items())
                    if cls.get(o) == c and loc not in self.people and loc != self.robot_id]
            if seen and all(not is_usual_place(c, cls.get(where[o], "")) for o in seen):
                return Need("implicit_goal", who, seen[0], "look")
        return None

    @staticmethod
    def _judge_body(who: int, target: int, anchor: int, bodies: Mapping[int, _Body],
                    cue: str) -> Need | None:
        me = bodies[who]
        for pid, b in bodies.items():
            if pid != who and b.room == me.room and b.near == anchor and len(b.holding) < 2 \
                    and b.reach >= ADULT_REACH:
                return None
        return Need("implicit_goal", who, target, cue)


class PerspectiveFreeAgent(_OnceAgent):
    """Intervene on the first cue the perspective-free rules judge blocked."""

    name = "perspective-free"

    def __init__(self) -> None:
        super().__init__()
        self.tracker = PhysicalTracker()

    def decide(self, observation: Mapping[str, Any], info: Mapping[str, Any],
               cues: list[Any]) -> list[str]:
        return self.first_help(cues)
