"""The event-stream instruments: can house-wide event timing, with no notion of *who*, pass?

A learner that reads only per-window verb counts (:func:`~mindhelper_env.agents.event_stream.
window_verb_counts`: how many walks, opens, grabs, phone calls, hang-ups, chores, tells ...
happened in the window; no ids, rooms, roles or arguments), the same counts over lag buckets
(1, 2-3, 4-7, 8-15, 16+ windows back), the windows since each verb last happened and the
window index (:func:`~mindhelper_env.agents.event_stream.stream_matrix`). If it passes a
belief group, the side is carried by *when* things happen in the house ("someone was on the
phone when the object moved"), which an agent can read without binding anything to the
person who later looks (docs/validity.md, "Instruments that read house-wide timing").

* :func:`stream_episode` rolls an episode out with the robot silent and keeps, per window,
  the channel values (verb counts; with ``mode="pixels"`` the frame-difference colour counts
  of :mod:`mindhelper_env.validity.pixelstream`) and the window's label (intervening after it
  would be precise, the metric's rule); :func:`stream_data` and :func:`suite_stream_data` for
  many;
* :func:`train_stream_model` fits scikit-learn's ``HistGradientBoostingClassifier`` on every
  window of the fit episodes and chooses the depth, the number of trees, the learning rate
  (:data:`STREAM_GRID`) and then the firing threshold on held-out training episodes (the
  balanced episode accuracy: first firing precise, or never firing); :class:`StreamModel`
  is the scorer :class:`~mindhelper_env.agents.event_stream.StreamFiringAgent` plays;
* :func:`stream_importance` — permutation importance per twin group, by verb (every column
  of one channel) and by feature kind (``now``, each lag bucket, ``since``, ``window``);
* :func:`play_specs` plays an agent (hedges included) on a suite or on episode specs, in
  any ``obs_mode``.

Trained on training seeds of the suite's own generator only (:func:`~mindhelper_env.
validity.data.training_episodes`); the suite is never seen before it is scored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["StreamEpisode", "stream_episode", "stream_data", "suite_stream_data",
           "StreamModel", "STREAM_GRID", "train_stream_model", "choose_threshold",
           "episode_decisions", "balanced_accuracy", "stream_importance", "play_specs",
           "stream_agent", "TRAIN_PER_FAMILY", "training_specs", "split_fit_tune",
           "group_accuracy", "LOSSLESS_FRAME_SIZE", "frame_size_for"]

#: Training episodes per family of the suite's generator (the outside check's 80).
TRAIN_PER_FAMILY = 80


@dataclass
class StreamEpisode:
    """One silent rollout as a stream: ``counts`` (``(windows, channels)``; window 0 is the
    reset observation), ``positive`` (intervening after the window would be precise)."""

    episode_id: str
    family: str
    group: str | None
    needs_help: bool
    counts: np.ndarray
    positive: np.ndarray
    ticks: list[int] = field(default_factory=list)


def _window_label(spec: Mapping[str, Any], ticks: Sequence[int]) -> np.ndarray:
    ref = spec["reference"]
    win = ref.get("window") if ref.get("needs_intervention") else None
    return np.array([win is not None and int(win["onset_tick"]) <= t <= int(win["deadline_tick"])
                     for t in ticks], dtype=bool)


def stream_episode(spec: Mapping[str, Any], env: Any = None, *, mode: str = "events"
                   ) -> StreamEpisode:
    """Roll ``spec`` out with the robot silent (``env``: one made for the mode, reused across
    episodes; default: a text env of :data:`~mindhelper_env.evaluation.DEFAULT_ENV_ID`) and
    keep its per-window channels: ``mode="events"`` the verb counts, ``"pixels"`` the colour
    changes of the frames (the env must be made with ``obs_mode="rgb"``)."""
    from mindhelper_env.agents.event_stream import frame_change_counts, window_verb_counts
    from mindhelper_env.scenarios.spec import twin_group

    if mode not in ("events", "pixels"):
        raise ValueError(f"stream_episode: mode must be 'events' or 'pixels', got {mode!r}")
    own = env is None
    if own:
        from mindhelper_env.evaluation import DEFAULT_ENV_ID, make_env

        env = make_env(DEFAULT_ENV_ID)
    rows, ticks = [], []
    last = None
    try:
        obs, info = env.reset(options={"episode": dict(spec)})
        while True:
            if mode == "events":
                rows.append(window_verb_counts(obs))
            else:
                frames = np.asarray(obs.get("rgb") if isinstance(obs, dict) else obs)
                rows.append(frame_change_counts(frames, last))
                last = frames[-1].copy()
            ticks.append(int(info.get("tick", 0)))
            obs, _, term, trunc, info = env.step("none")
            if term or trunc:
                break
    finally:
        if own:
            env.close()
    fam = str(spec["family"])
    return StreamEpisode(str(spec.get("episode_id", "")), fam, twin_group(fam),
                         bool(spec["reference"].get("needs_intervention")),
                         np.array(rows), _window_label(spec, ticks), ticks)


#: The smallest frame size that shows every house of a suite's kind losslessly
#: (docs/vision.md, "Frame size": at most 520 px on ``vh-test-v5``, 716 on ``tdw-test-v5``).
LOSSLESS_FRAME_SIZE = {"virtualhome": 520, "tdw": 768}


def frame_size_for(suite: str | None) -> int:
    """The frame size (square) the pixel instruments render ``suite`` at: the lossless size
    of its kind of house (TDW houses for a ``tdw-`` suite, generated VirtualHome ones
    otherwise)."""
    return LOSSLESS_FRAME_SIZE["tdw" if suite and str(suite).startswith("tdw") else "virtualhome"]


def _env_for(mode: str, frame_size: int | None) -> Any:
    from mindhelper_env.evaluation import DEFAULT_ENV_ID, make_env

    if mode == "pixels":
        return make_env(DEFAULT_ENV_ID, obs_mode="rgb",
                        frame_size=frame_size or frame_size_for(None))
    return make_env(DEFAULT_ENV_ID)


def stream_data(specs: Sequence[Mapping[str, Any]], *, mode: str = "events",
                frame_size: int | None = None) -> list[StreamEpisode]:
    """:func:`stream_episode` of every spec, on one env."""
    env = _env_for(mode, frame_size)
    try:
        return [stream_episode(s, env, mode=mode) for s in specs]
    finally:
        env.close()


def suite_stream_data(suite: str, limit: int | None = None, *, mode: str = "events",
                      frame_size: int | None = None) -> list[StreamEpisode]:
    """:func:`stream_data` of the first ``limit`` episodes of ``suite``."""
    from mindhelper_env.scenarios.suites import SUITES, suite_episode

    n = int(SUITES[suite]["n"]) if limit is None else min(limit, int(SUITES[suite]["n"]))
    return stream_data([suite_episode(suite, i) for i in range(n)], mode=mode,
                       frame_size=frame_size)


def training_specs(suite: str, per_family: int = TRAIN_PER_FAMILY, *, seed: int = 0
                   ) -> list[dict[str, Any]]:
    """Training-seed episodes of ``suite``'s generator and house, about ``per_family`` a
    family (:func:`~mindhelper_env.validity.data.training_episodes`: half needing help,
    families weighted as the generator weighs them)."""
    from mindhelper_env.scenarios.spec import family_weights
    from mindhelper_env.scenarios.suites import SUITES
    from mindhelper_env.validity.bounds import generator_of
    from mindhelper_env.validity.data import training_episodes

    gen = generator_of(suite)
    n = per_family * max(1, len(family_weights(gen)))
    return training_episodes(n, seed=seed, house=SUITES[suite].get("house"), generator=gen)


def split_fit_tune(data: Sequence[StreamEpisode], tune_share: float = 0.25
                   ) -> tuple[list[StreamEpisode], list[StreamEpisode]]:
    """Hold out every ``round(1 / tune_share)``-th episode of each side (help, silent) in
    each family, to choose settings and the threshold; the rest to fit. (Counting per side
    and family keeps both sides in the held-out part however the episodes alternate.)"""
    step = max(2, round(1 / tune_share))
    seen: dict[tuple[str, bool], int] = {}
    fit, tune = [], []
    for d in data:
        k = seen.get((d.family, d.needs_help), 0)
        seen[(d.family, d.needs_help)] = k + 1
        (tune if k % step == step - 1 else fit).append(d)
    return fit, tune


# --------------------------------------------------------------------- decisions
def episode_decisions(data: Sequence[StreamEpisode], probs: Sequence[np.ndarray],
                      thr: float) -> np.ndarray:
    """Per episode: decided right at threshold ``thr`` (a help episode's first firing in its
    precise window; a silent episode never firing)."""
    ok = []
    for d, p in zip(data, probs, strict=True):
        fired = np.nonzero(np.asarray(p) >= thr)[0]
        if d.needs_help:
            ok.append(bool(len(fired)) and bool(d.positive[int(fired[0])]))
        else:
            ok.append(not len(fired))
    return np.array(ok, dtype=bool)


def balanced_accuracy(data: Sequence[StreamEpisode], ok: np.ndarray) -> float:
    """The mean of the help side's and the silent side's decision accuracy (the PHA-like
    figure the threshold is chosen on)."""
    helps = np.array([d.needs_help for d in data], dtype=bool)
    parts = [float(ok[s].mean()) for s in (helps, ~helps) if s.any()]
    return float(np.mean(parts)) if parts else 0.0


def group_accuracy(data: Sequence[StreamEpisode], ok: np.ndarray) -> dict[str, float]:
    """Balanced decision accuracy overall (``"all"``) and per twin group."""
    out = {"all": balanced_accuracy(data, ok)}
    groups = sorted({d.group for d in data if d.group is not None})
    for g in groups:
        idx = [i for i, d in enumerate(data) if d.group == g]
        out[g] = balanced_accuracy([data[i] for i in idx], ok[idx])
    return out


def _intervals(data: Sequence[StreamEpisode], probs: Sequence[np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per episode, the thresholds ``t`` it is decided right at: ``lo < t <= hi`` (a help
    episode: nothing before its precise windows reaches ``t``, something in them does; a
    silent one: nothing reaches ``t``, ``hi`` infinite)."""
    lo, hi, helps = [], [], []
    for d, p in zip(data, probs, strict=True):
        p = np.asarray(p, dtype=np.float64)
        if d.needs_help:
            idx = np.nonzero(d.positive)[0]
            if not len(idx):
                lo.append(np.inf)
                hi.append(-np.inf)
            else:
                a, b = int(idx[0]), int(idx[-1])
                lo.append(float(p[:a].max()) if a else -np.inf)
                hi.append(float(p[a:b + 1].max()))
        else:
            lo.append(float(p.max()) if len(p) else -np.inf)
            hi.append(np.inf)
        helps.append(d.needs_help)
    return np.array(lo), np.array(hi), np.array(helps, dtype=bool)


