"""A learned Trigger policy run with numpy only (no torch, no Stable-Baselines3).

A policy trained on ``MindHelper-Trigger-v3`` (``mindhelper train-trigger``) is exported to
a small ``.npz`` file: the weights of its MLP (``W0, b0, W1, b1, ...``), the activation
between layers (``tanh`` or ``relu``), the observation names and the operations, so that
:class:`NumpyTriggerPolicy` can check it matches this version of the features.

:class:`NumpyTriggerPolicy` is a ``Trigger`` policy: ``policy(features, mask) -> int`` — the
highest-scoring valid operation (logits for PPO, Q-values for DQN; ties go to the lower
index), deterministic. It expects :func:`~.trigger.policy_observation` features
(``MindClawAgent(policy=p, features=policy_observation)``; ``make_agent("learned-trigger")``
does that with the shipped ``learned_trigger.npz``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from mindhelper_env.agents.mindclaw.trigger import OBSERVATION_NAMES, TRIGGER_OPS

__all__ = ["NumpyTriggerPolicy", "DEFAULT_POLICY_PATH", "save_policy"]

#: The shipped policy (trained by ``python benchmarks/bench_trigger.py``).
DEFAULT_POLICY_PATH = Path(__file__).with_name("learned_trigger.npz")

_ACTIVATIONS = ("tanh", "relu")
FORMAT = "mindclaw-trigger-mlp-1"


def save_policy(path: str | os.PathLike[str], weights: list[tuple[np.ndarray, np.ndarray]],
                activation: str, meta: dict[str, Any] | None = None) -> None:
    """Write ``weights`` (``[(W, b), ...]``, ``W`` of shape ``(out, in)``) to ``path``."""
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {_ACTIVATIONS}, got {activation!r}")
    arrays: dict[str, Any] = {
        "format": np.array(FORMAT), "activation": np.array(activation),
        "observation_names": np.array(OBSERVATION_NAMES), "ops": np.array(TRIGGER_OPS),
        "n_layers": np.array(len(weights)),
    }
    for i, (w, b) in enumerate(weights):
        arrays[f"W{i}"] = np.asarray(w, dtype=np.float32)
        arrays[f"b{i}"] = np.asarray(b, dtype=np.float32)
    for key, value in (meta or {}).items():
        arrays[f"meta_{key}"] = np.array(value)
    tmp = Path(f"{os.fspath(path)}.tmp.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)


class NumpyTriggerPolicy:
    """A Trigger policy from an exported ``.npz`` (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else DEFAULT_POLICY_PATH
        try:
            data = np.load(self.path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as err:
            raise ValueError(f"cannot read a Trigger policy from {self.path}: {err}") from None
        if not hasattr(data, "files"):
            raise ValueError(f"{self.path}: not an .npz file")
        with data:
            if "format" not in data or str(data["format"]) != FORMAT:
                raise ValueError(f"{self.path}: not a {FORMAT} file")
            names = tuple(str(n) for n in data["observation_names"])
            ops = tuple(str(o) for o in data["ops"])
            if names != OBSERVATION_NAMES or ops != TRIGGER_OPS:
                raise ValueError(f"{self.path}: trained on other features or operations "
                                 f"({len(names)} features, {len(ops)} operations)")
            self.activation = str(data["activation"])
            if self.activation not in _ACTIVATIONS:
                raise ValueError(f"{self.path}: unknown activation {self.activation!r}")
            n = int(data["n_layers"])
            self.layers = [(data[f"W{i}"].astype(np.float64), data[f"b{i}"].astype(np.float64))
                           for i in range(n)]
            self.meta = {k[5:]: data[k].tolist() for k in data.files if k.startswith("meta_")}
        if not self.layers or self.layers[0][0].shape[1] != len(OBSERVATION_NAMES) \
                or self.layers[-1][0].shape[0] != len(TRIGGER_OPS):
            raise ValueError(f"{self.path}: layer shapes do not fit the Trigger")

    def scores(self, features: np.ndarray) -> np.ndarray:
        """Logits (or Q-values) of the operations for one feature vector."""
        h = np.asarray(features, dtype=np.float64).reshape(-1)
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            h = w @ h + b
            if i < last:
                h = np.tanh(h) if self.activation == "tanh" else np.maximum(h, 0.0)
        return h

    def __call__(self, features: np.ndarray, mask: np.ndarray) -> int:
        s = self.scores(features)
        valid = np.asarray(mask, dtype=bool)
        if not valid.any():
            return len(TRIGGER_OPS) - 1
        s = np.where(valid, s, -np.inf)
        return int(np.argmax(s))
