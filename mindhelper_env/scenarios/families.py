"""Scenario families: each builds a *draft* episode (house, people, schedule) from an rng.

A draft (:class:`~mindhelper_env.scenarios.draft.Draft`) has everything but the measured
window and the reference program; the generator (:mod:`mindhelper_env.scenarios.generator`)
simulates it to measure onset and deadline, builds the reference and validates it. Every
random choice goes through the draft's ``numpy`` Generator.

Each help family has *silent twins* with the same visible cue and a different mind; the
families, their twin groups and what decides each are in docs/scenarios.md. In **every**
family other people do chores (walk about, check containers and shelves, carry what they hold
to a table, move things from place to place), objects sometimes lie where nobody keeps them,
children and wheelchair users are about, and people may start out holding things — so none
of these cues gives the family away. Node ids of rooms, furniture, objects and people are
shuffled at the end of every draft (:meth:`Draft.shuffle_ids`).
"""

from __future__ import annotations

from collections.abc import Callable

from mindhelper_env.actors.actor import ACTOR_KINDS
from mindhelper_env.scenarios.draft import FITS as _FITS
from mindhelper_env.scenarios.draft import NAMES, Draft
from mindhelper_env.scenarios.draft import Reject as _Reject
from mindhelper_env.scenarios.observer import GOAL_AFTER, is_usual_place
from mindhelper_env.world.house import OBJECT_CATALOG

__all__ = ["BUILDERS", "Draft", "NAMES"]


def _others(d: Draft, n_min: int = 0) -> int:
    """How many people besides the focus (1 or 2, at least ``n_min``)."""
    return max(n_min, int(d.rng.integers(1, 3)))


def _target_class(d: Draft, min_places: int = 2) -> str:
    classes = [c for c in sorted(OBJECT_CATALOG)
               if len({d.world.anchor(p) for p in d.habitual(c)}) >= min_places]
    return d.pick(classes)


def _any_kind(d: Draft) -> str:
    return "adult" if d.chance(0.6) else ("child" if d.chance(0.5) else "wheelchair")


# ------------------------------------------------------------------------------ relocation
#: Relocation variants: who saw X put away (the focus themself, or by watching someone else),
#: how the move reaches (or does not reach) the focus person's mind, whether they need it.
_RELOCATION_HELP = frozenset({"relocation", "watched", "told_away"})


def _spare_out_of_sight(d: Draft, cls: str, rooms_seen: tuple[int, ...]) -> None:
    """Sometimes another X lies somewhere nobody keeps one, in a room the focus person never
    goes to: the robot knows of it, the person does not (the robot's own count of objects
    says nothing about what the person knows)."""
    if d.chance(0.4):
        spots = d.unusual_surfaces(cls, exclude_rooms=rooms_seen)
        if spots:
            d.keep.add(d.obj(cls, d.pick(spots)))


def _same_look(d: Draft, a: int, l1: int, l2: int, *, stayed: bool) -> None:
    """The cue of the help family, where the person knows better: ``a`` opens L1 and closes
    it again, taking nothing (looking for something else, or just checking), before going
    for X where they know it is. Whether that look is a false belief is in their mind only.
    ``stayed``: ``a`` watched the move from the room; they often step out and come back
    first, as a person who was away does (:func:`_before_the_look`)."""
    if stayed and d.chance(0.7):
        r1 = d.room_of(l1)
        d.goto(a, d.pick(d.furniture(d.pick([r for r in d.rooms if r != r1]))),
               int(d.rng.integers(2, 7)))
    _before_the_look(d, a, l1, l2)
    d.check(a, l1)
    _pause_as_stuck(d, a, l1)


#: Ticks a focus person who knows better waits after the look before going for X: past the
#: robot's deadline and its next decision, so that waiting to see whether they find it tells
#: nothing (as a helper who noticed comes only after ``NOTICE_DELAY``).
SELF_RESOLVE_DELAY = (9, 13)


def _pause_as_stuck(d: Draft, a: int, near: int) -> None:
    """After the look, ``a`` does what a stuck person does (:meth:`Draft.stuck_after_one_try`):
    half the time walks over to other furniture of the room of ``near`` (without sitting down),
    otherwise stands still, for :data:`SELF_RESOLVE_DELAY` ticks before carrying on."""
    wait = int(d.rng.integers(*SELF_RESOLVE_DELAY))
    spots = [f for f in d.furniture(d.room_of(near)) if f != near]
    if spots and d.chance(0.5):
        d.goto(a, d.pick(spots), wait, use_it=False)
    else:
        d.idle(a, wait)


