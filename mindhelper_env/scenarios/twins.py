"""Scenario families of generators ``mh-gen-3.0`` to ``mh-gen-3.3``: twins from one base draft.

A **twin group** is built from one **base draft**: the house, the people and their
schedules, the calls, the objects and where they lie, X, L1, L2, the move (up to
``mh-gen-2.5`` each family was drafted and validated alone, and what survived validation
carried the label). A **mind switch** then changes as little as possible to make each
variant, and never the focus person's own trajectory up to the cue:

* the belief groups (relocation, watched, told-away, emptied, search) switch the *timing of
  someone else*: B's move happens while the focus person A watches, or while A is on the
  phone or away; the tell is said while A listens, or while A is on the phone or away; the
  object that lies astray is left there before A comes by, or after A has left. Everything
  A does up to the look is the same on both sides but which of A's blocks is the busy one;
* the attention groups (reach, blocked) switch whether the adult at the struggle's room is on
  the phone or attending (and, to keep the calls as many, whether the adult elsewhere is).

Every random draw of a group's builder happens in the same order whatever the variant, so
the variants of one base share their rng state, their ids and every fact not named by the
switch (``tests/test_twins.py``). The timing a switch needs is found by simulating the base:
each variant takes the first candidate time that gives it the perception it needs.

The generator accepts or rejects a base as a whole: every variant must pass validation, or
none is kept, so selection never favours one side. Each suite episode comes from its own
base (its own seed): an agent never sees both sides of a pair.

People perceive by **attention** (``"perception": "attention"``): someone on the phone sees
and hears nothing of what others do, so room co-presence alone decides no belief group.
``mh-gen-3.1`` (the drafts' ``sight``) adds **sight perception** (``"perception": "sight"``):
a chore done facing away blinds like a call, and an open door lets one see what is taken and
put in the next room; the blocks of the focus person's timeline are then drawn among
realisations that look alike from outside (:func:`_block`). ``mh-gen-3.2`` (``timed``) draws
in the base every timing the switch does not need (:func:`_blocks`, :func:`_in_stay`);
``mh-gen-3.3`` (``decoys``) adds a decoy (:mod:`mindhelper_env.scenarios.decoys`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mindhelper_env.actors.actor import ACTOR_KINDS
from mindhelper_env.backends.symbolic import ROBOT_ID, Simulation
from mindhelper_env.scenarios.decoys import add_decoy
from mindhelper_env.scenarios.draft import FITS, Draft, Reject
from mindhelper_env.scenarios.observer import GOAL_AFTER, classes_kept_at
from mindhelper_env.scenarios.spec import (
    DECOY_GENERATORS,
    GENERATOR_V3,
    GENERATOR_V31,
    GENERATOR_V32,
    GENERATOR_V33,
    SIGHT_GENERATORS,
    TIMED_GENERATORS,
    V3_FAMILIES,
    V3_TWINS,
)
from mindhelper_env.world.house import OBJECT_CATALOG
from mindhelper_env.world.world import World

__all__ = ["GENERATOR_V3", "GENERATOR_V31", "GENERATOR_V32", "GENERATOR_V33", "SIGHT_GENERATORS",
           "TIMED_GENERATORS", "V3_TWINS", "V3_FAMILIES", "GROUP_BUILDERS", "Incompatible",
           "group_variants", "build_variant", "base_variants", "probe"]

#: Ticks a focus person who knows better waits after the look before going for X (as in
#: ``mh-gen-2.x``): past the robot's deadline and its next decision.
SELF_RESOLVE_DELAY = (9, 13)
#: Length of each block of the focus person's timeline (ticks).
_BLOCK = (12, 18)


class Incompatible(Exception):
    """This variant cannot be made from this base (a twin of the other kind: ``reach_helped``
    needs the attentive adult at the shelf, ``reach_noticed`` across the room)."""


# ------------------------------------------------------------------------------ helpers
def _any_kind(d: Draft) -> str:
    return "adult" if d.chance(0.6) else ("child" if d.chance(0.5) else "wheelchair")


def probe(d: Draft) -> Simulation:
    """A simulation of the draft as it stands (ids as drafted, no rng drawn; the parsed
    world is kept on the draft while its graph is unchanged)."""
    key = (len(d.g.nodes), d.world.version, d.world.states_version)
    cached = getattr(d, "_probe_world", None)
    if cached is None or cached[0] != key:
        graph = d.g.to_virtualhome()
        cached = (key, World(graph, robot_ids=(ROBOT_ID,)))
        d._probe_world = cached  # type: ignore[attr-defined]
    actors = [{**a, "after": list(a.get("after", ()))} for a in d.actors]
    spec = {"actors": actors, "events": list(d.events),
            "robot": {"id": ROBOT_ID, "name": "robot"}, "horizon": 90,
            "perception": "sight" if d.sight else "attention",
            "reference": {"focus_actor": d.focus, "needs_intervention": d.needs_help}}
    return Simulation(spec, world=cached[1].copy())


def _perceives(sim: Simulation, who: int, room: int) -> bool:
    """Does ``who`` see what happens in ``room`` at this tick (attention rule; with sight
    perception also through an open door from the next room)?"""
    actor = sim.actor_by_id[who]
    if actor.busy:
        return False
    here = sim.world.chars[who].room
    return here == room or (actor.sight and room in sim.world.views(here))


def _timeline(d: Draft, who: int, room: int, until: Callable[[Simulation], bool],
              ticks: int = 84) -> list[bool]:
    """Per tick, whether ``who`` perceives ``room`` (simulating the draft until ``until`` or
    ``ticks``): the state after each tick's acts, which is what perception reads."""
    sim = probe(d)
    out: list[bool] = []
    while sim.tick < ticks:
        sim.step_tick()
        out.append(_perceives(sim, who, room))
        if until(sim):
            break
    return out


