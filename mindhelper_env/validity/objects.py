"""Instruments that see objects: the learned physical tracker and the object-centric scan.

Both read silent rollouts tracked by :class:`~mindhelper_env.agents.physical.ObjectTracker`
(object trajectories, bodies, the scene, household common sense; nothing about who saw what):

* :func:`physical_data` rolls an episode out with the robot silent and keeps every visible
  struggle with its physical features (:func:`~mindhelper_env.agents.physical.struggle_features`,
  ``cue:``), what the struggler and the others did in the :data:`HISTORY_TICKS` ticks after
  it (``hist:``: up to the deadline, which is the cue's tick plus five in every help family)
  and what came after that (``post:``, post-hoc: reported, never bounded);
* :class:`PhysicalLearnedAgent` — gradient boosting (scikit-learn) on the ``cue:`` features of
  every struggle of training-seed episodes (:func:`train_physical_model`), its threshold
  tuned on held-out training seeds; it acts with the rule variant's best-guess program the
  first time it fires;
* :func:`object_scan` — per twin group, the best single feature, a depth-3 tree and gradient
  boosting, at the first struggle of anyone and at the focus person's first struggle (the
  focus person is read from the reference: an upper bound on what an agent can know), with
  and without the pre-deadline history, and with the post-hoc features.

Labels and the reference are read only to train and to score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mindhelper_env.agents.physical import (
    ROOM_HISTORY_FEATURES,
    STRUGGLE_FEATURES,
    ObjectTracker,
    PhysicalRulesAgent,
    Struggle,
    best_guess,
    room_history_features,
    struggle_features,
)
from mindhelper_env.validity.data import _group, training_episodes

__all__ = ["HISTORY_TICKS", "OBJECT_FEATURES", "CueRow", "PhysicalEpisode", "physical_data",
           "suite_physical_data", "training_physical_data", "PhysicalModel",
           "train_physical_model", "PhysicalLearnedAgent", "PHYSICAL_GRID", "STRICT_NAMES",
           "HISTORY_NAMES", "ROOM_TIMING_FEATURES", "SCAN_CUES", "SCAN_SETS",
           "object_scan", "episode_matrix"]

#: Ticks after a struggle that count as its pre-deadline history (the deadline is the
#: onset, the cue's tick, plus five in every help family; silent twins use the same span).
HISTORY_TICKS = 5

_NEXT_VERBS = ("walk", "open", "close", "grab", "putin", "putback", "look", "stretch",
               "stand", "phone", "give")


def _after_features(t: ObjectTracker, s: Struggle, lo: int, hi: int | None,
                    prefix: str) -> dict[str, float]:
    """What happened in ticks ``lo < tick <= hi`` (``hi`` None: to the end) after ``s``."""
    def within(tk: int) -> bool:
        return lo < tk and (hi is None or tk <= hi)

    f: dict[str, float] = {}
    mine = [a for a in t.acts.get(s.person, []) if within(a[0])]
    f[f"{prefix}:struggler_acts"] = float(len(mine))
    nxt = mine[0] if mine else None
    span = (hi - lo) if hi is not None else 80
    f[f"{prefix}:next_delay"] = float(nxt[0] - s.tick) if nxt else float(span + 1)
    for v in _NEXT_VERBS:
        f[f"{prefix}:next_{v}"] = float(nxt is not None and nxt[1] == v)
    f[f"{prefix}:next_other"] = float(nxt is not None and nxt[1] not in _NEXT_VERBS)
    f[f"{prefix}:struggler_grabs"] = float(sum(a[1] == "grab" for a in mine))
    f[f"{prefix}:struggler_struggles"] = float(sum(a[1] in ("look", "stretch", "stand")
                                                   for a in mine))
    rooms = [r for tk, r in t.room_trail.get(s.person, []) if within(tk)]
    me = s.bodies.get(s.person)
    f[f"{prefix}:struggler_left_room"] = float(any(r != (me.room if me else None)
                                                   for r in rooms))
    f[f"{prefix}:struggler_rooms"] = float(len(set(rooms)))
    others = [a for pid, acts in t.acts.items() if pid != s.person for a in acts
              if within(a[0])]
    f[f"{prefix}:others_acts"] = float(len(others))
    f[f"{prefix}:others_grabs"] = float(sum(a[1] == "grab" for a in others))
    f[f"{prefix}:gives_to_struggler"] = float(sum(a[1] == "give" and len(a[2]) >= 2
                                                  and a[2][1] == s.person for a in others))
    came = 0
    for pid, trail in t.room_trail.items():
        if pid != s.person and any(within(tk) and me is not None and r == me.room
                                   for tk, r in trail):
            came += 1
    f[f"{prefix}:others_entered_room"] = float(came)
    return f


def _after_names(prefix: str) -> list[str]:
    return [f"{prefix}:{n}" for n in (
        "struggler_acts", "next_delay", *(f"next_{v}" for v in _NEXT_VERBS), "next_other",
        "struggler_grabs", "struggler_struggles", "struggler_left_room", "struggler_rooms",
        "others_acts", "others_grabs", "gives_to_struggler", "others_entered_room")]


#: Names of the object-centric features: ``cue:`` (the physical state at the struggle),
#: ``hist:`` (the :data:`HISTORY_TICKS` ticks after it), ``post:`` (after that; post-hoc).
OBJECT_FEATURES: tuple[str, ...] = ("cue:has_cue", *(f"cue:{n}" for n in STRUGGLE_FEATURES),
                                    *_after_names("hist"), *_after_names("post"))


@dataclass
class CueRow:
    """One struggle of a silent rollout: who, when, where (``place``), the decision tick that
    follows its window, whether intervening then would be precise (the label), the object
    or container :func:`~mindhelper_env.agents.physical.best_guess` names (``target``), and
    its features."""

    person: int
    tick: int
    decision_tick: int
    positive: bool
    features: dict[str, float]
    place: int | None = None
    target: int | None = None


@dataclass
class PhysicalEpisode:
    """A silent rollout seen by the object tracker, with the labels used for training."""

    family: str
    group: str | None
    needs_help: bool
    focus: int | None
    target: int | None = None
    cues: list[CueRow] = field(default_factory=list)

    def first_cue(self) -> CueRow | None:
        return self.cues[0] if self.cues else None

    def focus_cue(self) -> CueRow | None:
        """The focus person's struggle about the episode's object: their first struggle at
        or about the reference's target object, else their first struggle (the focus person
        and the target come from the reference: an upper bound on what an agent knows)."""
        mine = [c for c in self.cues if c.person == self.focus]
        for c in mine:
            if self.target is not None and self.target in (c.target, c.place):
                return c
        return mine[0] if mine else None


def physical_data(spec: Mapping[str, Any]) -> PhysicalEpisode:
    """Roll ``spec`` out with the robot silent; every struggle with its features."""
    import gymnasium as gym

    import mindhelper_env  # noqa: F401 - registers the env

    ref = spec["reference"]
    window = ref.get("window") if ref.get("needs_intervention") else None
    t = ObjectTracker()
    from mindhelper_env.evaluation import DEFAULT_ENV_ID

    # the episode is given: any current id plays it as it is
    env = gym.make(DEFAULT_ENV_ID)
    pending: list[tuple[Struggle, int, dict[str, float], Any]] = []
    last_tick = 0
    try:
        obs, info = env.reset(options={"episode": dict(spec)})
        t.update(obs, info)
        while True:
            obs, _, term, trunc, info = env.step("none")
            n = len(t.struggles)
            t.update(obs, info)
            tick = int(info.get("tick", 0))
            last_tick = tick
            for s in t.struggles[n:]:
                s.decision_tick = tick
                guess = best_guess(t, s)
                pending.append((s, tick, {**struggle_features(t, s),
                                          **room_history_features(t, s)},
                                None if guess is None else guess.target))
            if term or trunc:
                break
    finally:
        env.close()
    fam = str(spec["family"])
    ep = PhysicalEpisode(fam, _group(fam), bool(ref.get("needs_intervention")),
                         ref.get("focus_actor"), ref.get("target_object"))
    for s, tick, feats, target in pending:
        positive = window is not None and \
            int(window["onset_tick"]) <= tick <= int(window["deadline_tick"])
        row = {"cue:has_cue": 1.0, **{k if k.startswith("room:") else f"cue:{k}": v
                                      for k, v in feats.items()}}
        row.update(_after_features(t, s, s.tick, s.tick + HISTORY_TICKS, "hist"))
        row.update(_after_features(t, s, s.tick + HISTORY_TICKS, max(last_tick, s.tick),
                                   "post"))
        ep.cues.append(CueRow(s.person, s.tick, tick, positive, row, s.place, target))
    return ep


def suite_physical_data(suite: str, limit: int | None = None) -> list[PhysicalEpisode]:
    """:class:`PhysicalEpisode` of the first ``limit`` episodes of ``suite``."""
    from mindhelper_env.scenarios.suites import SUITES, suite_episode

    n = int(SUITES[suite]["n"]) if limit is None else min(limit, int(SUITES[suite]["n"]))
    return [physical_data(suite_episode(suite, i)) for i in range(n)]


def training_physical_data(n: int, seed: int = 0, house: Any = None,
                           specs: Iterable[Mapping[str, Any]] | None = None,
                           generator: str | None = None) -> list[PhysicalEpisode]:
    """:class:`PhysicalEpisode` of ``n`` training-seed episodes of ``generator``
    (:func:`~mindhelper_env.validity.training_episodes`), or of ``specs`` if given."""
    specs = training_episodes(n, seed, house=house, generator=generator) \
        if specs is None else specs
    return [physical_data(s) for s in specs]


# ------------------------------------------------------------------ the learned tracker
_CUE_NAMES = tuple(f"cue:{n}" for n in STRUGGLE_FEATURES)
#: Struggle features that time the struggler's stay in rooms: set against how long ago the
#: object moved (``last_move_to_look``), how long the struggler has been in the room says
#: whether they were there when it moved. Trained on 4,000 ``mh-gen-3.1`` training seeds a
#: learner reading them reached 57.2 PHA on ``vh-test-v4`` (docs/validity.md), so the strict
#: learner leaves them to the room-history one.
ROOM_TIMING_FEATURES: tuple[str, ...] = ("ticks_in_room", "struggler_rooms",
                                         "struggler_room_changes")
#: The strict learner's features: the physical state at the struggle, no record of where
#: people were when things happened (``physical-learned``).
STRICT_NAMES: tuple[str, ...] = tuple(f"cue:{n}" for n in STRUGGLE_FEATURES
                                      if n not in ROOM_TIMING_FEATURES)
#: The room-history learner's features: every struggle feature plus the struggler's room
#: when the object moved and the doors then (``physical-learned-history``; reported, not
#: bounded).
HISTORY_NAMES: tuple[str, ...] = (*_CUE_NAMES, *ROOM_HISTORY_FEATURES)
#: What :func:`train_physical_model` tunes on held-out training seeds: depth, number of
#: trees, and how many of the most important features to keep (None: all).
PHYSICAL_GRID: dict[str, tuple[Any, ...]] = {
    "max_depth": (2, 3, 5), "n_estimators": (150, 400), "top_features": (None, 20)}


def _gb(seed: int = 0, max_depth: int = 3, n_estimators: int = 150) -> Any:
    from sklearn.ensemble import GradientBoostingClassifier

    return GradientBoostingClassifier(n_estimators=n_estimators, max_depth=max_depth,
                                      learning_rate=0.1 if n_estimators <= 150 else 0.05,
                                      subsample=0.9, random_state=seed)


@dataclass
class PhysicalModel:
    """Gradient boosting over a struggle's features (``names``: :data:`STRICT_NAMES` or a
    subset; with ``history`` also :data:`ROOM_HISTORY_FEATURES`): P(acting now is precise),
    the threshold at which :class:`PhysicalLearnedAgent` acts, and what was tuned
    (``params``, ``tune_score``: the balanced episode accuracy on the held-out training
    seeds)."""

    model: Any
    threshold: float
    names: tuple[str, ...] = _CUE_NAMES
    history: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    tune_score: float | None = None

    @property
    def agent_name(self) -> str:
        return "physical-learned-history" if self.history else "physical-learned"

    def prob(self, features: Mapping[str, float]) -> float:
        """P(precise) of one struggle's features (:func:`struggle_features`' names, without
        the ``cue:`` prefix; :func:`room_history_features`' with their ``room:`` prefix)."""
        if isinstance(self.model, float):  # the training labels were all alike
            return self.model
        x = np.array([[float(features.get(n.split(":", 1)[1] if n.startswith("cue:") else n,
                                          0.0)) for n in self.names]])
        return float(self.model.predict_proba(x)[0, 1])

    def probs(self, rows: Sequence[CueRow]) -> np.ndarray:
        """P(precise) of each struggle row (:class:`CueRow`)."""
        if not rows:
            return np.zeros(0)
        x = np.array([[r.features.get(n, 0.0) for n in self.names] for r in rows])
        if isinstance(self.model, float):
            return np.full(len(rows), self.model)
        return self.model.predict_proba(x)[:, 1]