def _before_the_look(d: Draft, a: int, l1: int, l2: int) -> None:
    """What comes between coming back and the look in L1, on every side of a twin group:
    sometimes a while at other furniture of the room, sometimes a check of another place."""
    r1 = d.room_of(l1)
    if d.chance(0.3):
        d.goto(a, d.pick([f for f in d.furniture(r1) if f not in (l1, l2)] or [l1]),
               int(d.rng.integers(2, 6)))
    if d.chance(0.3):
        d.check(a, d.pick([p for p in d.reachable_for(a, d.containers() + d.surfaces())
                           if p not in (l1, l2)]))


def _put_away_other(d: Draft, who: int, room: int, avoid: tuple[int, ...], cls: str) -> None:
    """``who`` puts something else (not of class ``cls``) away in another container of
    ``room``, as the one who puts X away does: on both sides of the watched group each of the
    two people takes something off a surface and puts it into a container; which of them
    handled X is all that differs."""
    boxes = [c for c in d.reachable_for(who, d.containers(room)) if c not in avoid]
    spots = d.reachable_for(who, d.surfaces(room))
    if boxes and spots:
        box = d.pick(boxes)
        pool = sorted(c for c in _FITS.get(d.g.nodes[box].key, _FITS["other"]) if c != cls)
        if pool:
            y = d.obj(d.pick(pool), d.pick(spots))
            d.fetch(who, y, box, [d.world.anchor(y)])
            return
    d.idle(who, int(d.rng.integers(4, 7)))


#: How often B moves X into a container (rather than onto a surface), by variant: chosen so
#: that the containers opened and closed before the cue are as many in each help family as in
#: its twins (``self_corrected`` puts X on a surface, where A sees it on the way back; so does
#: ``seen_back``, the half of ``watched_move_seen`` where A is away for the move, and the
#: other half then uses a container wherever the room has one).
_L2_BOX_SHARE = {"relocation": 0.5, "self_corrected": 0.0, "seen_back": 0.0,
                 "watched_move_seen": 1.0}


def _usual_or_not(d: Draft, cls: str, cands: list[int]) -> list[int]:
    """The places of ``cands`` where one keeps a ``cls`` or those where one does not, even
    odds (either where the other kind is missing): in the watched group the surface X is
    moved onto is drawn this way on both sides, so that whether X now lies somewhere usual
    (what a robot blind to who saw what would go by) says nothing."""
    usual = [p for p in cands if is_usual_place(cls, d.g.nodes[p].class_name)]
    other = [p for p in cands if p not in usual]
    if usual and other:
        return usual if d.chance(0.5) else other
    return cands


def _new_place(d: Draft, a: int, variant: str, cands: list[int]) -> int:
    """Where B moves X: one of ``cands``, within A's reach (A may fetch it there later), a
    container with the variant's :data:`_L2_BOX_SHARE` (default 0.7) where there is one."""
    cands = d.reachable_for(a, cands) or cands
    boxes = [p for p in cands if "CAN_OPEN" in d.g.nodes[p].properties]
    surfaces = [p for p in cands if p not in boxes]
    if boxes and (not surfaces or d.chance(_L2_BOX_SHARE.get(variant, 0.7))):
        return d.pick(boxes)  # out of sight on the way back (a surface may be passed)
    return d.pick(surfaces)


