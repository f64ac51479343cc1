"""Play one episode with the privileged oracle and print what the robot saw in each window.

    python examples/play_oracle.py                       # first vh-dev-v5 episode needing help
    python examples/play_oracle.py --index 3 --window-ticks 2
    python examples/play_oracle.py --family implicit_goal_reach --seed 7

The oracle reads the ground truth (``env.unwrapped.ground_truth``) and issues the reference
program at the first window that starts at or after the onset tick; it is silent otherwise.
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.agents import make_agent


def main() -> None:
    parser = argparse.ArgumentParser(description="Play one episode with the oracle.")
    parser.add_argument("--suite", default="vh-dev-v5")
    parser.add_argument("--index", type=int, default=None,
                        help="episode index in the suite (default: the first that needs help)")
    parser.add_argument("--family", default=None,
                        help="sample an episode of this family instead of a suite episode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--window-ticks", type=int, default=3)
    args = parser.parse_args()

    env = gym.make("MindHelper-VirtualHome-v3", window_ticks=args.window_ticks)
    if args.family:
        obs, info = env.reset(seed=args.seed, options={"family": args.family})
    else:
        index = 0 if args.index is None else args.index
        while True:
            obs, info = env.reset(seed=args.seed, options={"suite": args.suite, "index": index})
            if args.index is not None or env.unwrapped.ground_truth.needs_intervention:
                break
            index += 1
    agent = make_agent("oracle", env=env)
    agent.reset(seed=args.seed)

    truth = env.unwrapped.ground_truth
    print(f"episode {truth.episode_id}  family {truth.family}  "
          f"needs help: {truth.needs_intervention}  window: {truth.window}")
    print(f"--- tick {info['tick']}: the scene\n{obs['narration']}\n")
    while True:
        action = agent.act(obs, info)
        if action != "none":
            print(">>> robot program issued at tick", info["tick"])
            for line in action.splitlines():
                print("    " + line)
        obs, reward, terminated, truncated, info = env.step(action)
        print(f"--- window {info['window']} (up to tick {info['tick']}), reward {reward:+.2f}")
        print(obs["narration"])
        if info["action_error"]:
            print("action error:", info["action_error"])
        print()
        if terminated or truncated:
            break
    record = info["episode_record"]
    print(f"focus person succeeded: {record['focus_success']}; harm: {record['harm']}; "
          f"{record['ticks']} ticks in {record['steps']} windows")
    env.close()


if __name__ == "__main__":
    from _example import run

    run(main, __file__)