def _episode_ok(eps: Sequence[PhysicalEpisode], probs: Sequence[np.ndarray],
                thr: float) -> np.ndarray:
    ok = []
    for ep, p in zip(eps, probs, strict=True):
        fired = np.nonzero(p >= thr)[0]
        if ep.needs_help:
            ok.append(bool(len(fired)) and ep.cues[int(fired[0])].positive)
        else:
            ok.append(not len(fired))
    return np.array(ok, dtype=bool)


def _pick_threshold(pm: PhysicalModel, tune: Sequence[PhysicalEpisode]) -> tuple[float, float]:
    """The threshold maximising the balanced episode accuracy on ``tune``, and that
    accuracy."""
    probs = [pm.probs(ep.cues) for ep in tune]
    flat = np.concatenate(probs) if probs else np.zeros(0)
    cands = np.unique(np.concatenate([np.quantile(flat, np.linspace(0, 1, 61)), [0.5]])) \
        if len(flat) else np.array([0.5])
    helps = np.array([ep.needs_help for ep in tune], dtype=bool)

    def balanced(thr: float) -> float:
        ok = _episode_ok(tune, probs, thr)
        parts = [ok[m].mean() for m in (helps, ~helps) if m.any()]
        return float(np.mean(parts)) if parts else 0.0

    if not len(tune):
        return 0.5, 0.0
    best = float(max(cands, key=balanced))
    return best, balanced(best)


