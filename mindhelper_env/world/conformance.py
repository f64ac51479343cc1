"""Conformance of :class:`~mindhelper_env.world.world.World` with VirtualHome's executor.

Generates random but plausible script-line sequences on VirtualHome environment graphs, runs
each sequence through our :class:`World` (built from the graph) and through VirtualHome's
evolving-graph executor (``ScriptExecutor.execute_one_step``, from the ``virtualhome-eval``
package, imported lazily), and counts per verb how often we accept the non-walk lines
VirtualHome accepts and reject the lines it rejects.

Sequences. Each step walks to a random object that the graph does not put inside a closed
container (a node with CONTAINERS; hidden contents are a deliberate difference; one
step in ten skips the walk, to exercise "not close" rejections) and then uses a verb
plausible for the object's properties: ``open``/``close`` (CAN_OPEN), ``grab`` (GRABBABLE),
``putback`` onto SURFACES or ``putin`` into CONTAINERS (a held object), ``switchon``/
``switchoff`` (HAS_SWITCH), ``sit`` (SITTABLE); ``standup`` and ``drop`` (of a held object, or
now and then of one that is not held) are mixed in. Choices follow our world's state; the
generator is seeded, so a run is reproducible.

Cascades. A sequence is compared line by line *while both states stay consistent*: after a
line both accepted or both rejected, the character's held objects, whether it sits, and the
OPEN/CLOSED/ON/OFF states and placement of the line's arguments must agree; the first line
on which the verdicts or these states differ ends the comparison of that sequence (the line
itself is counted, later lines are not). So one disagreement is counted once, not again for
every line it causes to differ. Walk lines are compared too (a differing walk also ends the
sequence) but reported apart: the target is the non-walk lines.

Deliberate differences the harness switches off: the character's reach is set above every
object (``reach=None``), since VirtualHome has no reach limit. The other deliberate
differences of :mod:`mindhelper_env.world.world` stay in and are counted.

Speed. :func:`replay_speed` replays every generated line of every sequence through each side
in its own pass (so neither pollutes the other's caches), parsing included (our
:meth:`World.execute` parses the string; VirtualHome's line is parsed with its
``parse_script_line``); building worlds and states is not timed. ``run_conformance`` also
sums per-line times measured while the two alternate (``ours_seconds``/``theirs_seconds``),
which understates our speed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mindhelper_env.world.world import World

__all__ = [
    "VERBS",
    "VerbStats",
    "ConformanceReport",
    "trimmed_scene_graphs",
    "VirtualHomeRunner",
    "generate_sequence",
    "run_conformance",
    "replay_speed",
]

#: Non-walk verbs the harness generates.
VERBS = ("open", "close", "grab", "putback", "putin", "switchon", "switchoff", "sit",
         "standup", "drop")

_SKIP_CATEGORIES = frozenset({"rooms", "characters", "walls", "floors", "ceiling", "ceilings",
                              "doors", "windows"})


def _vh() -> Any:
    """VirtualHome's evolving-graph modules (``virtualhome-eval``); ImportError without it."""
    from virtualhome_eval.simulation.evolving_graph import environment, execution, scripts, utils

    return environment, execution, scripts, utils


