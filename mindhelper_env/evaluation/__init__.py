"""The evaluation runner: every agent on every episode of a suite, one JSON line each.

:func:`run_episode` plays one episode with the plain Gymnasium loop and returns its *result
record*; :func:`evaluate` runs a list of agents over a suite (optionally in a local process
pool), writes ``<out_dir>/<agent>.jsonl`` as episodes finish, and ends with
``summary.json`` and PNG plots.

A result record is the env's final ``info["episode_record"]`` without ``"reference"`` (the
ground truth never goes into result files) plus ``agent``, ``suite``, ``index`` and
``usage``::

    {"agent": "oracle", "suite": "vh-dev-v5", "index": 7, "episode_id": "...",
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
``act``/``reset`` or a non-string action, replaced by ``"none"``) to the agent's own;
``usage.agent_errors`` counts the exceptions alone (shown in the tables; ``--strict`` fails on
any, and a run where most of an agent's decisions raised exits non-zero). Every record ends
with a compact ``provenance`` stamp (:mod:`~.provenance`), and its ``agent`` is the agent's
row name (:mod:`~.roster`): the registry name, or a user agent's ``name``. An
agent with a ``trigger_ops`` list attribute (Trigger-based agents: ``[{"predicted",
"label"}]`` for the episode) has it copied into the record.
Everything else in a record is deterministic: running the same suite twice, with any
number of workers, or resuming an interrupted run gives the same records up to
``usage.seconds`` (and byte-identical files with ``timing=False``).

Files are written crash-safely: each record is appended, flushed and ``fsync``-ed as its
episode finishes, so an interrupted run loses at most the line being written;
``resume=True`` drops such a truncated last line and redoes only the missing episodes.
At the end each file is rewritten sorted by episode index and trial (atomically), so the output does
not depend on the number of workers or on completion order.

Agents run in worker processes when ``workers > 1`` (``spawn`` start method): an agent must
be registered in an importable module (or at the top level of the main script), not only
inside ``if __name__ == "__main__":``. With ``backend="ray"`` they run as Ray tasks
(:mod:`mindhelper_env.evaluation.ray_runner`); the module that registers an agent is imported in the
Ray worker (the driver's ``sys.path`` is passed along).

Safety (issue 10, :mod:`mindhelper_env.evaluation.safety`): arguments are checked before any
file is touched; one writer per output folder (a ``flock`` lock naming its holder); files are
replaced atomically and symlinks never followed; result file names are derived safely from
agent names; workers die with the runner; SIGTERM is an interrupt like Ctrl-C; ``resume``
revalidates every kept record and refuses a missing or different ``run.json``.

The package's modules, lowest first: :mod:`~.safety` (lock, atomic writes, signals),
:mod:`~.episode` (one episode), :mod:`~.settings` (:class:`EvalSettings` and every check),
:mod:`~.results` (result files, strict JSON, resume), :mod:`~.summary` (tables, trials),
:mod:`~.progress`, :mod:`~.runners` (the local runner and the :class:`~.runners.Runner`
interface), :mod:`~.ray_runner` (the Ray runner) and :mod:`~.run` (:func:`evaluate`).
"""

from __future__ import annotations

from mindhelper_env.evaluation.episode import (
    DEFAULT_ENV_ID,
    SUITE_ENV_IDS,
    make_env,
    run_episode,
    suite_env_id,
)
from mindhelper_env.evaluation.results import read_result_file, result_file_name
from mindhelper_env.evaluation.run import evaluate, write_videos
from mindhelper_env.evaluation.settings import (
    BACKENDS,
    MAX_SEED,
    MAX_TRIALS,
    MAX_VIDEOS,
    MAX_WORKERS,
    EvalSettings,
    check_agents,
    check_evaluate_args,
    check_suite,
    suite_episode_ids,
    suite_reference,
    trial_seed,
)
from mindhelper_env.evaluation.summary import (
    HEADLINE_KEYS,
    headline,
    summarize,
    summarize_trials,
)

__all__ = [
    "DEFAULT_ENV_ID",
    "SUITE_ENV_IDS",
    "suite_env_id",
    "make_env",
    "HEADLINE_KEYS",
    "EvalSettings",
    "run_episode",
    "evaluate",
    "write_videos",
    "read_result_file",
    "check_suite",
    "check_agents",
    "suite_episode_ids",
    "suite_reference",
    "headline",
    "summarize",
    "summarize_trials",
    "trial_seed",
    "result_file_name",
    "check_evaluate_args",
    "BACKENDS",
    "MAX_WORKERS",
    "MAX_SEED",
    "MAX_VIDEOS",
    "MAX_TRIALS",
]
