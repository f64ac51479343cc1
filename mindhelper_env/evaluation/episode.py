"""Playing one episode: the Gymnasium loop, the agent's usage and the result record.

:func:`run_episode` is public; :func:`play_episode` (used by the runners) also returns the
episode's reference and lets the agent's reset seed differ from the env's (repeated trials).
See :mod:`mindhelper_env.evaluation` for the record's fields.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_ENV_ID", "SUITE_ENV_IDS", "MAX_STEPS", "make_env", "suite_env_id",
           "run_episode", "play_episode", "pop_agent_error"]

logger = logging.getLogger("mindhelper_env.evaluation")

DEFAULT_ENV_ID = "MindHelper-VirtualHome-v3"
#: The env id a suite is played on, by the generator that built it: the id its results were
#: released on, so that a number on a released suite keeps its meaning (the v2 suites'
#: narration is ``MindHelper-VirtualHome-v0``'s).
SUITE_ENV_IDS = {"mh-gen-2.5": "MindHelper-VirtualHome-v0",
                 "mh-gen-3.0": "MindHelper-VirtualHome-v1",
                 "mh-gen-3.1": "MindHelper-VirtualHome-v2",
                 "mh-gen-3.2": "MindHelper-VirtualHome-v3"}


def make_env(env_id: str, **kwargs: Any) -> Any:
    """``gym.make(env_id, **kwargs)`` without Gymnasium's "out of date" warning: the runners
    pick an older id on purpose (a v2 suite's ``MindHelper-VirtualHome-v0``,
    :func:`suite_env_id`)."""
    import warnings

    import gymnasium as gym

    import mindhelper_env  # noqa: F401  (registers the envs)

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*is out of date", category=DeprecationWarning)
        return gym.make(env_id, **kwargs)


def suite_env_id(suite: str | None) -> str:
    """The env id suite ``suite`` is played on (:data:`SUITE_ENV_IDS`; :data:`DEFAULT_ENV_ID`
    for no suite or one the table does not know)."""
    if suite is None:
        return DEFAULT_ENV_ID
    from mindhelper_env.scenarios.suites import SUITES

    entry = SUITES.get(str(suite))
    return SUITE_ENV_IDS.get(entry["generator"], DEFAULT_ENV_ID) if entry else DEFAULT_ENV_ID
USAGE_KEYS = ("model_calls", "prompt_tokens", "completion_tokens", "seconds", "decisions",
              "fallbacks", "parse_failures")
#: A hard stop for a misbehaving env that never ends an episode (the real env's horizon is far
#: below this).
MAX_STEPS = 100_000
_MAX_STEPS = MAX_STEPS


def _cut_by_budget(exc: BaseException) -> bool:
    """Whether an agent's exception is the run's budget refusing a model request (the
    episode ends there and the runner drops it; see :mod:`mindhelper_env.models.ledger`)."""
    from mindhelper_env.models.ledger import BudgetRefused, current_scope

    scope = current_scope()
    return isinstance(exc, BudgetRefused) or (scope is not None and scope.cut)



def _base_usage(agent: Any) -> dict[str, Any]:
    """The agent's own usage counters as a dict (missing counters are 0)."""
    usage = getattr(agent, "usage", None)
    raw: Mapping[str, Any] = {}
    if usage is not None:
        if hasattr(usage, "to_dict"):
            raw = usage.to_dict()
        elif isinstance(usage, Mapping):
            raw = usage
    out: dict[str, Any] = {}
    for key in USAGE_KEYS:
        value = raw.get(key, 0)
        out[key] = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
    # token counts that are estimates (the server sent no usage) are marked as such
    out["tokens_estimated"] = bool(raw.get("tokens_estimated", False))
    # model-backed agents: decisions by source, call errors by kind, prompt versions
    from mindhelper_env.models.report import usage_extras

    out.update(usage_extras(raw))
    return out


_FALLBACK_WARNINGS = 5
_fallback_warned: dict[str, int] = {}


