"""Training a Trigger policy on ``MindHelper-Trigger-v3`` (``mindhelper train-trigger``).

Needs the ``rl`` extra (torch, Stable-Baselines3, sb3-contrib); importing this module
imports none of them — :func:`train` does.

* :func:`heldout_episodes` — evaluation episodes from **training** seeds that the training
  envs' episode pool never plays (suites are never used for training or model selection);
* :func:`play_trigger` / :func:`score_outcomes` — play a policy (or the rule Trigger) on
  episode specs and compute PHA, PHR, PSR and calls per episode;
* :func:`bc_dataset` — behaviour-cloning data from the ground-truth window labels
  (:mod:`mindhelper_env.scenarios.trigger_labels`): at each question the expert commits
  pending belief changes (in table order), and then does what the window's label says —
  ``action_run`` (reason until a need is found, then act) inside the precise window, and
  nothing otherwise: a cue outside the window cannot lead to precise help, so the expert
  does not reason about it;
* :func:`export_policy` — the trained MLP's weights to an ``.npz`` that
  :class:`~mindhelper_env.agents.mindclaw.learned.NumpyTriggerPolicy` runs with numpy;
* :func:`train` — the whole run: vector envs, optional BC warm start, learning with a
  progress bar, TensorBoard logs (when ``tensorboard`` is installed), checkpoints, the
  held-out evaluation callback, ``policy.npz`` (the best evaluated policy), ``history.json``
  and ``learning_curve.png``.

The **target** of a run: PHA on the held-out episodes at most ``target_gap`` points below the
rule Trigger's on the same episodes, with fewer ``reasoning_run`` calls per episode.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ALGOS", "heldout_episodes", "play_trigger", "score_outcomes", "bc_dataset",
           "export_policy", "train", "HELDOUT_STREAM"]

logger = logging.getLogger(__name__)

ALGOS = ("maskable-ppo", "ppo", "dqn")
#: Seed of the random stream that draws held-out training episodes.
HELDOUT_STREAM = 9_100_001
ENV_ID = "MindHelper-Trigger-v3"


# --------------------------------------------------------------------------------------
# Episodes and scoring
# --------------------------------------------------------------------------------------


def heldout_episodes(n: int, *, pool_size: int = 4096, stream: int = HELDOUT_STREAM,
                     families: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """``n`` episode specs from training seeds (half need help) that are not entries of the
    training envs' episode pool (``pool_size`` entries for ``families``)."""
    from mindhelper_env.scenarios.pool import EpisodePool
    from mindhelper_env.scenarios.spec import family_weights
    from mindhelper_env.validity import training_episodes

    pool = EpisodePool(dict(families or family_weights()), max(int(pool_size), 1),
                       persist=False)
    taken = {pool.source(k) for k in range(pool_size)} if pool_size else set()
    out: list[dict[str, Any]] = []
    extra = 0
    while len(out) < n:
        batch = training_episodes(n - len(out) + extra, seed=stream + extra)
        out += [s for s in batch if (s["family"], s["seed"]) not in taken
                and all(s["episode_id"] != o["episode_id"] for o in out)]
        extra += 1
    return out[:n]


PolicyFn = Callable[[np.ndarray, np.ndarray], int]