def _stretches(flags: list[bool], want: bool, need: int) -> list[int]:
    """Ticks ``t`` such that ``flags[t - 1 : t + need + 1]`` are all ``want``."""
    out = []
    for t in range(1, len(flags) - need - 1):
        if all(flags[k] == want for k in range(t - 1, t + need + 1)):
            out.append(t)
    return out


def _after_cue(d: Draft, room: int, near: int) -> dict[str, Any]:
    """What the focus person does right after the cue, drawn once for every variant: stand
    there or walk over to other furniture of the room, for how long, and (help) how long they
    stay stuck before giving up."""
    spots = [f for f in d.furniture(room) if f != near]
    walk = d.chance(0.5) and bool(spots)
    spot = d.pick(spots) if spots else None
    return {"walk": walk, "spot": spot, "wait": int(d.rng.integers(*SELF_RESOLVE_DELAY)),
            "linger": int(d.rng.integers(22, 27))}


def _stuck(d: Draft, a: int, after: dict[str, Any]) -> None:
    rec = d.actor(a)
    rec["patience"] = 1
    rec["linger"] = after["linger"]
    if after["walk"]:
        rec["stuck_walk"] = after["spot"]


def _knows_better(d: Draft, a: int, after: dict[str, Any]) -> None:
    """A twin's person after the look: the same standing or walking as a stuck person, for
    :data:`SELF_RESOLVE_DELAY` ticks, before going for X."""
    if after["walk"]:
        d.goto(a, after["spot"], after["wait"], use_it=False)
    else:
        d.idle(a, after["wait"])


# ------------------------------------------------------------------------------ belief groups
def _blocks(d: Draft, a: int, r1: int, avoid: tuple[int, ...], length: tuple[int, int],
            told: bool, *, doors: bool = True, switch_kind: str = "busy"
            ) -> tuple[list[tuple[str, int]], set[int], int]:
    """A's timeline after X is put away: a while watching at furniture of ``r1`` and a phone
    call at furniture of ``r1``, in a random order (told-away: one more call first, the
    move's). Returns each block's kind (``watch``/``busy``) and the index of its main
    activity in A's list, the rooms other than ``r1`` A spends a block in, and the position
    of the **switch block** (where the switched event falls; ``switch_kind``: ``busy`` on
    the help side, ``watch`` on the twin's). ``mh-gen-3.0``/``3.1``: the order of the kinds
    is the same on every side, so the switch block sits at another place on the two sides.
    ``mh-gen-3.2``: the same draw places the switch block and ``switch_kind`` fills it: the
    switched event comes at the same tick on both sides, each order as likely on either.

    With sight perception (``mh-gen-3.1``) each block is drawn among what looks alike from
    outside: a watching block is spent at furniture of ``r1`` or, where a door to the next
    room is open and ``doors`` allows it, at furniture next door, seeing ``r1`` through the
    door; a busy block is a phone call or a chore facing away at furniture of ``r1`` or,
    where a door is closed, a while in the room behind it. So neither where A is nor
    whether A is on the phone says whether A sees the room."""
    spots = [f for f in d.furniture(r1) if f not in avoid] or [f for f in d.furniture(r1)]
    first = d.chance(0.5)
    if d.timed:
        other = "watch" if switch_kind == "busy" else "busy"
        order = [switch_kind, other] if first else [other, switch_kind]
    else:
        order = ["busy", "watch"] if first else ["watch", "busy"]
    if told:
        order.insert(0, "busy")
    out = []
    rooms: set[int] = set()
    for i, kind in enumerate(order):
        k = int(d.rng.integers(*length if not told or i == 0 else (10, 13) if d.timed else (5, 8)))
        out.append((kind, _block(d, a, kind, r1, d.pick(spots), k, doors, rooms)))
    base = 1 if told else 0
    switch = base + (0 if first else 1) if d.timed else next(
        i for i in range(base, len(order)) if order[i] == switch_kind)
    return out, rooms, switch


