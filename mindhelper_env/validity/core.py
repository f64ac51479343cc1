"""The core validity instruments: can the benchmark be passed without tracking minds?

A benchmark for theory of mind is only meaningful if surface cues do not pass it
(docs/validity.md). This module (re-exported by :mod:`mindhelper_env.validity`) holds the
instruments that read text, events and episode features, on any suite:

* :func:`agent_records` / :func:`play_records` play agents that read only ``obs`` and
  ``info`` (registered names, or agent objects such as :class:`WindowClassifierAgent`) and
  return their result records; :func:`scores` turns records into metrics overall and per
  twin group (:func:`twin_groups`); :func:`agent_scores` is the short form;
* the **ablations** ``ablation-shared-view`` and ``ablation-own-actions`` (the belief tracker
  with per-person perspectives removed, :mod:`mindhelper_env.agents.ablations`) and the
  **shortcut baselines** (:data:`SHORTCUT_BASELINES`: ``reactive``, ``moved-absent``,
  ``prior``, ``perspective-free``, and the trained window classifier), each also played with
  the movement-prefix hedge (:func:`hedged`);
* :func:`bag_of_words_accuracy` trains a bag-of-words logistic regression on training-seed
  episodes (:func:`training_episodes`) and predicts *needs help* from the reset observation,
  or from the reset plus the first windows;
* :func:`episode_data` rolls an episode out with the robot silent (what any agent sees until
  it first acts) and extracts every window's tokens and label, the cue-time narration and
  :data:`FEATURES` (over a hundred observable episode features); :func:`train_window_classifier`,
  :func:`cue_classifier_accuracy` and :func:`feature_scan` are the classifiers and the scan
  measured per twin group;
* :data:`BOUNDS` are the bounds the package promises on a 1,000-episode ``mh-gen-2.x``
  suite (:data:`TEST_SUITE`; reported by ``benchmarks/bench_validity.py``) and, with looser
  margins, on :data:`DEV_SUITE` (``tests/test_validity.py``); :func:`check_bounds` lists the
  broken ones (``mh-gen-3.x`` suites: :data:`~mindhelper_env.validity.bounds.BOUNDS_V3`).

Labels and ground truth are read only to train and to score, never by an agent.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mindhelper_env.agents.belief import ReactiveAgent
from mindhelper_env.validity.data import (  # re-exported names
    FEATURES,
    SCAN_BOUNDED_KINDS,
    EpisodeData,
    _group,
    _tokens,
    episode_data,
    suite_data,
    training_data,
    training_episodes,
    window_tokens,
)

__all__ = ["BOUNDS", "SHORTCUTS", "SHORTCUT_BASELINES", "ABLATION_AGENTS", "DEV_SUITE",
           "TEST_SUITE", "DEV_SUITE_V3", "TEST_SUITE_V3", "HEDGE_LINES", "GOAL_ABLATION", "goal_groups", "WINDOW_CONTEXTS", "WINDOW_AGENTS", "BELIEF_ABILITIES", "hedged", "twin_groups",
           "belief_groups", "agent_scores", "agent_records", "play_records", "scores",
           "narrations", "training_episodes", "bag_of_words_accuracy", "EpisodeData",
           "episode_data", "window_tokens", "WindowClassifier", "train_window_classifier",
           "SCAN_BOUNDED_KINDS", "WindowClassifierAgent", "text_classifier_accuracy", "cue_classifier_accuracy",
           "window_classifier_accuracy", "window_docs", "suite_data", "training_data", "FEATURES", "feature_scan",
           "best_single_feature", "check_bounds"]

#: The development and reporting suites (the lead switches both to v2 at once).
DEV_SUITE = "vh-dev-v2"
TEST_SUITE = "vh-test-v2"
#: The suites of the default ``mh-gen-3.x`` generator (``mh-gen-3.2``), held to
#: :data:`~mindhelper_env.validity.BOUNDS_V3` (``tests/test_validity_objects.py`` guards the
#: dev one; every ``mh-gen-3.x`` suite is held to the same bounds).
DEV_SUITE_V3 = "vh-dev-v5"
TEST_SUITE_V3 = "vh-test-v5"

#: The original shortcut baselines (checked with v1 margins by the v1 tests).
SHORTCUTS = ("reactive", "moved-absent", "prior")
#: Every registered shortcut baseline (read obs and info, track no minds); the trained
#: window classifier (:class:`WindowClassifierAgent`) is one more.
SHORTCUT_BASELINES = (*SHORTCUTS, "perspective-free")
#: The belief tracker with per-person perspectives removed.
ABLATION_AGENTS = ("ablation-shared-view", "ablation-own-actions")
#: The belief tracker without the task's earlier steps (goal inference removed).
GOAL_ABLATION = "ablation-goal-blind"
#: Abilities whose decision turns on what someone believes: in twin groups testing one of
#: them, an agent without perspectives must fail.
BELIEF_ABILITIES = ("location_belief", "communication", "state_belief")
#: The movement-prefix hedge played with every shortcut (``agent+prefix8``).
HEDGE_LINES = 8
#: The window classifiers played: tokens of the window alone, and with the two before it.
WINDOW_CONTEXTS = (0, 2)
#: Their agent names (:class:`WindowClassifierAgent`).
WINDOW_AGENTS = tuple("window-classifier" + (f"-ctx{c}" if c else "") for c in WINDOW_CONTEXTS)

#: Promised bounds on a 1,000-episode suite (percentages; accuracies as fractions).
BOUNDS: dict[str, float] = {
    "oracle_min": 100.0,             # every metric
    "tracker_PHA_min": 95.0,
    "tracker_PIA_min": 90.0,
    "ablation_PHA_max": 60.0,        # overall and in every belief twin group
    "shortcut_PIA_max": 65.0,        # every shortcut baseline, hedged or not
    "shortcut_PHA_max": 55.0,
    # PHA(agent+prefix8) - PHA(agent), every agent: the hedge must not pay (it may cost a
    # little: 8 ticks of walking make some help arrive too late to work)
    "hedge_PHA_change_max": 1.0,     # |PHA with the hedge - PHA without|, every agent
    "goal_blind_PHR_max": 40.0,      # in every twin group that tests goal inference
    "reset_classifier_max": 0.60,
    "cue_classifier_max": 0.60,      # every twin group
    "window_classifier_max": 0.60,   # episode accuracy, every twin group
    "feature_single_max": 0.60,      # every twin group
    "feature_tree_max": 0.65,        # depth-3 tree, every twin group
}


def hedged(name: str, lines: int = HEDGE_LINES) -> str:
    """The registry name of ``name`` played with the movement-prefix hedge."""
    return f"{name}+prefix{lines}"


def twin_groups() -> tuple[str, ...]:
    """The twin groups: one per help family (the help family and its silent twins)."""
    from mindhelper_env.scenarios.spec import TWINS

    return tuple(TWINS)


def goal_groups() -> tuple[str, ...]:
    """The twin groups whose help family tests goal inference."""
    from mindhelper_env.scenarios.spec import family_abilities

    return tuple(g for g in twin_groups() if "goal_inference" in family_abilities(g))


def belief_groups() -> tuple[str, ...]:
    """The twin groups whose decision turns on a belief (:data:`BELIEF_ABILITIES`)."""
    from mindhelper_env.scenarios.spec import family_abilities

    return tuple(g for g in twin_groups() if set(family_abilities(g)) & set(BELIEF_ABILITIES))


# ---------------------------------------------------------------------------- playing
def agent_records(suite: str, agents: Sequence[str], *, workers: int = 1,
                  limit: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Play registered ``agents`` on ``suite`` (:func:`~mindhelper_env.evaluation.evaluate`
    into a temporary folder) and return ``{agent: result records}``."""
    from mindhelper_env.evaluation import evaluate, read_result_file, result_file_name

    out: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        evaluate(suite, list(agents), tmp, workers=workers, limit=limit, progress=False,
                 plots=False, timing=False)
        for a in agents:
            out[a] = [r for _, r in read_result_file(f"{tmp}/{result_file_name(a)}")]
    return out