def play_trigger(specs: Sequence[Mapping[str, Any]] | None, policy: PolicyFn | None, *,
                 env: Any = None, options: Sequence[Mapping[str, Any]] | None = None,
                 ) -> list[dict[str, Any]]:
    """Play each episode on ``MindHelper-Trigger-v3`` choosing ``policy(obs, mask)`` (None:
    the rule Trigger). Episodes are given as ``specs`` or as reset ``options``. Returns one
    ``{"needs_help", "outcome", "reasoning_calls", "action_calls", "return"}`` per episode."""
    import gymnasium as gym

    from mindhelper_env.agents.mindclaw.trigger import TRIGGER_OPS, rule_policy

    own = env is None
    if own:
        env = gym.make(ENV_ID, pool_size=0)
    u = env.unwrapped
    if options is None:
        options = [{"episode": s} for s in (specs or [])]
    results = []
    try:
        for i, opt in enumerate(options):
            obs, info = env.reset(seed=i, options=dict(opt))
            total = 0.0
            while True:
                if policy is None:
                    action = TRIGGER_OPS.index(rule_policy(u.engine.memory, u.engine.state))
                else:
                    action = int(policy(obs, u.action_masks()))
                obs, r, term, trunc, info = env.step(action)
                total += float(r)
                if term or trunc:
                    break
            ref = info["episode_record"]["reference"]
            results.append({"needs_help": bool(ref["needs_intervention"]),
                            "outcome": dict(info["outcome"]),
                            "reasoning_calls": int(info["reasoning_calls"]),
                            "action_calls": int(info["action_calls"]), "return": total})
    finally:
        if own:
            env.close()
    return results


