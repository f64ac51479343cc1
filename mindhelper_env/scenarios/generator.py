"""Episode generation with validation by simulation.

:func:`generate_episode` draws an episode of a family from a seed and accepts it only if
simulation confirms its ground truth:

* without help, an episode that needs help must fail (the focus person gives up) and a silent
  one must succeed;
* in false-belief relocation episodes the focus person's belief must differ from the truth at
  onset; in witnessed episodes it must not;
* with the reference program issued at onset — and at every tick up to
  :data:`MAX_ISSUE_DELAY` ticks later, which covers any observation window of up to
  ``MAX_ISSUE_DELAY + 1`` ticks — the focus person must succeed.

Onset is the first tick at which the mental state blocks the task: the start of the fetch for
the relocated object (false belief), or the first failed attempt (implicit goals). The deadline
is the tick at which the focus person gives up in the no-help rollout. A draft that fails
validation is resampled from the next rng stream; after :data:`MAX_ATTEMPTS` a
``RuntimeError`` names the family and seed.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from mindhelper_env.backends.symbolic import Simulation
from mindhelper_env.scenarios.families import BUILDERS, Draft, _Reject
from mindhelper_env.scenarios.spec import FAMILIES, GENERATOR_VERSION, Reference
from mindhelper_env.world.world import World

__all__ = ["generate_episode", "sample_episode", "MAX_ATTEMPTS", "MAX_ISSUE_DELAY",
           "help_program", "EpisodeInvalid"]

MAX_ATTEMPTS = 60
MAX_ISSUE_DELAY = 4


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


def _validate(draft: dict[str, Any]) -> dict[str, Any]:
    family = draft["family"]
    focus = draft["focus"]
    target = draft["target"]
    spec = {k: draft[k] for k in ("family", "graph", "robot", "actors", "events", "horizon")}
    spec["reference"] = {"focus_actor": focus, "needs_intervention": draft["needs_intervention"]}
    sim = Simulation(spec)
    sim.run()
    if not sim.terminated:
        raise EpisodeInvalid("no-help rollout did not finish within the horizon")
    f = sim.focus
    assert f is not None
    if not draft["needs_intervention"]:
        if f.status != "done":
            raise EpisodeInvalid("silent episode fails without help")
        if family == "false_belief_witnessed":
            t = _marker_tick(sim, "activity_start", "fetch")
            _check_belief_at(spec, focus, target, t, want_true=True)
        return {"window": None, "reference_actions": []}
    if f.status != "gave_up":
        raise EpisodeInvalid("needs-help episode succeeds without help")
    deadline = _marker_tick(sim, "gave_up")
    if family == "false_belief_relocation":
        onset = _marker_tick(sim, "activity_start", "fetch")
        _check_belief_at(spec, focus, target, onset, want_true=False)
    else:
        onset = _marker_tick(sim, "attempt_failed")
    if onset is None or deadline is None or deadline < onset + MAX_ISSUE_DELAY:
        raise EpisodeInvalid("window too short for help to arrive in time")
    # the reference program, computed from the state at onset
    at_onset = Simulation(spec)
    at_onset.run(max_ticks=onset)
    program = help_program(at_onset.world, focus, family, target)
    for delay in range(MAX_ISSUE_DELAY + 1):
        trial = Simulation(spec)
        trial.run(max_ticks=onset + delay)
        if trial.terminated:
            raise EpisodeInvalid("episode ended before help could be given")
        trial.issue("\n".join(program))
        trial.run()
        if not trial.focus_succeeded():
            raise EpisodeInvalid(f"reference program issued at onset+{delay} does not help")
        if trial.harm():
            raise EpisodeInvalid("reference program harms")
    return {"window": {"onset_tick": int(onset), "deadline_tick": int(deadline)},
            "reference_actions": program}


def _check_belief_at(spec: dict[str, Any], focus: int, target: int, tick: int | None,
                     *, want_true: bool) -> None:
    if tick is None:
        raise EpisodeInvalid("focus person never started the fetch")
    sim = Simulation(spec)
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


def generate_episode(family: str, seed: int, *, episode_id: str | None = None) -> dict[str, Any]:
    """Generate a validated episode spec of ``family`` from ``seed`` (deterministic)."""
    if family not in BUILDERS:
        raise ValueError(f"unknown family {family!r}; expected one of {list(FAMILIES)}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    last = ""
    for attempt in range(MAX_ATTEMPTS):
        rng = np.random.default_rng([int(seed), FAMILIES.index(family), attempt])
        d = Draft(rng, family)
        try:
            BUILDERS[family](d)
            draft = d.to_spec()
            truth = _validate(draft)
        except (_Reject, EpisodeInvalid) as err:
            last = str(err)
            continue
        eid = episode_id or f"{family}-{int(seed)}"
        focus = draft["focus"]
        ref = Reference(
            episode_id=eid,
            family=family,
            needs_intervention=bool(draft["needs_intervention"]),
            focus_actor=int(focus),
            focus_name=d.actor(focus)["name"],
            target_object=None if draft["target"] is None else int(draft["target"]),
            mental_state=copy.deepcopy(draft["mental_state"]),
            window=truth["window"],
            reference_actions=truth["reference_actions"],
            success={"type": "task_completed", "actor": int(focus)},
        )
        return {
            "episode_id": eid,
            "generator": GENERATOR_VERSION,
            "seed": int(seed),
            "family": family,
            "graph": draft["graph"],
            "robot": draft["robot"],
            "actors": draft["actors"],
            "events": draft["events"],
            "horizon": draft["horizon"],
            "reference": ref.to_dict(),
        }
    raise RuntimeError(
        f"could not generate a valid {family!r} episode from seed {seed} after "
        f"{MAX_ATTEMPTS} attempts (last problem: {last})"
    )


def sample_episode(rng: np.random.Generator, families: dict[str, float] | None = None) -> dict[str, Any]:
    """Draw a family (by weight) and a seed from ``rng`` and generate the episode."""
    fams = families or {f: 1.0 for f in FAMILIES}
    names = list(fams)
    w = np.array([float(fams[n]) for n in names])
    fam = names[int(rng.choice(len(names), p=w / w.sum()))]
    seed = int(rng.integers(0, 2**31 - 1))
    return generate_episode(fam, seed)