def _block(d: Draft, a: int, kind: str, room: int, spot: int, k: int, doors: bool,
           rooms: set[int]) -> int:
    """One block of A's timeline in ``room`` (see :func:`_blocks`): ``watch`` (a while at
    ``spot``) or ``busy`` (a call there); with sight perception drawn among what looks
    alike (a watching block next door through an open door, a busy block a chore or a while
    behind a closed door; the rooms next door used are added to ``rooms``). Returns the
    index of the block's main activity in A's list."""
    acts = d.actor(a)["activities"]
    if not d.sight:
        if kind == "watch":
            d.goto(a, spot, k)
        else:
            d.busy(a, spot, k, chore=False)
        return len(acts) - 1
    # sight: the same three draws for every block, whatever is chosen
    how, u_room, u_spot = (float(d.rng.random()) for _ in range(3))
    if d.timed:
        # mh-gen-3.2: next door as often whatever the kind (a room behind an open door to
        # watch through, one behind a closed door to be busy in), and only where both
        # exist, so the block takes the same walk whichever kind the side gives it
        opened, shut = (d.door_rooms(room, open_=o) if doors else [] for o in (True, False))
        nexts = opened if kind == "watch" else shut
        if opened and shut and how < 0.4:
            there = nexts[int(u_room * len(nexts))]
            rooms.add(there)
            furniture = d.furniture(there)
            d.goto(a, furniture[int(u_spot * len(furniture))], k, use_it=False)
        elif kind == "watch":
            # as long as a call or a chore of k ticks with its start and its end; nobody
            # sits down (the furniture differs between the kinds of a block)
            d.goto(a, spot, k + 2, use_it=False)
        else:
            d.busy(a, spot, k, u_room >= 0.5, use_it=False)
        d.block_ticks[len(acts) - 1] = k
        d.block_draws[len(acts) - 1] = {"kind": kind, "draws": (how, u_room, u_spot),
                                        "room": room, "spot": spot, "k": k, "doors": doors}
        return len(acts) - 1
    nexts = d.door_rooms(room, open_=kind == "watch") if doors else []
    if nexts and how < (0.5 if kind == "watch" else 1 / 3):
        there = nexts[int(u_room * len(nexts))]
        rooms.add(there)
        furniture = d.furniture(there)
        d.goto(a, furniture[int(u_spot * len(furniture))], k)
    elif kind == "watch":
        d.goto(a, spot, k)
    else:  # a call or a chore, even odds among what is left
        d.busy(a, spot, k, chore=how >= (2 / 3 if nexts else 0.5))
    return len(acts) - 1


def _windows(d: Draft, who: int, indexes: list[int], until: int) -> dict[int, list[int]]:
    """The ticks ``who`` spends in each activity of ``indexes`` (simulated up to ``until``)."""
    sim = probe(d)
    actor = sim.actor_by_id[who]
    out: dict[int, list[int]] = {i: [] for i in indexes}
    while sim.tick < until:
        tick = sim.tick
        sim.step_tick()
        if not actor._after and actor._idx in out:
            out[actor._idx].append(tick)
    return out


def _in_block(cands: list[int], window: list[int], u: float) -> list[int]:
    """The candidates inside ``window`` (ticks), ranked by how close they start to the
    fraction ``u`` of the window: the same place in its block on every side."""
    if not window:
        return []
    lo, hi = window[0], window[-1]
    aim = lo + u * max(0, hi - lo)
    return sorted((t for t in cands if lo <= t <= hi), key=lambda t: (abs(t - aim), t))


def _in_stay(d: Draft, a: int, index: int, cands: list[int], window: list[int], u: float,
             need: int) -> list[int]:
    """``mh-gen-3.2``'s :func:`_in_block`: the candidates inside the block's last ``k`` ticks
    (``k`` drawn in the base) with ``need`` ticks and a tick's margin each side in it, ranked
    by closeness to the place ``u`` drawn in the base, counted back from the block's end."""
    if not window:
        return []
    k = d.block_ticks[index]
    hi = window[-1]
    lo = max(window[0], hi - k + 1) + 1
    top = hi - need - 3  # two ticks to spare: the switched act never ends at the block's end
    if top < lo:
        return []
    aim = top - u * (top - lo)
    return sorted((t for t in cands if lo <= t <= top), key=lambda t: (abs(t - aim), t))


def _before_look(d: Draft, a: int, r1: int, l1: int, l2: int) -> None:
    """Between the timeline and the look: sometimes a while at other furniture of the room."""
    stay = d.chance(0.4)
    spot = d.pick([f for f in d.furniture(r1) if f not in (l1, l2)] or [l1])
    k = int(d.rng.integers(2, 5))
    if stay:
        d.goto(a, spot, k)


def _two_boxes(d: Draft, reach: float, cls: str) -> tuple[int, int, int]:
    """A room with two containers within ``reach``: L1 (where one keeps a ``cls`` where the
    room has one) and L2; returns ``(room, l1, l2)``."""
    rooms = [r for r in d.rooms if len(d.containers(r, max_top=min(reach, 1.9))) >= 2]
    if not rooms:
        raise Reject("no room with two containers in reach")
    r1 = d.pick(rooms)
    boxes = d.containers(r1, max_top=min(reach, 1.9))
    usual = [b for b in boxes if b in d.habitual(cls)]
    l1 = d.pick(usual or boxes)
    l2 = d.pick([b for b in boxes if b != l1])
    return r1, l1, l2


