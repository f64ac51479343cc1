"""Print a help episode and one of its silent twins side by side (the narration the robot gets).

    python examples/twin_pairs.py false_belief_relocation false_belief_witnessed --seed 11
    python examples/twin_pairs.py false_belief_told_away false_belief_told --seed 3 --generator mh-gen-2.5

Each column is the narration of one episode, played with a silent robot, from the reset
observation to a few windows past the focus person's first struggle. With ``mh-gen-3.2``
(the default here), ``mh-gen-3.1`` or ``mh-gen-3.0`` the two are a true pair: two variants of
one base draft, the same house, people and schedules, the focus person doing the same things
up to the cue; only the mind switch differs (someone else's timing, or an adult on the phone;
docs/scenarios.md). With ``mh-gen-3.2`` the switched event also comes at the same tick on
both sides (its block's place is drawn in the base). With
``mh-gen-2.5`` each family was drafted on its own and the columns only share a family's
kind of set-up.
"""

from __future__ import annotations

import argparse
import textwrap

import gymnasium as gym

import mindhelper_env  # noqa: F401 - registers the envs
from mindhelper_env.scenarios.generator import generate_episode


def narration(family: str, seed: int, windows: int, generator: str) -> list[str]:
    env = gym.make("MindHelper-VirtualHome-v3")
    try:
        spec = generate_episode(family, seed, generator=generator)
        obs, _ = env.reset(options={"episode": spec})
        lines = [f"== {family} (seed {seed}, {generator})"]
        for _ in range(windows):
            obs, _, terminated, truncated, _ = env.step("none")
            lines += [ln for ln in obs["narration"].splitlines()
                      if ln.startswith("[t=")]
            if terminated or truncated:
                break
        return lines
    finally:
        env.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("help_family")
    ap.add_argument("twin_family")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--windows", type=int, default=14, help="windows to show (3 ticks each)")
    ap.add_argument("--width", type=int, default=60, help="column width")
    ap.add_argument("--generator", default="mh-gen-3.2",
                    help="mh-gen-3.2 (default: twins from one base draft, sight perception, "
                         "timings drawn in the base), mh-gen-3.1 (timings per side), "
                         "mh-gen-3.0 (attention perception) or mh-gen-2.5")
    args = ap.parse_args()
    left = narration(args.help_family, args.seed, args.windows, args.generator)
    right = narration(args.twin_family, args.seed, args.windows, args.generator)
    wrap = [[w for ln in col for w in textwrap.wrap(ln, args.width) or [""]]
            for col in (left, right)]
    for i in range(max(map(len, wrap))):
        a = wrap[0][i] if i < len(wrap[0]) else ""
        b = wrap[1][i] if i < len(wrap[1]) else ""
        print(f"{a:<{args.width}} | {b}")


if __name__ == "__main__":
    from _example import run

    run(main, __file__)