def _relocation(d: Draft, variant: str) -> None:
    """X is put away in container L1 while A sees it (A puts it there, or watches B do it);
    B moves X to L2 while A is away (or watching); the move may be told to people in earshot."""
    kind = _any_kind(d)
    reach = ACTOR_KINDS[kind]
    cls = _target_class(d)
    l1_pool = [p for p in d.containers(max_top=reach) if p in d.habitual(cls)] \
        or d.containers(max_top=reach)
    l1 = d.pick(l1_pool)
    r1 = d.room_of(l1)
    a = d.person(kind=kind, room=r1)
    d.focus = a
    # the watched group crosses who put X away with who saw it move: half the time A only
    # watched B put X away (and the other puts something else away meanwhile, so that both
    # people do the same things on both sides); the help family's A does not see the move,
    # the twin's A does. Whether A put X there themself then says nothing.
    in_watched_group = variant in ("watched", "watched_move_seen")
    watched = in_watched_group and d.chance(0.5)
    # both sides of the watched group keep the same timing (the watching takes a while)
    slow = 8 if variant in ("watched", "watched_move_seen") else 0
    b = d.person(kind="adult", room=r1)  # B sees where X goes (every belief is perceived)
    x = d.obj(cls, d.pick([p for p in d.reachable_for(a, d.surfaces(r1))]))
    d.target = x
    d.keep.add(x)
    if watched:
        # A learns where X is only by watching B put it away, putting something else away
        # meanwhile, as B does in the twin
        d.fetch(b, x, l1, [d.world.anchor(x)])
        _put_away_other(d, a, r1, (l1,), cls)
    else:
        d.fetch(a, x, l1, [d.world.anchor(x)])
        if in_watched_group:
            _put_away_other(d, b, r1, (l1,), cls)
    away = [r for r in d.rooms if r != r1]
    r_away = d.pick(away)
    # the watched twin: where A put X away themself, A is away for the move, as in the help
    # family, and sees X lying on a surface of the room on coming back; where A only watched
    # B put it away, A also watches B move it. So "it was moved while the one who put it
    # there was away" is as common on both sides (it was 1 in 2 help episodes against 1 in
    # 4 twins while the twin's A was away at even odds whoever put X away)
    seen_back = variant == "watched_move_seen" and not watched
    stays_in_view = variant == "witnessed" or (variant == "watched_move_seen" and not seen_back)
    if stays_in_view:
        l2 = _new_place(d, a, variant, [p for p in d.places(r1, max_top=1.5) if p != l1])
        d.goto(a, d.pick([f for f in d.furniture(r1) if f not in (l1, l2)]),
               int(d.rng.integers(12, 18)) + slow)
        d.idle(b, int(d.rng.integers(5, 8)) + slow)
    else:
        if variant == "self_corrected":
            cands = [p for p in d.surfaces(max_top=1.1) if d.room_of(p) not in (r1, r_away)]
        elif seen_back:
            cands = _usual_or_not(d, cls, [p for p in d.surfaces(r1) if p != l1]
                                  or [p for p in d.places(r1) if p != l1])
        elif variant == "watched":
            # as in the twin: half the time into another container of the room (which A
            # cannot see into on coming back), otherwise onto a surface, here of another room
            boxes = [p for p in d.reachable_for(a, d.containers(r1, max_top=1.5)) if p != l1]
            cands = boxes if boxes and d.chance(0.5) else _usual_or_not(d, cls, [
                p for p in d.surfaces() if d.room_of(p) not in (r1, r_away)] or [
                p for p in d.places(max_top=1.5) if d.room_of(p) != r_away and p != l1])
        else:
            cands = [p for p in d.places(max_top=1.5) if d.room_of(p) != r_away and p != l1]
        l2 = _new_place(d, a, "seen_back" if seen_back else variant, cands)
        told = variant in ("told_away", "told")
        away_ticks = int(d.rng.integers(14, 20)) + (10 if told else 0) + slow
        third = [r for r in d.rooms if r not in (r1, r_away, d.room_of(l2))]
        if variant in ("relocation", "spare", "irrelevant") and third and d.chance(0.45):
            # on the way back A sometimes passes through a third room, as the self-corrected
            # twin's A goes by L2's room: how many rooms A was in says nothing
            k = int(d.rng.integers(3, 7))
            d.goto(a, d.pick(d.furniture(r_away)), max(away_ticks - k, 4))
            d.goto(a, d.pick(d.furniture(d.pick(third))), k)
        else:
            d.goto(a, d.pick(d.furniture(r_away)), away_ticks)
        d.idle(b, int(d.rng.integers(6, 10)) + d.world.distance(r1, r_away) + slow)
    d.fetch(b, x, l2, [l1])
    if (stays_in_view or in_watched_group) and d.chance(0.7):
        # B goes on to another room, as B does after moving X out of the room where A is
        # away (so where B is at the look says nothing); in the watched group on both
        # sides, so that how busy the others are after the look says nothing either
        d.goto(b, d.pick(d.furniture(d.pick(away))), int(d.rng.integers(4, 10)))
    if variant in ("told_away", "told"):
        # B tells someone else where X went: A hears it only when in that room (earshot)
        # (never L2's room, where B already is: B walks over to tell, as B walks over to
        # A in the twin)
        rooms = ([r for r in d.rooms if r not in (r_away, r1, d.room_of(l2))]
                 or [r for r in d.rooms if r not in (r_away, d.room_of(l2))]) \
            if variant == "told_away" else [r_away]
        listener = d.person(kind="adult", room=d.pick(rooms))
        d.goto(listener, d.pick(d.furniture(d.world.chars[listener].room)),
               int(d.rng.integers(20, 30)))
        d.tell(b, listener, x, l2)
        if variant == "told_away":
            # the listener then walks about their room: what the house shows after the cue
            # makes up for the twin's A fetching X from L2 once the pause after the look is
            # over (a help episode's A stays stuck), so that how many events follow the cue
            # says nothing
            room_l = d.world.chars[listener].room
            d.idle(listener, int(d.rng.integers(26, 34)))
            for _ in range(int(d.rng.integers(1, 3))):
                d.goto(listener, d.pick(d.furniture(room_l)), int(d.rng.integers(1, 4)))
    d.mental_state = {"type": "false_belief", "object": x, "believed": l1, "true": l2}
    dest = d.pick([s for s in d.reachable_for(a, d.surfaces()) if s not in (l1, l2)])
    if variant in _RELOCATION_HELP:
        _before_the_look(d, a, l1, l2)
        d.fetch(a, x, dest, d.search_order(cls, {l1, l2}))
        d.stuck_after_one_try(a, near=l1)
        d.needs_help = True
    elif variant == "irrelevant":
        pool = [p for p in d.reachable_for(a, d.containers() + d.surfaces()) if p != l1]
        d.check(a, d.pick(pool))
        d.goto(a, d.pick([f for f in d.furniture() if f != l1]), int(d.rng.integers(2, 6)))
    elif variant in ("witnessed", "watched_move_seen", "told"):
        _same_look(d, a, l1, l2, stayed=stays_in_view)
        d.fetch(a, x, dest, d.search_order(cls, {l1, l2}, last=[l2]))
        d.mental_state = {"type": "none"}
    elif variant == "spare":
        # A also saw another X lying in the room: after the empty look A takes that one
        _before_the_look(d, a, l1, l2)
        spot = d.pick([p for p in d.reachable_for(a, d.surfaces(r1)) if p != l1])
        spare = d.obj(cls, spot)
        d.keep.add(spare)
        # the spare is taken only after a pause as long as a knowing twin's (and a stuck
        # person's wait): waiting to see whether they find one tells nothing
        d.actor(a)["retry_wait"] = int(d.rng.integers(*SELF_RESOLVE_DELAY))
        d.actor(a)["activities"].append({"type": "fetch", "object": x, "dest": dest,
                                         "search": d.search_order(cls, {l1, l2}),
                                         "alternatives": [spare]})
        d.mental_state = dict(d.mental_state, spare=spare)
    elif variant == "self_corrected":
        d.goto(a, d.pick(d.furniture(d.room_of(l2))), int(d.rng.integers(2, 4)))
        _same_look(d, a, l1, l2, stayed=False)
        d.fetch(a, x, dest, d.search_order(cls, {l1, l2}, last=[l2]))
        d.mental_state = dict(d.mental_state, corrected=True)
    _relocation_life(d, variant, cls, b, (r1, r_away, d.room_of(l2), d.room_of(dest)))


