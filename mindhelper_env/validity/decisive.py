"""The decisive-moment statistic: is *anyone* busy or away when the switched event happens?

In a belief group the mind switch decides whether the focus person perceives the switched
event (the move, the emptying, the tell, the object left astray). On ``mh-gen-3.2`` the
focus person was busy at that event on the help side and watching on the twin's, and nobody
else was busy then, so "someone in the house is on the phone or at a chore at that moment"
told the side without knowing who anyone is (an outside checker's house-wide verb-timing
learner reached PHA 81 on vh-test-v5). ``mh-gen-3.3`` adds a decoy to make that house-wide
fact the same on both sides (:mod:`mindhelper_env.scenarios.decoys`).

This instrument reads, for each episode played silently, the **decisive moment** of its
group and who is in which state then:

* relocation, watched, emptied: the last time someone other than the focus person takes
  the target (the move, the emptying; in watched the mover first put it away); told-away: the tell; search: the put of the target
  by someone other than the focus person (the object left astray); reach and blocked: the
  focus person's first struggle cue (stretch, stand). The **mover** is whoever does it (the
  focus person in the attention groups);
* for every person but the mover (and the robot), at the end of that tick: **busy** (on the
  phone, at a chore), **away** (not in the room of the moment, though there at some tick of
  the :data:`AWAY_WINDOW` ticks before it: left for a while, behind a door), **arrived**
  (in the room, though not at some tick of that window);
* the moment's **flag**: anyone busy or away (out of earshot, at the tell, is busy or
  away); ``arrived`` is reported on its own.

:func:`decisive_classifier` scores the flag (and each part) as a classifier of the side:
the better of "flag means help" and "flag means twin", with a 95 % Wilson interval. 50 is
chance: the fact carries no side. Goal on ``mh-gen-3.3``: ≤ 55 % per belief group.

A second, stricter view reads the state of the whole house at the moment's tick of the
episode's timeline (:func:`decisive_state`, :func:`decisive_statistic`): **away** is anyone
not in the room where it happens (at a tell: out of earshot), and the statistic is given
over everyone but the actor (``anyone``) and over people other than the focus person
(``other``: reported, not bounded, since it binds the moment to the person who later
looks, as a mind does). ``benchmarks/bench_validity.py``'s house-wide timing section
(:mod:`~mindhelper_env.validity.eventstream_bench`) bounds ``anyone`` at 55 % on fresh
episodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from mindhelper_env.validity.timing import run_base_jobs, wilson

__all__ = ["AWAY_WINDOW", "MOMENT_KINDS", "Moment", "decisive_moment", "decisive_classifier",
           "DecisiveScore", "decisive_sample", "decisive_scan", "format_decisive",
           "DECISIVE", "DecisiveState", "decisive_state", "decisive_statistic"]

#: Ticks before the moment in which a person counts as having been in its room (away) or
#: not (arrived).
AWAY_WINDOW = 20
#: The parts of the flag.
MOMENT_KINDS = ("busy", "away", "arrived")
_TAKES = ("false_belief_relocation", "false_belief_watched", "false_belief_emptied")
_CUES = ("stretch", "stand")


@dataclass(frozen=True)
class Moment:
    """One episode's decisive moment: its tick, the mover, the room, and the people (ids) in
    each state of :data:`MOMENT_KINDS` then (None: the episode has no such moment)."""

    tick: int | None
    mover: int | None
    room: int | None
    busy: tuple[int, ...] = ()
    away: tuple[int, ...] = ()
    arrived: tuple[int, ...] = ()

    @property
    def flag(self) -> bool:
        """Anyone other than the mover busy or away at the moment."""
        return bool(self.busy or self.away)

    def part(self, kind: str) -> bool:
        return bool(getattr(self, kind)) if kind in MOMENT_KINDS else self.flag


def _is_moment(group: str, e: Any, focus: int, target: int | None) -> bool:
    if group in _TAKES:
        return e.actor != focus and e.verb == "grab" and bool(e.args) and e.args[0] == target
    if group == "false_belief_told_away":
        return e.verb == "tell"
    if group == "implicit_goal_search":
        return (e.actor != focus and e.verb in ("putin", "putback", "drop") and bool(e.args)
                and e.args[0] == target)
    return e.actor == focus and e.verb in _CUES


def decisive_moment(spec: Mapping[str, Any], *, window: int = AWAY_WINDOW,
                    max_ticks: int | None = None,
                    make_sim: Callable[[], Any] | None = None) -> Moment:
    """The decisive moment of ``spec`` (played with the robot silent; see the module).
    ``make_sim``: builds the simulation (default: of ``spec``; a draft's probe, where
    ``spec`` holds only its ``family`` and ``reference``)."""
    from mindhelper_env.backends.symbolic import ROBOT_ID, Simulation
    from mindhelper_env.scenarios.spec import twin_group

    ref = spec["reference"]
    group = twin_group(str(spec.get("family", ref.get("family", ""))))
    focus = int(ref["focus_actor"])
    target = ref.get("target_object")
    if group is None:
        return Moment(None, None, None)
    sim = make_sim() if make_sim is not None else Simulation(dict(spec))
    w = sim.world
    people = [a.id for a in sim.actors if a.id != ROBOT_ID]
    rooms: list[dict[int, int | None]] = []
    limit = int(spec.get("horizon", 96)) if max_ticks is None else int(max_ticks)
    last = group in _TAKES  # the last take of the target by someone else; else the first
    found = Moment(None, None, None)
    while sim.tick < limit and not sim.settled and not (found.tick is not None and not last):
        tick = sim.tick
        events = sim.step_tick()
        rooms.append({p: w.chars[p].room for p in people})
        hit = next((e for e in events if _is_moment(group, e, focus, target)), None)
        if hit is None:
            continue
        mover = int(hit.actor)
        room = w.chars[mover].room
        before = rooms[max(0, len(rooms) - 1 - window):-1]
        others = [p for p in people if p != mover]
        busy = tuple(p for p in others if sim.actor_by_id[p].busy)
        away = tuple(p for p in others if rooms[-1][p] != room
                     and any(r[p] == room for r in before))
        arrived = tuple(p for p in others if rooms[-1][p] == room
                        and any(r[p] != room for r in before))
        found = Moment(tick, mover, room, busy, away, arrived)
    return found


@dataclass
class DecisiveScore:
    """The flag (and each part) as a classifier of the side on one group's episodes:
    accuracy in percent (the better orientation) with its 95 % Wilson interval, and the
    share of each side's episodes that have the flag."""

    group: str
    generator: str
    help_n: int
    twin_n: int
    missing: int
    accuracy: dict[str, float]
    interval: dict[str, tuple[float, float]]
    help_share: dict[str, float]
    twin_share: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def decisive_classifier(group: str, moments: Sequence[tuple[bool, Moment]],
                        generator: str = "") -> DecisiveScore:
    """Score the flag and its parts over ``(help side?, moment)`` pairs (episodes without a
    moment are counted in ``missing`` and left out)."""
    rows = [(h, m) for h, m in moments if m.tick is not None]
    n_help = sum(1 for h, _ in rows if h)
    n_twin = len(rows) - n_help
    acc: dict[str, float] = {}
    ci: dict[str, tuple[float, float]] = {}
    hs: dict[str, float] = {}
    ts: dict[str, float] = {}
    for kind in ("flag", *MOMENT_KINDS):
        right = sum(1 for h, m in rows if m.part(kind) == h)
        right = max(right, len(rows) - right)
        acc[kind] = 100.0 * right / max(1, len(rows))
        ci[kind] = wilson(right, len(rows))
        hs[kind] = 100.0 * sum(m.part(kind) for h, m in rows if h) / max(1, n_help)
        ts[kind] = 100.0 * sum(m.part(kind) for h, m in rows if not h) / max(1, n_twin)
    return DecisiveScore(group, generator, n_help, n_twin, len(moments) - len(rows), acc, ci,
                         hs, ts)


