"""``mh-gen-3.3``: a decoy whose blocks mirror the focus person's.

In ``mh-gen-3.2`` the switched event of a belief group (the move, the emptying, the tell,
the object left astray) falls in a block of the focus person A's timeline that is busy on
the help side (a call, a chore facing away, a while behind a closed door) and watching on
the twin's. The failure and the event's tick were shared, but at the event someone was busy
on the help side and nobody on the twin's: the house-wide counts of calls, chores and walks
per tick told the side without knowing who anyone is.

``mh-gen-3.3`` adds a **decoy** D to those groups: another adult, not the mover, in A's room
from the start, whose blocks are A's blocks with the kinds swapped: where A is busy D
watches, where A watches D is busy, each block of D starting and ending on the tick A's
does, a busy block of D the same kind (call, chore, a while next door) as A's busy block
at that place would be. So on the help side A is busy in the switch block and D watches;
on the twin's D is busy in it and A watches; the busy person of every block is busy the
same way from the same tick to the same tick on both sides, and the walks are the same:
whether *anyone* is busy, away or out of earshot at the event says nothing of the side,
only *whose* state it is does (``tests/test_twins_v33.py`` checks the per-tick counts base
by base; :mod:`mindhelper_env.validity.decisive` measures the statistic).

Every draw the decoy takes is taken on every side (one spot per block, the length of its
last stay), so the variants of a base keep their rng state and ids. A decoy out of step
with A (a block starting on another tick) rejects the base, for every variant alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mindhelper_env.scenarios.draft import Draft, Reject

__all__ = ["add_decoy", "block_starts", "DECOY_TAIL"]

#: How long the decoy stays at furniture of the room after its last block (ticks).
DECOY_TAIL = (4, 12)
_BUSY = ("phone", "chore")


def _where(act: dict[str, Any]) -> int | None:
    """The furniture an activity leaves its person at (None: unknown)."""
    for key in ("dest", "target"):
        if act.get(key) is not None:
            return int(act[key])
    return None


def _next_door(d: Draft, info: dict[str, Any]) -> bool:
    """Is A's block of ``info`` spent next door (either kind: the same draws)?"""
    how = info["draws"][0]
    opened, shut = (d.door_rooms(info["room"], open_=o) if info["doors"] else []
                    for o in (True, False))
    return bool(opened and shut and how < 0.4)


def _mirror_block(d: Draft, who: int, kind: str, info: dict[str, Any], spot: int) -> int:
    """One block of ``who`` of ``kind`` with the draws of A's block ``info`` (the timed branch
    of :func:`mindhelper_env.scenarios.twins._block`, the decoy's own spot in the room):
    next door where A's block is next door (the room behind an open door to watch, behind
    a closed one to be busy), else watching at ``spot`` or busy there, a call or a chore as
    A's would be. Returns the index of its first activity."""
    how, u_room, u_spot = info["draws"]
    room, k = info["room"], info["k"]
    start = len(d.actor(who)["activities"])
    opened, shut = (d.door_rooms(room, open_=o) if info["doors"] else [] for o in (True, False))
    if opened and shut and how < 0.4:
        nexts = opened if kind == "watch" else shut
        there = nexts[int(u_room * len(nexts))]
        furniture = d.furniture(there)
        d.goto(who, furniture[int(u_spot * len(furniture))], k, use_it=False)
    elif kind == "watch":
        d.goto(who, spot, k + 2, use_it=False)
    else:
        d.busy(who, spot, k, u_room >= 0.5, use_it=False)
    return start


def _first_index(acts: list[dict[str, Any]], main: int) -> int:
    """The index of the first activity of the block whose main activity is ``main``."""
    return main - 1 if acts[main]["type"] in _BUSY else main