def _relocation_life(d: Draft, variant: str, cls: str, b: int,
                     rooms_seen: tuple[int, ...]) -> None:
    """What every relocation-like episode adds after the plot: a spare X out of the focus
    person's sight (not in the spare twins, which have their own), B's chores, sometimes a
    bystander, the scenery."""
    if variant != "spare":
        _spare_out_of_sight(d, cls, rooms_seen)
    d.chores(b, int(d.rng.integers(0, 2)))
    if d.chance(0.5):
        d.bystander()
    d.scenery()


def false_belief_relocation(d: Draft) -> None:
    _relocation(d, "relocation")


def false_belief_irrelevant(d: Draft) -> None:
    _relocation(d, "irrelevant")


def false_belief_witnessed(d: Draft) -> None:
    _relocation(d, "witnessed")


def false_belief_self_corrected(d: Draft) -> None:
    _relocation(d, "self_corrected")


def false_belief_spare(d: Draft) -> None:
    _relocation(d, "spare")


def false_belief_watched(d: Draft) -> None:
    _relocation(d, "watched")


def watched_move_seen(d: Draft) -> None:
    _relocation(d, "watched_move_seen")


def false_belief_told_away(d: Draft) -> None:
    _relocation(d, "told_away")


def false_belief_told(d: Draft) -> None:
    _relocation(d, "told")


