"""Episode generation with validation by simulation.

:func:`generate_episode` draws an episode of a family from a seed and accepts it only if
simulation confirms its ground truth:

* without help, an episode that needs help must fail (the focus person gives up) and a silent
  one must succeed;
* **decidability** (:mod:`mindhelper_env.scenarios.observer`): in the no-help rollout every
  visible struggle cue (a look that takes nothing, a stretch, standing at a closed container
  with full hands) is judged from the robot's point of view. In a help episode the focus
  person's first failed attempt is the first cue judged blocked, and it names the right
  object; in a silent episode no cue is judged blocked;
* relocation episodes: the focus person's belief is false at onset; witnessed and
  self-corrected ones: true when the fetch starts;
* the reference program, issued at every tick from onset to the deadline, makes the focus
  person succeed without harm.

**Window.** Onset is the tick of the focus person's first failed attempt (the moment the
false belief or the implicit goal first blocks the task: a look that finds nothing, a
stretch, standing at a closed container with full hands). The deadline is onset +
:data:`DEADLINE_TICKS`, long before the person gives up: an agent that waits for a second
failure is late. A draft that fails validation is resampled from the next rng stream; after
:data:`MAX_ATTEMPTS` a ``RuntimeError`` names the family and seed.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from mindhelper_env.actors.actor import ACTOR_KINDS, NOTICE_DELAY
from mindhelper_env.backends.symbolic import ROBOT_ID, Simulation
from mindhelper_env.scenarios.families import BUILDERS, Draft, _Reject
from mindhelper_env.scenarios.observer import Need, PersonView, SceneView, judge_tick
from mindhelper_env.scenarios.spec import (
    DECOY_GENERATORS,
    FAMILIES,
    GENERATOR_V2,
    GENERATOR_VERSION,
    V3_GENERATORS,
    Reference,
    family_weights,
    is_v3,
    twin_group,
)
from mindhelper_env.scenarios.spec import TWINS as TWIN_GROUPS
from mindhelper_env.scenarios.twins import (
    GENERATOR_V3,
    GENERATOR_V31,
    GENERATOR_V32,
    GENERATOR_V33,
    SIGHT_GENERATORS,
    TIMED_GENERATORS,
    V3_FAMILIES,
    V3_TWINS,
    Incompatible,
    build_variant,
    group_variants,
)
from mindhelper_env.world.houses import resolve_houses
from mindhelper_env.world.world import World

__all__ = ["generate_episode", "generate_group", "sample_episode", "GENERATORS", "MAX_ATTEMPTS", "DEADLINE_TICKS", "EPISODE_TICKS", "EPISODE_TICKS_V3", "EPISODE_TICKS_V32", "episode_ticks", "HEDGE_LINES",
           "help_program", "EpisodeInvalid", "observe_cues"]

MAX_ATTEMPTS = 80
#: Ticks from onset to the deadline (inclusive window ``[onset, onset + DEADLINE_TICKS]``).
DEADLINE_TICKS = 5
# Someone who noticed a struggle helps only after the robot's last chance to act in time, so a
# robot cannot wait and see whether anyone comes (decisions come a window of up to 3 ticks
# after what they see).
if NOTICE_DELAY <= DEADLINE_TICKS:  # pragma: no cover - a guard on the two constants
    raise ImportError("actors.NOTICE_DELAY must exceed generator.DEADLINE_TICKS")
#: Every episode lasts exactly this many ticks, whatever happens in it (help needed or not,
#: given or not): episode length carries no label. Generation keeps only drafts whose
#: people have finished (or given up) well before it, with help and without.
EPISODE_TICKS = 72
#: ``mh-gen-3.x`` episodes last this many ticks (28 windows): the focus person's timeline
#: (a while watching, a busy while, in either order) comes before the look.
EPISODE_TICKS_V3 = 84
#: ``mh-gen-3.2`` episodes last this many ticks (32 windows): its blocks are long enough for
#: the switch wherever it falls, and at 84 ticks a tenth of the emptied group's drafts in the
#: TDW house (those with the longest blocks) were rejected for running into the horizon, so
#: acceptance would have chosen block lengths; at 96 almost none are.
EPISODE_TICKS_V32 = 96


def episode_ticks(generator: str | None = None) -> int:
    """How many ticks an episode of ``generator`` (default: the package's) lasts."""
    gen = GENERATOR_VERSION if generator is None else generator
    if gen in TIMED_GENERATORS:
        return EPISODE_TICKS_V32
    return EPISODE_TICKS_V3 if gen in V3_GENERATORS else EPISODE_TICKS
#: The generators :func:`generate_episode` can run: ``mh-gen-2.5`` (the v2 families and
#: suites), ``mh-gen-3.0`` (:mod:`mindhelper_env.scenarios.twins`; the v3 suites),
#: ``mh-gen-3.1`` (the same with sight perception; the v4 suites) and ``mh-gen-3.2`` (unlisted
#: timings drawn in the base; the v5 suites, the default) and ``mh-gen-3.3`` (a decoy in the
#: belief groups; not yet released).
GENERATORS = (GENERATOR_V2, GENERATOR_V3, GENERATOR_V31, GENERATOR_V32, GENERATOR_V33)
#: The twin groups of ``mh-gen-3.x``, in a fixed order (each seeds its own base drafts).
V3_GROUPS = tuple(V3_TWINS)
#: Free movement lines a robot may put before its help and still be in time: the reference
#: program issued at the deadline behind this many ``[walk]`` lines must still help (so a
#: movement-prefix hedge neither buys silence nor, for a helper that acts in the window,
#: costs the help).
HEDGE_LINES = 8
#: What the focus person does once the task is over (:meth:`Draft.carry_on`): ``(fewest
#: chores, most chores, extra walks on average)``. Families not named get ``(1, 3, 0.0)``.
#: Help families get extra walks and some twins fewer chores, making up for what a silent
#: twin shows after its cue and a help episode does not (the task's last steps; in some
#: twins someone coming over to help or telling where things went), so that how busy the
#: house is after the cue predicts no twin group's label (``tests/test_validity.py``).
CARRY_ON: dict[str, tuple[int, int, float]] = {
    "false_belief_relocation": (2, 4, 3.0), "false_belief_watched": (1, 3, 4.0),
    "false_belief_told_away": (1, 3, 4.0), "false_belief_emptied": (1, 3, 3.0),
    "implicit_goal_search": (1, 3, 3.0), "implicit_goal_reach": (1, 3, 3.0),
    "implicit_goal_blocked": (2, 4, 3.0),
    "false_belief_witnessed": (0, 2, 0.0), "false_belief_self_corrected": (0, 2, 0.0),
    "watched_move_seen": (0, 1, 0.0), "false_belief_told": (0, 0, 0.0),
    "emptied_witnessed": (0, 0, 0.0), "emptied_spare": (0, 0, 0.0),
}
#: Silent twins whose focus person must show the visible cue of the help family they mirror.
TWINS = frozenset({"false_belief_spare", "emptied_spare", "search_self_found", "search_seen_astray",
                   "reach_helped", "reach_noticed", "blocked_helped", "blocked_noticed",
                   "false_belief_witnessed", "false_belief_self_corrected", "watched_move_seen",
                   "false_belief_told", "emptied_witnessed"})
#: Families whose focus person must hold a false belief at onset.
_FALSE_AT_ONSET = frozenset({"false_belief_relocation", "false_belief_watched",
                             "false_belief_told_away", "false_belief_emptied"})
#: Silent families whose focus person's belief must be true when the last fetch starts.
_TRUE_AT_FETCH = frozenset({"false_belief_witnessed", "false_belief_self_corrected",
                            "watched_move_seen", "false_belief_told", "emptied_witnessed"})
#: Families whose help turns on who noticed a struggle (:func:`~mindhelper_env.scenarios.
#: families._attention`). Every phone call in them starts before the focus person's first
#: struggle cue, on both sides: in a help draft the calls in the room must have begun by then
#: (or someone notices), so a call starting later would mark a silent twin.
_CALLS_BEFORE_CUE = frozenset(f for g in ("implicit_goal_reach", "implicit_goal_blocked")
                              for f in (g, *TWIN_GROUPS[g]))
#: The focus person must keep trying at least this many ticks past the deadline.
_SLACK_AFTER_DEADLINE = 4


class EpisodeInvalid(Exception):
    """A draft whose simulated outcome contradicts its family."""


def help_program(world: World, focus: int, family: str, target: int) -> list[str]:
    """The minimal helpful robot program for the current world state."""
    g = world.graph
    if family == "implicit_goal_blocked":
        node = g.nodes[target]
        return [f"[walk] <{node.class_name}> ({target})", f"[open] <{node.class_name}> ({target})"]
    lines = []
    anchor = world.anchor(target)
    lines.append(f"[walk] <{g.nodes[anchor].class_name}> ({anchor})")
    place = world.placement(target)
    if place is not None and place[0] == "INSIDE" and world.is_closed_container(place[1]):
        lines.append(f"[open] <{g.nodes[place[1]].class_name}> ({place[1]})")
    cls = g.nodes[target].class_name
    lines.append(f"[grab] <{cls}> ({target})")
    lines.append(f"[walk] <character> ({focus})")
    lines.append(f"[give] <{cls}> ({target}) <character> ({focus})")
    return lines


def _marker_tick(sim: Simulation, kind: str, activity_type: str | None = None) -> int | None:
    f = sim.focus
    assert f is not None
    for m in f.markers:
        if m.kind != kind:
            continue
        if activity_type is not None and f.activities[m.activity]["type"] != activity_type:
            continue
        return m.tick
    return None


# ------------------------------------------------------------------------------ the observer
def _where(world: World, obj: int) -> int:
    h = world.holder(obj)
    return h if h is not None else world.anchor(obj)


def _people(sim: Simulation, took: dict[int, list[str]] | None = None) -> dict[int, PersonView]:
    w = sim.world
    out = {}
    for a in sim.actors:
        c = w.chars[a.id]
        near = c.near
        if near is not None and near not in w.chars:
            near = w.anchor(near)
        beliefs = {}
        for obj, loc in a.beliefs.items():
            if loc in w.graph.nodes:
                beliefs[obj] = loc if loc in w.chars else w.anchor(loc)
        out[a.id] = PersonView(a.id, ACTOR_KINDS[a.kind], c.room, near,
                               tuple(w.held_by(a.id)), beliefs, a.busy,
                               tuple(took.get(a.id, ())) if took else ())
    return out


def observe_cues(sim: Simulation, max_ticks: int | None = None) -> list[tuple[int, int, str, Need | None]]:
    """Run ``sim`` (no help) and judge every struggle cue as the ideal observer would.

    Returns ``(tick, person, cue, need)`` for each cue, in order. The observer's knowledge of
    where things are is what the home cameras showed: every object not hidden in a closed
    container, as last seen.
    """
    w = sim.world
    classes = {nid: n.class_name for nid, n in w.graph.nodes.items()}
    room_of = {nid: w.room_of(nid) for nid in w.graph.nodes}
    props = [nid for nid, n in w.graph.nodes.items() if "GRABBABLE" in n.properties]
    seen: dict[int, int] = {}

    def look_around() -> None:
        for o in props:
            if not w.is_hidden(o):
                seen[o] = _where(w, o)

    look_around()
    opened: dict[tuple[int, int], dict[int, int]] = {}  # (person, box) -> beliefs before
    cues: list[tuple[int, int, str, Need | None]] = []
    took: dict[int, list[str]] = {a.id: [] for a in sim.actors}
    limit = sim.horizon if max_ticks is None else min(sim.horizon, sim.tick + max_ticks)
    while not sim.settled and sim.tick < limit:
        before = _people(sim, took)
        scene = SceneView(dict(seen), classes, room_of, before)
        tick = sim.tick
        events = sim.step_tick()
        for e in events:
            if e.verb == "grab" and e.actor in took and e.args:
                took[e.actor].append(classes.get(e.args[0], ""))
        for t, who, kind, _place, need in judge_tick(
                tick, ((e.actor, e.verb, e.args) for e in events), before, scene, opened,
                w.anchor):
            cues.append((t, who, kind, need))
        look_around()
    return cues


# ------------------------------------------------------------------------------ validation
def _validate(draft: dict[str, Any]) -> dict[str, Any]:
    horizon = int(draft.get("horizon_ticks", EPISODE_TICKS))
    family = draft["family"]
    focus = draft["focus"]
    target = draft["target"]
    spec = {k: draft[k] for k in ("family", "graph", "robot", "actors", "events")}
    if "perception" in draft:
        spec["perception"] = draft["perception"]
    spec["horizon"] = horizon
    spec["reference"] = {"focus_actor": focus, "needs_intervention": draft["needs_intervention"]}
    # every rollout starts from a copy of one parsed world (no graph parsing per rollout)
    template = World(spec["graph"], robot_ids=(ROBOT_ID,))

    def fresh() -> Simulation:
        return Simulation(spec, world=template.copy())

    sim = fresh()
    cues = observe_cues(sim)
    if not sim.settled or sim.tick >= horizon - 2:
        raise EpisodeInvalid("no-help rollout did not finish well within the episode")
    f = sim.focus
    assert f is not None
    needs = [(t, p, c, n) for t, p, c, n in cues if n is not None]
    if family in _CALLS_BEFORE_CUE:
        first = min((t for t, p, _, _ in cues if p == focus), default=None)
        if first is not None and any(m.tick >= first for a in sim.actors for m in a.markers
                                     if m.kind == "activity_start" and m.detail == "phone"):
            raise EpisodeInvalid("a phone call starts after the first struggle cue")
    if not draft["needs_intervention"]:
        if f.status != "done":
            raise EpisodeInvalid("silent episode fails without help")
        if needs:
            raise EpisodeInvalid(f"silent episode has a cue judged blocked at tick {needs[0][0]}")
        if family in TWINS and not any(p == focus for _, p, _, _ in cues):
            raise EpisodeInvalid("a silent twin whose focus person shows no struggle cue")
        if family in _TRUE_AT_FETCH:
            t = _last_fetch_start(sim)
            _check_belief_at(fresh(), focus, target, t, want_true=True)
        return {"window": None, "reference_actions": []}
    if f.status != "gave_up":
        raise EpisodeInvalid("needs-help episode succeeds without help")
    onset = _marker_tick(sim, "attempt_failed")
    gave_up = _marker_tick(sim, "gave_up")
    if onset is None or gave_up is None:
        raise EpisodeInvalid("focus person never failed")
    if not needs or needs[0][0] != onset or needs[0][1] != focus or needs[0][3].target != target:
        raise EpisodeInvalid("the first cue judged blocked is not the focus person's onset")
    deadline = onset + DEADLINE_TICKS
    if gave_up < deadline + _SLACK_AFTER_DEADLINE:
        raise EpisodeInvalid("focus person gives up too soon after the deadline")
    if family in _FALSE_AT_ONSET:
        _check_belief_at(fresh(), focus, target, onset, want_true=False)
    at_onset = fresh()
    at_onset.run(max_ticks=onset)
    program = help_program(at_onset.world, focus, family, target)
    at_onset = at_onset.fork()  # advanced below (help_program read the world at onset)
    trials = [(delay, program) for delay in range(DEADLINE_TICKS + 1)]
    robot_room = at_onset.world.chars[ROBOT_ID].room
    if robot_room is not None:
        walk = f"[walk] <{at_onset.world.graph.nodes[robot_room].class_name}> ({robot_room})"
        trials.append((DEADLINE_TICKS, [walk] * HEDGE_LINES + program))
    # each trial branches from one rollout advanced to onset + delay (the same state a fresh
    # rollout run to that tick reaches: the simulation is deterministic)
    branch, at = at_onset, onset
    for delay, lines in trials:
        if at < onset + delay:
            branch.run(max_ticks=onset + delay - at)
            at = onset + delay
        trial = branch.fork()
        if trial.settled:
            raise EpisodeInvalid("episode ended before help could be given")
        trial.issue("\n".join(lines))
        trial.run()
        if trial.tick >= horizon - 2:
            raise EpisodeInvalid("helped rollout does not finish well within the episode")
        if not trial.focus_succeeded():
            raise EpisodeInvalid(f"reference program issued at onset+{delay} does not help")
        if trial.harm():
            raise EpisodeInvalid("reference program harms")
    return {"window": {"onset_tick": int(onset), "deadline_tick": int(deadline)},
            "reference_actions": program}


def _last_fetch_start(sim: Simulation) -> int | None:
    f = sim.focus
    assert f is not None
    ticks = [m.tick for m in f.markers
             if m.kind == "activity_start" and f.activities[m.activity]["type"] == "fetch"]
    return ticks[-1] if ticks else None


def _check_belief_at(sim: Simulation, focus: int, target: int, tick: int | None,
                     *, want_true: bool) -> None:
    if tick is None:
        raise EpisodeInvalid("focus person never started the fetch")
    sim.run(max_ticks=tick)
    f = sim.actor_by_id[focus]
    believed = f.beliefs.get(target)
    truth = sim.world.location(target)
    is_true = believed is not None and truth is not None and (
        sim.world.anchor(believed) == sim.world.anchor(truth)
        if believed in sim.world.graph.nodes and truth in sim.world.graph.nodes else False
    )
    if is_true != want_true:
        raise EpisodeInvalid(f"belief at onset is {'true' if is_true else 'false'}")


def generate_episode(family: str, seed: int, *, episode_id: str | None = None,
                     house: Any = None, generator: str | None = None) -> dict[str, Any]:
    """Generate a validated episode spec of ``family`` from ``seed`` (deterministic).

    ``house``: where the episode is set: ``None`` for a procedurally generated house, else
    anything :func:`~mindhelper_env.world.houses.resolve_houses` accepts (``"tdw"``, a
    VirtualHome graph path, ...); the spec then records the house set's name under
    ``"house"``. ``generator``: :data:`GENERATORS` (default
    :data:`~mindhelper_env.scenarios.spec.GENERATOR_VERSION`); ``mh-gen-3.0`` builds every
    twin group from one base draft (:mod:`mindhelper_env.scenarios.twins`).
    """
    generator = GENERATOR_VERSION if generator is None else generator
    if generator not in GENERATORS:
        raise ValueError(f"unknown generator {generator!r}; expected one of {list(GENERATORS)}")
    families = V3_FAMILIES if is_v3(generator) else FAMILIES
    if family not in families:
        raise ValueError(f"unknown family {family!r} for {generator}; expected one of "
                         f"{list(families)}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    houses = resolve_houses(house)
    if houses is not None:
        houses.check_families((family,))
    if is_v3(generator):
        return _generate_v3(family, int(seed), episode_id, houses, generator)
    last = ""
    for attempt in range(MAX_ATTEMPTS):
        rng = np.random.default_rng([int(seed), FAMILIES.index(family), attempt])
        d = Draft(rng, family, houses)
        try:
            BUILDERS[family](d)
            # the same in every family, after its own draws
            low, high, walks = CARRY_ON.get(family, (1, 3, 0.0))
            d.carry_on(d.focus, (low, high), walks)
            draft = d.to_spec()
            truth = _validate(draft)
        except (_Reject, EpisodeInvalid) as err:
            last = str(err)
            continue
        return _finish(family, int(seed), episode_id, houses, draft, truth, GENERATOR_V2)
    raise RuntimeError(
        f"could not generate a valid {family!r} episode from seed {seed} after "
        f"{MAX_ATTEMPTS} attempts (last problem: {last})"
    )


def _finish(family: str, seed: int, episode_id: str | None, houses: Any,
            draft: dict[str, Any], truth: dict[str, Any], generator: str) -> dict[str, Any]:
    """The episode spec of a validated draft."""
    if True:
        eid = episode_id or f"{family}-{int(seed)}"
        focus = draft["focus"]
        ref = Reference(
            episode_id=eid,
            family=family,
            needs_intervention=bool(draft["needs_intervention"]),
            focus_actor=int(focus),
            focus_name=next(a["name"] for a in draft["actors"] if a["id"] == focus),
            target_object=None if draft["target"] is None else int(draft["target"]),
            mental_state=copy.deepcopy(draft["mental_state"]),
            window=truth["window"],
            reference_actions=truth["reference_actions"],
            success={"type": "task_completed", "actor": int(focus)},
        )
        spec = {
            "episode_id": eid,
            "generator": generator,
            "seed": int(seed),
            "family": family,
            "graph": draft["graph"],
            "robot": draft["robot"],
            "actors": draft["actors"],
            "events": draft["events"],
            "horizon": int(draft.get("horizon_ticks", EPISODE_TICKS)),
            "reference": ref.to_dict(),
        }
        if "perception" in draft:
            spec["perception"] = draft["perception"]
        if houses is not None:
            spec["house"] = houses.name
        return spec


#: ``mh-gen-3.0``: what the focus person does once the task is over, per family as
#: :data:`CARRY_ON` (a help family's person makes up in walks for the task's last steps that
#: a twin's person takes after the cue), drawn from a stream of its own so that the variants
#: of a base keep the same draws (and ids)
CARRY_ON_V3: dict[str, tuple[int, int, float]] = {
    "false_belief_relocation": (2, 4, 3.0), "false_belief_watched": (2, 4, 3.0),
    "false_belief_told_away": (2, 4, 3.0), "false_belief_emptied": (2, 4, 3.0),
    "implicit_goal_search": (1, 3, 3.0), "implicit_goal_reach": (1, 3, 3.0),
    "implicit_goal_blocked": (2, 4, 3.0),
    "false_belief_witnessed": (0, 2, 0.0), "watched_move_seen": (0, 2, 0.0),
    "false_belief_told": (0, 2, 0.0), "emptied_witnessed": (0, 2, 0.0),
}


def _v3_draft(family: str, group: str | None, seed: int, attempt: int,
              houses: Any, generator: str = GENERATOR_V3) -> dict[str, Any]:
    """The ``family`` variant of the base draft ``(seed, attempt)`` of its group, as a draft
    dict (raises ``_Reject``/``Incompatible``). ``generator``: ``mh-gen-3.0`` or
    ``mh-gen-3.1`` (sight perception)."""
    index = V3_GROUPS.index(group) if group is not None else len(V3_GROUPS)
    rng = np.random.default_rng([seed, 1000 + index, attempt])
    sight = generator in SIGHT_GENERATORS
    d = Draft(rng, family, houses, sight=sight, timed=generator in TIMED_GENERATORS,
              decoys=generator in DECOY_GENERATORS)
    if group is None:
        if sight:
            d.draw_doors()
        BUILDERS["routine"](d)
    else:
        build_variant(d, group, family)
    low, high, walks = CARRY_ON_V3.get(family, (1, 3, 0.0))
    d.rng, main = np.random.default_rng([seed, 2000 + index, attempt]), d.rng
    d.carry_on(d.focus, (low, high), walks)
    d.rng = main
    draft = d.to_spec()
    draft["perception"] = "sight" if sight else "attention"
    draft["horizon_ticks"] = episode_ticks(generator)
    return draft


def _v3_base(family: str, seed: int, houses: Any, generator: str
             ) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """The first base draft of ``family``'s group whose every variant passes validation
    (the requested one first: it fails fastest where it fails): ``{family: (draft, truth)}``
    of every variant the base has."""
    group = twin_group(family) if family != "routine" else None
    last = ""
    for attempt in range(MAX_ATTEMPTS):
        order = [family] + [f for f in (group_variants(group) if group else ()) if f != family]
        kept: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        try:
            for fam in order:
                try:
                    draft = _v3_draft(fam, group, seed, attempt, houses, generator)
                except Incompatible:
                    if fam == family:
                        raise
                    continue
                kept[fam] = (draft, _validate(draft))
        except (_Reject, EpisodeInvalid, Incompatible) as err:
            last = str(err) or type(err).__name__
            continue
        return kept
    raise RuntimeError(
        f"could not generate a valid {family!r} episode ({generator}) from seed {seed} "
        f"after {MAX_ATTEMPTS} attempts (last problem: {last})"
    )


def _generate_v3(family: str, seed: int, episode_id: str | None, houses: Any,
                 generator: str = GENERATOR_V3) -> dict[str, Any]:
    """``mh-gen-3.x``: ``family``'s variant of the first base of its group that passes."""
    draft, truth = _v3_base(family, seed, houses, generator)[family]
    return _finish(family, seed, episode_id, houses, draft, truth, generator)


def generate_group(family: str, seed: int, *, house: Any = None,
                   generator: str | None = None) -> dict[str, dict[str, Any]]:
    """Every variant of the base that :func:`generate_episode` ``(family, seed)`` uses
    (``mh-gen-3.x`` generators only): ``{family: spec}``, ``family``'s own spec equal to
    ``generate_episode(family, seed, ...)`` and its twins' (or help family's) specs from the
    same base. A twin's own ``generate_episode`` may come from another base (where this one
    has no such variant, or ``family`` is the twin that fails first). For instruments that
    compare the sides of a group base by base (:mod:`mindhelper_env.validity.timing`)."""
    generator = GENERATOR_VERSION if generator is None else generator
    if not is_v3(generator):
        raise ValueError(f"generate_group needs a twin-group generator, not {generator!r}")
    if family not in V3_FAMILIES:
        raise ValueError(f"unknown family {family!r} for {generator}")
    houses = resolve_houses(house)
    if houses is not None:
        houses.check_families((family,))
    kept = _v3_base(family, int(seed), houses, generator)
    return {fam: _finish(fam, int(seed), None, houses, draft, truth, generator)
            for fam, (draft, truth) in kept.items()}


def sample_episode(rng: np.random.Generator, families: dict[str, float] | None = None,
                   house: Any = None, generator: str | None = None) -> dict[str, Any]:
    """Draw a family (by weight) and a seed from ``rng`` and generate the episode (set in
    ``house``, by ``generator``, see :func:`generate_episode`)."""
    fams = families or family_weights(generator)
    names = list(fams)
    w = np.array([float(fams[n]) for n in names])
    fam = names[int(rng.choice(len(names), p=w / w.sum()))]
    seed = int(rng.integers(0, 2**31 - 1))
    return generate_episode(fam, seed, house=house, generator=generator)
