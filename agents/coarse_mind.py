"""``coarse-mind``: the belief tracker with perception reduced to room co-presence.

How much of the benchmark does a *cheap* mind solve? This agent keeps the belief tracker's
reasoning — per-person belief tables, the struggle cues, the observer's judgement of each
cue, the minimal help program — and replaces perception by the coarsest rule that still
tracks minds:

* a person learns a move (a take, a put, a drop, a hand-over), what a container holds when
  it is opened, and a tell **iff they are in the room when it happens** — on the phone or
  not, busy or not, facing anywhere; nothing is seen or heard through a doorway;
* entering a room, a person sees everything lying in it (not inside closed containers) and
  that what they expected at a place in view is not there;
* attention: a struggle is noticed (and so needs no robot) iff **an adult in the room, off
  the phone, with a free hand** is there (someone at a chore facing away counts as
  attentive)
  (:func:`~mindhelper_env.scenarios.observer.someone_notices`).

**The coarse-mind ladder** (docs/validity.md): four rungs between co-presence and the
tracker, each adding one rule of perception, for beliefs and for attention alike:

* ``coarse-mind-a`` — room co-presence: in the room is perceiving, whatever one does (a
  struggle is noticed by any adult in the room with a free hand, on the phone or not);
* ``coarse-mind-b`` — (a) + **someone on the phone sees and hears nothing**;
* ``coarse-mind-c`` — (b) + **someone at a chore facing away sees nothing**;
* ``coarse-mind-d`` — (c) + **an open door shows the next room** (a take or a put there is
  seen from next door).

``coarse-mind`` keeps the behaviour it was published with (0.5.0): beliefs by co-presence
as rung (a), attention by the phone rule as rung (b) (someone at a chore counts as
attentive). :class:`CoarseMindAgent` with ``rung="a"`` ... ``"d"`` builds a rung
(``make_agent("coarse-mind", rung="c")`` or ``coarse-mind-c``).

It is built the way :mod:`mindhelper_env.agents.ablations` builds its ablations: after every
tick, whatever the tracker's own perception did to the belief tables is undone and replaced
by the rule above, so the agent keeps measuring room co-presence when the tracker's perception
gains rules (busy people who see nothing, sight through open doors). Where a suite's
perception *is* room co-presence, this agent scores like the tracker; where it is finer, the
gap is what a mind finer than co-presence buys.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mindhelper_env.agents.ablations import SharedViewAgent, _AblatedTracker, _ids
from mindhelper_env.agents.tracker import Belief, BeliefTracker, Person
from mindhelper_env.scenarios.observer import PersonView, SceneView, someone_notices

__all__ = ["CoarseMindTracker", "CoarseMindAgent", "RUNGS", "LADDER"]

#: The rungs of the ladder: ``(phone blinds, chore blinds, open doors show the next room)``
#: for beliefs; attention follows the same rules (``None``: the published ``coarse-mind``).
RUNGS: dict[str, tuple[bool, bool, bool]] = {
    "a": (False, False, False),
    "b": (True, False, False),
    "c": (True, True, False),
    "d": (True, True, True),
}
#: The ladder's agent names, lowest rung first.
LADDER = tuple(f"coarse-mind-{r}" for r in RUNGS)

_MOVES = ("grab", "putback", "putin", "drop", "give")


class CoarseMindTracker(_AblatedTracker):
    """Belief tables formed by room co-presence; attention by the observer's room rule."""

    #: the rung (:data:`RUNGS`); ``None``: the published ``coarse-mind``
    rung: str | None = None

    def reset(self) -> None:
        super().reset()
        #: the room each person was in when their table was last formed
        self._coarse_room: dict[int, Any] = {}

    def _blind(self, p: Person) -> bool:
        """Does ``p`` perceive nothing now (on the phone from rung b, at a chore from c)?"""
        if self.rung is None or not p.busy:
            return False
        phone, chore, _ = RUNGS[self.rung]
        return chore if p.chore else phone

    def notices(self, person: PersonView, scene: SceneView) -> bool:
        if self.rung is None:
            # off the phone is attentive: a chore done facing away does not count as busy
            busy_ok = {pid for pid, p in self.people.items() if p.chore}
        else:
            # the rung's rule: whoever it does not blind is attentive
            busy_ok = {pid for pid, p in self.people.items() if p.busy and not self._blind(p)}
        if busy_ok & set(scene.people):
            scene = SceneView(scene.where, scene.classes, scene.room_of, {
                pid: replace(v, busy=False) if pid in busy_ok else v
                for pid, v in scene.people.items()})
        return someone_notices(person, scene)

    def _form_beliefs(self, p: Person, tick: int, events: list[dict[str, Any]]) -> None:
        entered = p.id not in self._coarse_room or self._coarse_room[p.id] != p.room
        self._coarse_room[p.id] = p.room
        if p.room is None or self._blind(p):
            return
        if entered:
            self._see_room(p, tick)
            return
        views = (self.door_views.get(p.room, set())
                 if self.rung is not None and RUNGS[self.rung][2] else set())
        for ev in events:
            if ev.get("room") in views and ev.get("verb") in _MOVES and _ids(ev):
                loc = self.where.get(_ids(ev)[0])
                if loc is not None:
                    p.beliefs[_ids(ev)[0]] = Belief(loc, tick, "saw it through the door")
                continue
            if ev.get("room") != p.room:
                continue
            verb, args = ev.get("verb"), _ids(ev)
            if verb in _MOVES and args:
                loc = self.where.get(args[0])
                if loc is not None:
                    p.beliefs[args[0]] = Belief(loc, tick, f"in the room at the {verb}")
            elif verb == "open" and args:
                box = args[0]
                inside = set()
                for c in ev.get("contents", []) or []:
                    if isinstance(c, dict) and "id" in c:
                        inside.add(int(c["id"]))
                        p.beliefs[int(c["id"])] = Belief(box, tick, "in the room at the open")
                for obj, b in list(p.beliefs.items()):
                    if b.place == box and obj not in inside:
                        del p.beliefs[obj]
            elif verb == "tell" and len(args) >= 3:
                p.beliefs[args[1]] = Belief(args[2], tick, "in the room at the tell")

    def _room_of_loc(self, loc: int) -> Any:
        if loc in self.people:
            return self.people[loc].room
        if loc == self.robot_id:
            return self.robot_room
        if loc in self.rooms:
            return loc
        return self.room_of.get(loc)

    def _see_room(self, p: Person, tick: int) -> None:
        room = p.room
        closed = {b for b in self.is_container if not self.open.get(b, False)}
        for obj, loc in self.where.items():
            if self._room_of_loc(loc) == room and loc not in closed:
                p.beliefs[obj] = Belief(loc, tick, "in the room on entering")
        in_view = {pl for pl, r in self.room_of.items()
                   if r == room and pl not in self.rooms and pl not in closed}
        for obj, b in list(p.beliefs.items()):
            if b.place in in_view and self.where.get(obj) != b.place:
                del p.beliefs[obj]


class CoarseMindAgent(SharedViewAgent):
    """``belief-tracker`` whose people perceive by room co-presence (see the module);
    ``rung``: a rung of the ladder (:data:`RUNGS`), ``None`` the published ``coarse-mind``."""

    name = "coarse-mind"
    tracker_class: type[BeliefTracker] = CoarseMindTracker

    def __init__(self, rung: str | None = None) -> None:
        if rung is not None and rung not in RUNGS:
            raise ValueError(f"coarse-mind: unknown rung {rung!r}; expected one of "
                             f"{', '.join(RUNGS)}")
        self.rung = rung
        if rung is not None:
            self.name = f"coarse-mind-{rung}"
        super().__init__()
        tracker = getattr(self, "tracker", None)
        if isinstance(tracker, CoarseMindTracker):
            tracker.rung = rung
