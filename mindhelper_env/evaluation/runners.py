"""The runners: where episodes are played (this process, a local process pool, Ray).

Every runner has the same small interface (:class:`Runner`): ``start()`` before any file is
touched (connects to Ray, say), ``batches(job, tasks)`` yields lists of ``(record,
reference)`` as episodes finish, ``stop()`` at the end. A *task* is ``(agent, index,
trial)``; a :class:`Job` holds what a worker needs to play tasks and is picklable.
:func:`play_chunk` and :func:`chunks` are the public pieces the Ray runner
(:mod:`mindhelper_env.evaluation.ray_runner`) builds on; it imports nothing private from
here, and this module does not import it (:func:`mindhelper_env.evaluation.run.make_runner`
picks the runner).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import multiprocessing
import os
from collections.abc import Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol

from mindhelper_env.evaluation import safety
from mindhelper_env.evaluation.episode import MAX_STEPS, play_episode
from mindhelper_env.evaluation.settings import suite_reference, trial_seed

__all__ = ["Job", "Task", "Batch", "Runner", "EpisodeRunner", "LocalRunner", "play_chunk",
           "chunks", "freeze"]

logger = logging.getLogger("mindhelper_env.evaluation")

#: ``(agent, index, trial)``.
Task = tuple[str, int, int]
#: ``[(record, reference)]``.
Batch = list[tuple[dict[str, Any], dict[str, Any]]]


def freeze(mapping: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((mapping or {}).items()))


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to play tasks; picklable."""

    suite: str
    env_id: str
    env_kwargs: tuple[tuple[str, Any], ...]
    agent_kwargs: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    seed: int
    timing: bool
    modules: tuple[str, ...] = ()
    #: more than 1: records carry their ``trial``
    trials: int = 1


@dataclass
class EpisodeRunner:
    """One env and one instance of each agent, reused across episodes."""

    job: Job
    env: Any = None
    agents: dict[str, Any] = field(default_factory=dict)

    def play(self, agent_name: str, index: int,
             trial: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
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
        record, reference = play_episode(
            self.env,
            agent,
            seed=self.job.seed + index,
            options={"suite": self.job.suite, "index": index},
            agent_name=agent_name,
            timing=self.job.timing,
            max_steps=MAX_STEPS,
            agent_seed=trial_seed(self.job.seed, index, trial),
            trial=trial if self.job.trials > 1 else None,
        )
        if reference is None:
            reference = suite_reference(self.job.suite, index)
        return record, reference

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


_WORKER_RUNNER: EpisodeRunner | None = None


def worker_init(log_level: int, parent_pid: int | None = None) -> None:
    """Initializer of a worker process: dies with its parent, logs like it."""
    if parent_pid is not None:
        safety.worker_guard(parent_pid)
    logging.basicConfig(level=log_level, format="%(levelname)s %(name)s: %(message)s")


def play_chunk(job: Job, chunk: list[Task]) -> Batch:
    """Play a chunk of tasks in a worker process (one :class:`EpisodeRunner` per process,
    kept while the job is the same)."""
    global _WORKER_RUNNER
    if _WORKER_RUNNER is None or _WORKER_RUNNER.job != job:
        if _WORKER_RUNNER is not None:
            _WORKER_RUNNER.close()
        _WORKER_RUNNER = EpisodeRunner(job)
    return [_WORKER_RUNNER.play(agent, index, trial) for agent, index, trial in chunk]


def chunks(tasks: list[Task], workers: int) -> list[list[Task]]:
    """Tasks cut into chunks for ``workers`` processes. Small chunks keep the progress bar
    live and the pool balanced; large enough to amortize inter-process overhead for
    millisecond-scale episodes."""
    size = max(1, min(16, math.ceil(len(tasks) / (workers * 8))))
    return [tasks[i:i + size] for i in range(0, len(tasks), size)]


class Runner(Protocol):
    """Where episodes are played."""

    def start(self) -> None:
        """Get ready (before any output file changes); ``ValueError`` when that fails."""

    def batches(self, job: Job, tasks: list[Task]) -> Iterator[Batch]:
        """Batches of ``(record, reference)`` as they finish; closing the iterator stops
        the work in flight."""

    def stop(self) -> None:
        """Release what :meth:`start` took."""


class LocalRunner:
    """This process (``workers == 1`` or one task) or a ``spawn`` process pool."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def batches(self, job: Job, tasks: list[Task]) -> Iterator[Batch]:
        if self.workers > 1 and len(tasks) > 1:
            return _iter_parallel(job, tasks, self.workers)
        return _iter_serial(job, tasks)


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


def _iter_parallel(job: Job, tasks: list[Task], workers: int) -> Iterator[Batch]:
    """Yield batches of records from a spawn process pool as they complete.

    Workers die with this process (:func:`mindhelper_env.evaluation.safety.worker_guard`) and
    are killed when the iteration ends early (an interrupt, an error, ``close()``).
    """
    ctx = multiprocessing.get_context("spawn")
    level = logging.getLogger("mindhelper_env").getEffectiveLevel()
    parts = chunks(tasks, workers)
    with safety.sigint_blocked():  # workers start with Ctrl-C blocked; ours stays pending
        pool = ProcessPoolExecutor(max_workers=min(workers, len(parts)), mp_context=ctx,
                                   initializer=worker_init, initargs=(level, os.getpid()))
        try:
            pending: set[Future[Batch]] = {pool.submit(play_chunk, job, c) for c in parts}
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


def _iter_serial(job: Job, tasks: list[Task]) -> Iterator[Batch]:
    runner = EpisodeRunner(job)
    try:
        for agent, index, trial in tasks:
            yield [runner.play(agent, index, trial)]
    finally:
        runner.close()
