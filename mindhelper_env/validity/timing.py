"""The timing scan: does any gap between two events tell a help episode from its twin?

The pairing test (``tests/test_twins.py``) compares which facts the two sides of a twin
group share; this instrument compares *when* things happen. For every twin group it builds
fresh bases (seeds of their own, never a suite's), takes the help episode and one twin of
each, and reads the timeline of what anyone could have seen up to the focus person's cue:

* on the focus person's timeline: the start and end of each call (``call``, ``call_end``)
  and chore (``chore``, ``chore_end``), the last time they walked into a room (``enter``)
  or into the room next to the cue's room through an open door (``door_view``), the last
  time they arrived anywhere (``arrive``) and the cue itself (``look``: the look into the
  place, or the struggle);
* the switch's events and the other people's: someone else moving the target (``move``,
  the first grab of it by someone other than the focus person; ``put``, the last time it was
  put down by someone else), the tell (``tell``), and other people's calls and chores
  (``o_call``, ``o_call_end``, ``o_chore``, ``o_chore_end``).

Each kind's tick is its last occurrence up to the cue (``move``: the first); the scan
reads every gap ``t(b) - t(a)`` of two kinds (signed; absent kinds a value of their own).
Per group it reports, on one half of the bases, trained on the other half:

* the best **single-gap classifier**: for each gap, the side more common at each of its
  values (the strongest rule on one gap, thresholds included), its accuracy with a 95 %
  Wilson interval;
* a **depth-3 tree** (scikit-learn) over the gaps without the switch's events, and one over
  the gaps without the focus person's calls, chores and rooms (belief groups; the higher
  of the two is reported): a tree that reads both can rebuild "the move came during the
  call" from two gaps to the look, which is the mind the group tests;
* the same tree over every gap, the switch's own included: what the mind switch changes by
  design (a move during the focus person's call on the help side, while they watch on the
  twin's), the check that the instrument sees a difference where there is one.

A gap **the switch lists** (:func:`listed`) relates the switched event to the focus person's
perception: in the belief groups, ``move``/``put``/``tell`` against the focus person's calls,
chores, room changes and door views. No other gap should classify the side.

``python benchmarks/bench_validity.py --timing-scan N`` prints the table; ``tests/
test_validity_timing.py`` guards the instrument, and the pairing test checks, base by base,
that every unlisted gap is equal on both sides of an ``mh-gen-3.2`` base.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["FOCUS_KINDS", "OTHER_KINDS", "KINDS", "GAPS", "SWITCH_EVENTS", "PERCEPTION_KINDS",
           "timeline", "gaps", "listed", "free_gaps", "GroupSample", "group_sample",
           "single_gap_classifier", "GroupScan", "scan_group", "timing_scan", "wilson",
           "MISSING"]

FOCUS_KINDS = ("call", "call_end", "chore", "chore_end", "enter", "door_view", "arrive", "look")
OTHER_KINDS = ("move", "put", "tell", "o_call", "o_call_end", "o_chore", "o_chore_end")
KINDS = FOCUS_KINDS + OTHER_KINDS
#: Every ordered pair of kinds (``a`` before ``b`` in :data:`KINDS`): the gap ``t(b) - t(a)``.
GAPS: tuple[tuple[str, str], ...] = tuple((a, b) for i, a in enumerate(KINDS)
                                          for b in KINDS[i + 1:])
#: The switch's own events in the belief groups, and the focus person's perception changes
#: (a gap between the two is what the switch decides).
SWITCH_EVENTS = ("move", "put", "tell")
PERCEPTION_KINDS = ("call", "call_end", "chore", "chore_end", "enter", "door_view", "arrive")
#: The value of a gap one of whose events did not happen (a value of its own).
MISSING = -999
_BELIEF = ("false_belief_relocation", "false_belief_watched", "false_belief_told_away",
           "false_belief_emptied", "implicit_goal_search")


def timeline(spec: Mapping[str, Any],
             make_sim: Callable[[], Any] | None = None) -> dict[str, int | None]:
    """The tick of each kind of :data:`KINDS` in ``spec`` with the robot silent, up to the
    focus person's **look**: their first struggle cue after the switch's events (someone
    else's last put of the target and the tell; the first cue where there are none: an
    earlier cue, such as emptied's first look into the full container, is part of the
    set-up). ``look`` is None where there is no such cue. ``make_sim``: builds the
    simulation (default: of ``spec``; a draft's probe, where ``spec`` holds only its
    ``reference``)."""
    from mindhelper_env.backends.symbolic import Simulation
    from mindhelper_env.scenarios.generator import observe_cues

    def fresh() -> Any:
        return make_sim() if make_sim is not None else Simulation(dict(spec))

    ref = spec["reference"]
    focus = int(ref["focus_actor"])
    target = ref.get("target_object")
    cue_ticks = [int(c[0]) for c in observe_cues(fresh()) if c[1] == focus]
    out: dict[str, int | None] = dict.fromkeys(KINDS)
    if not cue_ticks:
        return out
    sim = fresh()
    w = sim.world
    seen: list[tuple[int, str]] = []  # (tick, kind), in order
    rooms: list[tuple[int, int | None]] = []
    room = w.chars[focus].room
    end = max(cue_ticks)
    while sim.tick <= end:
        tick = sim.tick
        for e in sim.step_tick():
            kind = _kind(e, focus, target)
            if kind is not None:
                seen.append((tick, kind))
        now = w.chars[focus].room
        if now != room:
            rooms.append((tick, now))
            room = now
    switch = [t for t, k in seen if k in ("put", "tell")]
    after = [t for t in cue_ticks if not switch or t > max(switch)]
    if not after:
        return out
    look = after[0]
    out["look"] = look
    for tick, kind in seen:
        if tick > look:
            break
        if kind == "move":
            if out["move"] is None:
                out["move"] = tick
        else:
            out[kind] = tick
    look_room = next((r for t, r in reversed(rooms) if t <= look), w.chars[focus].room)
    for tick, r in rooms:
        if tick > look:
            break
        out["enter"] = tick
        if r is not None and r != look_room and look_room in w.views(r):
            out["door_view"] = tick
    return out


_FOCUS_VERBS = {"phone": "call", "hangup": "call_end", "chore": "chore",
                "chore_done": "chore_end"}
_OTHER_VERBS = {"phone": "o_call", "hangup": "o_call_end", "chore": "o_chore",
                "chore_done": "o_chore_end", "tell": "tell"}


def _kind(e: Any, focus: int, target: int | None) -> str | None:
    """The kind of :data:`KINDS` an event is (None: none)."""
    if e.actor == focus:
        if e.verb == "walk" and e.done and e.ok:
            return "arrive"
        return _FOCUS_VERBS.get(e.verb)
    if target is not None and e.args and e.args[0] == target:
        if e.verb == "grab":
            return "move"
        if e.verb in ("putin", "putback", "drop"):
            return "put"
    return _OTHER_VERBS.get(e.verb)


def gaps(line: Mapping[str, int | None]) -> np.ndarray:
    """The gaps of :data:`GAPS` of one timeline (:data:`MISSING` where an event is absent)."""
    out = np.empty(len(GAPS), dtype=np.int64)
    for k, (a, b) in enumerate(GAPS):
        ta, tb = line.get(a), line.get(b)
        out[k] = MISSING if ta is None or tb is None else int(tb) - int(ta)
    return out


#: The other people's calls and chores: in ``mh-gen-3.3``'s belief groups the decoy's, whose
#: blocks mirror the focus person's with the kinds swapped (its perception, switched too).
DECOY_KINDS = ("o_call", "o_call_end", "o_chore", "o_chore_end")


def _perception(group: str, generator: str | None) -> tuple[str, ...]:
    """The kinds the switch of ``group`` moves base by base: the focus person's perception
    changes, and from ``mh-gen-3.3`` on the decoy's calls and chores."""
    from mindhelper_env.scenarios.spec import DECOY_GENERATORS

    return PERCEPTION_KINDS + (DECOY_KINDS if generator in DECOY_GENERATORS else ())


