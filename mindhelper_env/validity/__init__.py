"""Validity checks of the benchmark: can it be passed without tracking minds?

A benchmark for theory of mind is only meaningful if nothing but a mind separates help from
silence (docs/validity.md). This package holds the measuring instruments, usable on any
suite; everything reads only what an agent gets (``obs`` and ``info``), plus the labels and
the reference only to train and to score:

* :mod:`~mindhelper_env.validity.core` — playing agents and scoring them overall and per
  twin group, the shortcut baselines and ablations, bag-of-words and window classifiers, the
  episode-feature scan, :data:`BOUNDS` and :func:`check_bounds`;
* :mod:`~mindhelper_env.validity.data` — silent rollouts and the observable episode features
  the classifiers and the scan read;
* :mod:`~mindhelper_env.validity.objects` — the object-centric instruments: silent rollouts
  that track objects (:func:`physical_data`), the learned physical tracker
  (:class:`PhysicalLearnedAgent`, gradient boosting on the physical state at each struggle)
  and the object-centric feature scan (:func:`object_scan`);
* :mod:`~mindhelper_env.validity.timing` — the timing scan: per twin group, whether any gap
  between two events up to the focus person's cue tells the help side from the twin's on
  fresh bases (:func:`~mindhelper_env.validity.timing.timing_scan`);
* :mod:`~mindhelper_env.validity.decisive` — per twin group, whether anyone but the mover
  is busy or away at the decisive moment (the move, the emptying, the tell, the delivery,
  the struggle), as a classifier of the side (:func:`~mindhelper_env.validity.decisive.
  decisive_scan`);
* :mod:`~mindhelper_env.validity.fresh` — agents and classifiers on fresh episodes of a
  suite's generator, per twin group with 95 % intervals (:func:`fresh_episodes`,
  :func:`play_episodes`, :func:`episode_scores`);
* :mod:`~mindhelper_env.validity.eventstream` (gradient boosting),
  :mod:`~mindhelper_env.validity.eventstream_nn` (a GRU) and
  :mod:`~mindhelper_env.validity.pixelstream` (frame differences) — learners over house-wide
  event timing with no notion of *who*; :mod:`~mindhelper_env.validity.decisive` — the
  decisive-moment statistic; :mod:`~mindhelper_env.validity.eventstream_bench` — all of them
  with the unbound coarse mind, and their bounds (imported on use, not re-exported here);
* :mod:`~mindhelper_env.validity.bounds` — the bound sets (:data:`BOUNDS` for the
  ``mh-gen-2.x`` suites, :data:`BOUNDS_V3` for ``mh-gen-3.x``) and the checks of the new
  instruments (:func:`check_bounds_v3`).

The rule-based agents they play live with the other agents: ``physical-rules``
(:mod:`mindhelper_env.agents.physical`), ``coarse-mind`` and its ladder ``coarse-mind-a``
... ``-d`` (:mod:`mindhelper_env.agents.coarse_mind`) and the hedges
(:mod:`mindhelper_env.agents.hedge`: ``+prefixN``, ``+waitN``, ``+repeatN``, ``+delayN``).
"""

from __future__ import annotations

from mindhelper_env.validity.bounds import (
    BOUNDS_V3,
    COARSE_MIND,
    HEDGE_KINDS,
    NON_MIND_AGENTS,
    base_agent,
    bounds_for,
    check_bounds_v3,
    generator_of,
    is_v3,
)
from mindhelper_env.validity.core import *  # noqa: F403 - the instruments' public names
from mindhelper_env.validity.core import __all__ as _core_all
from mindhelper_env.validity.fresh import (
    FRESH_SEED,
    episode_scores,
    fresh_episodes,
    pha_interval,
    play_episodes,
)
from mindhelper_env.validity.objects import (
    HISTORY_NAMES,
    HISTORY_TICKS,
    OBJECT_FEATURES,
    PHYSICAL_GRID,
    SCAN_CUES,
    SCAN_SETS,
    STRICT_NAMES,
    CueRow,
    PhysicalEpisode,
    PhysicalLearnedAgent,
    PhysicalModel,
    object_scan,
    physical_data,
    suite_physical_data,
    train_physical_model,
    training_physical_data,
)

__all__ = [*_core_all, "BOUNDS_V3", "COARSE_MIND", "HEDGE_KINDS", "NON_MIND_AGENTS",
           "base_agent", "bounds_for", "check_bounds_v3", "generator_of", "is_v3",
           "HISTORY_TICKS", "OBJECT_FEATURES", "SCAN_CUES", "SCAN_SETS", "CueRow",
           "PhysicalEpisode", "PhysicalLearnedAgent", "PhysicalModel", "object_scan",
           "physical_data", "suite_physical_data", "train_physical_model",
           "training_physical_data", "HISTORY_NAMES", "PHYSICAL_GRID", "STRICT_NAMES",
           "FRESH_SEED", "fresh_episodes", "play_episodes", "episode_scores", "pha_interval"]