def train_physical_model(fit: Sequence[PhysicalEpisode], tune: Sequence[PhysicalEpisode],
                         seed: int = 0, *, history: bool = False,
                         grid: Mapping[str, Sequence[Any]] | None = None) -> PhysicalModel:
    """Fit gradient boosting on every struggle of ``fit`` (label: acting at its decision
    tick would be precise); pick depth, number of trees and feature subset (``grid``,
    default :data:`PHYSICAL_GRID`; ``{}`` or one value each: no search) and then the
    threshold that maximise the balanced episode accuracy on ``tune`` (held-out training
    seeds, never suite episodes): the first firing precise in a help episode, no firing in a
    silent one. ``history``: also read the struggler's room history
    (:data:`HISTORY_NAMES`, ``physical-learned-history``); else the strict
    :data:`STRICT_NAMES`."""
    grid = dict(PHYSICAL_GRID if grid is None else grid)
    depths = tuple(grid.get("max_depth") or (3,))
    trees = tuple(grid.get("n_estimators") or (150,))
    tops = tuple(grid.get("top_features") or (None,))
    names = HISTORY_NAMES if history else STRICT_NAMES
    rows = [c for ep in fit for c in ep.cues]
    y = np.array([c.positive for c in rows], dtype=int)
    if len(rows) == 0 or len(set(y.tolist())) < 2:
        pm = PhysicalModel(float(y.mean()) if len(y) else 0.0, 0.5, names, history)
        pm.threshold, pm.tune_score = _pick_threshold(pm, tune)
        return pm
    x = np.array([[c.features.get(n, 0.0) for n in names] for c in rows])
    best: PhysicalModel | None = None
    for depth in depths:
        for n_trees in trees:
            full = _gb(seed, depth, n_trees).fit(x, y)
            for top in tops:
                if top is None or top >= len(names):
                    model, keep = full, names
                else:
                    idx = np.sort(np.argsort(-full.feature_importances_)[:int(top)])
                    keep = tuple(names[i] for i in idx)
                    model = _gb(seed, depth, n_trees).fit(x[:, idx], y)
                pm = PhysicalModel(model, 0.5, keep, history,
                                   {"max_depth": depth, "n_estimators": n_trees,
                                    "top_features": top})
                pm.threshold, pm.tune_score = _pick_threshold(pm, tune)
                if best is None or (pm.tune_score or 0.0) > (best.tune_score or 0.0):
                    best = pm
    assert best is not None
    return best


