"""``PrecisionInterventionMetrics``: per-episode and running precision-intervention metrics.

The wrapper takes the tick ``t_I`` of the robot's first intervention from the final
``info["episode_record"]["intervention_tick"]`` (the MindHelper envs: the tick at which the
robot issued its first program containing a line that acts on an object or a person,
executed or not; movement is free; ``-1`` for none). For other envs it watches the actions
sent and takes the first one ``is_intervention`` accepts (default: any non-silent action). At the end of each episode it
compares ``t_I`` with the episode's intervention window (docs/metrics.md):

* an episode that needs help counts toward PIR when ``onset <= t_I <= deadline`` and toward
  TA when the focus person succeeded;
* an episode that needs no help counts toward PSR when the robot never acted.

It adds ``info["precision_intervention"]`` to the final step's ``info`` and keeps running
aggregates (:meth:`PrecisionInterventionMetrics.metrics`). The same numbers as
:func:`mindhelper_env.metrics.compute_metrics` (PIR, PSR, PIA, TA), computed online.

Where the reference comes from, in order:

1. ``reference_fn(env)`` if given (for envs without ground truth, e.g. a small test env);
2. ``env.unwrapped.ground_truth`` (the MindHelper envs: a ``Reference`` or a dict);
3. the final ``info["episode_record"]["reference"]``.

A reference is a mapping (or object with attributes) with ``needs_intervention`` and, when
help is needed, ``window = {"onset_tick", "deadline_tick"}``; ``family`` and ``episode_id``
are copied when present. Ticks are read from ``info["tick"]``; an env without it is measured
in steps (the action of step ``k``, counted from 0, is at tick ``k``). Success is read from
``info["episode_record"]["focus_success"]``, else ``info["is_success"]`` or
``info["success"]``, else ``success_fn(env, info)`` if given.
"""

from __future__ import annotations

import csv
import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from mindhelper_env.envs.records import complete_final_info

__all__ = ["PrecisionInterventionMetrics", "EPISODE_FIELDS"]

logger = logging.getLogger(__name__)

#: Keys of ``info["precision_intervention"]`` (and columns of a CSV log).
EPISODE_FIELDS: tuple[str, ...] = (
    "episode",
    "episode_id",
    "family",
    "scored",
    "needs_intervention",
    "intervened",
    "t_I",
    "onset_tick",
    "deadline_tick",
    "precise",
    "premature",
    "late",
    "missed",
    "silent_correct",
    "false_alarm",
    "success_known",
    "success",
    "steps",
)

#: Value of every field before the episode fills it in: one type per field in every episode,
#: so that vector envs can stack ``info["precision_intervention"]``.
_BLANK: dict[str, Any] = {
    "episode": 0, "episode_id": "", "family": "", "scored": False,
    "needs_intervention": False, "intervened": False, "t_I": -1, "onset_tick": -1,
    "deadline_tick": -1, "precise": False, "premature": False, "late": False, "missed": False,
    "silent_correct": False, "false_alarm": False, "success_known": False, "success": False,
    "steps": 0,
}

_LOG_FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


def _default_is_intervention(action: Any) -> bool:
    """Strings: anything but ``none``; ``None``: silence; numbers/arrays: non-zero."""
    if action is None:
        return False
    if isinstance(action, bytes):
        action = action.decode("utf-8", "replace")
    if isinstance(action, str):
        return action.strip().lower() != "none" and action.strip() != ""
    try:
        return bool(np.any(np.asarray(action) != 0))
    except (TypeError, ValueError):
        return True


def _field(ref: Any, key: str) -> Any:
    if isinstance(ref, Mapping):
        return ref.get(key)
    return getattr(ref, key, None)


def _normalize_reference(ref: Any) -> dict[str, Any] | None:
    """``{"needs_intervention", "onset_tick", "deadline_tick", "family", "episode_id"}``."""
    if ref is None:
        return None
    needs = _field(ref, "needs_intervention")
    if needs is None:
        raise ValueError("reference has no 'needs_intervention'")
    window = _field(ref, "window")
    onset = deadline = None
    if window is not None:
        onset, deadline = _field(window, "onset_tick"), _field(window, "deadline_tick")
    if bool(needs) and (onset is None or deadline is None):
        raise ValueError("reference needs intervention but has no window "
                         "{'onset_tick', 'deadline_tick'}")
    return {
        "needs_intervention": bool(needs),
        "onset_tick": None if onset is None else int(onset),
        "deadline_tick": None if deadline is None else int(deadline),
        "family": _field(ref, "family"),
        "episode_id": _field(ref, "episode_id"),
    }


def _as_bool(value: Any) -> bool | None:
    if value is None:
        return None
    return bool(value)


