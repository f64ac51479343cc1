"""The runners: where episodes are played (this process, a local process pool, Ray).

Every runner has the same small interface (:class:`Runner`): ``start()`` before any file is
touched (connects to Ray, say), ``batches(job, tasks)`` yields lists of ``(record,
reference)`` as episodes finish, ``stop()`` at the end. A *task* is ``(agent, index,
trial)``; a :class:`Job` holds what a worker needs to play tasks and is picklable.
:func:`play_chunk` and :func:`chunks` are the public pieces the Ray runner
(:mod:`mindhelper_env.evaluation.ray_runner`) builds on; it imports nothing private from
here, and this module does not import it (:func:`mindhelper_env.evaluation.run.make_runner`
picks the runner).

Episodes in flight (``concurrency > 1``): each worker (this process, or each process of the
pool) plays up to ``concurrency`` episodes at once in threads, each thread with its own env
and agents, so a model-bound agent waits on its answers in parallel while the CPU simulates
the others. Tasks are fed through a queue as episodes finish (:class:`TaskFeed`), records
come back one by one (written and counted at once), and :meth:`TaskFeed.drain` lets the
episodes in flight finish while no new one starts (a budget stop). Agents whose
``thread_safe`` attribute (or whose model client's) is False are played one episode at a
time per worker, in one serial lane. Records do not depend on ``concurrency``: every episode
is played by a freshly reset agent with the seeds of a sequential run.

A run with a budget carries its ledger in the job (``Job.ledger``, a
:class:`~mindhelper_env.models.ledger.LedgerSpec`): each episode plays inside a
:func:`~mindhelper_env.models.ledger.call_scope`, so its model requests reserve on the run's
one ledger, in every thread and process; an episode of an agent with a live model
(``LedgerSpec.metered``) first holds its worst case
(:meth:`~mindhelper_env.models.ledger.Ledger.start_episode`) and releases what is left of it
when it ends. An episode whose request the budget refused comes back as a *cut* marker
instead of a record (:data:`RUN_KEY` ``{"cut": True}``), one the budget could not start as
a *not started* marker (``{"not_started": True}``: nothing of it was sent); the caller
records neither. Every record also carries :data:`RUN_KEY` ``{"rate_limited": n}``
(rate-limit answers its requests were retried after), which the caller pops before writing.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import logging
import math
import multiprocessing
import os
import pickle
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol

from mindhelper_env.evaluation import safety
from mindhelper_env.evaluation.episode import MAX_STEPS, make_env, play_episode
from mindhelper_env.evaluation.settings import suite_reference, trial_seed

__all__ = ["Job", "Task", "Batch", "Runner", "EpisodeRunner", "LocalRunner", "play_chunk",
           "chunks", "freeze", "TaskFeed", "agent_thread_safe", "RUN_KEY"]

#: The key of what a played episode tells the run beyond its record (popped before writing).
RUN_KEY = "_run"

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
    #: the run's budget ledger (:class:`~mindhelper_env.models.ledger.LedgerSpec`), if any
    ledger: Any = None


_LEDGERS: dict[Any, Any] = {}
_LEDGERS_LOCK = threading.Lock()


def _open_ledger(spec: Any) -> Any:
    """This process's client of the ledger ``spec`` (one per spec)."""
    from mindhelper_env.models.ledger import Ledger

    with _LEDGERS_LOCK:
        ledger = _LEDGERS.get(spec)
        if ledger is None:
            ledger = _LEDGERS[spec] = Ledger(spec)
        return ledger


