"""The evaluation runner: every agent on every episode of a suite, one JSON line each.

:func:`run_episode` plays one episode with the plain Gymnasium loop and returns its *result
record*; :func:`evaluate` runs a list of agents over a suite (optionally in a local process
pool), writes ``<out_dir>/<agent>.jsonl`` as episodes finish, and ends with
``summary.json`` and PNG plots.

A result record is the env's final ``info["episode_record"]`` without ``"reference"`` (the
ground truth never goes into result files) plus ``agent``, ``suite``, ``index`` and
``usage``::

    {"agent": "oracle", "suite": "vh-dev-v2", "index": 7, "episode_id": "...",
     "family": "...", "actions": [{"tick", "program"}], "executed": [{"tick", "line", "ok",
     "reason"}], "focus_success": true, "harm": false, "ticks": 31, "steps": 11,
     "terminated": true, "truncated": false,
     "usage": {"model_calls", "prompt_tokens", "completion_tokens", "seconds", "decisions",
               "fallbacks"}}

Agents with a ``trace`` list (MindClaw: per-window operations, belief-table changes, model
calls) have it copied into the record as ``trace``; Trigger agents' ``trigger_ops`` get
their ground-truth ``label`` attached by the runner (never shown to the agent).
``usage.seconds`` is the runner's wall-clock time spent inside ``agent.act`` (so
``seconds / decisions`` is the wall time per decision); ``usage.decisions`` counts the
``act`` calls and ``usage.fallbacks`` adds the runner's fallbacks (an exception in
``act``/``reset`` or a non-string action, replaced by ``"none"``) to the agent's own. An
agent with a ``trigger_ops`` list attribute (Trigger-based agents: ``[{"predicted",
"label"}]`` for the episode) has it copied into the record.
Everything else in a record is deterministic: running the same suite twice, with any
number of workers, or resuming an interrupted run gives the same records up to
``usage.seconds`` (and byte-identical files with ``timing=False``).

Files are written crash-safely: each record is appended, flushed and ``fsync``-ed as its
episode finishes, so an interrupted run loses at most the line being written;
``resume=True`` drops such a truncated last line and redoes only the missing episodes.
At the end each file is rewritten sorted by episode index (atomically), so the output does
not depend on the number of workers or on completion order.

Agents run in worker processes when ``workers > 1`` (``spawn`` start method): an agent must
be registered in an importable module (or at the top level of the main script), not only
inside ``if __name__ == "__main__":``. With ``backend="ray"`` they run as Ray tasks
(:mod:`mindhelper_env.ray_backend`); the module that registers an agent is imported in the
Ray worker (the driver's ``sys.path`` is passed along).

Safety (issue 10, :mod:`mindhelper_env.runner_safety`): arguments are checked before any
file is touched; one writer per output folder (a ``flock`` lock naming its holder); files are
replaced atomically and symlinks never followed; result file names are derived safely from
agent names; workers die with the runner; SIGTERM is an interrupt like Ctrl-C; ``resume``
revalidates every kept record and refuses a missing or different ``run.json``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mindhelper_env import runner_safety as _safety

__all__ = [
    "DEFAULT_ENV_ID",
    "HEADLINE_KEYS",
    "run_episode",
    "evaluate",
    "read_result_file",
    "check_suite",
    "check_agents",
    "suite_episode_ids",
    "suite_reference",
    "headline",
    "summarize",
    "result_file_name",
    "check_evaluate_args",
    "BACKENDS",
    "MAX_WORKERS",
]

logger = logging.getLogger(__name__)

DEFAULT_ENV_ID = "MindHelper-VirtualHome-v0"

#: Metrics of the paper's Table II (in its column order), then silent-all (Fig. 5) and harm.
HEADLINE_KEYS: tuple[str, ...] = ("PHA", "PHR", "TA", "SR", "AC", "PIR", "PSR", "PIA", "silent_all",
                                 "harm_rate")

_USAGE_KEYS = ("model_calls", "prompt_tokens", "completion_tokens", "seconds", "decisions",
               "fallbacks", "parse_failures")
_RUN_FILE = "run.json"
_SUMMARY_FILE = "summary.json"
_PLOT_FILES = ("metrics.png", "silent_all.png", "per_family.png", "breakdown.png")
_VIDEO_DIR = "videos"
#: Version of ``run.json``'s content (the settings a resumed run must share).
_RUN_FORMAT = 1
#: Execution backends of :func:`evaluate`.
BACKENDS = ("local", "ray")
#: Hard ceiling on ``workers``, even with ``force_workers=True``.
MAX_WORKERS = 512
#: Largest base seed (``seed + index`` stays a valid NumPy seed far beyond it).
MAX_SEED = 2**32 - 1
#: Largest ``videos`` value.
MAX_VIDEOS = 10_000
# A hard stop for a misbehaving env that never ends an episode (the real env's horizon is far
# below this).
_MAX_STEPS = 100_000


# --------------------------------------------------------------------------------------
# One episode
# --------------------------------------------------------------------------------------


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
    for key in _USAGE_KEYS:
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
    (or a non-string action) never stops the episode: it is logged, replaced by ``"none"``
    and counted in ``usage.fallbacks``. Errors of the env itself propagate.

    ``options`` are passed to ``env.reset`` (e.g. ``{"suite": "vh-dev-v2", "index": 3}``);
    the record's ``suite`` and ``index`` are taken from them when present. ``agent_name``
    defaults to ``agent.name``. With ``timing=False`` ``usage.seconds`` is 0.0, which makes
    records fully reproducible.
    """
    record, _reference = _play(env, agent, seed=seed, options=options, agent_name=agent_name,
                               timing=timing, max_steps=max_steps)
    return record