def play_records(suite: str, agent: Any, name: str, *,
                 limit: int | None = None) -> list[dict[str, Any]]:
    """Play one agent object on ``suite`` (on the env id it was released on) in this process
    and return its records."""
    from mindhelper_env.evaluation import make_env, run_episode, suite_env_id
    from mindhelper_env.scenarios.suites import SUITES

    n = int(SUITES[suite]["n"]) if limit is None else min(limit, int(SUITES[suite]["n"]))
    env = make_env(suite_env_id(suite))
    try:
        return [run_episode(env, agent, seed=i, options={"suite": suite, "index": i},
                            agent_name=name, timing=False) for i in range(n)]
    finally:
        env.close()


def scores(records: Sequence[Mapping[str, Any]],
           suite: str | Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Metrics (percentages) of one agent's records: overall, plus ``"groups"``:
    ``{twin group: metrics}`` (each with ``"accuracy"``, the share of its episodes decided
    right: precise when help is needed, never intervening when not). ``suite``: a suite
    name, or ``{episode_id: reference record}`` (fresh episodes,
    :func:`~mindhelper_env.validity.fresh.episode_scores`)."""
    from mindhelper_env.metrics import as_percentages, compute_metrics
    from mindhelper_env.scenarios.suites import suite_references

    refs = suite_references(suite) if isinstance(suite, str) else suite
    out = as_percentages(compute_metrics(records, refs, by_family=False))
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        g = _group(refs[r["episode_id"]]["family"])
        if g is not None:
            groups.setdefault(g, []).append(r)
    out["groups"] = {}
    for g in twin_groups():
        if g not in groups:
            continue
        m = as_percentages(compute_metrics(groups[g], refs, by_family=False))
        n_h, n_s = m["n_help"] or 0, m["n_silent"] or 0
        hit = (m["PIR"] or 0.0) * n_h + (m["PSR"] or 0.0) * n_s
        m["accuracy"] = hit / max(1, n_h + n_s)
        out["groups"][g] = m
    return out


def agent_scores(suite: str, agents: Sequence[str], *, workers: int = 1,
                 limit: int | None = None) -> dict[str, dict[str, Any]]:
    """Play ``agents`` on ``suite`` and return ``{agent: metrics (percentages)}`` (with
    ``"groups"``, see :func:`scores`)."""
    recs = agent_records(suite, agents, workers=workers, limit=limit)
    return {a: scores(r, suite) for a, r in recs.items()}




def narrations(spec: dict[str, Any], windows: int = 0) -> str:
    """The robot's narration of an episode: the reset observation, then ``windows`` windows
    in which the robot stays silent."""
    import gymnasium as gym

    import mindhelper_env  # noqa: F401 - registers the env
    from mindhelper_env.evaluation import DEFAULT_ENV_ID

    # the episode is given: any current id plays it as it is
    env = gym.make(DEFAULT_ENV_ID)
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

    train = training_episodes(n_train, seed, house=SUITES[suite].get("house"),
                              generator=SUITES[suite].get("generator"))
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


# ------------------------------------------------------------------ text classifiers
def _fit_text(docs: Sequence[Sequence[str]], y: Sequence[bool]) -> Any:
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    y = np.asarray(y, dtype=int)
    vec = CountVectorizer(analyzer=_identity, min_df=3)
    model = make_pipeline(vec, FunctionTransformer(_log1p_sparse, accept_sparse=True),
                          LogisticRegression(C=1.0, max_iter=2000, solver="liblinear"))
    if len(set(y.tolist())) < 2:
        return _Constant(float(y[0]) if len(y) else 0.0)
    return model.fit(list(docs), y)


def _identity(doc: Any) -> Any:
    return doc


def _log1p_sparse(x: Any) -> Any:
    x = x.astype(float)
    x.data = np.log1p(x.data)
    return x


class _Constant:
    def __init__(self, p: float) -> None:
        self.p = p

    def predict_proba(self, docs: Sequence[Any]) -> np.ndarray:
        return np.array([[1 - self.p, self.p]] * len(docs))


@dataclass
class WindowClassifier:
    """A window-level logistic regression: P(intervening at the end of this window is
    precise), and the threshold at which :class:`WindowClassifierAgent` acts. With
    ``context=k`` each window's tokens also carry the words and event tokens of the ``k``
    windows before it (:func:`window_docs`)."""

    model: Any
    threshold: float
    context: int = 0

    def prob(self, tokens: Sequence[str]) -> float:
        """P(precise) of one window's tokens (the fitted weights read directly: the same
        number as the model's ``predict_proba``, without its per-call overhead)."""
        w = self._weights()
        if w is None:
            return float(self.model.predict_proba([list(tokens)])[0, 1])
        vocab, coef, bias = w
        counts: dict[int, int] = {}
        for t in tokens:
            j = vocab.get(t)
            if j is not None:
                counts[j] = counts.get(j, 0) + 1
        z = bias + sum(float(np.log1p(c)) * coef[j] for j, c in counts.items())
        return float(1.0 / (1.0 + np.exp(-z)))

    def _weights(self) -> tuple[dict[str, int], np.ndarray, float] | None:
        cached = self.__dict__.get("_cached_weights", False)
        if cached is not False:
            return cached
        steps = getattr(self.model, "named_steps", None)
        out = None
        if steps is not None:
            vec, lr = steps.get("countvectorizer"), steps.get("logisticregression")
            if vec is not None and lr is not None:
                out = (dict(vec.vocabulary_), np.asarray(lr.coef_[0], dtype=float),
                       float(lr.intercept_[0]))
        self.__dict__["_cached_weights"] = out
        return out


def window_docs(windows: Sequence[Sequence[str]], context: int = 0) -> list[list[str]]:
    """Each window's tokens, plus ``prevJ:TOKEN`` for the words and event tokens (not the
    bigrams) of the window ``J`` before it, ``J = 1 .. context``."""
    out = []
    for i, w in enumerate(windows):
        doc = list(w)
        for j in range(1, context + 1):
            if i - j >= 0:
                doc += [f"prev{j}:{t}" for t in windows[i - j]
                        if t.startswith("ev:") or "_" not in t]
        out.append(doc)
    return out


def _episode_decisions(data: Sequence[EpisodeData], probs: Sequence[np.ndarray],
                       thr: float) -> np.ndarray:
    ok = []
    for d, p in zip(data, probs, strict=True):
        fired = np.nonzero(p >= thr)[0]
        if d.needs_help:
            ok.append(bool(len(fired)) and d.positive[int(fired[0])])
        else:
            ok.append(not len(fired))
    return np.array(ok)


def train_window_classifier(train: Sequence[EpisodeData], context: int = 0) -> WindowClassifier:
    """Fit the window classifier on training episodes; the threshold maximises the training
    episodes' balanced decision accuracy (first firing precise / never firing)."""
    docs = [w for d in train for w in window_docs(d.windows, context)]
    y = [p for d in train for p in d.positive]
    model = _fit_text(docs, y)
    probs, k = [], 0
    flat = model.predict_proba(docs)[:, 1]
    for d in train:
        probs.append(flat[k:k + len(d.windows)])
        k += len(d.windows)
    cands = np.unique(np.quantile(flat[np.asarray(y, dtype=bool)], np.linspace(0, 1, 41))) \
        if any(y) else np.array([0.5])
    helps = np.array([d.needs_help for d in train])

    def balanced(thr: float) -> float:
        ok = _episode_decisions(train, probs, thr)
        parts = [ok[helps].mean() if helps.any() else None,
                 ok[~helps].mean() if (~helps).any() else None]
        parts = [p for p in parts if p is not None]
        return float(np.mean(parts)) if parts else 0.0

    best = max(cands, key=balanced)
    return WindowClassifier(model, float(best), int(context))


def window_classifier_accuracy(clf: WindowClassifier,
                               data: Sequence[EpisodeData]) -> dict[str, float]:
    """Episode decision accuracy of the window classifier's timing alone (first firing in
    the precise window, or never firing), overall and per twin group."""
    probs = [clf.model.predict_proba(window_docs(d.windows, clf.context))[:, 1] for d in data]
    ok = _episode_decisions(data, probs, clf.threshold)
    out = {"all": float(ok.mean()) if len(ok) else 0.0}
    for g in twin_groups():
        idx = [i for i, d in enumerate(data) if d.group == g]
        if idx:
            out[g] = float(ok[idx].mean())
    return out


class WindowClassifierAgent(ReactiveAgent):
    """Acts the first time the window classifier fires, with the ``reactive`` agent's
    best-guess program for the latest visible struggle (waits for one if none was seen)."""

    name = "window-classifier"

    def __init__(self, classifier: WindowClassifier) -> None:
        super().__init__()
        self.classifier = classifier
        if classifier.context:
            self.name = f"window-classifier-ctx{classifier.context}"

    def reset(self, *, seed: int | None = None) -> None:
        super().reset(seed=seed)
        self._fired = False
        self._windows: list[list[str]] = []

    def decide(self, observation: Mapping[str, Any], info: Mapping[str, Any],
               cues: list[Any]) -> list[str]:
        c = self.classifier.context
        self._windows = self._windows[-c:] if c else []
        self._windows.append(window_tokens(observation))
        if not self._fired:
            doc = window_docs(self._windows, c)[-1]
            self._fired = self.classifier.prob(doc) >= self.classifier.threshold
        if not self._fired or not self.tracker.cues:
            return []
        return super().decide(observation, info, [self.tracker.cues[-1]])


def text_classifier_accuracy(train: Sequence[EpisodeData], test: Sequence[EpisodeData],
                             docs: Any) -> dict[str, float]:
    """Accuracy of bag-of-words logistic regressions predicting needs-help from
    ``docs(episode_data)`` (a token list): one over all groups (``"all"``) and one trained
    on each twin group's training episodes (keys: the groups)."""
    out: dict[str, float] = {}
    model = _fit_text([docs(d) for d in train], [d.needs_help for d in train])
    pred = model.predict_proba([docs(d) for d in test])[:, 1] >= 0.5 if test else []
    truth = np.array([d.needs_help for d in test])
    out["all"] = float(np.mean(pred == truth)) if len(test) else 0.0
    for g in twin_groups():
        tr = [d for d in train if d.group == g]
        te = [d for d in test if d.group == g]
        if not tr or not te:
            continue
        m = _fit_text([docs(d) for d in tr], [d.needs_help for d in tr])
        p = m.predict_proba([docs(d) for d in te])[:, 1] >= 0.5
        out[g] = float(np.mean(p == np.array([d.needs_help for d in te])))
    return out


def cue_classifier_accuracy(train: Sequence[EpisodeData],
                            test: Sequence[EpisodeData]) -> dict[str, float]:
    """Accuracy of predicting needs-help from the narration up to and including the window of
    the first visible struggle: one classifier over all groups (``"all"``), and one trained
    on each twin group's training episodes (keys: the groups)."""
    return text_classifier_accuracy(train, test, EpisodeData.cue_tokens)


# ------------------------------------------------------------------ feature scan
def _matrix(data: Sequence[EpisodeData], names: Sequence[str]) -> np.ndarray:
    return np.array([[float(d.features.get(n, 0.0)) for n in names] for d in data])


def best_single_feature(x_tr: np.ndarray, y_tr: np.ndarray, x_te: np.ndarray,
                        y_te: np.ndarray, names: Sequence[str]) -> dict[str, Any]:
    """The single-feature threshold rule (``x > t`` or ``x <= t``) with the best training
    accuracy, and its test accuracy: ``{"feature", "threshold", "direction", "train",
    "test"}``."""
    best: dict[str, Any] = {"feature": None, "threshold": 0.0, "direction": 1,
                            "train": -1.0, "test": 0.0}
    y_tr = y_tr.astype(bool)
    for j, name in enumerate(names):
        col = x_tr[:, j]
        vals = np.unique(col)
        cuts = (vals[:-1] + vals[1:]) / 2 if len(vals) > 1 else vals
        for t in cuts:
            above = col > t
            for direction in (1, -1):
                pred = above if direction == 1 else ~above
                acc = float(np.mean(pred == y_tr))
                if acc > best["train"] + 1e-12:
                    best = {"feature": name, "threshold": float(t), "direction": direction,
                            "train": acc, "test": 0.0}
    if best["feature"] is not None:
        j = list(names).index(best["feature"])
        above = x_te[:, j] > best["threshold"]
        pred = above if best["direction"] == 1 else ~above
        best["test"] = float(np.mean(pred == y_te.astype(bool))) if len(y_te) else 0.0
    return best


def _tree(x_tr: np.ndarray, y_tr: np.ndarray, x_te: np.ndarray, y_te: np.ndarray,
          names: Sequence[str]) -> dict[str, Any]:
    from sklearn.tree import DecisionTreeClassifier, export_text

    if len(set(y_tr.tolist())) < 2:
        return {"train": 1.0, "test": float(np.mean(y_te == y_tr[0])), "rules": ""}
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(x_tr, y_tr)
    return {"train": float(tree.score(x_tr, y_tr)), "test": float(tree.score(x_te, y_te)),
            "rules": export_text(tree, feature_names=list(names))}


def feature_scan(train: Sequence[EpisodeData], test: Sequence[EpisodeData],
                 names: Sequence[str] = FEATURES,
                 kinds: Sequence[str] = SCAN_BOUNDED_KINDS) -> dict[str, dict[str, Any]]:
    """Per twin group: the best single-feature threshold rule and a depth-3 decision tree,
    trained on the group's training episodes and tested on its suite episodes, over the
    features of ``kinds`` (prefixes of :data:`FEATURES`). Returns ``{group: {"single":
    best_single_feature(...), "tree": {"train", "test", "rules"}, "n_train", "n_test"}}``."""
    names = [n for n in names if n.split(":", 1)[0] in kinds]
    out: dict[str, dict[str, Any]] = {}
    for g in twin_groups():
        tr = [d for d in train if d.group == g]
        te = [d for d in test if d.group == g]
        if not tr or not te:
            continue
        y_tr = np.array([d.needs_help for d in tr], dtype=int)
        y_te = np.array([d.needs_help for d in te], dtype=int)
        x_tr, x_te = _matrix(tr, names), _matrix(te, names)
        out[g] = {"n_train": len(tr), "n_test": len(te),
                  "single": best_single_feature(x_tr, y_tr, x_te, y_te, names),
                  "tree": _tree(x_tr, y_tr, x_te, y_te, names)}
    return out


# ------------------------------------------------------------------ bounds
def check_bounds(agents: Mapping[str, Mapping[str, Any]], *,
                 classifiers: Mapping[str, Mapping[str, float]] | None = None,
                 scan: Mapping[str, Mapping[str, Any]] | None = None,
                 bounds: Mapping[str, float] = BOUNDS,
                 shortcuts: Sequence[str] | None = None) -> list[str]:
    """The broken bounds, one line each (empty: all hold).

    ``agents``: ``{name: scores(...)}`` (hedged agents named by :func:`hedged`);
    ``classifiers``: ``{"reset": {"all": acc, group: acc}, "cue": {group: acc}, "window":
    {group: acc}}`` (any other key, such as ``"window-ctx2"``, is held to the window bound);
    ``scan``: :func:`feature_scan`'s result (over :data:`SCAN_BOUNDED_KINDS`). Missing entries
    are not checked.
    """
    broken: list[str] = []
    b = bounds
    o = agents.get("oracle")
    if o is not None:
        for k in ("PHA", "PHR", "PIR", "PSR", "PIA", "TA", "SR", "AC"):
            if o.get(k) is not None and o[k] < b["oracle_min"]:
                broken.append(f"oracle {k} {o[k]:.1f} < {b['oracle_min']}")
    tr = agents.get("belief-tracker")
    if tr is not None:
        if tr["PHA"] < b["tracker_PHA_min"]:
            broken.append(f"belief-tracker PHA {tr['PHA']:.1f} < {b['tracker_PHA_min']}")
        if tr["PIA"] < b["tracker_PIA_min"]:
            broken.append(f"belief-tracker PIA {tr['PIA']:.1f} < {b['tracker_PIA_min']}")
    for a in ABLATION_AGENTS:
        m = agents.get(a)
        if m is None:
            continue
        if m["PHA"] > b["ablation_PHA_max"]:
            broken.append(f"{a} PHA {m['PHA']:.1f} > {b['ablation_PHA_max']}")
        for g in belief_groups():
            gm = m.get("groups", {}).get(g)
            if gm is not None and gm["PHA"] is not None and gm["PHA"] > b["ablation_PHA_max"]:
                broken.append(f"{a} PHA {gm['PHA']:.1f} in {g} > {b['ablation_PHA_max']}")
    names = list(SHORTCUT_BASELINES) + list(WINDOW_AGENTS) if shortcuts is None \
        else list(shortcuts)
    for a in names:
        for n in (a, hedged(a)):
            m = agents.get(n)
            if m is None:
                continue
            if m["PIA"] > b["shortcut_PIA_max"]:
                broken.append(f"{n} PIA {m['PIA']:.1f} > {b['shortcut_PIA_max']}")
            if m["PHA"] > b["shortcut_PHA_max"]:
                broken.append(f"{n} PHA {m['PHA']:.1f} > {b['shortcut_PHA_max']}")
    for n, m in agents.items():
        h = agents.get(hedged(n))
        if h is not None and abs(h["PHA"] - m["PHA"]) > b["hedge_PHA_change_max"]:
            broken.append(f"the hedge changes {n}'s PHA by {h['PHA'] - m['PHA']:+.1f} "
                          f"(more than {b['hedge_PHA_change_max']})")
    gb = agents.get(GOAL_ABLATION)
    if gb is not None:
        for g in goal_groups():
            gm = gb.get("groups", {}).get(g)
            if gm is not None and gm.get("PHR") is not None \
                    and gm["PHR"] > b["goal_blind_PHR_max"]:
                broken.append(f"{GOAL_ABLATION} PHR {gm['PHR']:.1f} in {g} > "
                              f"{b['goal_blind_PHR_max']}")
    key = {"reset": "reset_classifier_max", "cue": "cue_classifier_max"}
    for kind, accs in (classifiers or {}).items():
        bound = b[key.get(kind, "window_classifier_max")]  # window, window-ctx2, ...
        for g, acc in accs.items():
            if (kind == "reset" or g != "all") and acc > bound:
                broken.append(f"{kind} classifier {100 * acc:.1f}% in {g} > "
                              f"{100 * bound:.0f}%")
    for g, res in (scan or {}).items():
        s = res["single"]
        if s["test"] > b["feature_single_max"]:
            broken.append(f"feature {s['feature']} alone {100 * s['test']:.1f}% in {g} > "
                          f"{100 * b['feature_single_max']:.0f}%")
        if res["tree"]["test"] > b["feature_tree_max"]:
            broken.append(f"depth-3 tree {100 * res['tree']['test']:.1f}% in {g} > "
                          f"{100 * b['feature_tree_max']:.0f}%")
    return broken
