"""Quick start: one episode of MindHelper-VirtualHome-v3 with the random helper agent.

    python examples/quick_start.py
"""

import gymnasium as gym

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.agents import make_agent


def main() -> None:
    env = gym.make("MindHelper-VirtualHome-v3")
    agent = make_agent("random", p=0.2, seed=0)
    obs, info = env.reset(seed=0)
    agent.reset(seed=0)
    episode_return, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        action = agent.act(obs, info)  # "none" or a program such as "[walk] <fridge> (12)"
        obs, reward, terminated, truncated, info = env.step(action)
        episode_return += reward
    record = info["episode_record"]  # what scoring uses (see mindhelper_env.metrics)
    acts = len(record["actions"])
    print(f"{record['family']}: robot acted {acts} time{'' if acts == 1 else 's'}, "
          f"focus person succeeded: {record['focus_success']}, return {episode_return:+.2f}")
    env.close()


if __name__ == "__main__":
    from _example import run

    run(main, __file__)
