"""Validity checks of the benchmark: can it be passed without tracking minds?

A benchmark for theory of mind is only meaningful if surface cues do not pass it
(docs/validity.md). This module measures that, on any suite:

* :func:`agent_scores` plays agents that read only ``obs`` and ``info`` — the shortcut
  baselines ``reactive``, ``moved-absent`` and ``prior``, the ``belief-tracker`` reference and
  any other registered agent — and returns their metrics;
* :func:`bag_of_words_accuracy` trains a bag-of-words logistic-regression classifier on
  episodes drawn from training seeds and reports how well it predicts *needs help* on the
  suite from the reset observation alone, or from the reset plus the first windows;
* :data:`BOUNDS` are the bounds the package promises (checked on ``vh-dev-v2`` by the test
  suite, with looser margins for its 100 episodes, and reported on ``vh-test-v2`` by
  ``benchmarks/bench_validity.py``).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["BOUNDS", "SHORTCUTS", "agent_scores", "narrations", "training_episodes",
           "bag_of_words_accuracy"]

#: The shortcut baselines (they read obs and info but do not track minds).
SHORTCUTS = ("reactive", "moved-absent", "prior")

#: Promised bounds on a 1,000-episode suite (percentages; accuracies as fractions).
BOUNDS: dict[str, float] = {
    "tracker_PHA_min": 90.0,
    "tracker_PIA_min": 90.0,
    "shortcut_PIA_max": 65.0,
    "shortcut_PHA_max": 55.0,
    "reset_classifier_max": 0.60,
}

_TOKEN = re.compile(r"[a-z]+")


def agent_scores(suite: str, agents: Sequence[str], *, workers: int = 1,
                 limit: int | None = None) -> dict[str, dict[str, Any]]:
    """Play ``agents`` on ``suite`` and return ``{agent: metrics (percentages)}``."""
    from mindhelper_env.evaluation import evaluate

    with tempfile.TemporaryDirectory() as tmp:
        summary = evaluate(suite, list(agents), tmp, workers=workers, limit=limit,
                           progress=False, plots=False, timing=False)
    return {a: dict(m) for a, m in summary["metrics"].items()}


def narrations(spec: dict[str, Any], windows: int = 0) -> str:
    """The robot's narration of an episode: the reset observation, then ``windows`` windows
    in which the robot stays silent."""
    import gymnasium as gym

    import mindhelper_env  # noqa: F401 - registers the env

    env = gym.make("MindHelper-VirtualHome-v0")
    try:
        obs, _ = env.reset(options={"episode": spec})
        texts = [obs["narration"]]
        for _ in range(windows):
            obs, _, term, trunc, _ = env.step("none")
            texts.append(obs["narration"])
            if term or trunc:
                break
    finally:
        env.close()
    return "\n".join(texts)


def training_episodes(n: int, seed: int = 0, house: Any = None) -> list[dict[str, Any]]:
    """``n`` episodes from training seeds, half of them needing help, families drawn as the
    envs and suites draw them (:data:`~mindhelper_env.scenarios.spec.DEFAULT_FAMILY_WEIGHTS`),
    set in ``house`` (see :func:`~mindhelper_env.world.houses.resolve_houses`)."""
    from mindhelper_env.scenarios.generator import generate_episode
    from mindhelper_env.scenarios.spec import DEFAULT_FAMILY_WEIGHTS, HELP_FAMILIES
    from mindhelper_env.scenarios.suites import TRAINING_SEED_RANGE

    rng = np.random.default_rng(seed)
    sides = [[f for f in DEFAULT_FAMILY_WEIGHTS if f in HELP_FAMILIES],
             [f for f in DEFAULT_FAMILY_WEIGHTS if f not in HELP_FAMILIES]]
    out = []
    for i in range(n):
        side = sides[i % 2]
        w = np.array([DEFAULT_FAMILY_WEIGHTS[f] for f in side])
        fam = side[int(rng.choice(len(side), p=w / w.sum()))]
        out.append(generate_episode(fam, int(rng.integers(TRAINING_SEED_RANGE.stop)),
                                    house=house))
    return out


def _tokens(text: str) -> list[str]:
    # digits are dropped: ids are shuffled and carry nothing but noise
    return _TOKEN.findall(text.lower())


def _features(texts: Sequence[str], vocab: dict[str, int]) -> np.ndarray:
    x = np.zeros((len(texts), len(vocab) + 1))
    for i, t in enumerate(texts):
        for tok in _tokens(t):
            j = vocab.get(tok)
            if j is not None:
                x[i, j] += 1.0
    x[:, :-1] = np.log1p(x[:, :-1])
    x[:, -1] = 1.0  # bias
    return x


def _fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 50) -> np.ndarray:
    """L2-regularised logistic regression by Newton's method."""
    w = np.zeros(x.shape[1])
    reg = l2 * np.eye(x.shape[1])
    reg[-1, -1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        grad = x.T @ (p - y) + reg @ w
        hess = (x * (p * (1 - p))[:, None]).T @ x + reg
        step = np.linalg.solve(hess + 1e-9 * np.eye(len(w)), grad)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return w


def bag_of_words_accuracy(suite: str, *, windows: int = 0, n_train: int = 1000,
                          seed: int = 0, limit: int | None = None) -> dict[str, float]:
    """Train on ``n_train`` training episodes, test on ``suite``: accuracy of predicting
    needs-help from the narration of the reset observation plus ``windows`` windows.

    The training episodes are set in the suite's houses (a suite of real houses is judged
    against a classifier trained in those houses). Returns ``{"accuracy", "train_accuracy",
    "majority", "n_train", "n_test"}``.
    """
    from mindhelper_env.scenarios.suites import SUITES, suite_specs

    train = training_episodes(n_train, seed, house=SUITES[suite].get("house"))
    test = suite_specs(suite)[:limit]
    tr_text = [narrations(s, windows) for s in train]
    te_text = [narrations(s, windows) for s in test]
    y_tr = np.array([float(s["reference"]["needs_intervention"]) for s in train])
    y_te = np.array([float(s["reference"]["needs_intervention"]) for s in test])
    counts: dict[str, int] = {}
    for t in tr_text:
        for tok in set(_tokens(t)):
            counts[tok] = counts.get(tok, 0) + 1
    vocab = {tok: i for i, tok in enumerate(sorted(t for t, c in counts.items() if c >= 3))}
    x_tr, x_te = _features(tr_text, vocab), _features(te_text, vocab)
    w = _fit_logistic(x_tr, y_tr)
    acc = float(np.mean((x_te @ w > 0) == (y_te > 0.5)))
    train_acc = float(np.mean((x_tr @ w > 0) == (y_tr > 0.5)))
    majority = float(max(y_te.mean(), 1 - y_te.mean()))
    return {"accuracy": acc, "train_accuracy": train_acc, "majority": majority,
            "n_train": float(len(train)), "n_test": float(len(test))}