def choose_threshold(data: Sequence[StreamEpisode], probs: Sequence[np.ndarray],
                     candidates: int = 201) -> tuple[float, float]:
    """The threshold (among quantiles of the scores) that maximises the balanced episode
    accuracy on ``data``; returns ``(threshold, accuracy)`` (never firing: ``inf``)."""
    flat = np.concatenate([np.asarray(p) for p in probs]) if probs else np.array([])
    cands = np.array([np.inf] + (np.unique(np.quantile(flat, np.linspace(0.5, 1.0, candidates)))
                                 .tolist() if flat.size else []))
    lo, hi, helps = _intervals(data, probs)
    ok = (lo[None, :] < cands[:, None]) & (cands[:, None] <= hi[None, :])
    parts = [ok[:, s].mean(axis=1) for s in (helps, ~helps) if s.any()]
    if not parts:
        return float("inf"), 0.0
    acc = np.mean(parts, axis=0)
    best = int(np.flatnonzero(acc == acc.max())[-1])  # ties: the highest threshold
    return float(cands[best]), float(acc[best])


# ------------------------------------------------------------------------- model
#: The settings tried (every combination), chosen on held-out training episodes. Shallow
#: trees (depth 3, 200 trees) read `vh-test-v5`'s leak at 69 % held-out balanced accuracy;
#: depth 6 or unlimited with 63 leaves and 300-400 trees at 76 %.
STREAM_GRID: dict[str, tuple[Any, ...]] = {
    "max_depth": (6, None),
    "max_leaf_nodes": (63,),
    "max_iter": (400,),
    "learning_rate": (0.05, 0.1),
}