# ------------------------------------------------------------------------------ emptied
def _emptied(d: Draft, variant: str) -> None:
    """A belief about a container's state: A sees that container L1 holds several Xs (it is
    "full of them") and leaves; B empties it, carrying every X to L2, while A is away (or
    watching); A comes back for one and opens L1."""
    kind = _any_kind(d)
    reach = ACTOR_KINDS[kind]
    cls = _target_class(d)
    l1_pool = [p for p in d.containers(max_top=reach) if p in d.habitual(cls)] \
        or d.containers(max_top=reach)
    l1 = d.pick(l1_pool)
    r1 = d.room_of(l1)
    d.remove_instances(cls)
    xs = [d.obj(cls, l1) for _ in range(int(d.rng.integers(2, 4)))]
    x = xs[0]
    d.target = x
    d.keep.update(xs)
    a = d.person(kind=kind, room=r1)
    d.focus = a
    b = d.person(kind="adult", room=r1)
    d.check(a, l1)  # A opens L1 and sees what it holds
    r_away = d.pick([r for r in d.rooms if r != r1])
    if variant == "witnessed":
        l2 = _new_place(d, a, variant, [p for p in d.places(r1, max_top=1.5) if p != l1])
        d.goto(a, d.pick([f for f in d.furniture(r1) if f not in (l1, l2)]),
               int(d.rng.integers(16, 22)) + 4 * len(xs))
        d.idle(b, int(d.rng.integers(6, 9)))
    else:
        cands = [p for p in d.places(max_top=1.5) if d.room_of(p) not in (r_away,) and p != l1]
        l2 = _new_place(d, a, variant, cands)
        d.goto(a, d.pick(d.furniture(r_away)), int(d.rng.integers(16, 22)) + 4 * len(xs))
        d.idle(b, int(d.rng.integers(7, 10)) + d.world.distance(r1, r_away))
    for o in xs:
        d.fetch(b, o, l2, [l1])
    if variant == "witnessed" and d.chance(0.7):
        d.goto(b, d.pick(d.furniture(r_away)), int(d.rng.integers(4, 10)))  # as in relocation
    d.mental_state = {"type": "false_belief", "object": x, "believed": l1, "true": l2,
                      "state": "full", "now": "empty"}
    dest = d.pick([s for s in d.reachable_for(a, d.surfaces()) if s not in (l1, l2)])
    act = {"type": "fetch", "object": x, "dest": dest, "alternatives": xs[1:],
           "search": d.search_order(cls, {l1, l2})}
    if variant == "help":
        _before_the_look(d, a, l1, l2)
        d.stuck_after_one_try(a, near=l1)
        d.needs_help = True
    elif variant == "witnessed":
        _same_look(d, a, l1, l2, stayed=True)
        act["search"] = d.search_order(cls, {l1, l2}, last=[l2])
        d.mental_state = {"type": "none"}
    elif variant == "spare":
        _before_the_look(d, a, l1, l2)
        spot = d.pick([p for p in d.reachable_for(a, d.surfaces(r1)) if p != l1])
        spare = d.obj(cls, spot)
        d.keep.add(spare)
        act["alternatives"] = [*xs[1:], spare]
        d.actor(a)["retry_wait"] = int(d.rng.integers(*SELF_RESOLVE_DELAY))  # as in relocation
        d.mental_state = dict(d.mental_state, spare=spare)
    d.actor(a)["activities"].append(act)
    _relocation_life(d, variant, cls, b, (r1, r_away, d.room_of(l2), d.room_of(dest)))


def false_belief_emptied(d: Draft) -> None:
    _emptied(d, "help")


def emptied_witnessed(d: Draft) -> None:
    _emptied(d, "witnessed")


def emptied_spare(d: Draft) -> None:
    _emptied(d, "spare")


# ------------------------------------------------------------------------------ search
def _goal_class(d: Draft, min_places: int = 2) -> str:
    """A class that an earlier step can lead to (:data:`GOAL_AFTER`), kept in enough
    places."""
    goals = sorted(set(GOAL_AFTER.values()))
    classes = [c for c in goals
               if len({d.world.anchor(p) for p in d.habitual(c)}) >= min_places]
    return d.pick(classes)