def listed(group: str, gap: tuple[str, str], generator: str | None = None) -> bool:
    """Does the mind switch of ``group`` decide this gap (the switched event against the focus
    person's perception: a belief group's move, put or tell against their calls, chores and
    rooms; ``mh-gen-3.3``: against the decoy's calls and chores too)?"""
    if group not in _BELIEF:
        return False
    a, b = gap
    kinds = _perception(group, generator)
    return (a in SWITCH_EVENTS and b in kinds) or (b in SWITCH_EVENTS and a in kinds)


def free_gaps(group: str, generator: str | None = None) -> list[int]:
    """Indexes in :data:`GAPS` of the gaps the switch of ``group`` does not list."""
    return [k for k, gap in enumerate(GAPS) if not listed(group, gap, generator)]


@dataclass
class GroupSample:
    """The gaps of one group's bases: ``x`` (one row per episode), ``help`` (its side) and
    ``base`` (the base it comes from: both sides of a base are split together)."""

    group: str
    generator: str
    x: np.ndarray
    help: np.ndarray
    base: np.ndarray
    failed: int = 0


def _base_rows(group: str, seed: int, generator: str, house: Any, turn: int
               ) -> list[tuple[bool, np.ndarray]] | None:
    from mindhelper_env.scenarios.generator import generate_group
    from mindhelper_env.scenarios.spec import V3_TWINS

    try:
        specs = generate_group(group, seed, house=house, generator=generator)
    except RuntimeError:
        return None
    twins = [f for f in V3_TWINS[group] if f in specs]
    if not twins:
        return None
    twin = twins[turn % len(twins)]
    return [(True, gaps(timeline(specs[group]))), (False, gaps(timeline(specs[twin])))]