def trimmed_scene_graphs(limit: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``(name, init_graph)`` of the TrimmedTestScene1 graphs shipped with ``virtualhome-eval``,
    sorted by name (at most ``limit``). Read from the installed package at call time."""
    from mindhelper_env.world.houses import virtualhome_scene_graphs

    return virtualhome_scene_graphs("TrimmedTestScene1", limit)


@dataclass
class VerbStats:
    """Lines of one verb: how many VirtualHome accepted / rejected and how many we agreed on."""

    accepted: int = 0
    accepted_agree: int = 0
    rejected: int = 0
    rejected_agree: int = 0

    def add(self, ours: bool, theirs: bool) -> None:
        if theirs:
            self.accepted += 1
            self.accepted_agree += ours
        else:
            self.rejected += 1
            self.rejected_agree += not ours

    @property
    def accepted_rate(self) -> float | None:
        return self.accepted_agree / self.accepted if self.accepted else None

    @property
    def rejected_rate(self) -> float | None:
        return self.rejected_agree / self.rejected if self.rejected else None


@dataclass
class ConformanceReport:
    verbs: dict[str, VerbStats] = field(default_factory=dict)
    walk: VerbStats = field(default_factory=VerbStats)
    sequences: int = 0
    #: sequences whose comparison ended early (verdict or state difference)
    cut: int = 0
    #: ``(verb, line, ours_ok, our_reason, theirs_ok, their_reason, kind)`` of each difference
    differences: list[tuple[str, str, bool, str | None, bool, str, str]] = field(
        default_factory=list)
    lines_timed: int = 0
    ours_seconds: float = 0.0
    theirs_seconds: float = 0.0
    #: ``(graph, character id, lines)`` of every sequence, all its generated lines, for
    #: :func:`replay_speed`
    recorded: list[tuple[dict[str, Any], int, list[str]]] = field(default_factory=list)

    def stats(self, verb: str) -> VerbStats:
        return self.verbs.setdefault(verb, VerbStats())

    @property
    def overall(self) -> VerbStats:
        tot = VerbStats()
        for s in self.verbs.values():
            tot.accepted += s.accepted
            tot.accepted_agree += s.accepted_agree
            tot.rejected += s.rejected
            tot.rejected_agree += s.rejected_agree
        return tot

    def table(self) -> str:
        def pct(r: float | None) -> str:
            return "   -  " if r is None else f"{100 * r:5.1f}%"

        rows = [f"{'verb':10s} {'accepted':>16s} {'rejected':>16s}"]
        for verb in (*VERBS, *sorted(set(self.verbs) - set(VERBS))):
            s = self.verbs.get(verb)
            if s is None:
                continue
            rows.append(f"{verb:10s} {pct(s.accepted_rate)} of {s.accepted:5d}  "
                        f"{pct(s.rejected_rate)} of {s.rejected:5d}")
        o = self.overall
        rows.append(f"{'non-walk':10s} {pct(o.accepted_rate)} of {o.accepted:5d}  "
                    f"{pct(o.rejected_rate)} of {o.rejected:5d}")
        w = self.walk
        rows.append(f"{'(walk)':10s} {pct(w.accepted_rate)} of {w.accepted:5d}  "
                    f"{pct(w.rejected_rate)} of {w.rejected:5d}")
        rows.append(f"sequences {self.sequences}, cut short by a difference {self.cut}")
        return "\n".join(rows)


class VirtualHomeRunner:
    """One VirtualHome evolving-graph state for a graph, stepped one line at a time."""

    def __init__(self, graph: dict[str, Any], char_id: int) -> None:
        environment, execution, scripts, utils = _vh()
        self._execution = execution
        self._scripts = scripts
        eg = environment.EnvironmentGraph(graph)
        self.state = environment.EnvironmentState(eg, utils.load_name_equivalence(),
                                                  instance_selection=True)
        self.executor = execution.ScriptExecutor(eg, utils.load_name_equivalence())
        self.char_id = char_id
        self._rel = environment.Relation
        self._node_cls = environment.Node

    def execute(self, line: str) -> tuple[bool, str]:
        """Run one line; ``(accepted, error message)``. Executor exceptions count as
        rejections (their message is returned)."""
        self.executor.info = self._execution.ExecutionInfo()
        try:
            script = self._scripts.Script([self._scripts.parse_script_line(line, 0)])
            ok, state = self.executor.execute_one_step(script, self.state, in_place=True)
        except Exception as err:  # noqa: BLE001 - the executor raises on some lines
            return False, f"{type(err).__name__}: {err}"
        self.state = state
        return bool(ok), "" if ok else self.executor.info.get_error_string()

    def _targets(self, nid: int, rel: str) -> set[int]:
        return {n.id for n in self.state.get_nodes_from(self._node_cls(nid),
                                                          self._rel[rel])}

    def held(self) -> set[int]:
        return self._targets(self.char_id, "HOLDS_RH") | self._targets(self.char_id, "HOLDS_LH")

    def sitting(self) -> bool:
        return "SITTING" in {s.name for s in self.state.get_node(self.char_id).states}

    def states(self, nid: int) -> set[str]:
        return {s.name for s in self.state.get_node(nid).states}

    def placed(self, nid: int) -> set[tuple[str, int]]:
        out = {("ON", t) for t in self._targets(nid, "ON")}
        return out | {("INSIDE", t) for t in self._targets(nid, "INSIDE")}


_TRACKED = frozenset({"OPEN", "CLOSED", "ON", "OFF"})


def _consistent(world: World, vh: VirtualHomeRunner, cid: int, ids: Iterable[int]) -> str:
    """'' if the states the harness tracks agree, else what differs."""
    if set(world.held_by(cid)) != vh.held():
        return "held objects"
    if (world.chars[cid].sitting_on is not None) != vh.sitting():
        return "sitting"
    for nid in ids:
        if nid == cid:
            continue
        if world.node(nid).states & _TRACKED != vh.states(nid) & _TRACKED:
            return f"states of {nid}"
        p = world.placement(nid)
        if p is not None and p[1] not in world.rooms and p not in vh.placed(nid):
            return f"placement of {nid}"
    return ""


def _line(verb: str, world: World, *ids: int) -> str:
    return f"[{verb}]" + "".join(f" <{world.node(i).class_name}> ({i})" for i in ids)


def _candidates(world: World) -> list[int]:
    return sorted(
        n.id for n in world.graph.nodes.values()
        if n.category.lower() not in _SKIP_CATEGORIES and n.id not in world.chars
        and n.properties & {"CAN_OPEN", "GRABBABLE", "SURFACES", "CONTAINERS", "HAS_SWITCH",
                            "SITTABLE"}
    )


def _in_closed_container(world: World, nid: int) -> bool:
    """True if the graph puts ``nid`` INSIDE a closed CONTAINERS node (at any depth)."""
    g = world.graph
    todo, seen = [nid], {nid}
    while todo:
        for t in g.targets(todo.pop(), "INSIDE"):
            n = g.nodes[t]
            if t in seen or n.category.lower() == "rooms":
                continue
            if "CLOSED" in n.states and "CONTAINERS" in n.properties:
                return True
            seen.add(t)
            todo.append(t)
    return False


def generate_sequence(world: World, cid: int, rng: random.Random, steps: int,
                      candidates: Sequence[int]) -> Iterable[str]:
    """Yield plausible lines for ``cid``; the caller executes each one in ``world`` before
    asking for the next (choices follow the world's state)."""
    for _ in range(steps):
        held = world.held_by(cid)
        c = world.chars[cid]
        r = rng.random()
        if c.sitting_on is not None and r < 0.6:
            yield "[standup]"
            continue
        if r < 0.04:
            yield "[standup]"
            continue
        if r < 0.12 and held:
            yield _line("drop", world, rng.choice(held))
            continue
        if r < 0.14:
            yield _line("drop", world, rng.choice(candidates))
            continue
        visible = [t for t in candidates if not _in_closed_container(world, t)]
        target = rng.choice(visible)
        if rng.random() >= 0.1:
            yield _line("walk", world, target)
        props = world.node(target).properties
        options: list[tuple[str, ...]] = []
        if "CAN_OPEN" in props:
            options += [("open",), ("close",)]
        if "GRABBABLE" in props:
            options.append(("grab",))
        if "HAS_SWITCH" in props:
            options += [("switchon",), ("switchoff",)]
        if "SITTABLE" in props:
            options.append(("sit",))
        held = [h for h in world.held_by(cid) if h != target]
        if held and "SURFACES" in props:
            options.append(("putback", "held"))
        if held and "CONTAINERS" in props:
            options.append(("putin", "held"))
        if not options:
            continue
        opt = rng.choice(options)
        if len(opt) == 2:
            yield _line(opt[0], world, rng.choice(held), target)
        else:
            yield _line(opt[0], world, target)


def _character(graph: dict[str, Any]) -> int:
    chars = sorted(n["id"] for n in graph["nodes"] if n.get("class_name") == "character")
    if not chars:
        raise ValueError("graph has no character node")
    return chars[0]


def run_conformance(
    graphs: Sequence[tuple[str, dict[str, Any]]],
    *,
    sequences_per_graph: int = 4,
    steps: int = 12,
    seed: int = 0,
    reach: float | None = None,
    report: ConformanceReport | None = None,
) -> ConformanceReport:
    """Run generated sequences on each graph through both executors; see the module doc."""
    rep = report if report is not None else ConformanceReport()
    rng = random.Random(seed)
    perf = time.perf_counter
    for name, graph in graphs:
        cid = _character(graph)
        base = World(graph)
        cands = _candidates(base)
        for _ in range(sequences_per_graph):
            world = base.copy()
            world.set_reach(cid, float("inf") if reach is None else reach)
            vh = VirtualHomeRunner(graph, cid)
            rep.sequences += 1
            lines: list[str] = []
            rep.recorded.append((graph, cid, lines))
            compared = True
            for line in generate_sequence(world, cid, rng, steps, cands):
                lines.append(line)
                if not compared:  # keep generating (for the speed replay), stop comparing
                    world.execute(cid, line)
                    continue
                t0 = perf()
                res = world.execute(cid, line)
                t1 = perf()
                theirs, err = vh.execute(line)
                t2 = perf()
                rep.lines_timed += 1
                rep.ours_seconds += t1 - t0
                rep.theirs_seconds += t2 - t1
                verb = res.line.verb if res.line is not None else line[1:line.index("]")]
                stats = rep.walk if verb == "walk" else rep.stats(verb)
                stats.add(res.ok, theirs)
                if res.ok != theirs:
                    rep.differences.append((verb, f"{name}: {line}", res.ok, res.reason,
                                            theirs, err, "verdict"))
                    rep.cut += 1
                    compared = False
                    continue
                ids = res.line.ids if res.line is not None else ()
                diff = _consistent(world, vh, cid, ids)
                if diff:
                    rep.differences.append((verb, f"{name}: {line}", res.ok, res.reason,
                                            theirs, err, diff))
                    rep.cut += 1
                    compared = False
    return rep


def replay_speed(recorded: Sequence[tuple[dict[str, Any], int, list[str]]],
                 repeats: int = 5) -> tuple[float, float]:
    """Median lines/s of our world and of VirtualHome's executor replaying the same recorded
    sequences (each side in its own pass; building worlds and states is not timed)."""
    import statistics

    n = sum(len(lines) for _, _, lines in recorded)
    bases: dict[int, World] = {}
    ours, theirs = [], []
    perf = time.perf_counter
    for _ in range(repeats):
        total = 0.0
        for graph, cid, lines in recorded:
            base = bases.get(id(graph))
            if base is None:
                base = bases[id(graph)] = World(graph)
            world = base.copy()
            world.set_reach(cid, float("inf"))
            t0 = perf()
            for line in lines:
                world.execute(cid, line)
            total += perf() - t0
        ours.append(n / total)
        total = 0.0
        for graph, cid, lines in recorded:
            vh = VirtualHomeRunner(graph, cid)
            t0 = perf()
            for line in lines:
                vh.execute(line)
            total += perf() - t0
        theirs.append(n / total)
    return statistics.median(ours), statistics.median(theirs)