def _play(
    env: Any,
    agent: Any,
    *,
    seed: int | None,
    options: Mapping[str, Any] | None,
    agent_name: str | None,
    timing: bool,
    max_steps: int,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """:func:`run_episode`, also returning the episode's reference (``None`` if absent)."""
    name = agent_name or str(getattr(agent, "name", type(agent).__name__))
    options = dict(options or {})
    obs, info = env.reset(seed=seed, options=options or None)
    fallbacks = 0
    try:
        agent.reset(seed=seed)
    except Exception as exc:  # an agent bug must not stop the evaluation
        fallbacks += 1
        _warn_fallback(name, "agent %s: reset raised %s: %s", name, type(exc).__name__, exc)
    decisions = 0
    seconds = 0.0
    steps = 0
    belief, snapshot = None, callable(getattr(agent, "belief_snapshot", None))
    while True:
        t0 = time.perf_counter()
        try:
            action = agent.act(obs, info)
        except Exception as exc:  # counted fallback to silence
            fallbacks += 1
            _warn_fallback(name, "agent %s: act raised %s: %s (counted fallback to 'none')",
                           name, type(exc).__name__, exc)
            action = "none"
        seconds += time.perf_counter() - t0
        decisions += 1
        if not isinstance(action, str):
            fallbacks += 1
            _warn_fallback(name, "agent %s: act returned %s, not a string (counted fallback "
                           "to 'none')", name, type(action).__name__)
            action = "none"
        if snapshot and belief is None:  # the agent's belief at t_I (report/belief.py)
            from mindhelper_env.report.belief import belief_at_intervention

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
    out: dict[str, Any] = {
        "agent": name,
        "suite": options.get("suite"),
        "index": options.get("index"),
    }
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


# --------------------------------------------------------------------------------------
# Suites (imported lazily: the suites module is optional for run_episode)
# --------------------------------------------------------------------------------------


def _suites_module() -> Any:
    from mindhelper_env.scenarios import suites

    return suites


def check_suite(name: str) -> None:
    """Raise ``ValueError`` naming the known suites if ``name`` is not one of them."""
    known = _suites_module().SUITES
    if not isinstance(name, str) or name not in known:
        raise ValueError(f"unknown suite {name!r}; known suites: {', '.join(sorted(known))}")


def suite_episode_ids(name: str) -> list[str]:
    """Episode ids of a suite, in index order (no episode is generated)."""
    check_suite(name)
    mod = _suites_module()
    return [mod.suite_episode_id(name, i) for i in range(int(mod.SUITES[name]["n"]))]


def suite_reference(name: str, index: int) -> dict[str, Any]:
    """The reference record of episode ``index`` of suite ``name`` (as in
    ``suite_references``)."""
    mod = _suites_module()
    return dict(mod.reference_record(mod.suite_episode(name, index)))


def check_agents(names: Sequence[str]) -> None:
    """Raise ``ValueError`` for an empty list, duplicates or unknown agent names."""
    from mindhelper_env.agents import AGENTS

    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ValueError(f"agents must be a list of names, got {names!r}")
    if not names:
        raise ValueError("no agents given")
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ValueError(f"agent names must be non-empty strings, got {bad[0]!r}")
    from mindhelper_env.agents import resolve_agent

    for n in names:
        if n not in AGENTS:
            resolve_agent(n)  # an import path that must import; else a clear ValueError
    dup = sorted({n for n in names if list(names).count(n) > 1})
    if dup:
        raise ValueError(f"agent {dup[0]!r} given twice")


def result_file_name(agent: str) -> str:
    """The result file of ``agent`` inside an output folder: ``<stem>.jsonl`` with a stem
    safe for any name (:func:`mindhelper_env.runner_safety.agent_file_stem`; ``oracle`` ->
    ``oracle.jsonl``, ``org/model`` -> ``org%2Fmodel.jsonl``). The record keeps the name."""
    return _safety.agent_file_stem(agent) + ".jsonl"


def _agent_modules(names: Sequence[str]) -> tuple[str, ...]:
    """Modules whose import registers the agents ``names`` (for workers that did not
    import them, e.g. Ray workers); ``__main__`` and the package itself are left out."""
    from mindhelper_env.agents import AGENTS
    from mindhelper_env.agents.hedge import split_prefix_suffix

    mods = []
    for n in names:
        mod = getattr(AGENTS.get(split_prefix_suffix(n)[0]), "__module__", None)
        if isinstance(mod, str) and mod != "__main__" and not mod.startswith("mindhelper_env.") \
                and mod not in mods:
            mods.append(mod)
    return tuple(mods)


# --------------------------------------------------------------------------------------
# Workers
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    """Everything a worker needs to play (agent, index) pairs; picklable."""

    suite: str
    env_id: str
    env_kwargs: tuple[tuple[str, Any], ...]
    agent_kwargs: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    seed: int
    timing: bool
    modules: tuple[str, ...] = ()


@dataclass
class _Runner:
    """One env and one instance of each agent, reused across episodes."""

    job: _Job
    env: Any = None
    agents: dict[str, Any] = field(default_factory=dict)

    def play(self, agent_name: str, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
        import importlib

        import gymnasium as gym

        import mindhelper_env  # noqa: F401  (registers the envs in spawned workers)
        from mindhelper_env.agents import AGENTS, make_agent

        if agent_name not in AGENTS:
            for mod in self.job.modules:
                try:
                    importlib.import_module(mod)
                except ImportError as exc:
                    logger.debug("cannot import agent module %s: %s", mod, exc)
        if self.env is None:
            self.env = gym.make(self.job.env_id, **dict(self.job.env_kwargs))
        agent = self.agents.get(agent_name)
        if agent is None:
            kwargs = dict(dict(self.job.agent_kwargs).get(agent_name, ()))
            kwargs.setdefault("env", self.env)
            kwargs.setdefault("seed", self.job.seed)
            agent = make_agent(agent_name, **kwargs)
            self.agents[agent_name] = agent
        record, reference = _play(
            self.env,
            agent,
            seed=self.job.seed + index,
            options={"suite": self.job.suite, "index": index},
            agent_name=agent_name,
            timing=self.job.timing,
            max_steps=_MAX_STEPS,
        )
        if reference is None:
            reference = suite_reference(self.job.suite, index)
        return record, reference

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


_WORKER_RUNNER: _Runner | None = None


def _worker_init(log_level: int, parent_pid: int | None = None) -> None:
    if parent_pid is not None:
        _safety.worker_guard(parent_pid)
    logging.basicConfig(level=log_level, format="%(levelname)s %(name)s: %(message)s")


def _worker_chunk(
    job: _Job, chunk: list[tuple[str, int]]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Play a chunk of (agent, index) pairs in a worker process: ``[(record, reference)]``."""
    global _WORKER_RUNNER
    if _WORKER_RUNNER is None or _WORKER_RUNNER.job != job:
        if _WORKER_RUNNER is not None:
            _WORKER_RUNNER.close()
        _WORKER_RUNNER = _Runner(job)
    return [_WORKER_RUNNER.play(agent, index) for agent, index in chunk]


# --------------------------------------------------------------------------------------
# Result files
# --------------------------------------------------------------------------------------


def _loc(path: Path, line: int) -> str:
    return f"{path}:{line}"


def read_result_file(
    path: str | os.PathLike[str],
    *,
    repair_tail: bool = False,
    _write: bool = True,
) -> list[tuple[int, dict[str, Any]]]:
    """Parse a result JSONL file into ``[(line_number, record), ...]``.

    Lines are parsed strictly: ``NaN``/``Infinity`` (also as ``1e400``), duplicate keys and
    nesting deeper than 100 levels are errors. Blank lines are skipped. A line that is not a JSON object raises
    ``ValueError``
    ``"<file>:<line>: <reason>"`` — except, with ``repair_tail=True``, the last line when it
    is cut short (no JSON, or no final newline and no JSON): that line is removed from the
    file (it is the line being written when a run was interrupted).
    """
    p = Path(path)
    data = p.read_bytes()
    lines = data.split(b"\n")
    # ``lines[-1]`` is b"" when the file ends with a newline, else the unterminated tail.
    out: list[tuple[int, dict[str, Any]]] = []
    offset = 0
    last_content = max((i for i, raw in enumerate(lines) if raw.strip()), default=-1)
    for i, raw in enumerate(lines):
        start = offset
        offset += len(raw) + 1
        if not raw.strip():
            continue
        lineno = i + 1
        try:
            rec = _strict_json(raw.decode("utf-8"))
            if not isinstance(rec, dict):
                raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
        except (UnicodeDecodeError, ValueError) as exc:
            if repair_tail and i == last_content:
                if not _write:  # a dry run: report the line as dropped, change nothing
                    break
                logger.warning("%s: dropping truncated last line (%s); its episode is redone",
                               _loc(p, lineno), exc)
                with open(p, "r+b") as fh:
                    fh.truncate(start)
                    fh.flush()
                    os.fsync(fh.fileno())
                break
            reason = (f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError)
                      else str(exc))
            raise ValueError(f"{_loc(p, lineno)}: invalid JSON ({reason})") from None
        if repair_tail and _write and i == len(lines) - 1:
            # A complete record that lost only its newline: keep it, restore the newline.
            with open(p, "ab") as fh:
                fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
        out.append((lineno, rec))
    return out


_MAX_DEPTH = 100


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(f"number {token[:20]} is out of range")
    return value


def _nesting_depth(text: str) -> int:
    """Deepest ``[``/``{`` nesting of a JSON text (strings skipped); linear, no recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _strict_json(text: str) -> Any:
    """``json.loads`` without NaN/Infinity, duplicate keys or absurd nesting."""
    if text.count("[") + text.count("{") > _MAX_DEPTH and _nesting_depth(text) > _MAX_DEPTH:
        raise ValueError(f"nested deeper than {_MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                          object_pairs_hook=_suites_module().no_duplicate_keys)
    except RecursionError:
        raise ValueError(f"nested deeper than {_MAX_DEPTH} levels") from None


def _dump_line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"


def _append_line(fh: Any, record: Mapping[str, Any]) -> None:
    fh.write(_dump_line(record))
    fh.flush()
    os.fsync(fh.fileno())


def _rewrite_sorted(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Atomically replace ``path`` with ``records`` sorted by index."""
    text = "".join(_dump_line(rec) for rec in sorted(records, key=lambda r: int(r["index"])))
    _safety.atomic_write_bytes(path, text.encode("utf-8"))


def _load_existing(
    path: Path, *, agent: str, suite: str, ids: Sequence[str], repair: bool = True
) -> dict[int, dict[str, Any]]:
    """Finished records of a previous run of ``agent`` (for ``resume``), by index. Every
    record is checked against the result schema, its suite, agent, index and episode id."""
    from mindhelper_env.schemas import schema_errors

    done: dict[int, dict[str, Any]] = {}
    where: dict[int, int] = {}
    for lineno, rec in read_result_file(path, repair_tail=True, _write=repair):
        loc = _loc(path, lineno)
        problems = schema_errors("result", rec, limit=1)
        if problems:
            raise ValueError(f"{loc}: not a valid result record ({problems[0]}); fix or "
                             "remove the line, or start a new output directory")
        index = rec.get("index")
        if rec.get("suite") != suite:
            raise ValueError(f"{loc}: record of suite {rec.get('suite')!r}, not {suite!r}")
        if rec.get("agent") != agent:
            raise ValueError(f"{loc}: record of agent {rec.get('agent')!r}, not {agent!r}")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(ids):
            raise ValueError(f"{loc}: bad episode index {index!r} for suite {suite!r}")
        if rec.get("episode_id") != ids[index]:
            raise ValueError(f"{loc}: episode {rec.get('episode_id')!r} is not episode {index} "
                             f"of suite {suite!r} ({ids[index]!r})")
        if index in done:
            raise ValueError(f"{loc}: duplicate episode {ids[index]!r} (first at line "
                             f"{where[index]})")
        done[index] = rec
        where[index] = lineno
    return done


# --------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------


def headline(metrics_pct: Mapping[str, Any]) -> dict[str, Any]:
    """The rate metrics (percentages) of one agent: :data:`HEADLINE_KEYS` first, then the
    other rates of :data:`mindhelper_env.metrics.RATE_KEYS`."""
    from mindhelper_env.metrics import RATE_KEYS

    keys = list(HEADLINE_KEYS) + [k for k in RATE_KEYS if k not in HEADLINE_KEYS]
    out = {k: metrics_pct.get(k) for k in keys}
    out["belief_accuracy"] = (metrics_pct.get("belief") or {}).get("accuracy")
    return out


def summarize(
    records_by_agent: Mapping[str, Sequence[Mapping[str, Any]]],
    references: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """``{"table": {agent: headline %}, "metrics": {agent: full metrics in %}}``, plus
    ``"models"`` (:func:`mindhelper_env.models.report.model_report`) when an agent called a
    model."""
    from mindhelper_env.metrics import as_percentages, compute_table
    from mindhelper_env.models.report import model_report

    table = compute_table(records_by_agent, references)
    pct = {agent: as_percentages(m) for agent, m in table.items()}
    out = {"table": {agent: headline(m) for agent, m in pct.items()}, "metrics": pct}
    models = model_report(records_by_agent)
    if models:
        out["models"] = models
    return out


# --------------------------------------------------------------------------------------
# Progress display
# --------------------------------------------------------------------------------------


class _Progress:
    """A rich progress bar (episodes done, rate, ETA), or nothing."""

    def __init__(self, enabled: bool, description: str, total: int, completed: int) -> None:
        self._progress: Any = None
        self._task: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class _Rate(ProgressColumn):
            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text("-- ep/s" if speed is None else f"{speed:.1f} ep/s")

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("episodes"),
            _Rate(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, completed=completed)

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


# --------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------


def _freeze(mapping: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((mapping or {}).items()))


def _chunks(tasks: list[tuple[str, int]], workers: int) -> list[list[tuple[str, int]]]:
    # Small chunks keep the progress bar live and the pool balanced; large enough to amortize
    # inter-process overhead for millisecond-scale episodes.
    size = max(1, min(16, math.ceil(len(tasks) / (workers * 8))))
    return [tasks[i:i + size] for i in range(0, len(tasks), size)]


_Batch = list[tuple[dict[str, Any], dict[str, Any]]]


def _kill_pool(pool: ProcessPoolExecutor) -> None:
    """Stop a process pool now: kill its workers (no tracebacks, no orphans), then shut it
    down without waiting for the chunks they were playing."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.kill()
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.join(timeout=5)


def _iter_parallel(job: _Job, tasks: list[tuple[str, int]], workers: int) -> Iterator[_Batch]:
    """Yield batches of records from a spawn process pool as they complete.

    Workers die with this process (:func:`mindhelper_env.runner_safety.worker_guard`) and are
    killed when the iteration ends early (an interrupt, an error, ``close()``).
    """
    ctx = multiprocessing.get_context("spawn")
    level = logging.getLogger("mindhelper_env").getEffectiveLevel()
    chunks = _chunks(tasks, workers)
    with _safety.sigint_blocked():  # workers start with Ctrl-C blocked; ours stays pending
        pool = ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=ctx,
                                   initializer=_worker_init, initargs=(level, os.getpid()))
        try:
            pending: set[Future[_Batch]] = {pool.submit(_worker_chunk, job, c) for c in chunks}
        except BaseException:
            _kill_pool(pool)
            raise
    finished_ok = False
    try:
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                yield fut.result()
        finished_ok = True
    finally:
        if finished_ok:
            pool.shutdown(wait=True)
        else:
            _kill_pool(pool)


def _iter_serial(job: _Job, tasks: list[tuple[str, int]]) -> Iterator[_Batch]:
    runner = _Runner(job)
    try:
        for agent, index in tasks:
            yield [runner.play(agent, index)]
    finally:
        runner.close()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_evaluate_args(
    *,
    workers: int = 1,
    force_workers: bool = False,
    limit: int | None = None,
    seed: int = 0,
    videos: int = 0,
    backend: str = "local",
    address: str | None = None,
    out_dir: Any = ".",
) -> None:
    """Check :func:`evaluate`'s scalar arguments; ``ValueError`` naming the argument."""
    if not _is_int(workers) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    if workers > MAX_WORKERS:
        raise ValueError(f"workers must be at most {MAX_WORKERS}, got {workers}")
    cpus = _safety.cpu_count()
    if workers > cpus and not force_workers:
        raise ValueError(f"workers={workers} exceeds the {cpus} CPUs available; more workers "
                         "than CPUs only slow the run down (force it with force_workers / "
                         "--force-workers)")
    if limit is not None and (not _is_int(limit) or limit < 1):
        raise ValueError(f"limit must be a positive int, got {limit!r}")
    if not _is_int(seed) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an int between 0 and {MAX_SEED}, got {seed!r}")
    if not _is_int(videos) or not 0 <= videos <= MAX_VIDEOS:
        raise ValueError(f"videos must be an int between 0 and {MAX_VIDEOS}, got {videos!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if address is not None:
        if backend != "ray":
            raise ValueError("address is only used with backend='ray'")
        if not isinstance(address, str) or not address.strip():
            raise ValueError(f"address must be a non-empty string, got {address!r}")
    if not isinstance(out_dir, (str, os.PathLike)) or not os.fspath(out_dir).strip():
        raise ValueError(f"out_dir must be a non-empty path, got {out_dir!r}")
    if "\0" in os.fspath(out_dir):
        raise ValueError("out_dir contains a NUL character")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: exists and is not a directory")


def _check_env_kwargs(env_id: str, env_kwargs: Mapping[str, Any]) -> None:
    """Build (and close) the env once so bad ``env_kwargs`` fail before any file is touched."""
    import gymnasium as gym

    import mindhelper_env  # noqa: F401

    try:
        env = gym.make(env_id, **dict(env_kwargs))
    except gym.error.Error as exc:
        raise ValueError(f"env {env_id!r}: {exc}") from None
    except TypeError as exc:
        raise ValueError(f"env_kwargs: {exc}") from None
    env.close()


def _check_video_extra() -> None:
    try:
        import imageio  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"videos need the video extra ({exc}); install the video extra: "
                          "pip install 'mindhelper-env[video]'") from None


def _settings_diff(previous: Any, settings: Mapping[str, Any]) -> list[str]:
    if not isinstance(previous, dict):
        return ["run.json is not a JSON object"]
    diffs = []
    for key, now in settings.items():
        if key not in previous:
            diffs.append(f"{key}: missing in run.json, now {json.dumps(now)}")
        elif previous[key] != now:
            diffs.append(f"{key}: {json.dumps(previous[key])} in run.json, now {json.dumps(now)}")
    return diffs


def _prepare_run_file(out: Path, settings: Mapping[str, Any], resume: bool,
                      agent_files: Sequence[Path], *, write: bool = True) -> None:
    """On resume, check ``run.json`` against ``settings``; then (with ``write``) (re)write
    it atomically."""
    run_path = out / _RUN_FILE
    if resume:
        existing = [p for p in agent_files if p.exists()]
        if run_path.exists():
            try:
                previous = _strict_json(run_path.read_bytes().decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise ValueError(f"{run_path}:1: invalid JSON ({exc}); cannot resume") from None
            diff = _settings_diff(previous, settings)
            if diff:
                raise ValueError(f"{run_path}:1: cannot resume with different settings "
                                 f"({'; '.join(diff)}); rerun with the same settings or use a "
                                 "new output directory")
        elif existing:
            raise ValueError(f"{run_path}: missing, so the settings of the results in {out} "
                             f"(e.g. {existing[0].name}) are unknown; cannot resume (use a new "
                             "output directory)")
    if not write:
        return
    _safety.atomic_write_bytes(
        run_path, (json.dumps(settings, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def _remove_stale_temporaries(out: Path) -> None:
    """Temporary files and plot folders a killed run left in ``out`` (we hold the lock, so
    no other run is writing them)."""
    import shutil

    for path in out.glob(".*"):
        if path.is_symlink():
            continue
        if path.is_file() and path.name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                path.unlink()
        elif path.is_dir() and path.name.startswith(".plots-"):
            shutil.rmtree(path, ignore_errors=True)


def _write_plots_atomic(metrics: Mapping[str, Any], out: Path,
                        suite: str | None = None) -> list[str]:
    """Plots go to a private temporary folder, then each is renamed into ``out``."""
    import shutil
    import tempfile

    from mindhelper_env.plots import write_plots

    tmp = Path(tempfile.mkdtemp(prefix=".plots-", dir=out))
    try:
        names = []
        for path in write_plots(metrics, tmp, suite=suite):
            os.replace(path, out / path.name)
            names.append(path.name)
        return names
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def evaluate(
    suite: str,
    agents: Sequence[str],
    out_dir: str | os.PathLike[str],
    *,
    workers: int = 1,
    resume: bool = False,
    limit: int | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    progress: bool = True,
    env_id: str = DEFAULT_ENV_ID,
    agent_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    seed: int = 0,
    timing: bool = True,
    plots: bool = True,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    videos: int = 0,
    force_workers: bool = False,
    backend: str = "local",
    address: str | None = None,
) -> dict[str, Any]:
    """Run every agent on the first ``limit`` (default: all) episodes of ``suite``.

    Writes ``<out_dir>/<agent>.jsonl`` (one result record per episode, appended and
    ``fsync``-ed as it finishes, finally sorted by index; the file name is
    :func:`result_file_name`, the record keeps the agent's name), ``run.json`` (the
    settings, checked on resume), ``summary.json`` (see :func:`summarize`, plus run facts)
    and PNG plots (:func:`mindhelper_env.plots.write_plots`; skipped with a warning when
    matplotlib is not installed, or with ``plots=False``). Returns the summary.

    Safety: every argument is checked before any file is touched; the folder is locked
    (:class:`mindhelper_env.runner_safety.OutputLock`: a second run into it fails at once
    naming the holder); every file is replaced atomically and symbolic links in the folder
    are refused, never followed. SIGTERM is handled like Ctrl-C (``KeyboardInterrupt``);
    worker processes die with this process and are killed on an interrupt, so the records
    written so far stay and ``resume=True`` continues.

    ``workers > 1`` plays episodes in a local ``spawn`` process pool (at most the number of
    CPUs unless ``force_workers``); ``backend="ray"`` plays them as Ray tasks instead
    (:mod:`mindhelper_env.ray_backend`; ``address`` of an existing cluster, else a local
    one with ``workers`` CPUs). The records are the same in every case. ``resume=True``
    keeps the finished records of a previous run in ``out_dir`` (dropping a truncated last
    line; every kept record is revalidated) and plays only the missing episodes; it refuses
    a folder whose ``run.json`` is missing or holds different settings. Without it the
    agents' files are overwritten. Episode ``i`` is reset with seed ``seed + i`` (the agent
    too). ``env_kwargs`` go to ``gym.make`` (e.g. ``window_ticks``), ``agent_kwargs[name]``
    to the agent factory (``env`` is always passed).

    ``videos=K`` also writes, for the first ``K`` episodes of each agent, a GIF and a timeline
    PNG to ``<out_dir>/videos/`` (:func:`write_videos`; needs the ``video`` extra).

    Raises ``ValueError`` for an unknown suite or agent, bad arguments, a locked folder, or
    (on resume) a corrupt result file or different settings, with a
    ``"<file>:<line>: <reason>"`` message where a file is at fault.
    """
    agents = [a.strip() for a in agents.split(",") if a.strip()] if isinstance(agents, str) \
        else list(agents)
    # 1. Every check before any file is touched.
    check_suite(suite)
    check_agents(agents)
    check_evaluate_args(workers=workers, force_workers=force_workers, limit=limit, seed=seed,
                        videos=videos, backend=backend, address=address, out_dir=out_dir)
    env_kwargs = dict(env_kwargs or {})
    if agent_kwargs is not None and not isinstance(agent_kwargs, Mapping):
        raise ValueError(f"agent_kwargs must be a mapping, got {type(agent_kwargs).__name__}")
    _check_env_kwargs(env_id, env_kwargs)
    if videos:
        _check_video_extra()
    if backend == "ray":
        from mindhelper_env import ray_backend

        ray_backend.require_ray()
    job = _Job(
        suite=suite,
        env_id=env_id,
        env_kwargs=_freeze(env_kwargs),
        agent_kwargs=tuple(sorted((a, _freeze(kw)) for a, kw in (agent_kwargs or {}).items())),
        seed=int(seed),
        timing=bool(timing),
        modules=_agent_modules(agents),
    )
    ids = suite_episode_ids(suite)
    n = len(ids) if limit is None else min(limit, len(ids))
    out = Path(out_dir)
    files = {a: out / result_file_name(a) for a in agents}
    settings = {"format": _RUN_FORMAT, "suite": suite, "env_id": env_id,
                "env_kwargs": env_kwargs, "seed": int(seed), "timing": bool(timing)}
    try:
        json.dumps(settings, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"env_kwargs must be JSON-serializable: {exc}") from None

    # 2. One writer per folder; Ray (if used) reachable before any file changes.
    out.mkdir(parents=True, exist_ok=True)
    lock = _safety.OutputLock(out).acquire()
    ray_started = False
    try:
        with _safety.sigterm_as_interrupt():
            if backend == "ray":
                from mindhelper_env import ray_backend

                ray_started = ray_backend.connect(workers, address)
            return _evaluate_locked(
                job, agents, out, files, settings, ids, n, resume=resume, workers=workers,
                progress=progress, plots=plots, on_record=on_record, videos=videos,
                backend=backend, address=address, agent_kwargs=agent_kwargs)
    finally:
        if ray_started:
            from mindhelper_env import ray_backend

            ray_backend.disconnect(ray_started)
        lock.release()


def _evaluate_locked(
    job: _Job,
    agents: list[str],
    out: Path,
    files: Mapping[str, Path],
    settings: dict[str, Any],
    ids: list[str],
    n: int,
    *,
    resume: bool,
    workers: int,
    progress: bool,
    plots: bool,
    on_record: Callable[[dict[str, Any]], None] | None,
    videos: int,
    backend: str,
    address: str | None,
    agent_kwargs: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, Any]:
    suite = job.suite
    for path in [*files.values(), out / _RUN_FILE, out / _SUMMARY_FILE,
                 *(out / name for name in _PLOT_FILES), out / _VIDEO_DIR]:
        _safety.refuse_symlink(path)
    _remove_stale_temporaries(out)
    _prepare_run_file(out, settings, resume, list(files.values()), write=False)
    if resume:  # check every kept record before changing anything
        for agent in agents:
            if files[agent].exists():
                _load_existing(files[agent], agent=agent, suite=suite, ids=ids, repair=False)
    _prepare_run_file(out, settings, resume, list(files.values()))
    with contextlib.suppress(FileNotFoundError):
        (out / _SUMMARY_FILE).unlink()  # never leave a summary of other records behind

    done: dict[str, dict[int, dict[str, Any]]] = {}
    for agent in agents:
        path = files[agent]
        if resume and path.exists():
            done[agent] = _load_existing(path, agent=agent, suite=suite, ids=ids)
        else:
            _safety.atomic_write_bytes(path, b"")
            done[agent] = {}
    tasks = [(a, i) for i in range(n) for a in agents if i not in done[a]]
    already = sum(1 for a in agents for i in done[a] if i < n)
    if resume:
        logger.info("resuming: %d of %d episodes already done", already, already + len(tasks))

    refs: dict[str, dict[str, Any]] = {}
    t_start = time.perf_counter()
    bar = _Progress(progress, suite, already + len(tasks), already)
    handles = {a: _safety.open_append(files[a]) for a in agents}
    if backend == "ray":
        from mindhelper_env.ray_backend import iter_ray

        batches = iter_ray(job, tasks, workers=workers, address=address)
    elif workers > 1 and len(tasks) > 1:
        batches = _iter_parallel(job, tasks, workers)
    else:
        batches = _iter_serial(job, tasks)
    try:
        for batch in batches:
            for rec, ref in batch:
                _append_line(handles[rec["agent"]], rec)
                done[rec["agent"]][int(rec["index"])] = rec
                refs[str(rec["episode_id"])] = ref
                if on_record is not None:
                    on_record(rec)
            bar.advance(len(batch))
    finally:
        batches.close()  # stops the pool / Ray tasks / closes the env now
        bar.close()
        for fh in handles.values():
            fh.close()
    wall = time.perf_counter() - t_start

    for agent in agents:
        _rewrite_sorted(files[agent], done[agent].values())

    # References of resumed episodes (played ones came back with their records).
    for agent in agents:
        for index, rec in done[agent].items():
            if str(rec["episode_id"]) not in refs:
                refs[str(rec["episode_id"])] = suite_reference(suite, index)
    records_by_agent = {a: [done[a][i] for i in sorted(done[a])] for a in agents}
    summary: dict[str, Any] = {
        "suite": suite,
        "suite_episodes": len(ids),
        "episodes": {a: len(records_by_agent[a]) for a in agents},
        "files": {a: files[a].name for a in agents},
        "env_id": job.env_id,
        "env_kwargs": settings["env_kwargs"],
        "seed": job.seed,
        "workers": workers,
        "backend": backend,
        "played": len(tasks),
        "wall_seconds": round(wall, 3),
    }
    summary.update(summarize(records_by_agent, refs))
    summary["plots"] = []
    if plots:
        try:
            summary["plots"] = _write_plots_atomic(summary["metrics"], out, suite)
        except ImportError as exc:
            logger.warning("plots skipped: %s", exc)
    summary["videos"] = []
    if videos:
        summary["videos"] = [str(p.relative_to(out)) for p in write_videos(
            suite, agents, out / _VIDEO_DIR, min(videos, n), env_id=job.env_id,
            env_kwargs=settings["env_kwargs"], seed=job.seed, agent_kwargs=agent_kwargs)]
    _safety.atomic_write_bytes(out / _SUMMARY_FILE,
                               (json.dumps(summary, indent=2) + "\n").encode("utf-8"))
    return summary


def write_videos(
    suite: str,
    agents: Sequence[str],
    out_dir: str | os.PathLike[str],
    k: int,
    *,
    env_id: str = DEFAULT_ENV_ID,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
    agent_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    ext: str = ".gif",
    size: int = 256,
) -> list[Path]:
    """Replay the first ``k`` episodes of ``suite`` per agent and save videos and timelines.

    Episodes are replayed with the same seeds as :func:`evaluate` (``seed + i``), so the video
    shows the recorded episode. Files: ``<out_dir>/<agent>-<episode_id><ext>`` and
    ``<agent>-<episode_id>-timeline.png`` (``<agent>`` made safe as in
    :func:`result_file_name`).
    """
    import gymnasium as gym

    import mindhelper_env  # noqa: F401
    from mindhelper_env.agents import make_agent
    from mindhelper_env.render.episode import record_episode, save_episode_media

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name in agents:
        stem = _safety.agent_file_stem(name)
        env = gym.make(env_id, **dict(env_kwargs or {}))
        kwargs = dict((agent_kwargs or {}).get(name, {}))
        kwargs.setdefault("env", env)
        kwargs.setdefault("seed", seed)
        agent = make_agent(name, **kwargs)
        for i in range(k):
            rec = record_episode(env, agent, seed=seed + i, size=size, agent_name=name,
                                 options={"suite": suite, "index": i})
            written.extend(save_episode_media(
                rec, out / f"{stem}-{rec.record['episode_id']}{ext}"))
        env.close()
    return written
