"""Train MaskablePPO on MindHelper-VirtualHome-v3 with the RL wrappers, then score it.

    pip install torch==2.13.0 && pip install -e ".[rl]"
    python examples/train_ppo.py --timesteps 20000

The policy sees :class:`~mindhelper_env.wrappers.BagOfWordsObs` features and picks one of
the :class:`~mindhelper_env.wrappers.CandidateActions` (``none`` or a program built from the
visible candidates), masked to the programs that exist. Training episodes come from the
env's episode pool (the first resets generate and cache them; later runs start warm).
The score at the end (PHA, PHR, PSR, PIR, PIA and TA in percent on the suite's first
episodes) is computed by :func:`mindhelper_env.metrics.compute_metrics` from the episodes'
final records.
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.wrappers import BagOfWordsObs, CandidateActions, PrecisionInterventionMetrics


def make_env(metrics: bool = False) -> gym.Env:
    env = gym.make("MindHelper-VirtualHome-v3")
    if metrics:
        env = PrecisionInterventionMetrics(env)
    return BagOfWordsObs(CandidateActions(env))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timesteps", type=int, default=4096)
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--eval-episodes", type=int, default=20)
    ap.add_argument("--suite", default="vh-dev-v5")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(make_env, n_envs=args.envs, seed=args.seed)
    model = MaskablePPO("MlpPolicy", vec, n_steps=256, batch_size=256, seed=args.seed,
                        device="cpu", verbose=1)
    model.learn(total_timesteps=args.timesteps)
    vec.close()

    from mindhelper_env.metrics import as_percentages, compute_metrics

    env = make_env(metrics=True)
    masks = env.get_wrapper_attr("action_masks")
    records, references = [], {}
    for index in range(args.eval_episodes):
        obs, _ = env.reset(seed=index, options={"suite": args.suite, "index": index})
        done = False
        while not done:
            action, _ = model.predict(obs, action_masks=masks(), deterministic=True)
            obs, _, terminated, truncated, info = env.step(int(action))
            done = terminated or truncated
        record = info["episode_record"]
        records.append(record)
        references[record["episode_id"]] = {**record["reference"],
                                            "episode_id": record["episode_id"]}
    env.close()
    # the benchmark's metrics, in percent: PHA = (PHR + PSR) / 2 is the headline
    scores = as_percentages(compute_metrics(records, references))
    print(", ".join(f"{k} {scores[k]:.1f}" if scores.get(k) is not None else f"{k} n/a"
                    for k in ("PHA", "PHR", "PSR", "PIR", "PIA", "TA"))
          + f"  (percent, {len(records)} episodes of {args.suite})")


if __name__ == "__main__":
    from _example import run

    run(main, __file__, extra="rl")