def _rows_job(args: tuple[str, list[int], str, Any]) -> list[tuple[int, bool, np.ndarray] | None]:
    group, seeds, generator, house = args
    out: list[tuple[int, bool, np.ndarray] | None] = []
    for k, seed in enumerate(seeds):
        rows = _base_rows(group, seed, generator, house, k)
        if rows is None:
            out.append(None)
            continue
        out.extend((seed, side, x) for side, x in rows)
    return out


#: Seeds of the scan's bases: inside the training range, past the seeds the validity
#: instruments train on (fresh episodes, never a suite's).
SCAN_SEED_BASE = 700_000


def run_base_jobs(job: Callable[[tuple[str, list[int], str, Any]], list[Any]], group: str,
                  seeds: Sequence[int], generator: str, house: Any, workers: int
                  ) -> tuple[list[Any], int]:
    """Run ``job((group, seeds chunk, generator, house))`` over ``seeds`` split in
    ``workers`` chunks (a process pool when ``workers > 1``); its rows, and how many were
    None (bases that failed to build)."""
    chunks = [list(seeds[i::max(1, workers)]) for i in range(max(1, workers))]
    jobs = [(group, c, generator, house) for c in chunks if c]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(job, jobs))
    else:
        results = [job(j) for j in jobs]
    rows = [r for res in results for r in res if r is not None]
    return rows, sum(r is None for res in results for r in res)


def group_sample(group: str, n: int, *, generator: str | None = None, house: Any = None,
                 seed: int = 0, workers: int = 1) -> GroupSample:
    """Gaps of ``n`` bases of ``group`` (``n`` episodes a side) built from fresh seeds
    (``SCAN_SEED_BASE + 1000 * seed + i``, ...), the help episode and one twin of each
    (twins in turn where a group has two)."""
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION

    gen = GENERATOR_VERSION if generator is None else generator
    seeds = [SCAN_SEED_BASE + 100_000 * seed + i for i in range(n)]
    rows, failed = run_base_jobs(_rows_job, group, seeds, gen, house, workers)
    rows.sort(key=lambda r: (r[0], not r[1]))
    return GroupSample(group, gen, np.array([r[2] for r in rows]).reshape(-1, len(GAPS)),
                       np.array([r[1] for r in rows], dtype=bool),
                       np.array([r[0] for r in rows], dtype=np.int64), failed)


