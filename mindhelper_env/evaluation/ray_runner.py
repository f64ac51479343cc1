"""Run evaluation episodes as Ray tasks (``mindhelper evaluate --backend ray``).

Needs the optional ``ray`` extra (``pip install 'mindhelper-env[ray]'``); Ray is imported
only inside this module's functions, never at ``import mindhelper_env``.

:class:`RayRunner` (the :class:`~mindhelper_env.evaluation.runners.Runner` of ``backend="ray"``)
and :func:`iter_ray` are the backend of :func:`mindhelper_env.evaluation.evaluate`: they connect
to a cluster (``address``, e.g. ``"auto"`` or ``"ray://head:10001"``) or starts a local one
with ``workers`` CPUs, submits chunks of (agent, episode) pairs as Ray tasks and yields their
records as they finish. A task whose worker dies (killed, out of memory, a lost node) is
retried by Ray (``max_retries``); an episode is deterministic, so a retried episode gives
the same record. The runner appends records as they arrive and sorts each file at the end,
so the files are the same as with the local runner, and ``--resume`` works the same way.

Model endpoints shared across a cluster
---------------------------------------
A model-backed agent should not send more concurrent requests to one endpoint than it can
serve, however many Ray workers run. :func:`endpoint_slot` is the hook::

    from mindhelper_env.evaluation.ray_runner import endpoint_slot

    class MyLLMAgent(Agent):
        def act(self, obs, info):
            with endpoint_slot("https://llm.example/v1", limit=8):
                reply = self.client.chat(...)

Under Ray (inside a task or a driver connected to a cluster) the slot is taken from a named
Ray actor, ``mindhelper-endpoint:<endpoint>`` in the ``mindhelper`` namespace, an async
semaphore shared by every worker of the cluster (the first caller's ``limit`` wins; set it
once with :func:`endpoint_limiter`). Without Ray it is a process-local semaphore, so the
same agent code runs under the local runner.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from mindhelper_env.evaluation.runners import chunks, play_chunk
from mindhelper_env.evaluation.settings import RAY_INSTALL_HINT

__all__ = [
    "RayRunner",
    "INSTALL_HINT",
    "require_ray",
    "connect",
    "disconnect",
    "iter_ray",
    "endpoint_limiter",
    "endpoint_slot",
    "EndpointLimiterUnavailable",
]

logger = logging.getLogger(__name__)

INSTALL_HINT = RAY_INSTALL_HINT
#: Ray retries a task this many times when its worker dies.
MAX_RETRIES = 3
NAMESPACE = "mindhelper"
_ACTOR_PREFIX = "mindhelper-endpoint:"


def require_ray() -> Any:
    """Import and return ``ray``; ``ImportError`` with the install hint when missing."""
    try:
        import ray
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return ray


# --------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------


def _play_chunk(job: Any, chunk: list[tuple[str, int, int]], sys_path: list[str]) -> list[Any]:
    """The body of a Ray task: play ``chunk`` in this worker (one runner per worker)."""
    for entry in sys_path:
        if entry not in sys.path and os.path.isdir(entry):
            sys.path.append(entry)
    return play_chunk(job, chunk)


_REMOTE: dict[str, Any] = {}


def _remote_play(ray: Any) -> Any:
    fn = _REMOTE.get("play")
    if fn is None:
        fn = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(_play_chunk)
        _REMOTE["play"] = fn
    return fn


def _init(ray: Any, workers: int, address: str | None) -> bool:
    """Connect to / start Ray; return True when this call started it (and must stop it).

    Ray's core worker installs its own SIGTERM/SIGINT handlers (a stack dump, then exit);
    the Python handlers in place before (the runner's: a clean, resumable interrupt) are
    put back.
    """
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"namespace": NAMESPACE, "log_to_driver": False,
                              "configure_logging": False}
    main_thread = threading.current_thread() is threading.main_thread()
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)} \
        if main_thread else {}
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=workers, include_dashboard=False, **kwargs)
    for sig, handler in saved.items():
        if handler is not None:
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)
    return True


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast (``ValueError``) when ``host:port`` does not accept connections: Ray itself
    retries an unreachable address for minutes."""
    import socket

    if address == "auto" or address.startswith("local"):
        return
    target = address.split("://", 1)[-1].rsplit("/", 1)[0]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"argument --address: expected auto, host:port or ray://host:port, "
                         f"got {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except (OSError, ValueError, OverflowError) as exc:
        raise ValueError(f"argument --address: cannot reach a Ray cluster at {address} "
                         f"({exc.strerror or exc if isinstance(exc, OSError) else exc})") from None


def connect(workers: int, address: str | None) -> bool:
    """Connect to the cluster at ``address`` (or start a local Ray with ``workers`` CPUs)
    before the runner touches any file; ``ValueError`` when that fails. Returns True when
    this call started Ray (pass it to :func:`disconnect`)."""
    ray = require_ray()
    if address:
        _check_reachable(address)
    try:
        return _init(ray, workers, address)
    except (ConnectionError, RuntimeError, TimeoutError) as exc:
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        where = f"at {address}" if address else "locally"
        raise ValueError(f"cannot start or reach Ray {where}: {first[:200]}") from None


def disconnect(started: bool) -> None:
    """Stop Ray if :func:`connect` started it."""
    if not started:
        return
    ray = sys.modules.get("ray")
    if ray is not None:
        with contextlib.suppress(Exception):
            ray.shutdown()


def iter_ray(
    job: Any,
    tasks: list[tuple[str, int, int]],
    *,
    workers: int = 1,
    address: str | None = None,
) -> Iterator[list[Any]]:
    """Yield batches of ``(record, reference)`` from Ray tasks as they finish.

    ``address`` connects to an existing cluster; without it a local Ray instance with
    ``workers`` CPUs is started (and stopped at the end). Chunks are sized for
    ``workers`` (or the cluster's CPU count). Closing the iterator cancels the tasks.
    """
    ray = require_ray()
    started = _init(ray, workers, address)
    refs: list[Any] = []
    try:
        if not tasks:
            return
        cpus = int(ray.cluster_resources().get("CPU", workers) or workers)
        play = _remote_play(ray)
        path = list(sys.path)
        refs = [play.remote(job, chunk, path) for chunk in chunks(tasks, max(1, cpus))]
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                yield ray.get(ref)
        refs = []
    finally:
        for ref in refs:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        if started:
            with contextlib.suppress(Exception):
                ray.shutdown()


class RayRunner:
    """The :class:`~mindhelper_env.evaluation.runners.Runner` of ``backend="ray"``: an
    existing cluster at ``address``, else a local Ray with ``workers`` CPUs (started by
    :meth:`start`, stopped by :meth:`stop`)."""

    def __init__(self, workers: int = 1, address: str | None = None) -> None:
        self.workers = workers
        self.address = address
        self._started = False

    def start(self) -> None:
        self._started = connect(self.workers, self.address)

    def batches(self, job: Any, tasks: list[tuple[str, int, int]]) -> Iterator[list[Any]]:
        return iter_ray(job, tasks, workers=self.workers, address=self.address)

    def stop(self) -> None:
        disconnect(self._started)
        self._started = False


# --------------------------------------------------------------------------------------
# Endpoint concurrency limit
# --------------------------------------------------------------------------------------


class EndpointLimiterUnavailable(RuntimeError):
    """The named limiter actor could not be reached."""


_LIMITER_CLASS: dict[str, Any] = {}
_LOCAL_SEMAPHORES: dict[str, threading.BoundedSemaphore] = {}
_LOCAL_LOCK = threading.Lock()


def _limiter_class(ray: Any) -> Any:
    cls = _LIMITER_CLASS.get("cls")
    if cls is not None:
        return cls

    class _EndpointLimiter:
        """An async counting semaphore shared by a cluster (one actor per endpoint)."""

        def __init__(self, limit: int) -> None:
            import asyncio

            self.limit = int(limit)
            self._sem = asyncio.Semaphore(self.limit)
            self.in_use = 0
            self.peak = 0

        async def acquire(self) -> bool:
            await self._sem.acquire()
            self.in_use += 1
            self.peak = max(self.peak, self.in_use)
            return True

        def release(self) -> bool:
            if self.in_use <= 0:
                return False
            self.in_use -= 1
            self._sem.release()
            return True

        def stats(self) -> dict[str, int]:
            return {"limit": self.limit, "in_use": self.in_use, "peak": self.peak}

    cls = ray.remote(num_cpus=0, max_concurrency=10_000)(_EndpointLimiter)
    _LIMITER_CLASS["cls"] = cls
    return cls


def endpoint_limiter(endpoint: str, limit: int) -> Any:
    """The cluster-wide limiter actor of ``endpoint`` (created with ``limit`` if absent).

    Methods (Ray actor calls): ``acquire()``, ``release()``, ``stats()`` ->
    ``{"limit", "in_use", "peak"}``. Needs an initialized Ray.
    """
    if not isinstance(endpoint, str) or not endpoint:
        raise ValueError(f"endpoint must be a non-empty string, got {endpoint!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive int, got {limit!r}")
    ray = require_ray()
    cls = _limiter_class(ray)
    return cls.options(name=_ACTOR_PREFIX + endpoint, namespace=NAMESPACE,
                       get_if_exists=True, lifetime="detached").remote(limit)


def _ray_active() -> Any:
    ray = sys.modules.get("ray")
    if ray is None:
        return None
    try:
        return ray if ray.is_initialized() else None
    except Exception:  # pragma: no cover - a half-imported ray
        return None


@contextlib.contextmanager
def endpoint_slot(endpoint: str, limit: int, *, timeout: float | None = None) -> Iterator[None]:
    """Hold one of ``limit`` concurrent slots of ``endpoint`` for the ``with`` block.

    Cluster-wide under Ray (a named actor, see the module docstring), process-wide
    otherwise. ``timeout`` (seconds) raises ``TimeoutError`` when no slot frees up in time.
    """
    ray = _ray_active()
    if ray is None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, got {limit!r}")
        with _LOCAL_LOCK:
            sem = _LOCAL_SEMAPHORES.setdefault(endpoint, threading.BoundedSemaphore(limit))
        if not sem.acquire(timeout=timeout):
            raise TimeoutError(f"no free slot for endpoint {endpoint!r} within {timeout} s")
        try:
            yield
        finally:
            sem.release()
        return
    actor = endpoint_limiter(endpoint, limit)
    t0 = time.monotonic()
    pending = actor.acquire.remote()
    try:
        ray.get(pending, timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        with contextlib.suppress(Exception):
            ray.cancel(pending)
        raise TimeoutError(f"no free slot for endpoint {endpoint!r} within "
                           f"{time.monotonic() - t0:.1f} s") from None
    try:
        yield
    finally:
        ray.get(actor.release.remote())