def _belief_group(d: Draft, group: str, variant: str) -> None:
    """Relocation, watched, told-away and emptied: X (or several Xs) in container L1 of room
    r1, seen there by A; B carries it to container L2 of the same room while A is on the
    phone or away (help) or while A watches (twin); in told-away B then tells someone in r1
    where it went, while A listens (twin) or not (help). A comes back for X and opens L1."""
    help_side = variant == "help"
    kind = _any_kind(d)
    reach = ACTOR_KINDS[kind]
    classes = [c for c in sorted(OBJECT_CATALOG)
               if len({d.world.anchor(p) for p in d.habitual(c)}) >= 1]
    cls = d.pick(classes)
    r1, l1, l2 = _two_boxes(d, reach, cls)
    others = [r for r in d.rooms if r != r1]
    if not others:
        raise Reject("one room only")
    near = [r for r in others if d.world.distance(r1, r) <= 1]
    r_away = d.pick(near or others)
    a = d.person(kind=kind, room=r1)
    d.focus = a
    b = d.person(kind="adult", room=r1)
    surfaces = d.reachable_for(a, d.surfaces(r1))
    if not surfaces:
        raise Reject("no low surface in the room")
    xs: list[int]
    n_x = 2 if group == "emptied" else 1
    if group == "emptied":
        d.remove_instances(cls)
        xs = [d.obj(cls, l1) for _ in range(n_x)]
        d.check(a, l1)  # A opens L1 and sees it full of Xs
        # then a while at other furniture of the room, on every side: the move never
        # comes right after that first look (the ticks after a look are what a classifier
        # reads as its history)
        d.goto(a, d.pick([f for f in d.furniture(r1) if f not in (l1, l2)] or [l1]),
               int(d.rng.integers(6, 9)))
    else:
        xs = [d.obj(cls, d.pick(surfaces))]
        if group == "watched":
            # A learns where X is only by watching B put it away, putting something else
            # away meanwhile
            d.fetch(b, xs[0], l1, [d.world.anchor(xs[0])])
            _put_other(d, a, r1, (l1, l2), cls)
        else:
            d.fetch(a, xs[0], l1, [d.world.anchor(xs[0])])
    x = xs[0]
    d.target = x
    d.keep.update(xs)
    spots_b = [f for f in d.furniture(r1) if f not in (l1, l2)] or [l1]
    b_spot = d.pick(spots_b)
    # mh-gen-3.2: blocks fit the switch wherever it falls (no acceptance that sees the side)
    lengths = {"emptied": (19, 23), "told": (10, 13), "": (13, 17)} if d.timed else {
        "emptied": (15, 19), "told": (10, 13), "": (10, 14)}
    length = lengths.get(group, lengths[""])
    # (told-away: A hears the tell only in the room, so A's blocks stay in it)
    moved_seen = False if group == "told" else not help_side
    # the switch block: the move's (the tell's in told-away), busy on the help side
    switch_kind = "busy" if (help_side if group == "told" else not moved_seen) else "watch"
    blocks, next_door, switch = _blocks(d, a, r1, (l1, l2), length, group == "told",
                                        doors=group != "told", switch_kind=switch_kind)
    add_decoy(d, a, r1, blocks, (l1, l2), probe)  # mh-gen-3.3 (no draw otherwise)
    _before_look(d, a, r1, l1, l2)
    after = _after_cue(d, r1, l1)
    dest = d.pick([s for s in d.reachable_for(a, d.surfaces()) if s not in (l1, l2)])
    u_move, u_tell = float(d.rng.random()), float(d.rng.random())
    listener = None
    if group == "told":
        listener = d.person(kind="adult", room=r1)
        d.goto(listener, d.pick([f for f in d.furniture(r1) if f not in (l1, l2)] or [l1]), 60)
    # the rest of the house, drawn before any timing is chosen
    _life(d, cls, (r1, r_away, *sorted(next_door)))
    # --- the switch: when B moves X (and, in told-away, when B tells)
    d.switched.add(b)
    b_rec = d.actor(b)
    wait = {"type": "idle", "ticks": 200}
    b_rec["activities"].extend([{"type": "goto", "target": b_spot, "stay": 0, "use": None},
                                wait])
    for o in xs:
        d.fetch(b, o, l2, [l1])
    look = {"type": "check", "target": l1}  # the look's first steps, as on every side
    d.actor(a)["activities"].append(look)
    look_tick, flags, windows, start = _observe(d, a, r1, l1, [i for _, i in blocks], b, wait,
                                                skip=_opens_early(d, a, l1))
    need = 6 * n_x
    # the move in the busy block (help, and told-away's first block on both sides) or the
    # watching block (twin), at the same place in its block
    move_block = blocks[0][1] if group == "told" else next(
        i for kind, i in blocks if (kind == "watch") == moved_seen)
    if d.timed and group != "told":
        move_block = blocks[switch][1]
    moves = [t for t in _stretches(flags, moved_seen, need)
             if t > start and t + need + 3 < look_tick]
    moves = (_in_stay(d, a, move_block, moves, windows[move_block], u_move, need) if d.timed
             else _in_block(moves, windows[move_block], u_move))

    def moved(sim: Simulation) -> bool:
        return all(sim.world.location(o) == l2 for o in xs) and not sim.world.is_open(l2)

    _settle(d, wait, start, moves, lambda sim: _belief_is(sim, a, xs, l2)
            if moved_seen else _belief_is(sim, a, xs, l1), moved, look_tick)
    if group == "told":
        tell_wait = {"type": "idle", "ticks": 200}
        b_rec["activities"].extend([tell_wait, {"type": "tell", "person": listener,
                                                "object": x, "place": l2}])
        tell_start = _idle_start(d, b, tell_wait)
        tell_block = next(i for kind, i in blocks[1:] if (kind == "watch") != help_side)
        if d.timed:
            tell_block = blocks[switch][1]
        ears = [t for t in _stretches(flags, not help_side, 3)
                if t > tell_start and t + 3 < look_tick]
        ears = (_in_stay(d, a, tell_block, ears, windows[tell_block], u_tell, 3) if d.timed
                else _in_block(ears, windows[tell_block], u_tell))
        tell_index = len(b_rec["activities"]) - 1

        def told(sim: Simulation) -> bool:
            actor = sim.actor_by_id[b]
            return actor._after or actor._idx > tell_index

        _settle(d, tell_wait, tell_start, ears,
                lambda sim: _belief_is(sim, a, xs, l2 if not help_side else l1), told,
                look_tick)
    acts = d.actor(a)["activities"]
    del acts[next(i for i, act in enumerate(acts) if act is look)]  # this one, not its equal
    # --- the look and what follows it
    d.mental_state = {"type": "false_belief", "object": x, "believed": l1, "true": l2}
    if group == "emptied":
        d.mental_state.update(state="full", now="empty")
    search = d.search_order(cls, {l1, l2}, last=[] if help_side else [l2])
    if help_side:
        d.actor(a)["activities"].append({"type": "fetch", "object": x, "dest": dest,
                                         "search": search, "alternatives": xs[1:]})
        _stuck(d, a, after)
        d.needs_help = True
    else:
        d.check(a, l1)
        _knows_better(d, a, after)
        d.actor(a)["activities"].append({"type": "fetch", "object": x, "dest": dest,
                                         "search": search, "alternatives": xs[1:]})
        d.mental_state = {"type": "none"}