def _job(args: tuple[str, list[int], str, Any]) -> list[tuple[bool, Moment] | None]:
    from mindhelper_env.scenarios.generator import generate_group
    from mindhelper_env.scenarios.spec import V3_TWINS

    group, seeds, generator, house = args
    out: list[tuple[bool, Moment] | None] = []
    for k, seed in enumerate(seeds):
        try:
            specs = generate_group(group, seed, house=house, generator=generator)
        except RuntimeError:
            out.append(None)
            continue
        twins = [f for f in V3_TWINS[group] if f in specs]
        if not twins:
            out.append(None)
            continue
        out.append((True, decisive_moment(specs[group])))
        out.append((False, decisive_moment(specs[twins[(seed + k) % len(twins)]])))
    return out


#: Seeds of the bases: fresh, past the timing scan's (``validity.timing.SCAN_SEED_BASE``).
DECISIVE_SEED_BASE = 1_700_000


def decisive_sample(group: str, n: int, *, generator: str | None = None, house: Any = None,
                    seed: int = 0, workers: int = 1
                    ) -> tuple[list[tuple[bool, Moment]], int]:
    """The moments of ``n`` fresh bases of ``group`` (the help side and one twin of each,
    twins in turn where there are two): ``([(help side?, moment)], bases that failed)``."""
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION

    gen = GENERATOR_VERSION if generator is None else generator
    seeds = [DECISIVE_SEED_BASE + 100_000 * seed + i for i in range(n)]
    return run_base_jobs(_job, group, seeds, gen, house, workers)


