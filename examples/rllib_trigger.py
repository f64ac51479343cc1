"""Train the MindClaw Trigger on MindHelper-Trigger-v3 with RLlib's PPO (action masking).

    pip install torch==2.13.0 && pip install -e ".[rllib]"
    python examples/rllib_trigger.py --iterations 20

RLlib's masking module (``ActionMaskingTorchRLModule``, shipped with RLlib) wants a ``Dict``
observation ``{"action_mask", "observations"}``; :class:`MaskedObservation` builds it from
the env's ``action_masks()``. The run uses a local Ray (``--num-cpus``, default 1) and no
remote env runners, so it fits a laptop; after training, the policy's greedy choice is
scored on held-out training episodes against the rule Trigger (PHA and ``reasoning_run``
calls per episode). ``main([...])`` returns the training results and the scores.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

import mindhelper_env  # noqa: F401  (registers the envs)

ENV_NAME = "mindhelper-trigger-masked"


class MaskedObservation(gym.ObservationWrapper):
    """``{"action_mask": float mask, "observations": features}`` for RLlib's masking module."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        n = env.action_space.n
        self.observation_space = gym.spaces.Dict({
            "action_mask": gym.spaces.Box(0.0, 1.0, (n,), np.float32),
            "observations": env.observation_space,
        })

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        mask = self.env.unwrapped.action_masks().astype(np.float32)
        return {"action_mask": mask, "observations": observation}


def make_env(config: dict[str, Any] | None = None) -> gym.Env:
    """The masked Trigger env; ``config`` is passed to ``gym.make`` (e.g. ``pool_size``)."""
    return MaskedObservation(gym.make("MindHelper-Trigger-v3", **dict(config or {})))


def build_config(batch: int = 512, minibatch: int = 128, epochs: int = 2,
                 env_config: dict[str, Any] | None = None, seed: int = 0) -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )
    from ray.tune.registry import register_env

    register_env(ENV_NAME, make_env)
    return (
        PPOConfig()
        .environment(ENV_NAME, env_config=dict(env_config or {}))
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1,
                     rollout_fragment_length=batch)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=batch, minibatch_size=minibatch,
                  num_epochs=epochs, lr=5e-4, gamma=0.995)
        .rl_module(rl_module_spec=RLModuleSpec(
            module_class=ActionMaskingTorchRLModule,
            model_config={"fcnet_hiddens": [32, 32], "head_fcnet_hiddens": []}))
        .debugging(seed=seed)
    )


def greedy_policy(algo: Any) -> Any:
    """``policy(features, mask) -> op`` from the trained module's greedy action."""
    import torch

    module = algo.get_module()

    def policy(features: np.ndarray, mask: np.ndarray) -> int:
        batch = {"obs": {"action_mask": torch.as_tensor(mask[None].astype(np.float32)),
                         "observations": torch.as_tensor(features[None])}}
        with torch.no_grad():
            out = module.forward_inference(batch)
        logits = out["action_dist_inputs"][0].numpy()
        return int(np.argmax(np.where(mask, logits, -np.inf)))

    return policy


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--minibatch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--eval-episodes", type=int, default=100)
    ap.add_argument("--num-cpus", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import ray

    from mindhelper_env.agents.mindclaw.training import (
        heldout_episodes,
        play_trigger,
        score_outcomes,
    )

    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        algo = build_config(args.batch, args.minibatch, args.epochs,
                            env_config={"pool_size": 1024}, seed=args.seed).build_algo()
        results = []
        for i in range(args.iterations):
            res = algo.train()
            ret = res.get("env_runners", {}).get("episode_return_mean")
            results.append({"iteration": i + 1, "episode_return_mean": ret})
            print(f"iteration {i + 1}: mean episode return {ret}")
        specs = heldout_episodes(args.eval_episodes)
        scores = {"rule": score_outcomes(play_trigger(specs, None)),
                  "rllib": score_outcomes(play_trigger(specs, greedy_policy(algo)))}
        for name, s in scores.items():
            print(f"{name}: PHA {s['PHA']:.1f}, reasoning_run/episode "
                  f"{s['reasoning_calls']:.3f}")
        algo.stop()
    finally:
        if started:
            ray.shutdown()
    return {"results": results, "scores": scores}


if __name__ == "__main__":
    from _example import run

    run(main, __file__, extra="rllib")