def _belief_is(sim: Simulation, who: int, objs: list[int], place: int) -> bool:
    beliefs = sim.actor_by_id[who].beliefs
    return all(beliefs.get(o) is not None and sim.world.anchor(beliefs[o]) == place
               for o in objs)


def _settle(d: Draft, wait: dict[str, Any], start: int, ranked: list[int],
            outcome: Callable[[Simulation], bool], done: Callable[[Simulation], bool],
            before: int, tries: int = 6) -> int:
    """Set ``wait`` (an idle activity that starts at tick ``start``) so that what follows it
    starts at the first of ``ranked`` for which, once ``done`` holds (checked each tick,
    before tick ``before``), ``outcome`` holds too (simulated). Raises
    :class:`~mindhelper_env.scenarios.draft.Reject` if none of the first ``tries`` does."""
    for t in ranked[:tries]:
        wait["ticks"] = max(0, t - start)
        sim = probe(d)
        while sim.tick < before - 1:
            sim.step_tick()
            if done(sim):
                if outcome(sim):
                    return t
                break
    wait["ticks"] = 200
    raise Reject("no time for the switch")


def _put_other(d: Draft, who: int, room: int, avoid: tuple[int, ...], cls: str) -> None:
    """``who`` takes something (not a ``cls``) off a surface of ``room`` and puts it into a
    container of the room other than ``avoid``, or waits as long."""
    boxes = [c for c in d.reachable_for(who, d.containers(room)) if c not in avoid]
    spots = d.reachable_for(who, d.surfaces(room))
    box = d.pick(boxes) if boxes and spots else None
    if box is not None:
        pool = sorted(c for c in FITS.get(d.g.nodes[box].key, FITS["other"]) if c != cls)
        if pool:
            y = d.obj(d.pick(pool), d.pick(spots))
            d.fetch(who, y, box, [d.world.anchor(y)])
            return
    d.idle(who, int(d.rng.integers(4, 7)))


def _observe(d: Draft, a: int, room: int, l1: int, blocks: list[int], b: int,
             wait: dict[str, Any], *, skip: bool) -> tuple[int, list[bool], dict[int, list[int]],
                                                           int]:
    """One simulation of the base before the switch: the tick A opens L1 for the look (the
    first open skipped when A opened it before), whether A perceives ``room`` at each tick up
    to it, the ticks of each of A's ``blocks`` and the tick B starts ``wait``."""
    sim = probe(d)
    actor, mover = sim.actor_by_id[a], sim.actor_by_id[b]
    b_index = next(i for i, act in enumerate(d.actor(b)["activities"]) if act is wait)
    flags: list[bool] = []
    windows: dict[int, list[int]] = {i: [] for i in blocks}
    start = None
    opens = 0
    while sim.tick < 84:
        tick = sim.tick
        events = sim.step_tick()
        flags.append(_perceives(sim, a, room))
        if not actor._after and actor._idx in windows:
            windows[actor._idx].append(tick)
        if start is None and not mover._after and mover._idx == b_index:
            start = tick
        for e in events:
            if e.actor == a and e.verb == "open" and e.args and e.args[0] == l1:
                opens += 1
                if opens == (2 if skip else 1):
                    if start is None:
                        raise Reject("B never gets to the move")
                    return tick, flags[:tick], windows, start
    raise Reject("the focus person never opens L1")


def _first_open(d: Draft, a: int, l1: int, *, skip: bool) -> int:
    """The tick A opens L1 for the look (simulated; the first open is skipped when A opened
    L1 before, putting X away or checking it)."""
    sim = probe(d)
    opens = 0
    while sim.tick < 84:
        tick = sim.tick
        for e in sim.step_tick():
            if e.actor == a and e.verb == "open" and e.args and e.args[0] == l1:
                opens += 1
                if opens == (2 if skip else 1):
                    return tick
    raise Reject("the focus person never opens L1")


def _opens_early(d: Draft, a: int, l1: int) -> bool:
    """Does A open L1 before the timeline (putting X away, or checking it)?"""
    acts = d.actor(a)["activities"]
    first = acts[0] if acts else {}
    return (first.get("type") == "fetch" and first.get("dest") == l1) or (
        first.get("type") == "check" and first.get("target") == l1)