class PhysicalLearnedAgent(PhysicalRulesAgent):
    """``physical-learned`` (strict) or ``physical-learned-history`` (a model trained with
    ``history=True``): acts at the first struggle the :class:`PhysicalModel` scores at or
    above its threshold, with ``physical-rules``' best-guess program. Reads only ``obs`` and
    ``info``."""

    name = "physical-learned"

    def __init__(self, model: PhysicalModel) -> None:
        super().__init__()
        self.model = model
        self.name = model.agent_name

    def fires(self, s: Struggle) -> bool:
        feats = struggle_features(self.tracker, s)
        if self.model.history:
            feats.update(room_history_features(self.tracker, s))
        return self.model.prob(feats) >= self.model.threshold


# ------------------------------------------------------------------ the scan
#: The struggles the scan reads: the first of anyone; the focus person's first.
SCAN_CUES = ("first", "focus")
#: Feature sets: the state at the cue; with the pre-deadline history; with the post-hoc
#: features too (reported, not bounded).
SCAN_SETS: dict[str, tuple[str, ...]] = {
    "cue": ("cue",), "history": ("cue", "hist"), "post-hoc": ("cue", "hist", "post")}


def episode_matrix(eps: Sequence[PhysicalEpisode], cue: str,
                   names: Sequence[str]) -> np.ndarray:
    """One row per episode: the features of its ``cue`` (:data:`SCAN_CUES`) struggle, all
    zeros (``cue:has_cue`` 0) when it has none."""
    rows = []
    for ep in eps:
        c = ep.first_cue() if cue == "first" else ep.focus_cue()
        feats = c.features if c is not None else {}
        rows.append([float(feats.get(n, 0.0)) for n in names])
    return np.array(rows, dtype=float).reshape(len(eps), len(names))