def _warn_fallback(agent: str, message: str, *args: Any) -> None:
    """Log an agent fallback: the first few per agent as warnings, the rest at debug level
    (a broken model server must not flood the log with one line per decision)."""
    n = _fallback_warned.get(agent, 0) + 1
    _fallback_warned[agent] = n
    if n <= _FALLBACK_WARNINGS:
        logger.warning(message, *args)
        if n == _FALLBACK_WARNINGS:
            logger.warning("agent %s: further fallbacks are logged at debug level", agent)
    else:
        logger.debug(message, *args)


#: Key of the transient field that carries, from the process that played an episode to the
#: one that writes its record, the traceback of the first exception the agent raised in it;
#: :func:`pop_agent_error` removes it before the record is written.
AGENT_ERROR_KEY = "_agent_error"
_tracebacks_shown: set[str] = set()


def _agent_raised(agent: str, method: str, exc: BaseException) -> str:
    """Log one line at debug level (with the file and line the exception came from) and
    return the exception's traceback, from the agent's own frame down."""
    import traceback

    tb = exc.__traceback__
    tb = tb.tb_next if tb is not None and tb.tb_next is not None else tb  # skip our frame
    frames = traceback.extract_tb(tb) if tb is not None else []
    where = f" at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    logger.debug("agent %s: %s raised %s: %s%s (counted; played as 'none')", agent, method,
                 type(exc).__name__, exc, where)
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return f"{method} raised {type(exc).__name__}: {exc}{where}\n{text}"


def pop_agent_error(record: dict[str, Any], shown: set[str] | None = None) -> None:
    """Remove the transient traceback from ``record``; the first one of each agent (per
    ``shown``, the agents already reported: one set per evaluation; default: this process)
    is logged in full, once, as a warning: later exceptions are only counted
    (``usage.agent_errors``; one line each at debug level where they were raised)."""
    text = record.pop(AGENT_ERROR_KEY, None)
    agent = str(record.get("agent"))
    shown = _tracebacks_shown if shown is None else shown
    if not isinstance(text, str) or agent in shown:
        return
    shown.add(agent)
    headline, _, trace = text.partition("\n")
    logger.warning("agent %s: %s; each decision that raises is played as 'none' and counted "
                   "(usage.agent_errors). The first traceback (later ones are only counted):"
                   "\n%s", agent, headline, trace.rstrip())


def run_episode(
    env: Any,
    agent: Any,
    *,
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
    agent_name: str | None = None,
    timing: bool = True,
    max_steps: int = _MAX_STEPS,
) -> dict[str, Any]:
    """Play one episode and return its result record (see the module docstring).

    The loop is the plain Gymnasium one: ``reset``, then ``agent.act(obs, info)`` and
    ``env.step(action)`` until ``terminated or truncated``. An exception raised by the agent
    (or a non-string action) never stops the episode: it is replaced by ``"none"`` and
    counted in ``usage.fallbacks`` (exceptions also in ``usage.agent_errors``); the first
    traceback of each agent is logged in full, once, as a warning. Errors of the env itself
    propagate.

    ``options`` are passed to ``env.reset`` (e.g. ``{"suite": "vh-dev-v5", "index": 3}``);
    the record's ``suite`` and ``index`` are taken from them when present. ``agent_name``
    defaults to ``agent.name``. With ``timing=False`` ``usage.seconds`` is 0.0, which makes
    records fully reproducible.
    """
    record, _reference = play_episode(env, agent, seed=seed, options=options,
                                      agent_name=agent_name, timing=timing, max_steps=max_steps)
    pop_agent_error(record)
    return record


_UNSET: Any = object()


