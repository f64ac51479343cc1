"""A small neural sequence model over the per-window verb-count stream (a GRU).

The neural counterpart of :mod:`mindhelper_env.validity.eventstream`'s gradient boosting:
the same silent rollouts, labels, held-out threshold and fire-once agent
(:class:`~mindhelper_env.agents.event_stream.StreamFiringAgent`), but a recurrent network
reads the stream window by window (``log1p`` of each channel's count and the window index)
and scores every window from everything before it, so it may find any function of the
history, not only the lag buckets.

torch is imported only here, when a model is trained or run (the ``rl`` or ``local``
extra installs it; the test environment has it, ``tools/setup-tests.sh``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mindhelper_env.validity.eventstream import StreamEpisode, choose_threshold

__all__ = ["GRUStreamModel", "GRU_GRID", "train_gru_model"]

#: The settings tried, chosen on held-out training episodes (on `mh-gen-3.2`: 32 units and
#: 40 epochs 61.6 %, 64 units and 100 epochs 81.0 % held-out balanced accuracy).
GRU_GRID: dict[str, tuple[Any, ...]] = {"hidden": (32, 64), "epochs": (40, 100)}


def _inputs(counts: np.ndarray) -> np.ndarray:
    c = np.log1p(np.maximum(np.asarray(counts, dtype=np.float32), 0.0))
    t = (np.arange(len(c), dtype=np.float32) / 30.0)[:, None]
    return np.hstack([c, t]).astype(np.float32)


def _net(n_in: int, hidden: int) -> Any:
    import torch

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gru = torch.nn.GRU(n_in, hidden, batch_first=True)
            self.head = torch.nn.Linear(hidden, 1)

        def forward(self, x: Any) -> Any:
            h, _ = self.gru(x)
            return self.head(h).squeeze(-1)

    return Net()


@dataclass
class GRUStreamModel:
    """A trained GRU scorer (``prob_stream``/``probs`` and ``threshold``, as
    :class:`~mindhelper_env.validity.eventstream.StreamModel`)."""

    net: Any
    threshold: float
    channels: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    tune_accuracy: float = 0.0
    kind: str = "gru"

    def probs(self, counts: np.ndarray) -> np.ndarray:
        import torch

        x = _inputs(counts)
        if not len(x):
            return np.zeros(0)
        with torch.no_grad():
            z = self.net(torch.from_numpy(x)[None])[0]
        return torch.sigmoid(z).numpy().astype(np.float64)

    def prob_stream(self, counts: np.ndarray) -> float:
        p = self.probs(counts)
        return float(p[-1]) if len(p) else 0.0


def _batch(data: Sequence[StreamEpisode]) -> tuple[Any, Any, Any]:
    import torch

    n = max(len(d.counts) for d in data)
    k = data[0].counts.shape[1] + 1
    x = np.zeros((len(data), n, k), dtype=np.float32)
    y = np.zeros((len(data), n), dtype=np.float32)
    mask = np.zeros((len(data), n), dtype=np.float32)
    for i, d in enumerate(data):
        m = len(d.counts)
        x[i, :m] = _inputs(d.counts)
        y[i, :m] = d.positive
        mask[i, :m] = 1.0
    return torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(mask)


def _fit(data: Sequence[StreamEpisode], hidden: int, epochs: int, seed: int) -> Any:
    import torch

    torch.manual_seed(seed)
    x, y, mask = _batch(data)
    net = _net(x.shape[-1], hidden)
    pos = float((y * mask).sum())
    neg = float(mask.sum()) - pos
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none",
                                         pos_weight=torch.tensor(max(1.0, neg / max(1.0, pos))))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=gen)
        for s in range(0, len(x), 64):
            idx = order[s:s + 64]
            opt.zero_grad()
            loss = (loss_fn(net(x[idx]), y[idx]) * mask[idx]).sum() / mask[idx].sum()
            loss.backward()
            opt.step()
    net.eval()
    return net


def train_gru_model(fit: Sequence[StreamEpisode], tune: Sequence[StreamEpisode], *,
                    channels: Sequence[str], grid: Mapping[str, Sequence[Any]] = GRU_GRID,
                    seed: int = 0, log: Callable[[str], None] | None = None) -> GRUStreamModel:
    """Train a GRU on every window of ``fit`` (binary cross-entropy on the window labels,
    positives weighted up to balance) for each setting of ``grid``; keep the setting and the
    threshold with the best balanced episode accuracy on ``tune``."""
    import itertools

    import torch

    torch.set_num_threads(1)
    if not any(d.positive.any() for d in fit):
        raise ValueError("train_gru_model: the fit episodes hold no positive window")
    best: GRUStreamModel | None = None
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        params = dict(zip(keys, values, strict=True))
        net = _fit(fit, int(params["hidden"]), int(params["epochs"]), seed)
        m = GRUStreamModel(net, 0.5, tuple(channels), params)
        thr, acc = choose_threshold(tune, [m.probs(d.counts) for d in tune])
        if log is not None:
            log(f"  GRU {params}: threshold {thr:.3f}, held-out balanced accuracy "
                f"{100 * acc:.1f}")
        if best is None or acc > best.tune_accuracy:
            m.threshold, m.tune_accuracy = thr, acc
            best = m
    assert best is not None
    return best