@dataclass
class EpisodeRunner:
    """One env and one instance of each agent, reused across episodes."""

    job: Job
    env: Any = None
    agents: dict[str, Any] = field(default_factory=dict)

    def agent(self, agent_name: str) -> Any:
        """This runner's instance of ``agent_name`` (built on first use, with the env)."""

        import mindhelper_env  # noqa: F401  (registers the envs in spawned workers)
        from mindhelper_env.agents import AGENTS, make_agent

        if agent_name not in AGENTS:
            for mod in self.job.modules:
                try:
                    importlib.import_module(mod)
                except ImportError as exc:
                    logger.debug("cannot import agent module %s: %s", mod, exc)
        if self.env is None:
            self.env = make_env(self.job.env_id, **dict(self.job.env_kwargs))
        agent = self.agents.get(agent_name)
        if agent is None:
            kwargs = dict(dict(self.job.agent_kwargs).get(agent_name, ()))
            kwargs.setdefault("env", self.env)
            kwargs.setdefault("seed", self.job.seed)
            agent = make_agent(agent_name, **kwargs)
            self.agents[agent_name] = agent
        return agent

    def play(self, agent_name: str, index: int,
             trial: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(record, reference)`` of one episode, or a cut marker (see the module
        docstring)."""
        from mindhelper_env.models.ledger import BudgetRefused, EpisodeNotStarted, call_scope

        agent = self.agent(agent_name)
        spec = self.job.ledger
        ledger = _open_ledger(spec) if spec is not None else None
        price = spec.price(agent_name) if spec is not None else (0.0, 0.0)
        with call_scope(ledger, price) as scope:
            if ledger is not None and agent_name in spec.metered:
                try:
                    scope.episode = ledger.start_episode(agent_name, price)
                except EpisodeNotStarted:
                    return ({"agent": agent_name, "index": index, "trial": trial,
                             RUN_KEY: {"not_started": True, "rate_limited": 0}}, {})
            try:
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
            except BudgetRefused:
                scope.cut = True
            finally:
                if scope.episode is not None:
                    ledger.end_episode(scope.episode)
        if scope.cut:
            return ({"agent": agent_name, "index": index, "trial": trial,
                     RUN_KEY: {"cut": True, "rate_limited": scope.rate_limited}}, {})
        record[RUN_KEY] = {"rate_limited": scope.rate_limited}
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
    """This process (``workers == 1`` or one task) or a ``spawn`` process pool.

    ``concurrency > 1`` or ``feed=True`` plays through a :class:`TaskFeed` (episodes in
    flight in threads; records one by one; :meth:`TaskFeed.drain`)."""

    def __init__(self, workers: int = 1, concurrency: int = 1, feed: bool = False) -> None:
        self.workers = workers
        self.concurrency = concurrency
        self.feed = feed

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def batches(self, job: Job, tasks: list[Task]) -> Iterator[Batch]:
        if self.concurrency > 1 or self.feed:
            workers = self.workers if len(tasks) > 1 else 1
            return TaskFeed(job, tasks, workers, self.concurrency)
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


# --------------------------------------------------------------------------------------
# Episodes in flight: threads in each worker, tasks fed through a queue
# --------------------------------------------------------------------------------------


def agent_thread_safe(agent: Any) -> bool:
    """Whether copies of ``agent`` may play episodes in parallel threads: False when the
    agent or its model client (``agent.client``) says ``thread_safe = False`` (e.g. an
    ``hf:`` model, one copy in memory)."""
    if not getattr(agent, "thread_safe", True):
        return False
    client = getattr(agent, "client", None)
    return client is None or bool(getattr(client, "thread_safe", True))


class _Lanes:
    """The episodes of one worker: threads with their own :class:`EpisodeRunner`, and one
    serial lane (its own runner, one episode at a time) for agents that are not
    thread-safe. An agent's safety is learned from its first instance, built in the serial
    lane (so an unsafe agent, e.g. a local model, exists once per worker)."""

    def __init__(self, job: Job) -> None:
        self.serial = EpisodeRunner(job)
        self.serial_lock = threading.Lock()
        self.safe: dict[str, bool] = {}
        self.probe_lock = threading.Lock()

    def play(self, runner: EpisodeRunner, task: Task) -> tuple[dict[str, Any], dict[str, Any]]:
        agent, index, trial = task
        with self.probe_lock:
            safe = self.safe.get(agent)
            if safe is None:
                with self.serial_lock:
                    safe = self.safe[agent] = agent_thread_safe(self.serial.agent(agent))
        if safe:
            return runner.play(agent, index, trial)
        with self.serial_lock:
            return self.serial.play(agent, index, trial)

    def close(self) -> None:
        with self.serial_lock:
            self.serial.close()


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles (to cross a process boundary), else a RuntimeError naming it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _lane(lanes: _Lanes, job: Job, get: Callable[[], Task | None],
          put: Callable[[Any], None], stop: threading.Event) -> None:
    """One thread of a worker: play tasks until a ``None`` task or ``stop``. Results go to
    ``put`` as ``("ok", record, reference)`` or ``("error", exception)``; an episode that
    ends after ``stop`` is dropped (its model calls were cancelled)."""
    from mindhelper_env.models.limits import cancel_scope

    runner = EpisodeRunner(job)
    try:
        with cancel_scope(stop):
            while not stop.is_set():
                task = get()
                if task is None:
                    break
                try:
                    record, reference = lanes.play(runner, task)
                except BaseException as exc:  # reported to the parent, which stops the run
                    if not stop.is_set():
                        put(("error", _portable(exc)))
                    break
                if stop.is_set():
                    break
                put(("ok", record, reference))
    finally:
        runner.close()


def _blocking_get(q: Any, stop: threading.Event) -> Callable[[], Task | None]:
    def get() -> Task | None:
        while not stop.is_set():
            try:
                return q.get(timeout=0.2)
            except queue.Empty:
                continue
        return None

    return get


def _start_lanes(job: Job, concurrency: int, tasks_q: Any, results_q: Any,
                 stop: threading.Event) -> tuple[_Lanes, list[threading.Thread]]:
    lanes = _Lanes(job)
    threads = [threading.Thread(target=_lane, name=f"mindhelper-episode-{i}", daemon=True,
                                args=(lanes, job, _blocking_get(tasks_q, stop), results_q.put,
                                      stop))
               for i in range(concurrency)]
    for t in threads:
        t.start()
    return lanes, threads


_FEED_QUEUES: tuple[Any, Any] | None = None


def feed_worker_init(log_level: int, parent_pid: int, tasks_q: Any, results_q: Any) -> None:
    """Initializer of a :class:`TaskFeed` worker process: :func:`worker_init`, plus the
    queues (they can only reach a spawned process as it starts)."""
    global _FEED_QUEUES
    worker_init(log_level, parent_pid)
    _FEED_QUEUES = (tasks_q, results_q)


def serve_feed(job: Job, concurrency: int) -> int:
    """Play tasks from this worker's task queue in ``concurrency`` threads until each has
    taken a ``None``; returns 0."""
    if _FEED_QUEUES is None:  # pragma: no cover - only called in feed workers
        raise RuntimeError("serve_feed runs in a worker started by TaskFeed")
    tasks_q, results_q = _FEED_QUEUES
    stop = threading.Event()
    lanes, threads = _start_lanes(job, concurrency, tasks_q, results_q, stop)
    try:
        for t in threads:
            t.join()
    finally:
        stop.set()
        lanes.close()
    return 0


class TaskFeed:
    """Tasks fed to ``workers`` workers that play ``concurrency`` episodes each at once.

    An iterator of one-record batches in the order episodes finish. At most ``workers *
    concurrency`` tasks (plus one per worker, or :attr:`max_in_flight`) are handed out at a
    time; the rest wait here,
    so :meth:`drain` stops new episodes at once and lets those in flight finish (their
    records still come). :meth:`close` stops everything now: threads of this process have
    their model calls cancelled and their episodes dropped; worker processes are killed.
    A worker's exception is raised here; a worker that dies, or workers that end with
    episodes unaccounted for, raise ``RuntimeError`` (never a hang).
    """

    def __init__(self, job: Job, tasks: list[Task], workers: int, concurrency: int) -> None:
        self.workers = max(1, int(workers))
        self.concurrency = max(1, int(concurrency))
        self.capacity = self.workers * self.concurrency + self.workers
        self._pending = collections.deque(tasks)
        self.outstanding = 0
        self._ended = False
        self._closed = False
        self._stop = threading.Event()
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future[int]] = []
        self._threads: list[threading.Thread] = []
        self._lanes: _Lanes | None = None
        threads = self.workers * self.concurrency
        if self.workers == 1:
            self._tasks_q: Any = queue.Queue()
            self._results_q: Any = queue.Queue()
            self._lanes, self._threads = _start_lanes(job, min(self.concurrency, max(1, len(
                tasks))), self._tasks_q, self._results_q, self._stop)
            self._sentinels = len(self._threads)
        else:
            ctx = multiprocessing.get_context("spawn")
            self._tasks_q = ctx.Queue()
            self._results_q = ctx.Queue()
            level = logging.getLogger("mindhelper_env").getEffectiveLevel()
            with safety.sigint_blocked():
                self._pool = ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=ctx, initializer=feed_worker_init,
                    initargs=(level, os.getpid(), self._tasks_q, self._results_q))
                try:
                    self._futures = [self._pool.submit(serve_feed, job, self.concurrency)
                                     for _ in range(self.workers)]
                except BaseException:
                    _kill_pool(self._pool)
                    raise
            self._sentinels = threads
        #: at most this many tasks out at a time, when set (a budget sets it, as the
        #: consumer learns what an episode costs); tasks go out on the first ``next``
        self.max_in_flight: int | None = None

    @property
    def pending(self) -> int:
        """Tasks not handed out yet."""
        return len(self._pending)

    def _feed(self) -> None:
        cap = self.capacity if self.max_in_flight is None \
            else max(1, min(self.capacity, int(self.max_in_flight)))
        while self._pending and self.outstanding < cap:
            self._tasks_q.put(self._pending.popleft())
            self.outstanding += 1
        if not self._pending and not self._ended:
            for _ in range(self._sentinels):
                self._tasks_q.put(None)
            self._ended = True

    def drain(self) -> None:
        """Start no new episode; the ones in flight finish and their records still come."""
        self._pending.clear()
        self._feed()

    def __iter__(self) -> TaskFeed:
        return self

    def __next__(self) -> Batch:
        if self._closed:
            raise StopIteration
        self._feed()  # here, not on receipt: the consumer may drain after each batch
        idle_since: float | None = None
        while True:
            if self.outstanding == 0 and self._ended:
                self._finish()
                raise StopIteration
            try:
                item = self._results_q.get(timeout=0.1)
            except queue.Empty:
                idle_since = self._check_workers(idle_since)
                continue
            batch = [item]
            with contextlib.suppress(queue.Empty):
                while len(batch) < 256:
                    batch.append(self._results_q.get_nowait())
            out: Batch = []
            for entry in batch:
                if entry[0] == "error":
                    raise entry[1]
                out.append((entry[1], entry[2]))
            self.outstanding -= len(out)
            return out

    def _check_workers(self, idle_since: float | None) -> float | None:
        """Raise if the workers cannot deliver the episodes still outstanding."""
        if self._pool is not None:
            for fut in self._futures:
                if fut.done() and fut.exception() is not None:
                    raise fut.exception()  # type: ignore[misc]
            alive = not all(f.done() for f in self._futures)
        else:
            alive = any(t.is_alive() for t in self._threads)
        if alive:
            return None
        now = time.monotonic()
        if idle_since is None:
            return now
        if now - idle_since > 5.0:  # results of finished workers had time to arrive
            raise RuntimeError(f"the evaluation workers ended with {self.outstanding} "
                               "episodes unaccounted for")
        return idle_since

    def _finish(self) -> None:
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._close_queues()
        for t in self._threads:
            t.join()
        if self._lanes is not None:
            self._lanes.close()

    def _close_queues(self) -> None:
        for q in (self._tasks_q, self._results_q):
            with contextlib.suppress(Exception):
                q.cancel_join_thread()
                q.close()

    def close(self) -> None:
        """Stop now (see the class docstring); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._pool is not None:
            _kill_pool(self._pool)
            self._close_queues()
        for t in self._threads:
            t.join(timeout=10)
        if self._lanes is not None and not any(t.is_alive() for t in self._threads):
            self._lanes.close()
