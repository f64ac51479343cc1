"""Ablations of the belief tracker: the same agent without per-person perspectives.

The paper's "w/o Belief Table" ablation, made exact. Each ablation is the ``belief-tracker``
reference agent (:class:`~mindhelper_env.agents.belief.BeliefTrackerAgent`) with ONE thing
replaced: how each person's belief table is formed. Every other rule — the visual facts, the
struggle cues, the observer's judgement of each cue, the help program — is the tracker's.

* ``ablation-shared-view`` (:class:`SharedViewTracker`): *everyone knows what the robot has
  seen* — each person's belief table is the robot's own knowledge of where things are (no
  per-person visibility at all), and everyone has seen every struggle the robot saw, so any
  adult with a free hand, wherever they are and whatever they are doing, is taken to notice
  and help;
* ``ablation-own-actions`` (:class:`OwnActionsTracker`): *a person knows only what they did
  themselves* — a person's beliefs come only from their own grabs, puts and opens (and what
  they are handed or told), never from watching others or entering a room; and nobody
  notices anyone else's struggle.

Attention is perception too: who notices a struggle (:meth:`BeliefTracker.notices`) is
replaced along with the belief tables.

Both are written against the tracker's per-tick entry point, not its individual perception
rules: whatever :meth:`BeliefTracker._tick` (and the reset look-around) does to the belief
tables is undone after it runs and replaced by the ablation's rule, so the ablations keep
measuring the same thing when the tracker gains new perception rules (attention, hearing,
watching). Every ``dict`` attribute of a person whose name contains ``belief`` counts as a
belief table (``beliefs`` today).
"""

from __future__ import annotations

from typing import Any

from mindhelper_env.agents.belief import BeliefTrackerAgent
from mindhelper_env.agents.tracker import Belief, BeliefTracker, Person
from mindhelper_env.scenarios.observer import ADULT_REACH, PersonView, SceneView

__all__ = ["SharedViewTracker", "OwnActionsTracker", "SharedViewAgent", "OwnActionsAgent",
           "ABLATIONS"]


def _belief_fields(p: Person) -> list[str]:
    return [k for k, v in vars(p).items() if "belief" in k and isinstance(v, dict)]


class _AblatedTracker(BeliefTracker):
    """A tracker whose belief tables are rebuilt by :meth:`_form_beliefs` after every tick."""

    def reset(self) -> None:
        super().reset()
        self._ablation_first = True

    def update(self, obs: Any, info: Any) -> list[Any]:
        first, self._ablation_first = self._ablation_first, False
        cues = super().update(obs, info)
        if first:  # the reset look-around: replace whatever perception made of it
            for p in self.people.values():
                self._clear(p)
                self._form_beliefs(p, -1, [])
        return cues

    def _tick(self, tick: int, events: list[dict[str, Any]]) -> list[Any]:
        # the cues are judged inside super()._tick with the ablated tables as they stand
        saved = {pid: {k: dict(getattr(p, k)) for k in _belief_fields(p)}
                 for pid, p in self.people.items()}
        cues = super()._tick(tick, events)
        for pid, p in self.people.items():
            old = saved.get(pid)
            if old is None:  # someone first seen in this window
                self._clear(p)
            else:
                for k in _belief_fields(p):
                    setattr(p, k, old.get(k, {}))
            self._form_beliefs(p, tick, events)
        return cues

    @staticmethod
    def _clear(p: Person) -> None:
        for k in _belief_fields(p):
            setattr(p, k, {})

    def _form_beliefs(self, p: Person, tick: int, events: list[dict[str, Any]]) -> None:
        raise NotImplementedError


class SharedViewTracker(_AblatedTracker):
    """Everyone's belief table is the robot's own knowledge of where things are."""

    def notices(self, person: PersonView, scene: SceneView) -> bool:
        # everyone saw the struggle: any adult with a free hand helps
        return any(o.id != person.id and o.free_hand and o.reach >= ADULT_REACH
                   for o in scene.people.values())

    def _form_beliefs(self, p: Person, tick: int, events: list[dict[str, Any]]) -> None:
        p.beliefs = {obj: Belief(loc, tick, "the robot saw it there")
                     for obj, loc in self.where.items()}


def _ids(ev: dict[str, Any]) -> list[int]:
    return [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]


class OwnActionsTracker(_AblatedTracker):
    """A person knows only what they did themselves (and what they are handed or told)."""

    def notices(self, person: PersonView, scene: SceneView) -> bool:
        return False  # nobody sees anyone else struggle

    def _form_beliefs(self, p: Person, tick: int, events: list[dict[str, Any]]) -> None:
        for ev in events:
            verb = ev.get("verb")
            args = _ids(ev)
            who = int(ev.get("actor", -1))
            if not args:
                continue
            if who == p.id:
                if verb in ("grab", "putin", "putback", "drop"):
                    loc = self.where.get(args[0])
                    if loc is not None:
                        p.beliefs[args[0]] = Belief(loc, tick, f"did {verb}")
                elif verb == "give" and len(args) >= 2:
                    p.beliefs[args[0]] = Belief(args[1], tick, "gave it")
                elif verb == "open":
                    box = args[0]
                    inside = set()
                    for c in ev.get("contents", []) or []:
                        if isinstance(c, dict) and "id" in c:
                            inside.add(int(c["id"]))
                            p.beliefs[int(c["id"])] = Belief(box, tick, "opened it")
                    for obj, b in list(p.beliefs.items()):
                        if b.place == box and obj not in inside:
                            del p.beliefs[obj]
            elif verb == "give" and len(args) >= 2 and args[1] == p.id:
                p.beliefs[args[0]] = Belief(p.id, tick, "was handed it")
            elif verb == "tell" and len(args) >= 3 and args[0] == p.id:
                p.beliefs[args[1]] = Belief(args[2], tick, "was told")


class SharedViewAgent(BeliefTrackerAgent):
    """``belief-tracker`` whose people all know what the robot has seen."""

    name = "ablation-shared-view"
    tracker_class: type[BeliefTracker] = SharedViewTracker

    def __init__(self) -> None:
        super().__init__()
        self.tracker = self.tracker_class()


class OwnActionsAgent(SharedViewAgent):
    """``belief-tracker`` whose people know only what they did themselves."""

    name = "ablation-own-actions"
    tracker_class = OwnActionsTracker


#: registry name -> agent class
ABLATIONS: dict[str, type[BeliefTrackerAgent]] = {
    SharedViewAgent.name: SharedViewAgent,
    OwnActionsAgent.name: OwnActionsAgent,
}