@dataclass
class StreamModel:
    """A fitted stream scorer: ``model`` (``predict_proba`` over :func:`~mindhelper_env.
    agents.event_stream.stream_matrix` rows), its ``threshold``, the ``channels`` it reads,
    the chosen ``params`` and the held-out balanced accuracy ``tune_accuracy``."""

    model: Any
    threshold: float
    channels: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    tune_accuracy: float = 0.0
    kind: str = "gbm"
    transform: Callable[[np.ndarray], np.ndarray] | None = None

    def rows(self, counts: np.ndarray) -> np.ndarray:
        from mindhelper_env.agents.event_stream import stream_matrix

        c = np.asarray(counts, dtype=np.float64)
        return stream_matrix(c if self.transform is None else self.transform(c))

    def probs(self, counts: np.ndarray) -> np.ndarray:
        """The score of every window of a stream."""
        x = self.rows(counts)
        if not len(x):
            return np.zeros(0)
        return self.model.predict_proba(x)[:, 1]

    def prob_stream(self, counts: np.ndarray) -> float:
        """The score of the stream's last window (what the agent reads as it plays)."""
        x = self.rows(counts)
        return float(self.model.predict_proba(x[-1:])[:, 1][0]) if len(x) else 0.0


def _gbm(params: Mapping[str, Any]) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(random_state=0, **params)


