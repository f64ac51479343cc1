"""The ideal observer: when does what the robot perceived show that someone needs help?

A person's task is *blocked by a mental state* (and so needs the robot) only in these cases,
each judged at a visible struggle cue and only from what the robot can know — where it has
seen things, what each person has seen (their beliefs), who is where, who holds what and who
can reach what:

``look`` — the person looked over a place, or opened a container and closed it again, and
took nothing. Blocked if

* **false belief**: the person believed an object was at that place (they saw it there and
  did not see it leave), the robot knows it is elsewhere, and the person knows of no other
  object of that class; or
* **implicit goal (search)**: the place is one where people keep some class of object, the
  person knows of no object of that class, and every object of that class the robot knows
  of is somewhere people do not keep it (so searching the usual places cannot succeed).

``stretch`` — the person stretched up toward a place (a high shelf, a container) they cannot
reach. What they want there follows from what they were doing: :data:`GOAL_AFTER` says what
people go on to need after taking something (the milk, then a mug). Blocked unless someone
*notices*: an adult in the same room who is not on the phone and has a free hand (people
who notice a struggle help at once, wherever in the room they are; someone on the phone,
even right at the shelf, notices nothing).

``stand`` — the person stood at a closed container with both hands full. Blocked unless
someone notices, as for a stretch.

Where people keep things is household common sense, shared by the people and the robot:
:data:`~mindhelper_env.world.house.OBJECT_CATALOG` lists it per class.

The scenario generator runs these rules on the true simulation state to make every episode
*decidable*: a help episode's first struggle is judged blocked (with the right object) and
nothing before it is; a silent episode has no struggle judged blocked. Agents can apply the
same rules to what they reconstruct from observations (see the ``belief-tracker`` agent);
the rules themselves carry no ground truth.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field

from mindhelper_env.world.house import OBJECT_CATALOG

__all__ = ["Need", "PersonView", "SceneView", "is_usual_place", "classes_kept_at", "judge_look",
           "judge_stretch", "judge_stand", "judge_tick", "ADULT_REACH", "GOAL_AFTER",
           "infer_goal", "stretch_target", "someone_notices", "VIEW_VERBS", "forget_opened"]

#: Reach (metres) of an adult; adults can reach every shelf and cabinet of a generated house.
ADULT_REACH = 2.0

#: What people go on to need after taking something (household common sense, shared by the
#: people and the robot): whoever took the milk wants a mug next, the toothbrush the
#: toothpaste, and so on. A goal is read from the person's own earlier steps, never named.
GOAL_AFTER: dict[str, str] = {
    "milk": "mug",
    "juice": "wineglass",
    "toothbrush": "toothpaste",
    "glasses": "book",
    "plate": "cupcake",
    "cellphone": "wallet",
    "remotecontrol": "chips",
}


def infer_goal(took: Iterable[str]) -> str | None:
    """The class a person wants next, from the classes of what they took, oldest first: the
    goal that follows the latest thing taken that has one (None if nothing does)."""
    goal = None
    for c in took:
        if c in GOAL_AFTER:
            goal = GOAL_AFTER[c]
    return goal


@dataclass(frozen=True)
class Need:
    """A person blocked by a mental state: ``kind`` is ``false_belief`` or ``implicit_goal``;
    ``target`` is the object they need (or the container that must be opened)."""

    kind: str
    person: int
    target: int
    cue: str


@dataclass
class PersonView:
    """What the observer knows about one person at the moment of a cue."""

    id: int
    reach: float
    room: int | None
    #: the piece of furniture (anchor) the person stands at, if any
    near: int | None
    holding: tuple[int, ...]
    #: object id -> the place (anchor id, or a person's id) the person believes it is at
    beliefs: Mapping[int, int]
    #: on the phone: notices nothing around them
    busy: bool = False
    #: classes of what the person took so far, oldest first (their earlier steps)
    took: tuple[str, ...] = ()

    @property
    def free_hand(self) -> bool:
        return len(self.holding) < 2


@dataclass
class SceneView:
    """What the observer knows about the scene: where it last saw each object (anchor id, or
    the id of the person holding it), the class of every node and the room of every anchor."""

    where: Mapping[int, int]
    classes: Mapping[int, str]
    room_of: Mapping[int, int | None]
    people: Mapping[int, PersonView] = field(default_factory=dict)


def is_usual_place(obj_class: str, place_class: str) -> bool:
    """Do people keep objects of ``obj_class`` on or in furniture of ``place_class``?"""
    entry = OBJECT_CATALOG.get(obj_class)
    return entry is not None and place_class in entry[1]


def classes_kept_at(place_class: str) -> list[str]:
    """Object classes people keep on or in furniture of ``place_class``."""
    return [c for c, (_, places) in sorted(OBJECT_CATALOG.items()) if place_class in places]


def judge_look(person: PersonView, place: int, scene: SceneView) -> Need | None:
    """Judge a look at ``place`` that ended with nothing taken (``beliefs`` as before it)."""
    cls = scene.classes
    # false belief: expected something here that the robot knows is elsewhere
    for obj, believed in sorted(person.beliefs.items()):
        if believed != place or obj not in scene.where or scene.where[obj] == place:
            continue
        c = cls.get(obj)
        knows_other = any(
            o != obj and cls.get(o) == c and scene.where.get(o) == loc
            for o, loc in person.beliefs.items()
        )
        if not knows_other:
            return Need("false_belief", person.id, obj, "look")
    # implicit goal: searching the usual places for something that is not in any of them
    # (the class they search for follows from their earlier steps when it can be read there)
    place_class = cls.get(place, "")
    known_classes = {cls.get(o) for o in person.beliefs}
    kept = classes_kept_at(place_class)
    goal = infer_goal(person.took)
    if goal is not None:
        kept = [goal] if goal in kept else []
    for c in kept:
        if c in known_classes:
            continue
        seen = [o for o, loc in sorted(scene.where.items())
                if cls.get(o) == c and loc not in scene.people]
        if seen and all(not is_usual_place(c, cls.get(scene.where[o], "")) for o in seen):
            return Need("implicit_goal", person.id, seen[0], "look")
    return None


def someone_notices(person: PersonView, scene: SceneView) -> bool:
    """Is there someone who notices ``person``'s struggle and helps: an adult in the same
    room, not on the phone, with a free hand?"""
    for other in scene.people.values():
        if other.id == person.id or other.room is None or other.room != person.room:
            continue
        if other.free_hand and not other.busy and other.reach >= ADULT_REACH:
            return True
    return False


def stretch_target(person: PersonView, target: int, place: int, scene: SceneView) -> int:
    """What a stretch toward ``target`` at ``place`` is for. A stretch that names an object
    is for it; one toward a place is for the object there that the person's goal
    (:func:`infer_goal`) asks for, else — with no goal to read — the first object the robot
    knows lies there, else the place itself (a container to open)."""
    if target != place:
        return target
    objs = sorted(o for o, loc in scene.where.items() if loc == place)
    goal = infer_goal(person.took)
    if goal is not None:
        for o in objs:
            if scene.classes.get(o) == goal:
                return o
    return objs[0] if objs else place


#: Who notices a struggle: ``(person, scene) -> bool``.
Notices = Callable[[PersonView, SceneView], bool]


def judge_stretch(person: PersonView, target: int, anchor: int, scene: SceneView,
                  notices: Notices = someone_notices) -> Need | None:
    """Judge a stretch toward ``target`` (``target == anchor``: toward the place ``anchor``
    itself) that the person could not reach. ``notices`` says whether someone notices and
    helps (default :func:`someone_notices`)."""
    if notices(person, scene):
        return None
    return Need("implicit_goal", person.id, stretch_target(person, target, anchor, scene),
                "stretch")


def judge_stand(person: PersonView, container: int, scene: SceneView,
                notices: Notices = someone_notices) -> Need | None:
    """Judge a person standing at a closed ``container`` with both hands full."""
    if notices(person, scene):
        return None
    return Need("implicit_goal", person.id, container, "stand")


#: The verbs whose events :func:`judge_tick` reads ``before`` and ``scene`` for (the cues, and
#: the beliefs a person had when opening a container). A tick without any of them yields no
#: cue, and its only effect is :func:`forget_opened`, so a caller may skip building the
#: views for it.
VIEW_VERBS = frozenset({"open", "close", "look", "stretch", "stand"})


def _forget(opened: dict[tuple[int, int], dict[int, int]], who: int) -> None:
    for key in [k for k in opened if k[0] == who]:
        del opened[key]


def forget_opened(events: Iterable[tuple[int, str, tuple[int, ...]]], people: Container[int],
                  opened: dict[tuple[int, int], dict[int, int]]) -> None:
    """What :func:`judge_tick` does for a tick none of whose verbs is in :data:`VIEW_VERBS`:
    whoever of ``people`` grabs or puts something in is no longer looking into the
    containers they opened."""
    for who, verb, _args in events:
        if verb in ("grab", "putin") and who in people:
            _forget(opened, who)


def judge_tick(
    tick: int,
    events: Iterable[tuple[int, str, tuple[int, ...]]],
    before: Mapping[int, PersonView],
    scene: SceneView,
    opened: dict[tuple[int, int], dict[int, int]],
    anchor_of: Callable[[int], int],
    notices: Notices = someone_notices,
) -> list[tuple[int, int, str, int, Need | None]]:
    """Find and judge the struggle cues among one tick's events.

    ``events`` are ``(actor, verb, arg ids)`` in order; ``before`` and ``scene`` describe the
    state at the start of the tick. ``opened`` carries, across ticks, the beliefs a person
    had when they opened a container (``(person, container) -> beliefs``): a container closed
    again with nothing taken is a look judged with those beliefs. ``notices`` decides who
    notices a stretch or a stand (:func:`someone_notices`). Returns
    ``(tick, person, cue, place or target, need)`` for each cue.
    """
    cues: list[tuple[int, int, str, int, Need | None]] = []
    for who, verb, args in events:
        p = before.get(who)
        if p is None:
            continue
        if verb == "open" and args:
            opened[(who, args[0])] = dict(p.beliefs)
        elif verb in ("grab", "putin"):
            _forget(opened, who)
        elif verb == "close" and args and (who, args[0]) in opened:
            view = PersonView(p.id, p.reach, p.room, p.near, p.holding,
                              opened.pop((who, args[0])), p.busy, p.took)
            cues.append((tick, who, "look", args[0], judge_look(view, args[0], scene)))
        elif verb == "look" and args:
            cues.append((tick, who, "look", args[0], judge_look(p, args[0], scene)))
        elif verb == "stretch" and len(args) >= 2:
            cues.append((tick, who, "stretch", args[0],
                         judge_stretch(p, args[0], anchor_of(args[1]), scene, notices)))
        elif verb == "stand" and args:
            cues.append((tick, who, "stand", args[0], judge_stand(p, args[0], scene, notices)))
    return cues