def _unknown_look_alikes(d: Draft, place: int, goal: str, rooms_seen: tuple[int, ...]) -> None:
    """Other classes kept at ``place`` (the first place searched), each now only lying
    astray in a room the searcher has not seen: a look there fits a search for any of them,
    and only the searcher's earlier step says which one they want."""
    from mindhelper_env.scenarios.observer import classes_kept_at

    kept = [c for c in classes_kept_at(d.g.nodes[place].key) if c != goal]
    placed = 0
    for k in d.rng.permutation(len(kept)):
        c = kept[int(k)]
        spots = d.unusual_surfaces(c, exclude_rooms=rooms_seen)
        if not spots:
            continue
        d.remove_instances(c)
        d.keep.add(d.obj(c, d.pick(spots)))
        placed += 1
        if placed == 3:
            break
    if placed < 2:
        raise _Reject("too few look-alike classes at the first place searched")


def _search(d: Draft, variant: str) -> None:
    """A takes something (the earlier step) and then needs what goes with it: an X. Where
    the only X is decides: at a usual place (found), lying astray where A saw it (A checks
    the usual place first, then fetches it), or lying astray where A never was (help)."""
    d.scenery()
    cls = _goal_class(d)
    kind = _any_kind(d)
    a = d.person(kind=kind)
    d.focus = a
    r0 = d.world.chars[a].room
    usual = d.reachable_for(a, list(dict.fromkeys(d.habitual(cls))))
    if len(usual) < 2:
        raise _Reject("too few places to search")
    d.remove_instances(cls)
    # the earlier step: in another room A goes to for it, on every side (when it was in A's
    # own room half the time, the seen twin's X lay in A's room at reset half the time and
    # the help family's never: the reset narration read it)
    others = [r for r in d.rooms if r != r0]
    if not others:
        raise _Reject("one room only")
    r_step = d.pick(others)
    if d.chance(0.5):
        d.goto(a, d.pick(d.furniture(r0)), int(d.rng.integers(2, 5)))
    d.earlier_step(a, cls, r_step)
    if variant == "found":
        order = [usual[int(i)] for i in d.rng.permutation(len(usual))]
        shown = [k for k in range(1, min(3, len(order)))
                 if "CAN_OPEN" not in d.g.nodes[order[k]].properties]
        where = order[shown[0] if shown else int(d.rng.integers(1, min(3, len(order))))]
        x = d.obj(cls, where)
        search = order
        d.mental_state = {"type": "none"}
        habit_first = False
        _unknown_look_alikes(d, order[0], cls, (r0, r_step))
    else:
        # seen: lying in the room of the earlier step; help: in a room A has not been in
        spots = [p for p in d.unusual_surfaces(cls)
                 if (d.room_of(p) == r_step) == (variant == "seen")]
        if variant == "help":
            spots = [p for p in spots if d.room_of(p) != r0]
        where = d.pick(spots)
        x = d.obj(cls, where)
        search = [p for p in d.search_order(cls, set()) if p in usual]
        habit_first = variant == "seen"
        _unknown_look_alikes(d, search[0] if search else where, cls, (r0, r_step))
        if variant == "help":
            d.mental_state = {"type": "implicit_goal", "goal": f"get a {cls}", "object": x}
            d.needs_help = True
            d.stuck_after_one_try(a, near=search[0] if search else None)
        else:
            d.mental_state = {"type": "none", "seen_at": where}
    d.target = x
    d.keep.add(x)
    if variant != "help":
        d.actor(a)["patience"] = int(d.rng.integers(4, 6))
        d.actor(a)["retry_wait"] = int(d.rng.integers(2, 4))
    dest = d.pick([s for s in d.reachable_for(a, d.surfaces()) if s != where])
    act = {"type": "fetch", "object": x, "dest": dest, "search": [int(p) for p in search]}
    if habit_first:
        act["habit_first"] = True
    d.actor(a)["activities"].append(act)
    for _ in range(_others(d)):
        d.bystander()


def implicit_goal_search(d: Draft) -> None:
    _search(d, "help")


def search_self_found(d: Draft) -> None:
    _search(d, "found")


def search_seen_astray(d: Draft) -> None:
    _search(d, "seen")