def decisive_scan(n: int, *, generator: str | None = None, house: Any = None,
                  groups: Iterable[str] | None = None, seed: int = 0,
                  workers: int = 1) -> dict[str, DecisiveScore]:
    """:func:`decisive_classifier` of every twin group (or ``groups``) on ``n`` fresh bases."""
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION, V3_TWINS

    gen = GENERATOR_VERSION if generator is None else generator
    out = {}
    for group in (groups or V3_TWINS):
        rows, _failed = decisive_sample(group, n, generator=gen, house=house, seed=seed,
                                        workers=workers)
        out[group] = decisive_classifier(group, rows, gen)
    return out


def format_decisive(results: Mapping[str, DecisiveScore], title: str = "") -> str:
    """The scan as a Markdown table: the flag's accuracy (95 %) and each side's share with
    the flag, then each part's accuracy."""
    lines = [f"#### Decisive moment {title}".rstrip(), "",
             "| group | episodes help / twin | anyone busy or away: accuracy (95 %) | "
             "help / twin with it | busy | away | arrived |", "|---|---|---|---|---|---|---|"]
    for g, r in results.items():
        lo, hi = r.interval["flag"]
        lines.append(f"| {g} | {r.help_n} / {r.twin_n} | {r.accuracy['flag']:.1f} "
                     f"({lo:.1f}–{hi:.1f}) | {r.help_share['flag']:.0f} % / "
                     f"{r.twin_share['flag']:.0f} % | {r.accuracy['busy']:.1f} | "
                     f"{r.accuracy['away']:.1f} | {r.accuracy['arrived']:.1f} |")
    return "\n".join(lines)


# --------------------------------------------------------------- the state view
# The same moment read from the episode's timeline (validity.timing.timeline), with *away*
# meaning "not in the room where it happens" (for a tell: out of earshot), and the statistic
# also over the people other than the focus person; what bench_validity's house-wide timing
# section (validity.eventstream_bench) bounds.

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
class DecisiveState:
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


def decisive_state(spec: Mapping[str, Any]) -> DecisiveState | None:
    """The :class:`DecisiveState` of an episode (None outside the twin groups)."""
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
    out = DecisiveState(str(spec.get("episode_id", "")), fam, group,
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
                       moments: Sequence[DecisiveState] | None = None) -> dict[str, Any]:
    """Per twin group: the one-feature classifiers "help iff anyone (other than the actor)
    was busy or away at the decisive moment" (``anyone``) and the same over people other
    than the focus person (``other``): accuracy % (the rule as stated, ``rule``; the better
    direction, ``best``, what is bounded) with its 95 % Wilson interval, the episodes
    (``n``), those whose moment did not happen (``missing``: counted as "nobody", so the
    rule says silence). Give ``specs`` or their ``moments``."""
    from mindhelper_env.validity.timing import wilson

    if moments is None:
        moments = [m for m in (decisive_state(s) for s in specs or ()) if m is not None]
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


def _share(ms: Sequence[DecisiveState], attr: str) -> float | None:
    return None if not ms else 100.0 * sum(bool(getattr(m, attr)) for m in ms) / len(ms)
