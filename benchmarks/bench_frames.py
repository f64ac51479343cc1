"""Do the vision track's frames show every event? And the suites' lossless frame sizes.

Run: ``python benchmarks/bench_frames.py [--suite vh-test-v5] [--episodes 8]
[--sizes default 128] [--picture 6]``.

*Events.* The first ``--episodes`` episodes of the suite are played in ``obs_mode="rgb"``
with the oracle's actions (recorded in text mode); at every tick, for every event the robot
sees, the frame is drawn twice from the same world, with and without that event: the event is
in the pixels when the two frames differ. Counted per verb, at each frame size (``default``:
the suite's lossless size, what ``evaluate --obs rgb`` plays at). Frames sampled down (128
px) lose pose and action marks; at the lossless default every event shows.

*Sizes* (``--suite-sizes``): every released suite's largest canvas, episode by episode,
against :data:`mindhelper_env.evaluation.frame_sizes.SUITE_FRAME_SIZES` (minutes per 1,000
episodes).
"""

from __future__ import annotations

import argparse
import copy
import time
import warnings
from collections import Counter

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.envs.frame_size import LossyFrameWarning
from mindhelper_env.envs.observation import RgbObservation
from mindhelper_env.evaluation.frame_sizes import (
    SUITE_FRAME_SIZES,
    measure_suite_frame_size,
    suite_frame_size,
)


def oracle_actions(suite: str, index: int) -> list[str]:
    from mindhelper_env.agents import make_agent
    from mindhelper_env.evaluation.episode import make_env, suite_env_id

    env = make_env(suite_env_id(suite))
    agent = make_agent("oracle", env=env)
    obs, info = env.reset(options={"suite": suite, "index": index})
    agent.reset()
    out = []
    while True:
        a = agent.act(obs, info)
        out.append(a)
        obs, _, term, trunc, info = env.step(a)
        if term or trunc:
            return out


def events_shown(suite: str, episodes: int, size: int, picture: int
                 ) -> tuple[Counter[str], Counter[str]]:
    """``(seen, shown)`` per verb over the first ``episodes`` episodes at ``size`` px."""
    from mindhelper_env.evaluation.episode import make_env, suite_env_id

    seen: Counter[str] = Counter()
    shown: Counter[str] = Counter()
    real = RgbObservation.tick

    def tick(self, env, sim, events, seen_events):  # type: ignore[no-untyped-def]
        for ev in seen_events:
            r = copy.deepcopy(self.renderer)
            without = r.frame(sim.world, [e for e in events if e is not ev],
                              [e for e in seen_events if e is not ev], None)
            r = copy.deepcopy(self.renderer)
            with_ = r.frame(sim.world, events, seen_events, None)
            seen[ev.verb] += 1
            shown[ev.verb] += int(not (with_ == without).all())
        real(self, env, sim, events, seen_events)

    RgbObservation.tick = tick  # type: ignore[method-assign]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LossyFrameWarning)
            for index in range(episodes):
                env = make_env(suite_env_id(suite), obs_mode="rgb", frame_size=size,
                               picture=picture)
                env.reset(options={"suite": suite, "index": index})
                for a in oracle_actions(suite, index):
                    _, _, term, trunc, _ = env.step(a)
                    if term or trunc:
                        break
                env.close()
    finally:
        RgbObservation.tick = real  # type: ignore[method-assign]
    return seen, shown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="vh-test-v5")
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--sizes", nargs="+", default=["default", "128"])
    ap.add_argument("--picture", type=int, default=6)
    ap.add_argument("--suite-sizes", action="store_true",
                    help="remeasure every pinned suite's lossless size instead")
    args = ap.parse_args()
    if args.suite_sizes:
        for suite, pinned in SUITE_FRAME_SIZES.items():
            t0 = time.perf_counter()
            got = measure_suite_frame_size(suite)
            print(f"{suite:18s} measured {got:4d} px, pinned {pinned:4d} px "
                  f"{'ok' if got == pinned else 'DIFFERS'} ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
        return
    for s in args.sizes:
        size = suite_frame_size(args.suite) if s == "default" else int(s)
        t0 = time.perf_counter()
        seen, shown = events_shown(args.suite, args.episodes, size, args.picture)
        total, ok = sum(seen.values()), sum(shown.values())
        print(f"{args.suite}, first {args.episodes} episodes, {size} px, picture "
              f"{args.picture}: {ok} of {total} seen events change the frame "
              f"({time.perf_counter() - t0:.0f} s)")
        for verb in sorted(seen):
            miss = seen[verb] - shown[verb]
            print(f"  {verb:12s} {shown[verb]:5d} / {seen[verb]:5d}"
                  + (f"   {miss} unseen in the pixels" if miss else ""))


if __name__ == "__main__":
    main()