# ------------------------------------------------------------------------------ attention
def _attention(d: Draft, needs_help: bool, a: int, anchor: int, room: int, *,
               at_anchor: bool) -> None:
    """Who in ``room`` would notice ``a``'s struggle at ``anchor``. Help needed: the adults
    there are on the phone (one at ``anchor`` itself when ``at_anchor``), or no adult is in
    the room. Silent: an adult who is not on the phone stands at ``anchor`` (``at_anchor``)
    or elsewhere in the room and comes over. Either side often has another adult on the
    phone in the room, so neither co-presence nor a call gives the answer away."""
    long_call = 60
    spots = [f for f in d.furniture(room) if f != anchor] or [anchor]
    seated = None  # whether the adult in the room sits down before the call or the wait
    if not needs_help or d.chance(0.85):
        # an adult in the room, at the anchor or across it: on the phone when help is needed
        q = d.person(kind="adult", room=room)
        spot = anchor if at_anchor else d.pick(spots)
        seated = "SITTABLE" in d.g.nodes[spot].properties
        # the same goto on both sides (where there is a seat: sit down, get up again), then
        # a call or a wait: where people sit and stand up before the struggle says nothing
        d.goto(q, spot, 0)
        if needs_help:
            d.phone(q, long_call)
        else:
            d.idle(q, long_call)
    if d.chance(0.3):
        # an adult with both hands full, standing about: cannot help either
        h = d.person(kind="adult", room=room)
        objs = [d.hold(h, d.pick(sorted(OBJECT_CATALOG))) for _ in range(2)]
        d.goto(h, d.pick(spots), long_call)
        d.deliver(h, objs, d.pick(d.reachable_for(h, d.surfaces())))
    if d.chance(0.8 if needs_help else 0.65):
        z = d.person(kind="adult", room=room)
        d.goto(z, anchor if (not at_anchor and d.chance(0.3)) else d.pick(spots), 0)
        d.phone(z, long_call)
    # someone in another room: on a call in the silent episodes, so that calls are as many on
    # both sides and only who is on the phone *where* tells whether anyone will notice
    elsewhere = [r for r in d.rooms if r != room]
    if elsewhere:
        e = d.person(kind="adult", room=d.pick(elsewhere))
        # e's call (silent side) starts when q's would (help side): the same kind of spot, a
        # seat where q sat down, so sitting and standing up delay both calls alike
        there = d.furniture(d.world.chars[e].room)
        if seated is not None:
            there = [f for f in there
                     if ("SITTABLE" in d.g.nodes[f].properties) == seated] or there
        d.goto(e, d.pick(there), 0)
        if needs_help:
            d.idle(e, 30)
        else:
            d.phone(e, long_call)
    # the struggler fails once and waits on both sides: help, when someone noticed, comes
    # only after NOTICE_DELAY, past the robot's deadline
    d.stuck_after_one_try(a, near=anchor)
    if needs_help:
        d.needs_help = True
    else:
        d.mental_state = {"type": "none"}
    for _ in range(_others(d) - 1):
        d.bystander(room=d.pick([r for r in d.rooms if r != room] or d.rooms))
    d.scenery()


def _reach(d: Draft, variant: str) -> None:
    """A child or wheelchair user takes something (the earlier step), then stretches up
    toward the high shelf where what goes with it lies among other things."""
    shelf = d.pick(d.furniture(cls=("wallshelf",)))
    room = d.room_of(shelf)
    cls = _goal_class(d, min_places=0)
    x = d.obj(cls, shelf)
    d.target = x
    others = [c for c in sorted(set(GOAL_AFTER.values())) if c != cls]
    # three look-alikes: handing the wrong one of four is what goal-blindness costs
    for k in d.rng.permutation(len(others))[:3]:
        d.obj(others[int(k)], shelf)
    kind = "child" if d.chance(0.5) else "wheelchair"
    a = d.person(kind=kind, room=room)
    d.focus = a
    d.actor(a)["patience"] = int(d.rng.integers(5, 7))
    d.actor(a)["retry_wait"] = int(d.rng.integers(3, 5))
    d.earlier_step(a, cls)
    dest = d.pick(d.reachable_for(a, d.surfaces()))
    d.fetch(a, x, dest, [shelf])
    d.mental_state = {"type": "implicit_goal", "goal": f"get the {cls} from the high shelf",
                      "object": x}
    helped = variant in ("helped", "noticed")
    at_anchor = variant == "helped" if helped else d.chance(0.75)
    _attention(d, not helped, a, shelf, room, at_anchor=at_anchor)


def implicit_goal_reach(d: Draft) -> None:
    _reach(d, "help")


