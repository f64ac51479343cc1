"""The learned physical tracker at full strength, in its two variants.

* ``physical-learned`` (strict): the physical state at each struggle
  (``validity.STRICT_NAMES``), no record of where people were when things happened;
* ``physical-learned-history``: plus the struggler's room history
  (``ROOM_HISTORY_FEATURES``: the struggler's room when the object moved, whether it was
  the room the object moved in, whether a door between them was open). It may learn sight
  on its own: reported, not bounded (docs/validity.md).

Both are trained on ``--train`` training-seed episodes of the suite's own generator (three
quarters fit, the rest held out to tune depth, number of trees, the feature subset and the
threshold; suite episodes are never used to tune), then played on each ``--suite``::

    python benchmarks/bench_physical_learned.py --suite vh-dev-v5 --suite vh-test-v5 \\
        --train 2000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import mindhelper_env.validity as V
from mindhelper_env.scenarios.suites import SUITES


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", action="append", default=None,
                    help="suite to play on (repeatable; default vh-dev-v5)")
    ap.add_argument("--train", type=int, default=2000, help="training-seed episodes")
    ap.add_argument("--limit", type=int, default=None, help="first N suite episodes only")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    suites = args.suite or ["vh-dev-v5"]
    gens = {V.generator_of(s) for s in suites}
    houses = {str(SUITES[s].get("house")) for s in suites}
    if len(gens) != 1 or len(houses) != 1:
        ap.error(f"suites of one generator and house only (got {sorted(gens)}, "
                 f"{sorted(houses)})")
    gen = gens.pop()
    t0 = time.perf_counter()
    specs = V.training_episodes(args.train, house=SUITES[suites[0]].get("house"),
                                generator=gen)
    data = V.training_physical_data(len(specs), specs=specs)
    k = max(1, 3 * len(data) // 4)
    models = {}
    for history in (False, True):
        m = V.train_physical_model(data[:k], data[k:], history=history)
        models[m.agent_name] = m
        print(f"{m.agent_name}: {len(m.names)} features, {m.params}, threshold "
              f"{m.threshold:.3f}, balanced accuracy on held-out training seeds "
              f"{100 * (m.tune_score or 0):.1f}", flush=True)
    out: dict = {"generator": gen, "train": args.train, "fit": k, "tune": len(data) - k,
                 "train_s": round(time.perf_counter() - t0, 1), "models": {
                     n: {"params": m.params, "threshold": m.threshold, "features": len(m.names),
                         "tune_balanced_accuracy": m.tune_score} for n, m in models.items()},
                 "suites": {}}
    for suite in suites:
        out["suites"][suite] = {}
        for name, m in models.items():
            sc = V.scores(V.play_records(suite, V.PhysicalLearnedAgent(m), name,
                                         limit=args.limit), suite)
            row = {"PHA": sc["PHA"], "PIA": sc["PIA"],
                   "groups": {g: sc["groups"][g]["PHA"] for g in sc["groups"]}}
            out["suites"][suite][name] = row
            groups = " ".join(f"{g} {v:.1f}" for g, v in row["groups"].items())
            print(f"{suite} {name}: PHA {row['PHA']:.1f} PIA {row['PIA']:.1f} | {groups}",
                  flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