def train_stream_model(fit: Sequence[StreamEpisode], tune: Sequence[StreamEpisode], *,
                       channels: Sequence[str], grid: Mapping[str, Sequence[Any]] = STREAM_GRID,
                       transform: Callable[[np.ndarray], np.ndarray] | None = None,
                       log: Callable[[str], None] | None = None) -> StreamModel:
    """Fit gradient boosting on every window of ``fit`` for each setting of ``grid``; keep the
    setting and threshold with the best balanced episode accuracy on ``tune`` (held-out
    training episodes)."""
    import itertools

    from mindhelper_env.agents.event_stream import stream_matrix

    def mat(c: np.ndarray) -> np.ndarray:
        c = np.asarray(c, dtype=np.float64)
        return stream_matrix(c if transform is None else transform(c))

    x = np.vstack([mat(d.counts) for d in fit])
    y = np.concatenate([d.positive for d in fit]).astype(int)
    if len(set(y.tolist())) < 2:
        raise ValueError("train_stream_model: the fit episodes need positive and negative "
                         "windows (help and silent episodes)")
    x_tune = [mat(d.counts) for d in tune]
    best: StreamModel | None = None
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        params = dict(zip(keys, values, strict=True))
        m = _gbm(params).fit(x, y)
        probs = [m.predict_proba(xt)[:, 1] for xt in x_tune]
        thr, acc = choose_threshold(tune, probs)
        if log is not None:
            log(f"  {params}: threshold {thr:.3f}, held-out balanced accuracy {100 * acc:.1f}")
        if best is None or acc > best.tune_accuracy:
            best = StreamModel(m, thr, tuple(channels), params, acc, "gbm", transform)
    assert best is not None
    return best


def model_decisions(model: Any, data: Sequence[StreamEpisode]) -> np.ndarray:
    """:func:`episode_decisions` of a scorer (``probs(counts)`` and ``threshold``)."""
    return episode_decisions(data, [model.probs(d.counts) for d in data], model.threshold)


# -------------------------------------------------------------- feature importance
def _blocks(channels: Sequence[str]) -> dict[str, dict[str, list[int]]]:
    from mindhelper_env.agents.event_stream import stream_feature_names

    names = stream_feature_names(channels)
    by_channel: dict[str, list[int]] = {}
    by_kind: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        kind, _, ch = n.partition(":")
        by_kind.setdefault(kind, []).append(i)
        if ch:
            by_channel.setdefault(ch, []).append(i)
    return {"channel": by_channel, "kind": by_kind}