def _gb_accuracy(x_tr: np.ndarray, y_tr: np.ndarray, x_te: np.ndarray,
                 y_te: np.ndarray) -> dict[str, float]:
    if len(set(y_tr.tolist())) < 2:
        return {"train": 1.0, "test": float(np.mean(y_te == y_tr[0])) if len(y_te) else 0.0}
    m = _gb().fit(x_tr, y_tr)
    return {"train": float(m.score(x_tr, y_tr)), "test": float(m.score(x_te, y_te))}


def object_scan(train: Sequence[PhysicalEpisode], test: Sequence[PhysicalEpisode], *,
                cues: Sequence[str] = SCAN_CUES,
                sets: Sequence[str] = tuple(SCAN_SETS)) -> dict[str, dict[str, Any]]:
    """Per twin group, per cue (:data:`SCAN_CUES`) and feature set (:data:`SCAN_SETS`): the
    best single-feature threshold rule, a depth-3 tree and gradient boosting, trained on the
    group's training episodes and tested on its suite episodes (help vs its twins).

    Returns ``{group: {"n_train", "n_test", "<cue>/<set>": {"single": {...}, "tree":
    {"train", "test", "rules"}, "gb": {"train", "test"}}}}``.
    """
    from mindhelper_env.validity.core import _tree, best_single_feature, twin_groups

    out: dict[str, dict[str, Any]] = {}
    for g in twin_groups():
        tr = [e for e in train if e.group == g]
        te = [e for e in test if e.group == g]
        if not tr or not te:
            continue
        y_tr = np.array([e.needs_help for e in tr], dtype=int)
        y_te = np.array([e.needs_help for e in te], dtype=int)
        res: dict[str, Any] = {"n_train": len(tr), "n_test": len(te)}
        for cue in cues:
            for s in sets:
                names = [n for n in OBJECT_FEATURES if n.split(":", 1)[0] in SCAN_SETS[s]]
                x_tr, x_te = episode_matrix(tr, cue, names), episode_matrix(te, cue, names)
                res[f"{cue}/{s}"] = {
                    "single": best_single_feature(x_tr, y_tr, x_te, y_te, names),
                    "tree": _tree(x_tr, y_tr, x_te, y_te, names),
                    "gb": _gb_accuracy(x_tr, y_tr, x_te, y_te)}
        out[g] = res
    return out
