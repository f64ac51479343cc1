"""Episode specs and their ground truth (the *reference*).

An episode spec is a JSON-serializable dict; replaying it reproduces the episode exactly:

``episode_id``, ``generator`` (version string), ``seed``, ``family``, ``graph`` (VirtualHome
environment graph including the robot, node 1, and the people), ``actors`` (name, kind,
patience, initial beliefs and activities of each person; see :mod:`mindhelper_env.actors`),
``events`` (scheduled background events), ``horizon`` (ticks) and ``reference``.

The reference (:class:`Reference`) is what scoring needs and agents must not see:
``family``, ``needs_intervention``, ``focus_actor``, ``target_object``, ``mental_state``,
``window`` (``onset_tick``/``deadline_tick``, None when no help is needed),
``reference_actions`` (the minimal helpful robot program) and ``success`` (the predicate the
simulator checks at the end).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["Reference", "FAMILIES", "HELP_FAMILIES", "SILENT_FAMILIES", "GENERATOR_VERSION", "GENERATOR_V2",
           "DEFAULT_FAMILY_WEIGHTS", "TWINS", "TWIN_WEIGHTS", "SILENT_SHARES", "ABILITIES", "TASK_TYPES",
           "FAMILY_ABILITIES", "family_abilities", "task_type", "twin_group", "GENERATOR_V3", "GENERATOR_V31",
           "GENERATOR_V32", "GENERATOR_V33", "SIGHT_GENERATORS", "TIMED_GENERATORS",
           "DECOY_GENERATORS", "V3_GENERATORS", "is_v3",
           "V3_TWINS", "V3_FAMILIES", "twins_of", "silent_shares", "family_weights"]

#: The generator of the v2 families and suites (``MindHelper-VirtualHome-v0``'s episodes):
#: each family drafted by its own procedure and validated alone.
GENERATOR_V2 = "mh-gen-2.5"
#: Generator ``mh-gen-3.0`` (:mod:`mindhelper_env.scenarios.twins`): twins built from one
#: base draft, accepted or rejected together.
GENERATOR_V3 = "mh-gen-3.0"
#: Generator ``mh-gen-3.1``: ``mh-gen-3.0``'s twin groups with **sight perception** (the spec's
#: ``"perception": "sight"``): besides a phone call, a chore done facing away keeps a person
#: in the room from seeing anything, and a person in the next room sees what happens through
#: an open door (not through a closed one). The default in 0.6.0 and 0.7.x (the v4 suites).
GENERATOR_V31 = "mh-gen-3.1"
#: Generator ``mh-gen-3.2``: ``mh-gen-3.1`` with **every timing the mind switch does not need
#: drawn in the base and shared by both sides** (docs/scenarios.md, "mh-gen-3.2"): the block
#: of the focus person's timeline in which the switched event falls (a move, a tell, an
#: object left astray) sits at a place drawn in the base, busy on the help side and watching
#: on the twin's, so the switched event comes at the same tick on both sides and tell to
#: look, move to look and the end of that block to the look are the same; a next-door block
#: is drawn for both kinds alike. The default from 0.8.0 on (the v5 suites).
GENERATOR_V32 = "mh-gen-3.2"
#: Generator ``mh-gen-3.3``: ``mh-gen-3.2`` with a **decoy** in the belief groups
#: (docs/scenarios.md, "mh-gen-3.3"): another adult whose blocks are the focus person's with
#: the kinds swapped (watching where the focus person is busy, busy where they watch), so
#: that at the move, the emptying, the tell and the delivery someone other than the mover is
#: busy or away on both sides, and the house-wide counts of calls, chores and walks are the
#: same tick for tick; only whose state it is differs. Not yet the default.
GENERATOR_V33 = "mh-gen-3.3"
#: The generators that build twin groups from one base draft (:data:`V3_FAMILIES`).
V3_GENERATORS = (GENERATOR_V3, GENERATOR_V31, GENERATOR_V32, GENERATOR_V33)
#: The generators with sight perception (chores blind, open doors show the next room).
SIGHT_GENERATORS = (GENERATOR_V31, GENERATOR_V32, GENERATOR_V33)
#: The generators whose unlisted timings are drawn in the base (``mh-gen-3.2`` on).
TIMED_GENERATORS = (GENERATOR_V32, GENERATOR_V33)
#: The generators whose belief groups have a decoy (``mh-gen-3.3`` on).
DECOY_GENERATORS = (GENERATOR_V33,)
#: The generator the package builds by default: ``MindHelper-VirtualHome-v3``'s sampled
#: episodes, the bundled pool, ``generate_episode`` without ``generator=``. A change that
#: changes episodes gets a new version here, and new suite names (see
#: :mod:`mindhelper_env.scenarios.releases`).
GENERATOR_VERSION = GENERATOR_V32

HELP_FAMILIES = (
    "false_belief_relocation",
    "false_belief_watched",
    "false_belief_told_away",
    "false_belief_emptied",
    "implicit_goal_search",
    "implicit_goal_reach",
    "implicit_goal_blocked",
)
#: Silent families: the twins of the help families (same visible cues, no one blocked) and
#: ordinary routine.
SILENT_FAMILIES = (
    "false_belief_irrelevant",
    "false_belief_witnessed",
    "false_belief_self_corrected",
    "false_belief_spare",
    "watched_move_seen",
    "false_belief_told",
    "emptied_witnessed",
    "emptied_spare",
    "search_self_found",
    "search_seen_astray",
    "reach_helped",
    "reach_noticed",
    "blocked_helped",
    "blocked_noticed",
    "routine",
)
FAMILIES = HELP_FAMILIES + SILENT_FAMILIES

#: The silent twins of each help family: the same set-up and the same visible cue, nobody
#: blocked.
TWINS: dict[str, tuple[str, ...]] = {
    "false_belief_relocation": ("false_belief_irrelevant", "false_belief_witnessed",
                                "false_belief_self_corrected", "false_belief_spare"),
    "false_belief_watched": ("watched_move_seen",),
    "false_belief_told_away": ("false_belief_told",),
    "false_belief_emptied": ("emptied_witnessed", "emptied_spare"),
    "implicit_goal_search": ("search_self_found", "search_seen_astray"),
    "implicit_goal_reach": ("reach_helped", "reach_noticed"),
    "implicit_goal_blocked": ("blocked_helped", "blocked_noticed"),
}

#: Share of the silent side: ``routine`` a tenth; each help family's twins together as much
#: as every other twin group (split evenly inside a group). So a set-up that belongs to one
#: help family (a relocation, a child near a high shelf, someone carrying two things to a
#: container) is as common among silent episodes as among help episodes, and the set-up
#: cannot tell them apart.
#: Weights of the twins inside their group (default 1). ``false_belief_irrelevant`` has no
#: cue (the person never looks for X again) and ``search_self_found`` none that turns on a
#: belief (the object is where people keep it), so they are the rarer twins of their groups:
#: every group's silent side is mostly twins whose cue only a belief explains.
TWIN_WEIGHTS: dict[str, float] = {"false_belief_irrelevant": 0.25, "search_self_found": 0.25}

SILENT_SHARES: dict[str, float] = {
    **{twin: 0.9 / len(TWINS) * TWIN_WEIGHTS.get(twin, 1.0)
       / sum(TWIN_WEIGHTS.get(t, 1.0) for t in group)
       for group in TWINS.values() for twin in group},
    "routine": 0.1,
}

#: Sampling weights: half help (split evenly), half silent (by :data:`SILENT_SHARES`).
DEFAULT_FAMILY_WEIGHTS: dict[str, float] = {
    **{f: 0.5 / len(HELP_FAMILIES) for f in HELP_FAMILIES},
    **{f: 0.5 * SILENT_SHARES[f] for f in SILENT_FAMILIES},
}


#: Generator ``mh-gen-3.0`` (:mod:`mindhelper_env.scenarios.twins`): twins built from one
#: base draft. Its twin groups keep the twins whose difference from the help family is a
#: mind (``false_belief_irrelevant``, ``false_belief_self_corrected``, ``false_belief_spare``,
#: ``emptied_spare`` and ``search_self_found`` are not generated: no cue at all, X lying in
#: view, or X where one keeps it).
V3_TWINS: dict[str, tuple[str, ...]] = {
    "false_belief_relocation": ("false_belief_witnessed",),
    "false_belief_watched": ("watched_move_seen",),
    "false_belief_told_away": ("false_belief_told",),
    "false_belief_emptied": ("emptied_witnessed",),
    "implicit_goal_search": ("search_seen_astray",),
    "implicit_goal_reach": ("reach_helped", "reach_noticed"),
    "implicit_goal_blocked": ("blocked_helped", "blocked_noticed"),
}
V3_FAMILIES = (*V3_TWINS, *(t for twins in V3_TWINS.values() for t in twins), "routine")
#: Share of ``routine`` on the silent side of ``mh-gen-3.0`` suites and samples.
V3_ROUTINE = 0.05


def is_v3(generator: str | None = None) -> bool:
    """Does ``generator`` build twin groups from one base draft (:data:`V3_GENERATORS`;
    ``None``: :data:`GENERATOR_VERSION`)?"""
    return (GENERATOR_VERSION if generator is None else generator) in V3_GENERATORS


def twins_of(generator: str | None = None) -> dict[str, tuple[str, ...]]:
    """The twin groups a generator builds (:data:`TWINS`, or :data:`V3_TWINS` for
    ``mh-gen-3.0`` on; ``None``: :data:`GENERATOR_VERSION`)."""
    generator = GENERATOR_VERSION if generator is None else generator
    return dict(V3_TWINS if is_v3(generator) else TWINS)


def silent_shares(generator: str | None = None) -> dict[str, float]:
    """Share of the silent side per family (:data:`SILENT_SHARES` for ``mh-gen-2.x``): every
    twin group as common as its help family, split evenly inside the group; ``routine`` a
    tenth (``mh-gen-2.x``) or a twentieth (``mh-gen-3.0``: nothing in it looks like a need, so
    every agent that stays silent without a struggle gets it right, and a tenth lifted a coin
    flip over the twin groups to PHA 52.5). ``None``: :data:`GENERATOR_VERSION`."""
    generator = GENERATOR_VERSION if generator is None else generator
    if not is_v3(generator):
        return dict(SILENT_SHARES)
    return {**{twin: (1 - V3_ROUTINE) / len(V3_TWINS) / len(group)
               for group in V3_TWINS.values() for twin in group}, "routine": V3_ROUTINE}


def family_weights(generator: str | None = None) -> dict[str, float]:
    """Sampling weights of a generator's families (``None``: :data:`GENERATOR_VERSION`):
    half help, half silent."""
    generator = GENERATOR_VERSION if generator is None else generator
    if not is_v3(generator):
        return dict(DEFAULT_FAMILY_WEIGHTS)
    shares = silent_shares(generator)
    return {**{f: 0.5 / len(HELP_FAMILIES) for f in HELP_FAMILIES},
            **{f: 0.5 * w for f, w in shares.items()}}


#: The abilities the benchmark measures (docs/scenarios.md, "Abilities"): what a helper must
#: model to decide an episode of a family and its twins.
ABILITIES = ("location_belief", "state_belief", "communication", "helper_attention",
             "goal_inference", "special_population")
#: Task types: what blocks the person in the help family of a twin group.
TASK_TYPES = ("false_belief", "implicit_goal")

#: The abilities each family's decision turns on. A silent twin carries the abilities of its
#: help family (the same question, answered "no"); ``routine`` tests none. Families of
#: generator versions that are not current stay listed so that old records still score.
FAMILY_ABILITIES: dict[str, tuple[str, ...]] = {
    "false_belief_relocation": ("location_belief",),
    "false_belief_irrelevant": ("location_belief",),
    "false_belief_witnessed": ("location_belief",),
    "false_belief_self_corrected": ("location_belief",),
    "false_belief_spare": ("location_belief",),
    "false_belief_watched": ("location_belief",),
    "watched_move_seen": ("location_belief",),
    "false_belief_told_away": ("communication",),
    "false_belief_told": ("communication",),
    "false_belief_emptied": ("state_belief",),
    "emptied_witnessed": ("state_belief",),
    "emptied_spare": ("state_belief",),
    "implicit_goal_search": ("location_belief", "goal_inference"),
    "search_self_found": ("location_belief", "goal_inference"),
    "search_seen_astray": ("location_belief", "goal_inference"),
    "implicit_goal_reach": ("helper_attention", "goal_inference", "special_population"),
    "reach_helped": ("helper_attention", "goal_inference", "special_population"),
    "reach_noticed": ("helper_attention", "goal_inference", "special_population"),
    "implicit_goal_blocked": ("helper_attention",),
    "blocked_helped": ("helper_attention",),
    "blocked_noticed": ("helper_attention",),
    "routine": (),
}

_TASK_TYPE_OF_HELP = {
    "false_belief_relocation": "false_belief", "false_belief_watched": "false_belief",
    "false_belief_told_away": "false_belief", "false_belief_emptied": "false_belief",
    "implicit_goal_search": "implicit_goal", "implicit_goal_reach": "implicit_goal",
    "implicit_goal_blocked": "implicit_goal",
}


def family_abilities(family: str) -> tuple[str, ...]:
    """The abilities (:data:`ABILITIES`) an episode of ``family`` tests (empty if none or
    unknown)."""
    return FAMILY_ABILITIES.get(family, ())


def twin_group(family: str) -> str | None:
    """The help family whose twin group ``family`` belongs to (itself for a help family);
    None for ``routine`` and unknown families."""
    if family in _TASK_TYPE_OF_HELP:
        return family
    for help_family, twins in TWINS.items():
        if family in twins:
            return help_family
    return None


def task_type(family: str) -> str | None:
    """``false_belief`` or ``implicit_goal``: what blocks the person in the help family of
    ``family``'s twin group (None for ``routine`` and unknown families)."""
    group = twin_group(family)
    return None if group is None else _TASK_TYPE_OF_HELP.get(group)