def reach_helped(d: Draft) -> None:
    _reach(d, "helped")


def reach_noticed(d: Draft) -> None:
    _reach(d, "noticed")


# ------------------------------------------------------------------------------ blocked
def _blocked(d: Draft, variant: str) -> None:
    kind = _any_kind(d)
    box = d.pick(d.containers(max_top=ACTOR_KINDS[kind]))
    room = d.room_of(box)
    a = d.person(kind=kind, room=d.pick(d.rooms))
    d.focus = a
    pool = _FITS.get(d.g.nodes[box].key, _FITS["other"])
    o1 = d.hold(a, d.pick(list(pool)))
    o2 = d.hold(a, d.pick(list(pool)))
    d.target = box
    d.actor(a)["patience"] = int(d.rng.integers(5, 7))
    d.actor(a)["retry_wait"] = int(d.rng.integers(3, 5))
    # a stop on the way first, on both sides: the struggle never comes before the calls of
    # the room have started (a struggle that early would be noticed in every help draft,
    # which then fails validation, so early cues would mark the silent twins)
    d.goto(a, d.pick(d.furniture(d.world.chars[a].room)), int(d.rng.integers(2, 5)))
    d.deliver(a, [o1, o2], box)
    d.mental_state = {"type": "implicit_goal", "goal": f"open the {d.g.nodes[box].class_name}",
                      "object": box}
    helped = variant in ("helped", "noticed")
    at_anchor = variant == "helped" if helped else d.chance(0.75)
    _attention(d, not helped, a, box, room, at_anchor=at_anchor)


def implicit_goal_blocked(d: Draft) -> None:
    _blocked(d, "help")


def blocked_helped(d: Draft) -> None:
    _blocked(d, "helped")


def blocked_noticed(d: Draft) -> None:
    _blocked(d, "noticed")


# ------------------------------------------------------------------------------ routine
def routine(d: Draft) -> None:
    """Ordinary life: A gets something A saw, checks a place, tidies; others do chores."""
    d.scenery()
    kind = _any_kind(d)
    a = d.person(kind=kind)
    d.focus = a
    room = d.world.chars[a].room
    here = [o for o in d.g.nodes.values() if o.category == "Props"
            and d.world.room_of(o.id) == room and not d.world.is_hidden(o.id)
            and d.world.holder(o.id) is None and d.world.reachable(a, o.id)]
    if here:
        y = d.pick(sorted(o.id for o in here))
    else:
        cls = d.pick(sorted(OBJECT_CATALOG))
        y = d.obj(cls, d.pick(d.reachable_for(a, d.surfaces(room))))
    d.target = y
    steps = ["check", "fetch", "goto"]
    order = [steps[int(i)] for i in d.rng.permutation(3)]
    for step in order:
        if step == "check":
            d.check(a, d.pick(d.reachable_for(a, d.containers() + d.surfaces())))
        elif step == "fetch":
            src = d.world.anchor(y)
            d.fetch(a, y, d.pick([s for s in d.reachable_for(a, d.surfaces()) if s != src]),
                    [src])
        else:
            d.goto(a, d.pick(d.furniture()), int(d.rng.integers(1, 5)))
    for _ in range(_others(d)):
        d.bystander()


BUILDERS: dict[str, Callable[[Draft], None]] = {
    "false_belief_relocation": false_belief_relocation,
    "false_belief_irrelevant": false_belief_irrelevant,
    "false_belief_witnessed": false_belief_witnessed,
    "false_belief_self_corrected": false_belief_self_corrected,
    "false_belief_spare": false_belief_spare,
    "false_belief_watched": false_belief_watched,
    "watched_move_seen": watched_move_seen,
    "false_belief_told_away": false_belief_told_away,
    "false_belief_told": false_belief_told,
    "false_belief_emptied": false_belief_emptied,
    "emptied_witnessed": emptied_witnessed,
    "emptied_spare": emptied_spare,
    "implicit_goal_search": implicit_goal_search,
    "search_self_found": search_self_found,
    "search_seen_astray": search_seen_astray,
    "implicit_goal_reach": implicit_goal_reach,
    "reach_helped": reach_helped,
    "reach_noticed": reach_noticed,
    "implicit_goal_blocked": implicit_goal_blocked,
    "blocked_helped": blocked_helped,
    "blocked_noticed": blocked_noticed,
    "routine": routine,
}
