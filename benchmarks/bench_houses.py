"""Speed of the envs in each kind of house: generated, VirtualHome's TestScene1, TDW floorplans.

Run: ``python benchmarks/bench_houses.py [--repeats 5] [--steps 4000]``. Reports medians over
repeats, measured in the same run so the ratios compare like with like on a shared machine.

For each setting: env steps/s *including resets* on sampled episodes from a warm episode pool
(the policy of ``bench_core.py``: silence 80 %, random-but-valid programs 20 %), and resets/s
from that pool. Settings: ``MindHelper-VirtualHome-v3`` (generated houses),
``MindHelper-VirtualHome-v3`` with ``house="virtualhome:scene1"`` (needs ``virtualhome-eval``)
and ``MindHelper-TDW-v3`` (needs the ``tdw`` extra); a setting whose package is missing is
reported as skipped. The ratio column is against the generated-house env.
"""

from __future__ import annotations

import argparse
import statistics

import gymnasium as gym
from bench_core import bench_pool_resets, bench_pool_steps  # the same loops as bench_core

import mindhelper_env  # noqa: F401  (registers the envs)

SETTINGS = {
    "VirtualHome-v3 (generated houses)": ("MindHelper-VirtualHome-v3", {}),
    "VirtualHome-v3 (TestScene1 apartment)": ("MindHelper-VirtualHome-v3",
                                              {"house": "virtualhome:scene1"}),
    "TDW-v3 (TDW floorplans)": ("MindHelper-TDW-v3", {}),
}


def make(env_id: str, kwargs: dict, pool_size: int) -> gym.Env | None:
    try:
        env = gym.make(env_id, pool_size=pool_size, **kwargs)
    except ImportError as err:
        print(f"  skipped: {err}")
        return None
    env.unwrapped.episode_pool.fill()
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--pool-size", type=int, default=1024)
    args = ap.parse_args()
    envs = {}
    for name, (env_id, kwargs) in SETTINGS.items():
        print(f"warming the episode pool of {name} ...")
        envs[name] = make(env_id, kwargs, args.pool_size)
    steps: dict[str, list[float]] = {n: [] for n, e in envs.items() if e is not None}
    resets: dict[str, list[float]] = {n: [] for n in steps}
    for _ in range(args.repeats):  # interleaved, so load on the machine hits every setting
        for name in steps:
            steps[name].append(bench_pool_steps(envs[name], args.steps))
            resets[name].append(bench_pool_resets(envs[name], 1000))
    base = statistics.median(steps[next(iter(steps))])
    print(f"\n{'setting':40s} {'steps/s incl. resets':>21s} {'ratio':>7s} {'resets/s':>10s}")
    for name in steps:
        s = statistics.median(steps[name])
        print(f"{name:40s} {s:21,.0f} {s / base:7.2f} {statistics.median(resets[name]):10,.0f}")
    print(f"(medians of {args.repeats} runs of {args.steps} steps; ratio against the first row)")


if __name__ == "__main__":
    main()
