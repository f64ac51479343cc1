"""Agents that read only *when* things happen in the house: the event-stream instruments.

A validity instrument (docs/validity.md, "Instruments that read house-wide timing"): an agent
with no notion of *who* — no ids, rooms, roles or arguments — that reads, per observation
window, only how many events of each verb happened, and the same counts over past windows.
If such an agent passes the belief groups, the suite carries the side in house-wide event
timing ("someone was on the phone when the object moved"), not in a mind.

* :func:`window_verb_counts` — one window's verb counts from ``obs["events"]`` (verbs only;
  a verb outside :data:`STREAM_VERBS` is counted in the ``other`` column);
* :func:`stream_matrix` — the features of every window of a count stream
  (:data:`LAG_BUCKETS`): the window's counts, the counts over lag buckets (1, 2-3, 4-7,
  8-15, 16+ windows back), the windows since each column was last non-zero (-1: never),
  and the window index; :func:`stream_feature_names` names them;
* :class:`StreamFiringAgent` — fires once, at the first window a scorer (any object with
  ``prob(row) -> float`` and ``threshold``) scores at or above its threshold, and helps with
  ``physical-rules``' best-guess program for the latest visible struggle (waiting for one
  if none was seen yet, as the window classifier does); reads only ``obs`` and ``info``;
* :class:`PixelStreamAgent` — the same on ``obs_mode="rgb"``: the scorer reads frame-
  difference colour counts (:func:`frame_change_counts`, per colour of
  :data:`~mindhelper_env.render.sprites.PALETTE`, no parser); the program is read off the
  frames by the pixel-perception reference (:class:`~mindhelper_env.agents.perceive.PixelFed`).

The scorers are trained by :mod:`mindhelper_env.validity.eventstream` (gradient boosting),
:mod:`mindhelper_env.validity.eventstream_nn` (a GRU) and
:mod:`mindhelper_env.validity.pixelstream`; they are not registered (they train).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from mindhelper_env.agents.physical import PhysicalRulesAgent
from mindhelper_env.agents.tracker import parse_events

__all__ = ["STREAM_VERBS", "LAG_BUCKETS", "NEVER", "window_verb_counts", "stream_matrix",
           "stream_feature_names", "Scorer", "StreamFiringAgent", "palette_codes",
           "frame_change_counts", "pixel_channel_names", "PixelStreamAgent"]


def _stream_verbs() -> tuple[str, ...]:
    from mindhelper_env.render.text import EVENT_VERBS, SIGHT_EVENT_VERBS

    return (*EVENT_VERBS, *SIGHT_EVENT_VERBS)


#: Every verb of the event stream, then ``other`` (a verb outside the list: counted, never
#: dropped).
STREAM_VERBS: tuple[str, ...] = (*_stream_verbs(), "other")
#: The lag buckets, in windows back from the present one: ``(first, last)``, ``None``: no end.
LAG_BUCKETS: tuple[tuple[int, int | None], ...] = ((1, 1), (2, 3), (4, 7), (8, 15), (16, None))
#: "Windows since" of a column that has never been non-zero.
NEVER = -1.0
_VERB_INDEX = {v: i for i, v in enumerate(STREAM_VERBS)}


def window_verb_counts(obs: Mapping[str, Any]) -> np.ndarray:
    """How many events of each verb of :data:`STREAM_VERBS` one window holds (verbs only:
    no actor, argument, room or tick is read). Malformed events JSON counts as no events."""
    out = np.zeros(len(STREAM_VERBS), dtype=np.float64)
    for ev in parse_events(obs):
        out[_VERB_INDEX.get(str(ev.get("verb")), len(STREAM_VERBS) - 1)] += 1.0
    return out


def _lag_name(a: int, b: int | None) -> str:
    return f"lag{a}" if b == a else (f"lag{a}-{b}" if b is not None else f"lag{a}+")


def stream_feature_names(channels: Sequence[str]) -> tuple[str, ...]:
    """The names of :func:`stream_matrix`'s columns for per-window ``channels``:
    ``now:C``, ``lagA-B:C`` per bucket, ``since:C``, then ``window``."""
    return (*(f"now:{c}" for c in channels),
            *(f"{_lag_name(a, b)}:{c}" for a, b in LAG_BUCKETS for c in channels),
            *(f"since:{c}" for c in channels), "window")


def stream_matrix(counts: np.ndarray) -> np.ndarray:
    """The features of every window of a stream of per-window channel values ``counts``
    (``(windows, channels)``; row ``t`` is window ``t``, window 0 the reset observation):
    row ``t`` holds window ``t``'s values, their sums over each lag bucket of
    :data:`LAG_BUCKETS` (windows ``t - last`` ... ``t - first``, clipped at 0), the windows
    since each channel was last non-zero (0: in window ``t``; :data:`NEVER`: not yet), and
    ``t`` (:func:`stream_feature_names`)."""
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2:
        raise ValueError(f"stream_matrix needs a (windows, channels) array, got shape {c.shape}")
    n, k = c.shape
    cum = np.vstack([np.zeros((1, k)), np.cumsum(c, axis=0)])  # cum[j] = sum of rows < j
    t = np.arange(n)
    parts = [c]
    for a, b in LAG_BUCKETS:
        hi = t - a + 1                                   # rows < hi: up to t - a
        lo = np.zeros(n, dtype=int) if b is None else np.maximum(t - b, 0)
        hi = np.maximum(hi, 0)
        lo = np.minimum(lo, hi)
        parts.append(cum[hi] - cum[lo])
    since = np.full((n, k), NEVER)
    last = np.full(k, -1)
    for i in range(n):
        last = np.where(c[i] != 0, i, last)
        since[i] = np.where(last >= 0, i - last, NEVER)
    parts.append(since)
    parts.append(t[:, None].astype(np.float64))
    return np.hstack(parts)


class Scorer(Protocol):
    """What a :class:`StreamFiringAgent` reads: the probability that intervening after a
    window is precise, from the window's feature row (or the whole stream so far), and the
    threshold at which it fires."""

    threshold: float

    def prob_stream(self, counts: np.ndarray) -> float: ...


class StreamFiringAgent(PhysicalRulesAgent):
    """Fires once, when ``scorer.prob_stream(counts so far) >= scorer.threshold``, then helps
    the latest visible struggle with ``physical-rules``' best-guess program (waiting for a
    struggle with a program if none was seen yet). ``fire`` set from outside (the pixel
    agent) replaces the scorer. Reads only ``obs`` and ``info``."""

    name = "event-stream"

    def __init__(self, scorer: Any = None, name: str | None = None) -> None:
        super().__init__()
        self.scorer = scorer
        if name:
            self.name = name

    def reset(self, *, seed: int | None = None) -> None:
        super().reset(seed=seed)
        self._counts: list[np.ndarray] = []
        self.fired_window: int | None = None
        #: the firing decision of the present window, set by a wrapper (None: the scorer's)
        self.fire: bool | None = None

    def decide(self, observation: Mapping[str, Any], info: Mapping[str, Any],
               cues: list[Any]) -> list[str]:
        self._counts.append(window_verb_counts(observation))
        if self.fired_window is None:
            fire = self.fire
            if fire is None and self.scorer is not None:
                fire = self.scorer.prob_stream(np.array(self._counts)) >= self.scorer.threshold
            if fire:
                self.fired_window = len(self._counts) - 1
        if self.fired_window is None:
            return []
        for s in reversed(self.tracker.struggles):  # the latest struggle with a program
            program = self.program(s)
            if program:
                return program
        return []


# ------------------------------------------------------------------------- pixels
def palette_codes() -> tuple[np.ndarray, tuple[str, ...]]:
    """The palette's colours packed as ``r << 16 | g << 8 | b`` (sorted) and their names;
    read from :data:`~mindhelper_env.render.sprites.PALETTE` whatever it holds."""
    from mindhelper_env.render import sprites

    pal = np.asarray(sprites.PALETTE, dtype=np.int64).reshape(-1, 3)
    names = tuple(getattr(sprites, "PALETTE_NAMES", None) or
                  (f"c{i}" for i in range(len(pal))))
    codes = (pal[:, 0] << 16) | (pal[:, 1] << 8) | pal[:, 2]
    order = np.argsort(codes, kind="stable")
    return codes[order], tuple(str(names[i]) for i in order)


def pixel_channel_names() -> tuple[str, ...]:
    """The channels of :func:`frame_change_counts`: ``to:COLOUR`` and ``from:COLOUR`` for
    every palette colour, then ``to:other`` and ``from:other`` (a colour off the palette)."""
    _, names = palette_codes()
    cols = (*names, "other")
    return (*(f"to:{c}" for c in cols), *(f"from:{c}" for c in cols))


def _colour_index(frame: np.ndarray, codes: np.ndarray) -> np.ndarray:
    f = frame.astype(np.int64)
    packed = (f[..., 0] << 16) | (f[..., 1] << 8) | f[..., 2]
    pos = np.searchsorted(codes, packed)
    pos_c = np.minimum(pos, len(codes) - 1)
    return np.where(codes[pos_c] == packed, pos_c, len(codes))


def frame_change_counts(frames: np.ndarray, previous: np.ndarray | None = None) -> np.ndarray:
    """Per palette colour, how many pixels changed *to* it and *from* it between consecutive
    frames of a window (``(ticks, H, W, 3)``; ``previous``: the last frame of the window
    before, so that the first frame's change counts too), summed over the window's frames
    (:func:`pixel_channel_names`). No parser: colours only."""
    codes, _ = palette_codes()
    k = len(codes) + 1
    arr = np.asarray(frames)
    if arr.ndim != 4 or arr.shape[-1] != 3:
        raise ValueError(f"frame_change_counts needs frames (ticks, H, W, 3), got {arr.shape}")
    seq = list(arr) if previous is None else [np.asarray(previous), *arr]
    to = np.zeros(k)
    frm = np.zeros(k)
    idx_prev = _colour_index(seq[0], codes) if seq else None
    for f in seq[1:]:
        idx = _colour_index(f, codes)
        changed = idx != idx_prev
        to += np.bincount(idx[changed], minlength=k)
        frm += np.bincount(idx_prev[changed], minlength=k)
        idx_prev = idx
    return np.concatenate([to, frm])


class PixelStreamAgent:
    """:class:`StreamFiringAgent` on ``obs_mode="rgb"``: the firing decision from the frames'
    colour-change counts (``scorer.prob_stream`` over :func:`frame_change_counts` per
    window), the program from the pixel-perception reference
    (:class:`~mindhelper_env.agents.perceive.PixelFed` feeding the inner agent)."""

    def __init__(self, scorer: Any, name: str = "pixel-stream") -> None:
        from mindhelper_env.agents.perceive import PixelFed

        self.scorer = scorer
        self.name = name
        self.inner = StreamFiringAgent(None, name)
        self.fed = PixelFed(self.inner)

    @property
    def usage(self) -> Any:
        return self.inner.usage

    def reset(self, *, seed: int | None = None) -> None:
        self.fed.reset(seed=seed)
        self._rows: list[np.ndarray] = []
        self._last: np.ndarray | None = None

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        frames = observation.get("rgb") if isinstance(observation, dict) else observation
        arr = np.asarray(frames)
        self._rows.append(frame_change_counts(arr, self._last))
        self._last = arr[-1].copy() if arr.ndim == 4 and len(arr) else self._last
        if self.inner.fired_window is None:
            self.inner.fire = bool(self.scorer.prob_stream(np.array(self._rows))
                                   >= self.scorer.threshold)
        return self.fed.act(observation, info)