@dataclass(frozen=True)
class Reference:
    """Ground truth of one episode (attribute access; :meth:`to_dict` for JSON)."""

    episode_id: str
    family: str
    needs_intervention: bool
    focus_actor: int
    focus_name: str
    target_object: int | None
    mental_state: dict[str, Any]
    window: dict[str, int] | None
    reference_actions: list[str] = field(default_factory=list)
    success: dict[str, Any] = field(default_factory=dict)

    @property
    def onset_tick(self) -> int | None:
        return None if self.window is None else self.window["onset_tick"]

    @property
    def deadline_tick(self) -> int | None:
        return None if self.window is None else self.window["deadline_tick"]

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict of fresh JSON values (what ``dataclasses.asdict`` gives,
        built directly: every finished episode's record contains it)."""
        return {f: _copy_json(getattr(self, f)) for f in _REFERENCE_FIELDS}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reference:
        return cls(
            episode_id=str(d["episode_id"]),
            family=str(d["family"]),
            needs_intervention=bool(d["needs_intervention"]),
            focus_actor=int(d["focus_actor"]),
            focus_name=str(d.get("focus_name", "")),
            target_object=None if d.get("target_object") is None else int(d["target_object"]),
            mental_state=dict(d.get("mental_state") or {"type": "none"}),
            window=None if d.get("window") is None else {
                "onset_tick": int(d["window"]["onset_tick"]),
                "deadline_tick": int(d["window"]["deadline_tick"]),
            },
            reference_actions=[str(x) for x in d.get("reference_actions", [])],
            success=dict(d.get("success") or {}),
        )


_REFERENCE_FIELDS = tuple(f.name for f in fields(Reference))


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists, tuples of scalars), types kept."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy_json(v) for v in value)
    if value is None or isinstance(value, (str, int, float)):
        return value
    return copy.deepcopy(value)