def score_outcomes(results: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """PHA, PHR, PSR (percent), reasoning and action calls per episode (mean), mean return."""
    helps = [r for r in results if r["needs_help"]]
    silents = [r for r in results if not r["needs_help"]]
    phr = 100.0 * np.mean([r["outcome"]["precise_help"] for r in helps]) if helps else 0.0
    psr = 100.0 * np.mean([not r["outcome"]["false_alarm"] for r in silents]) \
        if silents else 0.0
    return {
        "episodes": float(len(results)),
        "PHA": round(float((phr + psr) / 2), 2), "PHR": round(float(phr), 2),
        "PSR": round(float(psr), 2),
        "reasoning_calls": round(float(np.mean([r["reasoning_calls"] for r in results])), 4),
        "action_calls": round(float(np.mean([r["action_calls"] for r in results])), 4),
        "return": round(float(np.mean([r["return"] for r in results])), 4),
    }


# --------------------------------------------------------------------------------------
# Behaviour cloning from the ground-truth labels
# --------------------------------------------------------------------------------------


def _expert(mask: np.ndarray, label: str) -> int:
    for i in range(4):
        if mask[i]:
            return i
    if label == "action_run":
        if mask[5]:
            return 5
        if mask[4]:
            return 4
    return 6


def bc_dataset(specs: Sequence[Mapping[str, Any]], window_ticks: int = 3,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(observations, masks, expert actions)`` at every question of ``specs`` played by
    the label expert (see the module docstring)."""
    import gymnasium as gym

    from mindhelper_env.scenarios.trigger_labels import trigger_labels

    env = gym.make(ENV_ID, pool_size=0, window_ticks=window_ticks)
    u = env.unwrapped
    xs, ms, ys = [], [], []
    try:
        for i, spec in enumerate(specs):
            labels = {lab["tick"]: lab["label"] for lab in trigger_labels(spec, window_ticks)}
            obs, _ = env.reset(seed=i, options={"episode": spec})
            while True:
                mask = u.action_masks()
                action = _expert(mask, labels.get(u.engine.state.tick, "noop"))
                xs.append(obs)
                ms.append(mask)
                ys.append(action)
                obs, _r, term, trunc, _ = env.step(action)
                if term or trunc:
                    break
    finally:
        env.close()
    return (np.asarray(xs, np.float32), np.asarray(ms, bool), np.asarray(ys, np.int64))


def _bc_warm_start(model: Any, algo: str, data: tuple[np.ndarray, np.ndarray, np.ndarray],
                   epochs: int = 30, batch: int = 256, seed: int = 0) -> float:
    """Fit the policy (PPO: action logits; DQN: Q-values as logits) to the expert's
    actions by masked cross-entropy; returns the final training accuracy."""
    import torch as th

    x, m, y = (th.as_tensor(a) for a in data)
    policy = model.policy
    params = list(model.q_net.parameters()) if algo == "dqn" else list(policy.parameters())
    opt = th.optim.Adam(params, lr=1e-3)
    gen = th.Generator().manual_seed(seed)
    n = len(y)

    def logits(xb: Any) -> Any:
        if algo == "dqn":
            return model.q_net(xb)
        feats = policy.extract_features(xb, policy.pi_features_extractor) \
            if hasattr(policy, "pi_features_extractor") else policy.extract_features(xb)
        latent_pi, _ = policy.mlp_extractor(feats)
        return policy.action_net(latent_pi)

    for _ in range(epochs):
        perm = th.randperm(n, generator=gen)
        for k in range(0, n, batch):
            idx = perm[k:k + batch]
            z = logits(x[idx]).masked_fill(~m[idx], -1e8)
            loss = th.nn.functional.cross_entropy(z, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    if algo == "dqn":
        model.q_net_target.load_state_dict(model.q_net.state_dict())
    with th.no_grad():
        pred = logits(x).masked_fill(~m, -1e8).argmax(1)
    return float((pred == y).float().mean())


# --------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------


def _linear_layers(module: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    import torch as th

    return [(m.weight.detach().cpu().numpy(), m.bias.detach().cpu().numpy())
            for m in module.modules() if isinstance(m, th.nn.Linear)]


def export_policy(model: Any, algo: str, path: str | os.PathLike[str],
                  meta: Mapping[str, Any] | None = None) -> None:
    """Write the model's acting MLP to ``path`` (see :mod:`~mindhelper_env.agents.mindclaw.
    learned`)."""
    import torch as th

    from mindhelper_env.agents.mindclaw.learned import save_policy

    if algo == "dqn":
        layers = _linear_layers(model.q_net.q_net)
        act_fn = model.q_net.activation_fn
    else:
        policy = model.policy
        layers = _linear_layers(policy.mlp_extractor.policy_net) + _linear_layers(
            policy.action_net)
        act_fn = policy.activation_fn
    activation = "tanh" if act_fn is th.nn.Tanh else "relu" if act_fn is th.nn.ReLU else None
    if activation is None:
        raise ValueError(f"cannot export activation {act_fn!r} (use Tanh or ReLU)")
    save_policy(path, layers, activation, {"algo": algo, **dict(meta or {})})


def _current_policy(model: Any, algo: str, tmp: Path) -> PolicyFn:
    from mindhelper_env.agents.mindclaw.learned import NumpyTriggerPolicy

    export_policy(model, algo, tmp)
    return NumpyTriggerPolicy(tmp)


# --------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------


def _make_model(algo: str, vec: Any, seed: int, tb: str | None) -> Any:
    common = {"seed": seed, "device": "cpu", "verbose": 0, "tensorboard_log": tb}
    if algo == "maskable-ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO("MlpPolicy", vec, n_steps=1024, batch_size=512, n_epochs=4,
                           learning_rate=5e-4, gamma=1.0, ent_coef=0.005,
                           policy_kwargs={"net_arch": [32, 32]}, **common)
    if algo == "ppo":
        from stable_baselines3 import PPO

        return PPO("MlpPolicy", vec, n_steps=1024, batch_size=512, n_epochs=4,
                   learning_rate=5e-4, gamma=1.0, ent_coef=0.005,
                   policy_kwargs={"net_arch": [32, 32]}, **common)
    from stable_baselines3 import DQN

    return DQN("MlpPolicy", vec, buffer_size=50_000, learning_starts=1000, batch_size=128,
               train_freq=4, target_update_interval=1000, exploration_fraction=0.2,
               exploration_final_eps=0.02, gamma=1.0, learning_rate=5e-4,
               policy_kwargs={"net_arch": [32, 32]}, **common)


def _better(a: Mapping[str, float], b: Mapping[str, float] | None,
            rule: Mapping[str, float], gap: float) -> bool:
    """Is evaluation ``a`` better than ``b``? Meeting the PHA bound first, then fewer
    reasoning calls; otherwise higher PHA."""
    if b is None:
        return True

    def key(s: Mapping[str, float]) -> tuple[float, ...]:
        ok = s["PHA"] >= rule["PHA"] - gap
        return (1.0, -s["reasoning_calls"], s["PHA"]) if ok else (0.0, s["PHA"],
                                                                  -s["reasoning_calls"])
    return key(a) > key(b)


def train(algo: str, timesteps: int, envs: int, out: str | os.PathLike[str], *,
          seed: int = 0, bc_episodes: int = 0, eval_episodes: int = 200,
          eval_freq: int = 10_000, checkpoint_freq: int = 50_000, target_gap: float = 1.0,
          progress: bool = True, subproc: bool = False, pool_size: int = 4096,
          stop_at_target: bool = False, reward: Mapping[str, float] | None = None,
          bc_epochs: int = 100) -> dict[str, Any]:
    """Train a Trigger policy; write the run to ``out`` (see the module docstring).

    Returns the summary (also ``out/summary.json``): the rule Trigger's and the best
    policy's held-out scores, ``target_seconds`` / ``target_timesteps`` (None if the target
    was not reached), env steps per second of the learning loop, and the files written.
    ``reward`` overrides the training envs' reward terms
    (:data:`~mindhelper_env.envs.trigger.TRIGGER_REWARD`), e.g. a higher
    ``reasoning_cost``; evaluation scores PHA and calls, not reward.
    """
    import importlib.util

    import torch as th
    from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    import mindhelper_env  # noqa: F401  (registers the envs)

    if algo not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
    t_start = time.perf_counter()  # time to target counts everything: data, BC, learning
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    th.set_num_threads(1)
    tb = None
    if importlib.util.find_spec("tensorboard") is not None:
        tb = str(out / "tb")
    else:
        logger.warning("tensorboard is not installed: no TensorBoard logs "
                       "(pip install tensorboard)")

    eval_specs = heldout_episodes(eval_episodes, pool_size=pool_size)
    rule = score_outcomes(play_trigger(eval_specs, None))
    logger.info("rule Trigger on %d held-out training episodes: %s", eval_episodes, rule)

    vec = make_vec_env(ENV_ID, n_envs=envs, seed=seed,
                       env_kwargs={"pool_size": pool_size, "reward": dict(reward or {})},
                       vec_env_cls=SubprocVecEnv if subproc and envs > 1 else DummyVecEnv)
    model = _make_model(algo, vec, seed, tb)
    bc_acc = None
    if bc_episodes:
        from mindhelper_env.validity import training_episodes

        held = {s["episode_id"] for s in eval_specs}
        bc_specs = [s for s in training_episodes(bc_episodes, seed=seed + 1)
                    if s["episode_id"] not in held]  # never clone on evaluation episodes
        data = bc_dataset(bc_specs)
        bc_acc = _bc_warm_start(model, algo, data, epochs=bc_epochs, seed=seed)
        logger.info("behaviour cloning on %d questions: accuracy %.3f", len(data[2]), bc_acc)

    history: list[dict[str, Any]] = []
    state: dict[str, Any] = {"best": None, "target": None, "t0": t_start,
                             "eval_seconds": 0.0}
    tmp = out / ".eval_policy.npz"

    def evaluate_now(timesteps_done: int) -> dict[str, float]:
        t = time.perf_counter()
        scores = score_outcomes(play_trigger(eval_specs, _current_policy(model, algo, tmp)))
        state["eval_seconds"] += time.perf_counter() - t
        elapsed = time.perf_counter() - state["t0"]
        row = {"timesteps": int(timesteps_done), "seconds": round(elapsed, 2), **scores}
        history.append(row)
        reached = scores["PHA"] >= rule["PHA"] - target_gap \
            and scores["reasoning_calls"] < rule["reasoning_calls"]
        if reached and state["target"] is None:
            state["target"] = row
            logger.info("target reached at %d steps (%.0f s)", timesteps_done, elapsed)
        if _better(scores, state["best"], rule, target_gap):
            state["best"] = row
            export_policy(model, algo, out / "policy.npz",
                          {"timesteps": int(timesteps_done), "PHA": scores["PHA"],
                           "reasoning_calls": scores["reasoning_calls"]})
            model.save(out / "best_model.zip")
        logger.info("eval at %d steps: %s", timesteps_done, scores)
        return scores

    class HeldOutEval(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next_at = eval_freq

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next_at:
                self.next_at += eval_freq
                scores = evaluate_now(self.num_timesteps)
                for k, v in scores.items():
                    self.logger.record(f"heldout/{k}", v)
                if stop_at_target and state["target"] is not None:
                    return False
            return True

    if progress and importlib.util.find_spec("tqdm") is None:
        logger.warning("tqdm is not installed: no progress bar (pip install tqdm)")
        progress = False
    evaluate_now(0)
    callbacks = [HeldOutEval()]
    if checkpoint_freq:
        callbacks.append(CheckpointCallback(max(checkpoint_freq // envs, 1),
                                            str(out / "checkpoints"), name_prefix=algo))
    t_learn = time.perf_counter()
    model.learn(total_timesteps=timesteps, callback=callbacks, progress_bar=progress,
                tb_log_name=algo)
    learn_seconds = time.perf_counter() - t_learn
    steps_done = int(model.num_timesteps)
    if not history or history[-1]["timesteps"] != steps_done:
        evaluate_now(steps_done)
    vec.close()
    model.save(out / "final_model.zip")
    tmp.unlink(missing_ok=True)
    loop_seconds = max(learn_seconds - state["eval_seconds"], 1e-9)
    summary = {
        "algo": algo, "timesteps": steps_done, "envs": envs, "seed": seed,
        "bc_episodes": bc_episodes, "bc_accuracy": bc_acc, "reward": dict(reward or {}),
        "eval_episodes": eval_episodes, "target_gap": target_gap,
        "rule": rule, "best": state["best"], "target": state["target"],
        "target_seconds": None if state["target"] is None else state["target"]["seconds"],
        "target_timesteps": None if state["target"] is None
        else state["target"]["timesteps"],
        "learn_seconds": round(learn_seconds, 2),
        "env_steps_per_second": round(steps_done / loop_seconds, 1),
        "tensorboard": tb,
        "files": {"policy": "policy.npz", "best_model": "best_model.zip",
                  "final_model": "final_model.zip", "history": "history.json",
                  "curve": "learning_curve.png", "checkpoints": "checkpoints/"},
    }
    _write_json(out / "history.json", history)
    if not _plot_curve(history, rule, out / "learning_curve.png", algo):
        summary["files"]["curve"] = None
    _write_json(out / "summary.json", summary)
    return summary


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _plot_curve(history: Sequence[Mapping[str, Any]], rule: Mapping[str, float], path: Path,
                title: str) -> bool:
    """Held-out PHA and reasoning calls per episode against timesteps; False without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.warning("matplotlib is not installed: no learning curve "
                       "(pip install 'mindhelper-env[video]')")
        return False
    steps = [h["timesteps"] for h in history]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    a.plot(steps, [h["PHA"] for h in history], marker="o", label="learned")
    a.axhline(rule["PHA"], color="gray", ls="--", label="rule Trigger")
    a.set_xlabel("env steps")
    a.set_ylabel("PHA (held-out training seeds)")
    a.legend()
    b.plot(steps, [h["reasoning_calls"] for h in history], marker="o", label="learned")
    b.axhline(rule["reasoning_calls"], color="gray", ls="--", label="rule Trigger")
    b.set_xlabel("env steps")
    b.set_ylabel("reasoning_run per episode")
    b.legend()
    fig.suptitle(f"MindHelper-Trigger-v3, {title}")
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)
    return True