class PrecisionInterventionMetrics(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Track the robot's interventions against each episode's intervention window.

    Args:
        env: the env to wrap (any Gymnasium env; see the module docstring for what it must
            expose).
        reference_fn: ``reference_fn(env) -> mapping | None``, called at the end of each
            episode with the wrapped env; takes precedence over the env's ground truth.
        success_fn: ``success_fn(env, info) -> bool | None``, used when the final ``info``
            carries no success flag.
        is_intervention: ``is_intervention(action) -> bool``; default: a string other than
            ``"none"``, or a non-zero number/array.
        log_path: append one row per finished episode; ``.jsonl``/``.json``/``.ndjson``
            writes JSON lines, ``.csv`` writes CSV (header when the file is new or empty).

    At the end of an episode ``info["precision_intervention"]`` holds the fields of
    :data:`EPISODE_FIELDS`, each with one type in every episode (so vector envs can stack
    them): ``scored`` (a reference was found), ``needs_intervention``, ``intervened``,
    ``t_I`` (tick of the first intervention, ``-1`` for none), ``onset_tick`` /
    ``deadline_tick`` (``-1`` when the episode needs no help), ``precise`` / ``premature`` /
    ``late`` / ``missed`` (``False`` when the episode needs no help), ``silent_correct`` /
    ``false_alarm`` (``False`` when it needs help), ``success_known`` and ``success``
    (``False`` when unknown), ``episode_id`` / ``family`` (``""`` when unknown). Without a
    reference ``scored`` is ``False``, the episode is not counted, and a warning is logged
    once.

    When the episode ends without ``info["episode_record"]`` (an outer ``TimeLimit``
    truncated a MindHelper env), the wrapper adds it from ``env.unwrapped.episode_record()``
    (see :mod:`mindhelper_env.envs.records`).

    The wrapper holds no open files or locks, so it pickles whenever the env (and the
    callables given) do; it records its constructor arguments, so ``env.spec.make()``
    (used by ``check_env``) can rebuild it.
    """

    def __init__(
        self,
        env: gym.Env,
        *,
        reference_fn: Callable[[gym.Env], Any] | None = None,
        success_fn: Callable[[gym.Env, dict[str, Any]], Any] | None = None,
        is_intervention: Callable[[Any], bool] | None = None,
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, reference_fn=reference_fn, success_fn=success_fn,
            is_intervention=is_intervention,
            log_path=None if log_path is None else str(log_path))
        gym.Wrapper.__init__(self, env)
        self._reference_fn = reference_fn
        self._success_fn = success_fn
        self._is_intervention = is_intervention or _default_is_intervention
        self.log_path: Path | None = None
        self._log_format: str | None = None
        if log_path is not None:
            path = Path(log_path)
            fmt = _LOG_FORMATS.get(path.suffix.lower())
            if fmt is None:
                raise ValueError(f"log_path must end in one of {sorted(_LOG_FORMATS)}, got "
                                 f"{str(path)!r}")
            self.log_path, self._log_format = path, fmt
        self._warned_no_reference = False
        self.reset_metrics()
        self._clear_episode()

    # ------------------------------------------------------------------ aggregates
    def reset_metrics(self) -> None:
        """Forget every finished episode (the running aggregates restart from zero)."""
        self._n_episodes = 0
        self._n_unscored = 0
        self._n_help = 0
        self._n_silent = 0
        self._n_precise = 0
        self._n_premature = 0
        self._n_late = 0
        self._n_silent_correct = 0
        self._n_help_success_known = 0
        self._n_help_success = 0
        self._n_never_acted = 0

    def metrics(self) -> dict[str, Any]:
        """Running metrics over the episodes finished since the last :meth:`reset_metrics`.

        Fractions in ``[0, 1]``, ``None`` when their denominator is empty: ``PIR`` and
        ``TA`` over episodes that need help (TA over those whose success is known), ``PSR``
        over those that do not, ``PIA`` = (PIR + PSR) / 2 (or whichever exists),
        ``silent_all`` over all scored episodes; plus the counts.
        """
        def rate(num: int, den: int) -> float | None:
            return num / den if den else None

        pir = rate(self._n_precise, self._n_help)
        psr = rate(self._n_silent_correct, self._n_silent)
        parts = [x for x in (pir, psr) if x is not None]
        scored = self._n_help + self._n_silent
        return {
            "episodes": self._n_episodes,
            "unscored": self._n_unscored,
            "n_help": self._n_help,
            "n_silent": self._n_silent,
            "PIR": pir,
            "PSR": psr,
            "PIA": sum(parts) / len(parts) if parts else None,
            "TA": rate(self._n_help_success, self._n_help_success_known),
            "premature_rate": rate(self._n_premature, self._n_help),
            "late_rate": rate(self._n_late, self._n_help),
            "false_alarm_rate": rate(self._n_silent - self._n_silent_correct, self._n_silent),
            "silent_all": rate(self._n_never_acted, scored),
        }

    # ------------------------------------------------------------------ gym API
    def _clear_episode(self) -> None:
        self._tick: int | None = None
        self._steps = 0
        self._t_i: int | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._clear_episode()
        self._tick = self._read_tick(info)
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._t_i is None and self._is_intervention(action):
            # The action takes effect from the current tick (the one reported by the last
            # reset/step), which is what the env records as the action's tick.
            self._t_i = self._tick if self._tick is not None else self._steps
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        self._tick = self._read_tick(info)
        if terminated or truncated:
            info = complete_final_info(self.env, info)
            info["precision_intervention"] = self._finish_episode(info)
        return obs, reward, terminated, truncated, info

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _read_tick(info: Mapping[str, Any]) -> int | None:
        tick = info.get("tick") if isinstance(info, Mapping) else None
        if tick is None or isinstance(tick, bool):
            return None
        try:
            return int(tick)
        except (TypeError, ValueError):
            return None

    def _reference(self, info: Mapping[str, Any]) -> dict[str, Any] | None:
        if self._reference_fn is not None:
            return _normalize_reference(self._reference_fn(self.env))
        try:
            truth = self.env.unwrapped.ground_truth  # type: ignore[attr-defined]
        except (AttributeError, gym.error.Error):
            truth = None
        if truth is not None:
            return _normalize_reference(truth)
        record = info.get("episode_record")
        if isinstance(record, Mapping) and record.get("reference") is not None:
            return _normalize_reference(record["reference"])
        return None

    def _success(self, info: Mapping[str, Any]) -> bool | None:
        record = info.get("episode_record")
        if isinstance(record, Mapping) and "focus_success" in record:
            return _as_bool(record["focus_success"])
        for key in ("is_success", "success"):
            if key in info:
                return _as_bool(info[key])
        if self._success_fn is not None:
            return _as_bool(self._success_fn(self.env, dict(info)))
        return None

    def _finish_episode(self, info: Mapping[str, Any]) -> dict[str, Any]:
        ref = self._reference(info)
        success = self._success(info)
        t_i = self._t_i
        record = info.get("episode_record")
        if isinstance(record, Mapping) and isinstance(record.get("intervention_tick"), int):
            t_i = record["intervention_tick"] if record["intervention_tick"] >= 0 else None
        intervened = t_i is not None
        out: dict[str, Any] = dict(_BLANK)
        out.update({
            "episode": self._n_episodes,
            "intervened": intervened,
            "t_I": -1 if t_i is None else int(t_i),
            "success_known": success is not None,
            "success": bool(success),
            "steps": self._steps,
        })
        self._n_episodes += 1
        if ref is None:
            self._n_unscored += 1
            if not self._warned_no_reference:
                logger.warning("PrecisionInterventionMetrics: no reference for this episode "
                               "(pass reference_fn=...); it is not scored")
                self._warned_no_reference = True
        else:
            out["scored"] = True
            out["needs_intervention"] = ref["needs_intervention"]
            for key in ("onset_tick", "deadline_tick"):
                if ref[key] is not None:
                    out[key] = ref[key]
            for key in ("family", "episode_id"):
                if ref[key] is not None:
                    out[key] = str(ref[key])
            if not intervened:
                self._n_never_acted += 1
            if ref["needs_intervention"]:
                onset, deadline = ref["onset_tick"], ref["deadline_tick"]
                precise = intervened and onset <= t_i <= deadline  # type: ignore[operator]
                premature = intervened and t_i < onset  # type: ignore[operator]
                late = intervened and t_i > deadline  # type: ignore[operator]
                out.update({"precise": bool(precise), "premature": bool(premature),
                            "late": bool(late), "missed": not intervened})
                self._n_help += 1
                self._n_precise += bool(precise)
                self._n_premature += bool(premature)
                self._n_late += bool(late)
                if success is not None:
                    self._n_help_success_known += 1
                    self._n_help_success += bool(success)
            else:
                out.update({"silent_correct": not intervened, "false_alarm": intervened})
                self._n_silent += 1
                self._n_silent_correct += not intervened
        if self.log_path is not None:
            self._log(out)
        return out

    def _log(self, row: Mapping[str, Any]) -> None:
        assert self.log_path is not None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self._log_format == "csv":
            new = not self.log_path.exists() or self.log_path.stat().st_size == 0
            with open(self.log_path, "a", newline="", encoding="utf-8") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(EPISODE_FIELDS))
                if new:
                    writer.writeheader()
                writer.writerow({k: "" if row.get(k) is None else row.get(k)
                                 for k in EPISODE_FIELDS})
        else:
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(dict(row), default=str) + "\n")