def _idle_start(d: Draft, who: int, wait: dict[str, Any]) -> int:
    """The tick ``who`` starts the idle activity ``wait`` (simulated)."""
    ticks, wait["ticks"] = wait["ticks"], 200
    sim = probe(d)
    actor = sim.actor_by_id[who]
    index = next(i for i, act in enumerate(d.actor(who)["activities"]) if act is wait)
    try:
        while sim.tick < 84:
            sim.step_tick()
            if not actor._after and actor._idx == index:
                return sim.tick - 1
    finally:
        wait["ticks"] = ticks
    raise Reject("never gets to the wait")


def _life(d: Draft, cls: str, rooms_seen: tuple[int, ...]) -> None:
    """The rest of the house, the same in every variant: sometimes another X where the focus
    person never goes, a bystander, the scenery."""
    if d.chance(0.4):
        spots = d.unusual_surfaces(cls, exclude_rooms=rooms_seen)
        if spots:
            d.keep.add(d.obj(cls, d.pick(spots)))
    if d.chance(0.5):
        d.bystander()
    d.scenery()


# ------------------------------------------------------------------------------ search
def _goal_class(d: Draft, min_places: int = 2) -> str:
    goals = sorted(set(GOAL_AFTER.values()))
    classes = [c for c in goals
               if len({d.world.anchor(p) for p in d.habitual(c)}) >= min_places]
    return d.pick(classes)


def _search(d: Draft, variant: str) -> None:
    """A takes something (the earlier step, in another room) and then needs what goes with
    it: an X. After the earlier step A stays in that room a while, watching or on the phone
    (both, in a random order, on every side). The house's only X is brought in by C and left
    on a surface there where nobody keeps one: while A watches (twin: A knows where it is)
    or while A is on the phone (help). A checks the usual place first either way."""
    help_side = variant == "help"
    d.scenery()
    cls = _goal_class(d)
    kind = _any_kind(d)
    a = d.person(kind=kind)
    d.focus = a
    r0 = d.world.chars[a].room
    usual = d.reachable_for(a, list(dict.fromkeys(d.habitual(cls))))
    if len(usual) < 2:
        raise Reject("too few places to search")
    d.remove_instances(cls)
    others = [r for r in d.rooms if r != r0]
    if not others:
        raise Reject("one room only")
    r_step = d.pick(others)
    if d.chance(0.5):
        d.goto(a, d.pick(d.furniture(r0)), int(d.rng.integers(2, 5)))
    d.earlier_step(a, cls, r_step)
    spots = [p for p in d.unusual_surfaces(cls) if d.room_of(p) == r_step]
    where = d.pick(spots)
    stay = [f for f in d.furniture(r_step) if f != where] or [where]
    first = d.chance(0.5)
    order = ["watch", "busy"] if first else ["busy", "watch"]
    if d.timed:  # the switch block (C leaves X there: busy on the help side) drawn in the base
        order = ["busy" if help_side else "watch"] * 2
        order[1] = "watch" if order[0] == "busy" else "busy"
        if not first:
            order.reverse()
    blocks = []
    for kind_ in order:
        k = int(d.rng.integers(8, 12))
        blocks.append((kind_, _block(d, a, kind_, r_step, d.pick(stay), k, True, set())))
    add_decoy(d, a, r_step, blocks, (where,), probe)  # mh-gen-3.3 (no draw otherwise)
    if d.timed:
        # back in the room of the earlier step before the search, from wherever the last
        # block was (the rooms next door differ by the block's kind, and so would the walk)
        d.goto(a, d.pick(stay), 0, use_it=False)
    search = [p for p in d.search_order(cls, set()) if p in usual and d.room_of(p) != r_step]
    if not search:
        raise Reject("nowhere usual to search outside the room of the earlier step")
    # the look-alikes lie in rooms A does not pass through before the look (A would learn
    # of them on the way, and then only the wanted class would be left unknown)
    act = {"type": "fetch", "object": -1, "dest": None, "search": [int(p) for p in search],
           "habit_first": True}
    d.actor(a)["activities"].append(act)
    passed = _rooms_before_look(d, a, search[0])
    if d.timed:  # the rooms next door either kind of block may use, on every side
        passed |= {*d.door_rooms(r_step, open_=True), *d.door_rooms(r_step, open_=False)}
    _look_alikes(d, search[0], cls, tuple(sorted({r0, r_step} | passed)))
    r_c = d.pick([r for r in d.rooms if r not in (r0, r_step)] or others)
    c = d.person(kind="adult", room=r_c)
    x = d.hold(c, cls)
    d.target = x
    d.keep.add(x)
    after = _after_cue(d, d.room_of(search[0]), search[0])
    dest = d.pick([s for s in d.reachable_for(a, d.surfaces()) if s != where])
    act["object"], act["dest"] = x, dest
    u = float(d.rng.random())
    d.actor(a)["patience"] = int(d.rng.integers(4, 6))
    d.actor(a)["retry_wait"] = after["wait"]
    for _ in range(max(1, int(d.rng.integers(1, 3)) - 1)):
        d.bystander()
    # --- the switch: when C leaves X on the surface
    d.switched.add(c)
    wait = {"type": "idle", "ticks": 200}
    d.actor(c)["activities"].extend([wait, {"type": "deliver", "objects": [x], "dest": where}])
    look_tick = _first_look(d, a, search[0])
    windows = _windows(d, a, [i for _, i in blocks], look_tick)
    start = _idle_start(d, c, wait)
    travel = _travel(d, c, r_c, where)
    block = next(i for kind_, i in blocks if (kind_ == "watch") != help_side)
    puts = [t for t in windows[block][1:-2]]
    if d.timed:
        block = blocks[0 if first else 1][1]
        puts = _in_stay(d, a, block, list(windows[block]), windows[block], u, 1)
    else:
        puts = _in_block(puts, windows[block], u)
    cands = [t - travel for t in puts if t - travel > start]

    def delivered(sim: Simulation) -> bool:
        return sim.world.holder(x) is None

    def outcome(sim: Simulation) -> bool:
        if sim.world.anchor(x) != where:
            return False
        b = sim.actor_by_id[a].beliefs.get(x)
        return (b is None) if help_side else (b is not None and sim.world.anchor(b) == where)

    _settle(d, wait, start, cands, outcome, delivered, look_tick, tries=8)
    if help_side:
        d.mental_state = {"type": "implicit_goal", "goal": f"get a {cls}", "object": x}
        d.needs_help = True
        _stuck(d, a, after)
    else:
        d.mental_state = {"type": "none", "seen_at": where}
        if after["walk"]:
            # during the pause after the empty look, the same walk as a stuck person's
            d.actor(a)["pause_walk"] = after["spot"]


