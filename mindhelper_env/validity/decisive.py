"""The decisive-moment statistic: does "anyone was busy or away just then" tell the side?

A validator (it reads the ground truth: the episode's reference and its simulation). In every
twin group the mind switch decides the side at one **decisive moment**: the move of the
target in relocation, watched and emptied (the first grab of it by someone other than the
focus person), the tell in told-away, and the focus person's look or struggle in search and
the attention groups (:data:`DECISIVE`; the ticks of
:func:`~mindhelper_env.validity.timing.timeline`). At that tick this module reads, for every
person other than the one who acts (the mover, the teller; in the look groups the looker),
whether they are **busy** (on the phone, at a chore), **away** (not in the room where it
happens; for a tell that is out of earshot too), and turns it into a one-feature classifier
of the side: *help if anyone was busy or away* (:func:`decisive_statistic`; the other
direction is reported too, and the better of the two is what is bounded). The same
statistic restricted to people other than the focus person says whether *someone else's*
state gives the side away: a helper that reads it needs no notion of who later looks.

Accuracy per group on fresh episodes (:func:`~mindhelper_env.validity.fresh.fresh_episodes`)
with a 95 % Wilson interval (:func:`~mindhelper_env.validity.timing.wilson`);
``benchmarks/bench_validity.py`` bounds it at 55 % in the belief groups and search on the
generators :func:`~mindhelper_env.validity.eventstream_bench.eventstream_bounded` names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DECISIVE", "DecisiveMoment", "decisive_moment", "decisive_statistic"]

#: The kind of :data:`~mindhelper_env.validity.timing.KINDS` that is each group's decisive
#: moment.
DECISIVE: dict[str, str] = {
    "false_belief_relocation": "move",
    "false_belief_watched": "move",
    "false_belief_told_away": "tell",
    "false_belief_emptied": "move",
    "implicit_goal_search": "look",
    "implicit_goal_reach": "look",
    "implicit_goal_blocked": "look",
}


@dataclass
class DecisiveMoment:
    """The state of the house at an episode's decisive moment: ``tick`` (None: the moment
    did not happen before the focus person's look), who acted (``actor``) and where
    (``room``), and, for the people other than the actor: ``busy`` and ``away`` (ids), and
    whether anyone of them was busy or away (``anyone``) or anyone but the focus person
    (``anyone_other``)."""

    episode_id: str
    family: str
    group: str
    help: bool
    kind: str
    tick: int | None
    actor: int | None = None
    room: int | None = None
    busy: tuple[int, ...] = ()
    away: tuple[int, ...] = ()
    anyone: bool = False
    anyone_other: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def decisive_moment(spec: Mapping[str, Any]) -> DecisiveMoment | None:
    """The :class:`DecisiveMoment` of an episode (None outside the twin groups)."""
    from mindhelper_env.backends.symbolic import Simulation
    from mindhelper_env.scenarios.spec import twin_group
    from mindhelper_env.validity.timing import _kind, timeline

    fam = str(spec["family"])
    group = twin_group(fam)
    if group not in DECISIVE:
        return None
    ref = spec["reference"]
    focus = int(ref["focus_actor"])
    target = ref.get("target_object")
    kind = DECISIVE[group]
    line = timeline(spec)
    tick = line.get(kind)
    out = DecisiveMoment(str(spec.get("episode_id", "")), fam, group,
                         bool(ref.get("needs_intervention")), kind, tick)
    if tick is None:
        return out
    sim = Simulation(dict(spec))
    w = sim.world
    events: list[Any] = []
    while sim.tick <= tick:
        events = sim.step_tick()
    if kind == "look":
        actor = focus
    else:
        hits = [e for e in events if _kind(e, focus, target) == kind]
        actor = int(hits[0].actor) if hits else None
    room = w.chars[actor].room if actor is not None and actor in w.chars else None
    busy, away = [], []
    for a in sim.actors:
        if a.id == actor:
            continue
        if getattr(a, "busy", False):
            busy.append(int(a.id))
        if w.chars[a.id].room != room:
            away.append(int(a.id))
    out.actor, out.room = actor, room
    out.busy, out.away = tuple(busy), tuple(away)
    out.anyone = bool(busy or away)
    out.anyone_other = any(p != focus for p in (*busy, *away))
    return out


def decisive_statistic(specs: Sequence[Mapping[str, Any]] | None = None, *,
                       moments: Sequence[DecisiveMoment] | None = None) -> dict[str, Any]:
    """Per twin group: the one-feature classifiers "help iff anyone (other than the actor)
    was busy or away at the decisive moment" (``anyone``) and the same over people other
    than the focus person (``other``): accuracy % (the rule as stated, ``rule``; the better
    direction, ``best``, what is bounded) with its 95 % Wilson interval, the episodes
    (``n``), those whose moment did not happen (``missing``: counted as "nobody", so the
    rule says silence). Give ``specs`` or their ``moments``."""
    from mindhelper_env.validity.timing import wilson

    if moments is None:
        moments = [m for m in (decisive_moment(s) for s in specs or ()) if m is not None]
    out: dict[str, Any] = {}
    for g in DECISIVE:
        ms = [m for m in moments if m.group == g]
        if not ms:
            continue
        res: dict[str, Any] = {"n": len(ms), "n_help": sum(m.help for m in ms),
                               "missing": sum(m.tick is None for m in ms),
                               "kind": DECISIVE[g]}
        for key, attr in (("anyone", "anyone"), ("other", "anyone_other")):
            right = sum(bool(getattr(m, attr)) == m.help for m in ms)
            best = max(right, len(ms) - right)
            res[key] = {"rule": 100.0 * right / len(ms), "rule_ci": wilson(right, len(ms)),
                        "best": 100.0 * best / len(ms), "best_ci": wilson(best, len(ms)),
                        "direction": "busy/away -> help" if right >= len(ms) - right
                        else "busy/away -> silent",
                        "share_help": _share([m for m in ms if m.help], attr),
                        "share_twin": _share([m for m in ms if not m.help], attr)}
        out[g] = res
    return out


def _share(ms: Sequence[DecisiveMoment], attr: str) -> float | None:
    return None if not ms else 100.0 * sum(bool(getattr(m, attr)) for m in ms) / len(ms)
