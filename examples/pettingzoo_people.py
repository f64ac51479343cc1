"""The household as a PettingZoo ParallelEnv, with one person swapped for a random policy.

    pip install -e ".[pettingzoo]"
    python examples/pettingzoo_people.py                   # 20 vh-dev-v5 episodes
    python examples/pettingzoo_people.py --episodes 5 --person person_1

The robot is the ``belief-tracker`` agent in both runs. In the first every person follows
their script; in the second ``--person`` is driven by ``RandomPerson`` (walks to a random
room or place, grabs something it sees, or idles), the others keep their scripts. The
robot's episode records are scored by :func:`mindhelper_env.metrics.compute_metrics` either
way; the random person's skipped lines are counted in its ``infos`` (``invalid_actions``).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from mindhelper_env.agents import make_agent
from mindhelper_env.envs import parallel_env
from mindhelper_env.metrics import compute_metrics


class RandomPerson:
    """A person policy: ``policy(observation, info) -> program`` picking at random among
    what its ``info`` lists (its room's objects and places, the rooms)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, observation: dict, info: dict) -> str:
        cands = info["candidates"]
        choice = int(self.rng.integers(4))
        if choice == 0 and cands["rooms"]:
            r = cands["rooms"][int(self.rng.integers(len(cands["rooms"])))]
            return f"[walk] <{r['class']}> ({r['id']})"
        if choice == 1 and cands["locations"]:
            p = cands["locations"][int(self.rng.integers(len(cands["locations"])))]
            return f"[walk] <{p['class']}> ({p['id']})"
        if choice == 2 and cands["objects"]:
            o = cands["objects"][int(self.rng.integers(len(cands["objects"])))]
            # walks up to it, then tries to take it (the grab may fail: out of reach, ...)
            return f"[walk] <{o['class']}> ({o['id']}); [grab] <{o['class']}> ({o['id']})"
        return "none"


def play(episodes: int, suite: str, people: dict | None) -> tuple[dict, dict]:
    env = parallel_env(people)
    robot = make_agent("belief-tracker")
    records, references = [], []
    invalid: dict[str, int] = {}
    for index in range(episodes):
        obs, infos = env.reset(options={"suite": suite, "index": index})
        robot.reset()
        while env.agents:
            actions = {"robot": robot.act(obs["robot"], infos["robot"])}
            obs, _rewards, _terms, _truncs, infos = env.step(actions)
        record = dict(infos["robot"]["episode_record"], agent="belief-tracker")
        records.append(record)
        references.append(json.loads(infos["robot"]["episode_record_json"])["reference"])
        for name, info in infos.items():
            if name != "robot":
                invalid[name] = invalid.get(name, 0) + info["invalid_actions"]
    env.close()
    return compute_metrics(records, references, by_family=False), invalid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--suite", default="vh-dev-v5")
    ap.add_argument("--person", default="person_0")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for label, people in (("scripted people", None),
                          (f"{args.person} random", {args.person: RandomPerson(args.seed)})):
        m, invalid = play(args.episodes, args.suite, people)
        print(json.dumps({"run": label, "episodes": m["episodes"], "PHA": m["PHA"],
                          "PHR": m["PHR"], "PSR": m["PSR"], "PIA": m["PIA"],
                          "invalid_actions": invalid}))


if __name__ == "__main__":
    from _example import run

    run(main, __file__, extra="pettingzoo")