def _rooms_before_look(d: Draft, a: int, place: int) -> set[int]:
    """The rooms A is in before first looking at ``place`` (simulated)."""
    sim = probe(d)
    rooms: set[int] = set()
    while sim.tick < 84:
        for e in sim.step_tick():
            if e.actor == a and e.verb in ("open", "look") and e.args and e.args[0] == place:
                return rooms
        room = sim.world.chars[a].room
        if room is not None:
            rooms.add(room)
    raise Reject("the focus person never looks at the usual place")


def _first_look(d: Draft, a: int, place: int) -> int:
    """The tick A first looks at ``place`` (opens it, or looks it over; simulated)."""
    sim = probe(d)
    while sim.tick < 84:
        tick = sim.tick
        for e in sim.step_tick():
            if e.actor == a and e.verb in ("open", "look") and e.args and e.args[0] == place:
                return tick
    raise Reject("the focus person never looks at the usual place")


def _travel(d: Draft, c: int, room: int, where: int) -> int:
    """Ticks C needs from the start of the deliver to the put (a door a tick, and the put)."""
    return d.world.distance(room, d.room_of(where)) + 2


def _look_alikes(d: Draft, place: int, goal: str, rooms_seen: tuple[int, ...]) -> None:
    """Other classes kept at ``place``, each now only lying astray in a room the searcher has
    not seen: only the searcher's earlier step says which one they want."""
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
        raise Reject("too few look-alike classes at the first place searched")


# ------------------------------------------------------------------------------ attention
def _attention(d: Draft, variant: str, a: int, anchor: int, room: int) -> None:
    """Who in ``room`` would notice ``a``'s struggle at ``anchor``: an adult q at the anchor
    or across the room (drawn in the base; ``*_helped`` needs the anchor, ``*_noticed`` across)
    takes a long call (help) or stands there attending (twin); an adult e in another room does
    the other, so calls are as many on both sides. Others: sometimes an adult with both hands
    full, sometimes another adult on the phone in the room."""
    help_side = variant == "help"
    long_call = 60
    spots = [f for f in d.furniture(room) if f != anchor] or [anchor]
    at_anchor = d.chance(0.5)
    if (variant == "helped" and not at_anchor) or (variant == "noticed" and at_anchor):
        raise Incompatible(variant)
    q = d.person(kind="adult", room=room)
    d.switched.add(q)
    spot = anchor if at_anchor else d.pick(spots)
    seated = "SITTABLE" in d.g.nodes[spot].properties
    # sight perception: a busy adult is on the phone or at a chore facing away (at other
    # furniture than the anchor), drawn in the base; the switched busy adult (q on the help
    # side, e on the twin's) does the same kind of busy on both sides, so calls and chores
    # are as many on both sides
    chores = [d.chance(0.5) for _ in range(3)] if d.sight else [False] * 3
    switched_chore = chores[0] and not at_anchor
    # mh-gen-3.2: the switched adults walk to their spot without sitting down or switching
    # anything on, so the busy one's call or chore starts as they arrive on either side
    use = not d.timed
    if help_side:
        d.busy(q, spot, long_call, switched_chore, use_it=use)
    else:
        d.goto(q, spot, 0, use_it=use)
        d.idle(q, long_call)
    if d.chance(0.3):
        h = d.person(kind="adult", room=room)
        objs = [d.hold(h, d.pick(sorted(OBJECT_CATALOG))) for _ in range(2)]
        d.goto(h, d.pick(spots), long_call)
        d.deliver(h, objs, d.pick(d.reachable_for(h, d.surfaces())))
    if d.chance(0.7):
        z = d.person(kind="adult", room=room)
        z_spot = anchor if (not at_anchor and d.chance(0.3)) else d.pick(spots)
        d.busy(z, z_spot, long_call, chore=chores[2] and z_spot != anchor)
    elsewhere = [r for r in d.rooms if r != room]
    if elsewhere:
        e = d.person(kind="adult", room=d.pick(elsewhere))
        d.switched.add(e)
        there = d.furniture(d.world.chars[e].room)
        there = [f for f in there if ("SITTABLE" in d.g.nodes[f].properties) == seated] or there
        e_spot = d.pick(there)
        if help_side:
            d.goto(e, e_spot, 0, use_it=use)
            d.idle(e, long_call)
        else:
            d.busy(e, e_spot, long_call, switched_chore, use_it=use)
    after = _after_cue(d, room, anchor)
    _stuck(d, a, after)
    if help_side:
        d.needs_help = True
    else:
        d.mental_state = {"type": "none"}
    for _ in range(max(0, int(d.rng.integers(1, 3)) - 1)):
        d.bystander(room=d.pick([r for r in d.rooms if r != room] or d.rooms))
    d.scenery()