def wilson(correct: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson interval of a proportion ``correct / n`` (percent)."""
    if n == 0:
        return (0.0, 100.0)
    p = correct / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (100 * max(0.0, mid - half), 100 * min(1.0, mid + half))


def single_gap_classifier(x_tr: np.ndarray, y_tr: np.ndarray, x_te: np.ndarray,
                          y_te: np.ndarray) -> tuple[float, int]:
    """The value-by-value rule on one gap: the side more common (as a share of its side) at
    each value in training, help where a value is unseen or tied; returns its test accuracy
    (percent) and the number of test episodes it got right."""
    n_help = max(1, int(y_tr.sum()))
    n_twin = max(1, int((~y_tr).sum()))
    vals, inv = np.unique(x_tr, return_inverse=True)
    helps = np.bincount(inv, weights=y_tr.astype(float), minlength=len(vals))
    twins = np.bincount(inv, weights=(~y_tr).astype(float), minlength=len(vals))
    says_help = helps / n_help >= twins / n_twin
    pos = np.searchsorted(vals, x_te)
    pos_ok = (pos < len(vals)) & (vals[np.minimum(pos, len(vals) - 1)] == x_te)
    pred = np.where(pos_ok, says_help[np.minimum(pos, len(vals) - 1)], True)
    right = int((pred == y_te).sum())
    return 100.0 * right / max(1, len(y_te)), right


@dataclass
class GroupScan:
    """One group's result (accuracies in percent, on the test half; ``*_ci`` 95 %)."""

    group: str
    generator: str
    episodes: int  # a side
    best_gap: str
    best_acc: float
    best_ci: tuple[float, float]
    tree_acc: float
    tree_ci: tuple[float, float]
    tree_all_acc: float
    listed_best_gap: str | None
    listed_best_acc: float | None
    top: list[tuple[str, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _name(k: int) -> str:
    a, b = GAPS[k]
    return f"{a}->{b}"


def _tree(x_tr: np.ndarray, y_tr: np.ndarray, x_te: np.ndarray, y_te: np.ndarray
          ) -> tuple[float, int]:
    from sklearn.tree import DecisionTreeClassifier

    if x_tr.shape[1] == 0:
        return 50.0, len(y_te) // 2
    clf = DecisionTreeClassifier(max_depth=3, random_state=0).fit(x_tr, y_tr)
    right = int((clf.predict(x_te) == y_te).sum())
    return 100.0 * right / max(1, len(y_te)), right


def scan_group(sample: GroupSample) -> GroupScan:
    """Train on the bases of even rank, test on the others (see the module docstring)."""
    bases = np.unique(sample.base)
    test_bases = set(bases[1::2].tolist())
    te = np.array([b in test_bases for b in sample.base])
    x_tr, y_tr, x_te, y_te = sample.x[~te], sample.help[~te], sample.x[te], sample.help[te]
    free = free_gaps(sample.group, sample.generator)
    free_set = set(free)
    scores: list[tuple[float, int, int]] = []
    for k in range(len(GAPS)):
        acc, right = single_gap_classifier(x_tr[:, k], y_tr, x_te[:, k], y_te)
        scores.append((acc, right, k))
    free_scores = sorted((s for s in scores if s[2] in free_set), key=lambda s: -s[0])
    listed_scores = sorted((s for s in scores if s[2] not in free_set), key=lambda s: -s[0])
    acc, right, k = free_scores[0]
    # two trees, each blind to one side of the relation the switch decides (a tree that
    # reads the switched event's gaps and the focus person's call times together can
    # rebuild "the move came during the call": the mind); the worse of the two is reported
    trees = [_tree(x_tr[:, ks], y_tr, x_te[:, ks], y_te)
             for ks in (own_gaps(sample.group), base_gaps(sample.group, sample.generator))]
    tree_acc, tree_right = max(trees)
    all_acc, _ = _tree(x_tr, y_tr, x_te, y_te)
    n_te = len(y_te)
    return GroupScan(
        sample.group, sample.generator, int(sample.help.sum()), _name(k), acc,
        wilson(right, n_te), tree_acc, wilson(tree_right, n_te), all_acc,
        _name(listed_scores[0][2]) if listed_scores else None,
        listed_scores[0][0] if listed_scores else None,
        [(_name(s[2]), s[0]) for s in free_scores[:5]])


def timing_scan(n: int, *, generator: str | None = None, house: Any = None,
                groups: Iterable[str] | None = None, seed: int = 0,
                workers: int = 1) -> dict[str, GroupScan]:
    """:func:`scan_group` of every twin group (or ``groups``) on ``n`` fresh bases each."""
    from mindhelper_env.scenarios.spec import V3_TWINS

    out = {}
    for group in (groups or V3_TWINS):
        out[group] = scan_group(group_sample(group, n, generator=generator, house=house,
                                             seed=seed, workers=workers))
    return out


def format_scan(results: Mapping[str, GroupScan], title: str = "") -> str:
    """The scan as a Markdown table."""
    lines = [f"#### Timing scan {title}".rstrip(), "",
             "| group | episodes a side | best unlisted gap | accuracy (95 %) | depth-3 tree, "
             "unlisted (95 %) | tree, every gap | best listed gap |", "|---|---|---|---|---|---|---|"]
    for g, r in results.items():
        listed_txt = (f"{r.listed_best_gap} {r.listed_best_acc:.1f}" if r.listed_best_gap
                      else "—")
        lines.append(f"| {g} | {r.episodes} | {r.best_gap} | {r.best_acc:.1f} "
                     f"({r.best_ci[0]:.1f}–{r.best_ci[1]:.1f}) | {r.tree_acc:.1f} "
                     f"({r.tree_ci[0]:.1f}–{r.tree_ci[1]:.1f}) | {r.tree_all_acc:.1f} | "
                     f"{listed_txt} |")
    return "\n".join(lines)


def own_gaps(group: str) -> list[int]:
    """Indexes of the gaps that involve none of the switch's events (the move, the put, the
    tell) in the belief groups; every gap in the attention groups."""
    if group not in _BELIEF:
        return list(range(len(GAPS)))
    return [k for k, (a, b) in enumerate(GAPS)
            if a not in SWITCH_EVENTS and b not in SWITCH_EVENTS]


def base_gaps(group: str, generator: str | None = None) -> list[int]:
    """Indexes of the gaps that one base's variants share exactly from ``mh-gen-3.2`` on:
    every gap in the attention groups; in the belief groups every gap that involves none of
    the focus person's perception changes (the switch puts the block in which the switched
    event falls, busy on the help side and watching on the twin's, at a place in the
    timeline drawn in the base, so those ticks differ base by base and agree only in
    distribution). ``mh-gen-3.3`` (``generator``): nor the other people's calls and chores
    (the decoy's blocks are the focus person's with the kinds swapped; what the two do
    together, the house-wide count of each verb at each tick, is the same on every side:
    :func:`house_counts`)."""
    if group not in _BELIEF:
        return list(range(len(GAPS)))
    kinds = _perception(group, generator)
    return [k for k, (a, b) in enumerate(GAPS) if a not in kinds and b not in kinds]


def unequal_base_gaps(group: str, lines: Sequence[Mapping[str, int | None]],
                      generator: str | None = None) -> list[str]:
    """The gaps of :func:`base_gaps` that differ between the timelines of one base's
    variants (``lines``): empty when the base shares them all."""
    vecs = [gaps(line) for line in lines]
    return [_name(k) for k in base_gaps(group, generator) if len({int(v[k]) for v in vecs}) > 1]


#: The verbs whose house-wide count per tick :func:`house_counts` reads (who does them
#: left out): calls, chores, walks, tells, takes, puts and opens.
HOUSE_VERBS = ("phone", "hangup", "chore", "chore_done", "walk", "tell", "grab", "putin",
               "putback", "drop", "open", "close", "look")


def house_counts(make_sim: Callable[[], Any], until: int,
                 verbs: Sequence[str] = HOUSE_VERBS) -> list[tuple[tuple[str, int], ...]]:
    """Per tick up to ``until`` (inclusive), how many times each of ``verbs`` happens in the
    house, whoever does it (what a learner over house-wide verb timing reads, with no ids,
    rooms or roles): ``[((verb, count), ...)]``, sorted, one entry per tick."""
    sim = make_sim()
    keep = set(verbs)
    out: list[tuple[tuple[str, int], ...]] = []
    while sim.tick <= until:
        counts: dict[str, int] = {}
        for e in sim.step_tick():
            if e.verb in keep:
                counts[e.verb] = counts.get(e.verb, 0) + 1
        out.append(tuple(sorted(counts.items())))
    return out


__all__ += ["format_scan", "own_gaps", "base_gaps", "unequal_base_gaps", "SCAN_SEED_BASE",
            "DECOY_KINDS", "HOUSE_VERBS", "house_counts"]
