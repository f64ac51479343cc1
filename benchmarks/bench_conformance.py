"""Agreement of our world with VirtualHome's evolving-graph executor, and relative speed.

Run: ``pip install --no-deps virtualhome-eval==0.1.1 && python benchmarks/bench_conformance.py
[--graphs 518] [--sequences 3] [--steps 15] [--repeats 5]``.

Generates random plausible line sequences on the TrimmedTestScene1 graphs shipped with
``virtualhome-eval`` (see :mod:`mindhelper_env.world.conformance`), prints per verb how often
our world accepts the non-walk lines VirtualHome accepts and rejects those it rejects, the
overall figures, the most frequent differences, and lines/s of both executors replaying the
same lines (medians of ``--repeats`` runs) with their ratio.
"""

from __future__ import annotations

import argparse
import collections
import re
import time

from mindhelper_env.world.conformance import replay_speed, run_conformance, trimmed_scene_graphs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=100,
                    help="how many of the 518 graphs (spread evenly)")
    ap.add_argument("--sequences", type=int, default=3, help="sequences per graph")
    ap.add_argument("--steps", type=int, default=15, help="steps per sequence")
    ap.add_argument("--repeats", type=int, default=5, help="speed runs (median)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    graphs = trimmed_scene_graphs()
    step = max(1, len(graphs) // max(1, args.graphs))
    graphs = graphs[::step][: args.graphs]
    t0 = time.perf_counter()
    rep = run_conformance(graphs, sequences_per_graph=args.sequences, steps=args.steps,
                          seed=args.seed)
    print(f"{len(graphs)} TrimmedTestScene1 graphs, {rep.sequences} sequences, "
          f"{sum(len(x[2]) for x in rep.recorded)} lines "
          f"({time.perf_counter() - t0:.0f} s)\n")
    print("agreement with VirtualHome on the lines it accepted / rejected")
    print(rep.table())
    def what(d: tuple) -> str:
        if d[6] != "verdict":
            return f"state differs: {re.sub(r'[0-9]+', 'N', d[6])}"
        if d[2]:
            return "VirtualHome: " + re.sub(r"<([a-z_]+)> \(\d+\)", r"\1", d[5].split(" when ")[0])
        return "we: " + re.sub(r" \(\d+\)", "", (d[3] or "").split(";")[0])

    kinds = collections.Counter((d[0], what(d)) for d in rep.differences)
    print("\nmost frequent differences (verb, what):")
    for (verb, what), n in kinds.most_common(12):
        print(f"  {n:4d}  [{verb}] {what[:70]}")
    ours, theirs = replay_speed(rep.recorded, args.repeats)
    print(f"\nspeed on the same lines (median of {args.repeats}): ours {ours:,.0f} lines/s, "
          f"VirtualHome {theirs:,.0f} lines/s, ratio {ours / theirs:.0f}x")


if __name__ == "__main__":
    main()