def play_episode(
    env: Any,
    agent: Any,
    *,
    seed: int | None,
    options: Mapping[str, Any] | None,
    agent_name: str | None,
    timing: bool,
    max_steps: int = MAX_STEPS,
    agent_seed: Any = _UNSET,
    trial: int | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """:func:`run_episode`, also returning the episode's reference (``None`` if absent).

    ``agent_seed`` (default: ``seed``) is what ``agent.reset`` gets; ``trial`` (when not
    ``None``) is recorded as the record's ``trial`` right after ``index``.
    """
    name = agent_name or str(getattr(agent, "name", type(agent).__name__))
    options = dict(options or {})
    obs, info = env.reset(seed=seed, options=options or None)
    fallbacks = errors = 0
    first_error: str | None = None
    try:
        agent.reset(seed=seed if agent_seed is _UNSET else agent_seed)
    except Exception as exc:  # an agent bug must not stop the evaluation
        if _cut_by_budget(exc):
            raise
        fallbacks += 1
        errors += 1
        first_error = first_error or _agent_raised(name, "reset", exc)
    decisions = 0
    seconds = 0.0
    steps = 0
    belief, snapshot = None, callable(getattr(agent, "belief_snapshot", None))
    while True:
        t0 = time.perf_counter()
        try:
            action = agent.act(obs, info)
        except Exception as exc:  # counted fallback to silence
            if _cut_by_budget(exc):
                raise
            fallbacks += 1
            errors += 1
            first_error = first_error or _agent_raised(name, "act", exc)
            action = "none"
        seconds += time.perf_counter() - t0
        decisions += 1
        if not isinstance(action, str):
            fallbacks += 1
            _warn_fallback(name, "agent %s: act returned %s, not a string (counted fallback "
                           "to 'none')", name, type(action).__name__)
            action = "none"
        if snapshot and belief is None:  # the agent's belief at t_I (belief.py)
            from mindhelper_env.evaluation.belief import belief_at_intervention

            belief = belief_at_intervention(env, agent, action, info)
        obs, _reward, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            break
        if steps >= max_steps:
            raise RuntimeError(f"episode did not end within {max_steps} steps")

    record = info.get("episode_record")
    if record is None:
        # E.g. an outer TimeLimit wrapper truncated the episode before the env ended it.
        getter = getattr(env.unwrapped, "episode_record", None)
        if not callable(getter):
            raise ValueError("the env's final info has no 'episode_record' and the env has no "
                             "episode_record() method")
        record = getter()
    usage = _base_usage(agent)
    usage["decisions"] = decisions
    usage["seconds"] = round(seconds, 6) if timing else 0.0
    usage["fallbacks"] = int(usage["fallbacks"]) + fallbacks
    usage["agent_errors"] = errors  # exceptions raised by the agent's reset and act
    out: dict[str, Any] = {
        "agent": name,
        "suite": options.get("suite"),
        "index": options.get("index"),
    }
    if trial is not None:
        out["trial"] = int(trial)
    out.update({k: v for k, v in record.items() if k != "reference"})
    out["usage"] = usage
    # Trigger-based agents expose the episode's operations; the runner (scorer side, never
    # the agent) attaches the ground-truth operation of each window for scoring.
    ops = getattr(agent, "trigger_ops", None)
    if isinstance(ops, list):
        out["trigger_ops"] = [dict(op) for op in ops]
        _attach_labels(out, env)
    if belief:
        out["belief"] = belief
    if first_error is not None:  # not written: the runner reports it once (pop_agent_error)
        out[AGENT_ERROR_KEY] = first_error
    trace = getattr(agent, "trace", None)
    if isinstance(trace, list) and trace:
        out["trace"] = _plain(trace, timing)
    reference = record.get("reference")
    if isinstance(reference, Mapping):
        reference = {**reference, "episode_id": record.get("episode_id")}
    else:
        reference = None
    return out, reference


def _attach_labels(out: dict[str, Any], env: Any) -> None:
    """Fill the ``label`` of each Trigger operation from the episode's ground truth."""
    from mindhelper_env.scenarios.trigger_labels import attach_trigger_labels

    base = getattr(env, "unwrapped", env)
    try:
        spec = base.episode_spec
        attach_trigger_labels(out, spec, int(getattr(base, "window_ticks", 3)))
    except Exception as exc:  # an env without specs: operations stay unlabeled (counted)
        logger.debug("trigger labels not attached: %s: %s", type(exc).__name__, exc)


def _plain(value: Any, timing: bool) -> Any:
    """A JSON-ready copy of an agent's trace; without ``timing``, no ``seconds`` keys (so
    records stay byte-identical across runs)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v, timing) for k, v in value.items()
                if timing or k != "seconds"}
    if isinstance(value, (list, tuple)):
        return [_plain(v, timing) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return str(value)