def _reach(d: Draft, variant: str) -> None:
    """A child or wheelchair user takes something (the earlier step), then stretches up toward
    the high shelf where what goes with it lies among three other things."""
    shelf = d.pick(d.furniture(cls=("wallshelf",)))
    room = d.room_of(shelf)
    cls = _goal_class(d, min_places=0)
    x = d.obj(cls, shelf)
    d.target = x
    others = [c for c in sorted(set(GOAL_AFTER.values())) if c != cls]
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
    _attention(d, variant, a, shelf, room)


def _blocked(d: Draft, variant: str) -> None:
    """A, both hands full, stops at the closed container they must fill."""
    kind = _any_kind(d)
    box = d.pick(d.containers(max_top=ACTOR_KINDS[kind]))
    room = d.room_of(box)
    a = d.person(kind=kind, room=d.pick(d.rooms))
    d.focus = a
    pool = FITS.get(d.g.nodes[box].key, FITS["other"])
    o1 = d.hold(a, d.pick(list(pool)))
    o2 = d.hold(a, d.pick(list(pool)))
    d.target = box
    d.actor(a)["patience"] = int(d.rng.integers(5, 7))
    d.actor(a)["retry_wait"] = int(d.rng.integers(3, 5))
    d.goto(a, d.pick(d.furniture(d.world.chars[a].room)), int(d.rng.integers(2, 5)))
    d.deliver(a, [o1, o2], box)
    d.mental_state = {"type": "implicit_goal", "goal": f"open the {d.g.nodes[box].class_name}",
                      "object": box}
    _attention(d, variant, a, box, room)


# ------------------------------------------------------------------------------ the groups
#: Each help family: ``(builder, {family: variant})``.
GROUP_BUILDERS: dict[str, tuple[Callable[[Draft, str], None], dict[str, str]]] = {
    "false_belief_relocation": (lambda d, v: _belief_group(d, "relocation", v),
                                {"false_belief_relocation": "help",
                                 "false_belief_witnessed": "twin"}),
    "false_belief_watched": (lambda d, v: _belief_group(d, "watched", v),
                             {"false_belief_watched": "help", "watched_move_seen": "twin"}),
    "false_belief_told_away": (lambda d, v: _belief_group(d, "told", v),
                               {"false_belief_told_away": "help", "false_belief_told": "twin"}),
    "false_belief_emptied": (lambda d, v: _belief_group(d, "emptied", v),
                             {"false_belief_emptied": "help", "emptied_witnessed": "twin"}),
    "implicit_goal_search": (_search, {"implicit_goal_search": "help",
                                       "search_seen_astray": "twin"}),
    "implicit_goal_reach": (_reach, {"implicit_goal_reach": "help", "reach_helped": "helped",
                                     "reach_noticed": "noticed"}),
    "implicit_goal_blocked": (_blocked, {"implicit_goal_blocked": "help",
                                         "blocked_helped": "helped",
                                         "blocked_noticed": "noticed"}),
}


def group_variants(help_family: str) -> dict[str, str]:
    """``{family: variant}`` of a twin group (help family first)."""
    return dict(GROUP_BUILDERS[help_family][1])


def base_variants(help_family: str, seed: int, attempt: int = 0,
                  houses: Any = None, generator: str = GENERATOR_V3) -> dict[str, Draft]:
    """Every variant of one base draft of a twin group, built but not validated:
    ``{family: draft}`` (a variant this base has no room for is left out; raises
    :class:`~mindhelper_env.scenarios.draft.Reject` if the base cannot be built). The
    generator seeds its drafts this way (``generate_episode(..., generator="mh-gen-3.0")``)."""
    import numpy as np

    index = tuple(V3_TWINS).index(help_family)
    out: dict[str, Draft] = {}
    for family in GROUP_BUILDERS[help_family][1]:
        d = Draft(np.random.default_rng([int(seed), 1000 + index, int(attempt)]), family, houses,
                  sight=generator in SIGHT_GENERATORS, timed=generator in TIMED_GENERATORS,
                  decoys=generator in DECOY_GENERATORS)
        try:
            build_variant(d, help_family, family)
        except Incompatible:
            continue
        out[family] = d
    return out


def build_variant(d: Draft, help_family: str, family: str) -> None:
    """Build ``family``'s variant of the group's base on ``d`` (raises :class:`Incompatible`
    when this base has no such variant, :class:`~mindhelper_env.scenarios.draft.Reject` when
    the base cannot be built)."""
    builder, variants = GROUP_BUILDERS[help_family]
    if d.sight:
        d.draw_doors()
    builder(d, variants[family])