def block_starts(d: Draft, wanted: dict[int, list[int]], probe: Callable[[Draft], Any],
                 until: int = 84) -> dict[int, list[int | None]]:
    """The tick each person ``who`` of ``wanted`` starts each of their activities
    ``wanted[who]`` (one simulation of the draft by ``probe``; None: never)."""
    sim = probe(d)
    actors = {who: sim.actor_by_id[who] for who in wanted}

    def pending() -> bool:
        return any(a.status == "active" and sum(m.kind == "activity_start" for m in a.markers)
                   <= max(wanted[who]) for who, a in actors.items())

    while sim.tick < until and pending():
        sim.step_tick()
    out: dict[int, list[int | None]] = {}
    for who, actor in actors.items():
        first: dict[int, int] = {}
        for m in actor.markers:
            if m.kind == "activity_start" and m.activity not in first:
                first[m.activity] = m.tick
        out[who] = [first.get(i) for i in wanted[who]]
    return out


def add_decoy(d: Draft, a: int, room: int, blocks: list[tuple[str, int]],
              avoid: tuple[int, ...], probe: Callable[[Draft], Any]) -> int | None:
    """``mh-gen-3.3`` (``d.decoys``): add the decoy D to ``room``: an adult whose blocks are
    A's ``blocks`` (``(kind, index of the main activity)``, as built so far) with the kinds
    swapped, aligned on A's by an idle first, then a while at furniture of the room. D is
    one of the draft's switched people (its schedule differs by side). ``probe`` simulates
    the draft (:func:`mindhelper_env.scenarios.twins.probe`). Returns D's id (None
    where the draft has no decoys: nothing is drawn then)."""
    if not d.decoys:
        return None
    if not d.timed or not d.sight:
        raise ValueError("decoys need mh-gen-3.2's timed blocks and sight perception")
    acts_a = d.actor(a)["activities"]
    if len(acts_a) != blocks[-1][1] + 1:
        raise ValueError("add_decoy comes right after A's last block")
    dec = d.person(kind="adult", room=room)
    d.decoy = dec
    d.switched.add(dec)
    spots = [f for f in d.furniture(room) if f not in avoid] or d.furniture(room)
    # D waits at furniture of the room until A's first block (the stay aligns the two)
    here = d.pick(spots)
    d.goto(dec, here, 0, use_it=False)
    lead = d.actor(dec)["activities"][-1]
    firsts_a = [_first_index(acts_a, main) for _, main in blocks]
    firsts_d = []
    for (kind, main), first in zip(blocks, firsts_a, strict=True):
        info = d.block_draws[main]
        mine = "busy" if kind == "watch" else "watch"
        # D walks where A walks: D stays at its furniture where A's block is at the
        # furniture A is already at (a walk takes a tick), else goes to other furniture
        fresh = d.pick([f for f in spots if f not in (info["spot"], here)]
                       or [f for f in spots if f != here] or spots)
        before = [_where(x) for x in acts_a[:first] if x["type"] not in ("phone", "idle")]
        stays = not _next_door(d, info) and bool(before) and before[-1] == info["spot"]
        spot = here if stays else fresh
        firsts_d.append(_mirror_block(d, dec, mine, info, spot))
        here = spot if not _next_door(d, info) else -1
    tail = len(d.actor(dec)["activities"])
    d.goto(dec, d.pick(spots), int(d.rng.integers(*DECOY_TAIL)), use_it=False)
    # the end of A's last block: A's next activity, a marker for the alignment only
    end = {"type": "idle", "ticks": 0}
    acts_a.append(end)
    try:
        wanted = {a: firsts_a + [len(acts_a) - 1], dec: firsts_d + [tail]}
        starts = block_starts(d, wanted, probe)
        want = starts[a]
        if any(t is None for t in want):
            raise Reject("the focus person's blocks never start")
        for _ in range(3):
            got = starts[dec]
            if got == want:
                break
            if got[0] is None:
                raise Reject("the decoy never starts its blocks")
            lead["stay"] = max(0, lead["stay"] + want[0] - got[0])
            starts = block_starts(d, {dec: wanted[dec]}, probe)
        if starts[dec] != want:
            raise Reject("the decoy is out of step with the focus person")
    finally:
        if acts_a and acts_a[-1] is end:
            acts_a.pop()
    return dec
