"""MindHelper as a TRL environment: ``GRPOTrainer(environment_factory=MindHelperToolEnv)``.

>>> from trl import GRPOConfig, GRPOTrainer                          # doctest: +SKIP
>>> from mindhelper_env.llm_training.trl import MindHelperToolEnv, seed_dataset
>>> trainer = GRPOTrainer(model=..., train_dataset=seed_dataset(64),  # doctest: +SKIP
...                       environment_factory=MindHelperToolEnv, args=GRPOConfig(...))

:class:`MindHelperToolEnv` is a thin layer over the Gymnasium env
``MindHelper-VirtualHome-v3``: TRL builds it with no arguments, calls ``reset(**row)`` with
a row of the training dataset and exposes its public methods to the model as tools —
:meth:`~MindHelperToolEnv.act` (issue a program of script lines in this window) and
:meth:`~MindHelperToolEnv.wait` (stay silent and watch the next window); each returns what
the robot sees next. The model decides window by window; when it stops calling tools, the
rest of the episode is played silently (silence is the robot's default), and
:meth:`~MindHelperToolEnv.get_reward` returns the episode's score, kept on the instance
(``reward``, ``outcome``): 1 for a precise helpful intervention in an episode that needs
help (PHR's event) or for staying silent throughout one that does not (PSR's event),
minus 1 for harm — the per-episode share of PHA.

Episodes come from a dataset of seeds (:func:`seed_dataset`: training seeds only, never a
suite): each row names ``family`` and ``seed``, and ``reset`` generates exactly that episode
(:func:`mindhelper_env.scenarios.generator.generate_episode`) and seeds the env with
``env_seed`` (default ``seed``). Nothing here touches the process-global random state.

Needs the ``trl`` extra (``trl``, ``datasets``, with ``torch`` and ``transformers``) for
training; the class itself needs only this package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MindHelperToolEnv", "seed_dataset", "episode_score", "SYSTEM_PROMPT",
           "OBSERVATION_CHARS"]

#: Characters of each window's narration shown to the model.
OBSERVATION_CHARS = 1200
SYSTEM_PROMPT = (
    "You are a household robot helper watching people at home. After each observation "
    "window call exactly one tool: `wait` to stay silent, or `act` with a program of "
    "script lines such as \"[walk] <fridge> (132); [open] <fridge> (132); [grab] <apple> "
    "(151); [give] <apple> (151) <character> (2)\" when someone is blocked by a false "
    "belief or an implicit goal. Help only when it is needed, and as soon as it is.")


def episode_score(record: Mapping[str, Any], reference: Mapping[str, Any]) -> dict[str, Any]:
    """The per-episode components of the metrics
    (:func:`mindhelper_env.metrics.episode_outcome`): ``precise_intervention`` (PIR's
    event), ``precise_silence`` (PSR's event), ``helpful`` (PHR's event), ``harm``, each 0
    or 1, ``needs_help``, and ``reward`` = helpful + precise_silence - harm."""
    from mindhelper_env.metrics import episode_outcome

    o = episode_outcome(record, reference)
    needs = bool(o["needs_help"])
    parts = {"needs_help": needs,
             "precise_intervention": float(needs and o["precise"]),
             "precise_silence": float(not needs and not o["intervened"]),
             "helpful": float(o["helpful_precise"]), "harm": float(bool(o["harm"]))}
    parts["reward"] = parts["helpful"] + parts["precise_silence"] - parts["harm"]
    return parts


def _describe(obs: Mapping[str, Any], info: Mapping[str, Any]) -> str:
    text = " ".join(str(obs.get("narration", "")).split())
    if len(text) > OBSERVATION_CHARS:
        text = "..." + text[-OBSERVATION_CHARS:]
    people = ", ".join(f"{a['name']} ({a['id']})" for a in
                       (info.get("candidates") or {}).get("actors", []))
    return f"Tick {int(info.get('tick', 0))}. {text or '(nothing seen)'} People: " \
           f"{people or 'none'}."


class MindHelperToolEnv:
    """One episode of ``MindHelper-VirtualHome-v3`` for TRL (see the module docstring)."""

    env_id = "MindHelper-VirtualHome-v3"

    def __init__(self) -> None:
        self._env: Any = None
        self._info: dict[str, Any] = {}
        self._done = True
        self._last: dict[str, Any] | None = None
        self.reward = 0.0
        self.outcome: dict[str, Any] = {}
        self.windows = 0

    def reset(self, **row: Any) -> str:
        """Start the episode of ``row`` (``family``, ``seed``, optional ``env_seed``);
        returns the first observation."""
        import gymnasium as gym

        import mindhelper_env  # noqa: F401  (registers the envs)
        from mindhelper_env.scenarios.generator import generate_episode

        if "family" not in row or "seed" not in row:
            raise ValueError(f"MindHelperToolEnv.reset: the row needs 'family' and 'seed', "
                             f"got {sorted(row)}")
        if self._env is None:
            self._env = gym.make(self.env_id, pool_size=0)
        spec = generate_episode(str(row["family"]), int(row["seed"]))
        env_seed = int(row.get("env_seed", row["seed"]))
        obs, self._info = self._env.reset(seed=env_seed, options={"episode": spec})
        self._done, self._last = False, None
        self.reward, self.outcome, self.windows = 0.0, {}, 0
        return _describe(obs, self._info)

    def _step(self, program: str) -> str:
        if self._done:
            return "The episode is over."
        obs, _r, term, trunc, info = self._env.step(program)
        self._info = info
        self.windows += 1
        if term or trunc:
            self._finish(info)
            return "The episode is over."
        err = info.get("action_error")
        return (f"Not run: {err}. " if err else "") + _describe(obs, info)

    def _finish(self, info: Mapping[str, Any]) -> None:
        import json

        self._done = True
        full = json.loads(info["episode_record_json"])
        self.outcome = episode_score(full, full["reference"])
        self.reward = self.outcome["reward"]

    def act(self, program: str) -> str:
        """Issue a program in this observation window and watch the next one.

        Args:
            program: script lines separated by ';', e.g. "[walk] <fridge> (132); [open] <fridge> (132)"

        Returns:
            What the robot sees in the next window.
        """
        return self._step(str(program))

    def wait(self) -> str:
        """Stay silent in this observation window and watch the next one.

        Returns:
            What the robot sees in the next window.
        """
        return self._step("none")

    def get_reward(self) -> float:
        """The episode's score (see the module docstring); plays the rest silently."""
        while not self._done and self._env is not None:
            self._step("none")
        return float(self.reward)


def seed_dataset(n: int, seed: int = 0) -> Any:
    """A ``datasets.Dataset`` of ``n`` training episodes (half need help, families drawn as
    the envs draw them; :func:`mindhelper_env.validity.training_episodes`): columns
    ``prompt`` (the system and user messages; ``reset`` appends the first observation),
    ``family``, ``seed``."""
    from datasets import Dataset

    from mindhelper_env.validity import training_episodes

    rows = []
    for spec in training_episodes(int(n), seed=int(seed)):
        rows.append({"prompt": [{"role": "system", "content": SYSTEM_PROMPT},
                                {"role": "user", "content": "The episode begins. "}],
                     "family": str(spec["family"]), "seed": int(spec["seed"])})
    return Dataset.from_list(rows)
