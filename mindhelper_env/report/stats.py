"""Bootstrap intervals of the headline metrics, and of the difference between two agents.

The resampling unit is the episode. Help and silent episodes are resampled separately
(a *stratified* bootstrap: each resample keeps the run's numbers of help and silent
episodes, as the suite does), ``resamples`` times (default 2000) with NumPy's
``default_rng(seed)``; an interval is the 2.5th and 97.5th percentiles of the resampled
metric (the percentile method). The generator is created afresh for every call, so the same
seed, episodes and outcomes always give the same bounds, whatever else the report holds.
A paired comparison resamples the episodes both agents played, with the same draws for both,
and gives the interval of the difference (A − B).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["CI_METRICS", "DEFAULT_RESAMPLES", "bootstrap", "paired_bootstrap", "outcome_arrays"]

#: Metrics given with an interval, in the leaderboard's order (``harm_rate`` is "harm").
CI_METRICS: tuple[str, ...] = ("PHA", "PHR", "PIR", "PSR", "PIA", "TA", "SR", "AC",
                               "harm_rate", "silent_all")
DEFAULT_RESAMPLES = 2000


def outcome_arrays(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Per-episode flags of :func:`mindhelper_env.metrics.episode_outcome` results as arrays
    (``sr`` and ``ac`` are NaN where undefined)."""
    def flags(key: str) -> np.ndarray:
        return np.array([bool(o[key]) for o in outcomes], dtype=bool)

    def values(key: str) -> np.ndarray:
        return np.array([np.nan if o[key] is None else float(o[key]) for o in outcomes],
                        dtype=float)

    return {"help": flags("needs_help"), "hp": flags("helpful_precise"),
            "precise": flags("precise"), "silent": flags("silent"),
            "success": flags("success"), "harm": flags("harm"),
            "sr": values("sr"), "ac": values("ac")}


def _draws(help_mask: np.ndarray, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Resampled positions of the help and of the silent episodes: two ``(B, n)`` arrays."""
    rng = np.random.default_rng(seed)
    h = np.flatnonzero(help_mask)
    s = np.flatnonzero(~help_mask)
    dh = h[rng.integers(0, len(h), size=(resamples, len(h)))] if len(h) \
        else np.zeros((resamples, 0), dtype=int)
    ds = s[rng.integers(0, len(s), size=(resamples, len(s)))] if len(s) \
        else np.zeros((resamples, 0), dtype=int)
    return dh, ds


def _rates(a: Mapping[str, np.ndarray], dh: np.ndarray, ds: np.ndarray) -> dict[str, np.ndarray]:
    """Every metric of :data:`CI_METRICS` for each resample (NaN where undefined)."""
    b = dh.shape[0]
    nan = np.full(b, np.nan)

    def mean(x: np.ndarray, d: np.ndarray) -> np.ndarray:
        return x[d].mean(axis=1) if d.shape[1] else nan

    def nanmean(x: np.ndarray, d: np.ndarray) -> np.ndarray:
        if not d.shape[1]:
            return nan
        v = x[d]
        n = np.sum(~np.isnan(v), axis=1)
        total = np.nansum(v, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total / np.maximum(n, 1), np.nan)

    phr, pir, ta = mean(a["hp"], dh), mean(a["precise"], dh), mean(a["success"], dh)
    psr = mean(a["silent"], ds)
    both = np.concatenate([dh, ds], axis=1)

    def combine(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if not dh.shape[1]:
            return y
        if not ds.shape[1]:
            return x
        return (x + y) / 2

    return {"PHA": combine(phr, psr), "PHR": phr, "PIR": pir, "PSR": psr,
            "PIA": combine(pir, psr), "TA": ta, "SR": nanmean(a["sr"], dh),
            "AC": nanmean(a["ac"], dh), "harm_rate": mean(a["harm"], both),
            "silent_all": mean(a["silent"], both)}


def _interval(x: np.ndarray) -> list[float] | None:
    x = x[~np.isnan(x)]
    if not len(x):
        return None
    lo, hi = np.percentile(x, [2.5, 97.5])
    return [round(float(lo) * 100, 2), round(float(hi) * 100, 2)]


def bootstrap(outcomes: Sequence[Mapping[str, Any]], *, resamples: int = DEFAULT_RESAMPLES,
              seed: int = 0) -> dict[str, list[float] | None]:
    """``{metric: [low, high]}`` in percent, 95 % percentile intervals (``None``: no episode
    to measure). Deterministic in ``seed``."""
    if not outcomes:
        return {k: None for k in CI_METRICS}
    a = outcome_arrays(outcomes)
    dh, ds = _draws(a["help"], resamples, seed)
    return {k: _interval(v) for k, v in _rates(a, dh, ds).items()}


def paired_bootstrap(a_outcomes: Sequence[Mapping[str, Any]],
                     b_outcomes: Sequence[Mapping[str, Any]], *,
                     resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                     metrics: Sequence[str] = ("PHA", "PHR", "PSR", "PIA")) -> dict[str, Any]:
    """A − B on the episodes both played (matched by ``episode_id``): the difference on those
    episodes and its 95 % interval, both in percentage points, per metric; plus ``episodes``
    and ``disagree`` (episodes one got right and the other wrong)."""
    by_id = {o["episode_id"]: o for o in b_outcomes}
    common = sorted(o["episode_id"] for o in a_outcomes if o["episode_id"] in by_id)
    a_by = {o["episode_id"]: o for o in a_outcomes}
    xa = [a_by[e] for e in common]
    xb = [by_id[e] for e in common]
    out: dict[str, Any] = {"episodes": len(common), "metrics": {}}
    out["disagree"] = sum(1 for p, q in zip(xa, xb, strict=True) if correct(p) != correct(q))
    out["a_only"] = sum(1 for p, q in zip(xa, xb, strict=True) if correct(p) and not correct(q))
    out["b_only"] = sum(1 for p, q in zip(xa, xb, strict=True) if correct(q) and not correct(p))
    if not common:
        return out
    arr_a, arr_b = outcome_arrays(xa), outcome_arrays(xb)
    dh, ds = _draws(arr_a["help"], resamples, seed)
    full_h = np.flatnonzero(arr_a["help"])[None, :]
    full_s = np.flatnonzero(~arr_a["help"])[None, :]
    ra, rb = _rates(arr_a, dh, ds), _rates(arr_b, dh, ds)
    pa, pb = _rates(arr_a, full_h, full_s), _rates(arr_b, full_h, full_s)
    for k in metrics:
        diff = float(pa[k][0] - pb[k][0])
        out["metrics"][k] = {
            "a": None if np.isnan(pa[k][0]) else round(float(pa[k][0]) * 100, 2),
            "b": None if np.isnan(pb[k][0]) else round(float(pb[k][0]) * 100, 2),
            "diff": None if np.isnan(diff) else round(diff * 100, 2),
            "ci": _interval(ra[k] - rb[k]),
        }
    return out


def correct(o: Mapping[str, Any]) -> bool:
    """The episode went right: precise, successful, harmless help where help was needed;
    silence where it was not."""
    return bool(o["helpful_precise"]) if o["needs_help"] else bool(o["silent"])
