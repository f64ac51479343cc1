"""Train MaskablePPO on MindHelper-VirtualHome-v0 with the RL wrappers, then score it.

    pip install torch==2.13.0 && pip install -e ".[rl]"
    python examples/train_ppo.py --timesteps 20000

The policy sees :class:`~mindhelper_env.wrappers.BagOfWordsObs` features and picks one of
the :class:`~mindhelper_env.wrappers.CandidateActions` (``none`` or a program built from the
visible candidates), masked to the programs that exist. Training episodes come from the
env's episode pool (the first resets generate and cache them; later runs start warm).
The score at the end (PIR/PSR/PIA/TA on the suite's first episodes) comes from
:class:`~mindhelper_env.wrappers.PrecisionInterventionMetrics`, which sits under the action
wrapper and so sees the programs sent.
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.wrappers import BagOfWordsObs, CandidateActions, PrecisionInterventionMetrics


def make_env(metrics: bool = False) -> gym.Env:
    env = gym.make("MindHelper-VirtualHome-v0")
    if metrics:
        env = PrecisionInterventionMetrics(env)
    return BagOfWordsObs(CandidateActions(env))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timesteps", type=int, default=4096)
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--eval-episodes", type=int, default=20)
    ap.add_argument("--suite", default="vh-dev-v2")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(make_env, n_envs=args.envs, seed=args.seed)
    model = MaskablePPO("MlpPolicy", vec, n_steps=256, batch_size=256, seed=args.seed,
                        device="cpu", verbose=1)
    model.learn(total_timesteps=args.timesteps)
    vec.close()

    env = make_env(metrics=True)
    masks = env.get_wrapper_attr("action_masks")
    for index in range(args.eval_episodes):
        obs, _ = env.reset(seed=index, options={"suite": args.suite, "index": index})
        done = False
        while not done:
            action, _ = model.predict(obs, action_masks=masks(), deterministic=True)
            obs, _, terminated, truncated, _ = env.step(int(action))
            done = terminated or truncated
    scores = env.get_wrapper_attr("metrics")()
    print({k: scores[k] for k in ("episodes", "PIR", "PSR", "PIA", "TA", "false_alarm_rate")})
    env.close()


if __name__ == "__main__":
    main()