def stream_importance(model: StreamModel, data: Sequence[StreamEpisode], *, repeats: int = 3,
                      seed: int = 0, top: int | None = None) -> dict[str, dict[str, Any]]:
    """Permutation importance per twin group (and ``"all"``): the drop in balanced episode
    accuracy at the model's threshold when the columns of one channel (a verb, a colour
    change: ``"channel"``) or of one feature kind (``now``, a lag bucket, ``since``,
    ``window``: ``"kind"``) are shuffled across the windows of the group's episodes (mean
    of ``repeats`` shuffles, in points). ``top``: keep the ``top`` largest of each."""
    rng = np.random.default_rng(seed)
    blocks = _blocks(model.channels)
    groups = ["all", *sorted({d.group for d in data if d.group is not None})]
    out: dict[str, dict[str, Any]] = {}
    for g in groups:
        eps = [d for d in data if g == "all" or d.group == g]
        if not eps:
            continue
        xs = [model.rows(d.counts) for d in eps]
        lens = [len(x) for x in xs]
        x = np.vstack(xs)
        base = balanced_accuracy(eps, _decide(model, eps, x, lens))
        res: dict[str, Any] = {"accuracy": 100 * base}
        for what, bl in blocks.items():
            drops = {}
            for name, cols in bl.items():
                d = 0.0
                for _ in range(repeats):
                    xp = x.copy()
                    perm = rng.permutation(len(x))
                    xp[:, cols] = x[perm][:, cols]
                    d += base - balanced_accuracy(eps, _decide(model, eps, xp, lens))
                drops[name] = 100 * d / repeats
            items = sorted(drops.items(), key=lambda kv: -kv[1])
            res[what] = dict(items[:top] if top else items)
        out[g] = res
    return out


def _decide(model: StreamModel, eps: Sequence[StreamEpisode], x: np.ndarray,
            lens: Sequence[int]) -> np.ndarray:
    p = model.model.predict_proba(x)[:, 1]
    probs, k = [], 0
    for n in lens:
        probs.append(p[k:k + n])
        k += n
    return episode_decisions(eps, probs, model.threshold)


# --------------------------------------------------------------------------- playing
def stream_agent(model: Any, name: str = "event-stream-gbm", hedge: str | None = None) -> Any:
    """The text agent firing on ``model`` (a :class:`StreamModel` or any scorer), wrapped in
    ``hedge`` (a registry suffix without the ``+``: ``"wait3"``, ``"prefix8"``...)."""
    from mindhelper_env.agents.event_stream import StreamFiringAgent

    agent = StreamFiringAgent(model, name)
    return _hedged(agent, hedge)


def _hedged(agent: Any, hedge: str | None) -> Any:
    if not hedge:
        return agent
    import re

    from mindhelper_env.agents.hedge import make_hedge

    m = re.fullmatch(r"([a-z]+)(\d+)", hedge)
    if m is None:
        raise ValueError(f"bad hedge {hedge!r}; expected e.g. 'wait3' or 'prefix8'")
    return make_hedge(agent, m.group(1), int(m.group(2)))


def play_specs(episodes: str | Sequence[Mapping[str, Any]], agent: Any, name: str, *,
               limit: int | None = None, env_kwargs: Mapping[str, Any] | None = None
               ) -> tuple[list[dict[str, Any]], dict[str, Mapping[str, Any]]]:
    """Play ``agent`` on a suite (its name: its first ``limit`` episodes) or on episode specs,
    with ``env_kwargs`` (``obs_mode="rgb"``, ``frame_size``...); return its result records
    and ``{episode_id: reference record}`` (for :func:`~mindhelper_env.validity.core.scores`)."""
    from mindhelper_env.evaluation import DEFAULT_ENV_ID, make_env, run_episode, suite_env_id
    from mindhelper_env.scenarios.suites import SUITES, reference_record, suite_episode

    if isinstance(episodes, str):
        n = int(SUITES[episodes]["n"])
        n = n if limit is None else min(limit, n)
        specs = [suite_episode(episodes, i) for i in range(n)]
        env_id = suite_env_id(episodes)
    else:
        specs = list(episodes)[:limit] if limit is not None else list(episodes)
        env_id = DEFAULT_ENV_ID
    env = make_env(env_id, **dict(env_kwargs or {}))
    try:
        recs = [run_episode(env, agent, seed=i, options={"episode": dict(s)}, agent_name=name,
                            timing=False) for i, s in enumerate(specs)]
    finally:
        env.close()
    return recs, {s["episode_id"]: reference_record(s) for s in specs}
