"""Retry back-off and a concurrency limit shared across processes.

:class:`FileSemaphore` allows at most ``n`` holders among all threads *and processes* that
use the same directory and key: slot ``i`` is the file ``<dir>/<key>/slot-<i>.lock`` and a
holder owns it through an exclusive, non-blocking ``flock`` on its own open file. The OS
drops the lock if a holder dies, so a crashed worker never leaks a slot. Evaluation
workers (``--workers 2``) that talk to the same endpoint therefore share one limit.
On systems without ``fcntl`` the limit only holds within one process.

:class:`AdaptiveLimit` is the in-process side: one per endpoint (:func:`shared_limit`),
shared by every client and thread of the process, it caps requests in flight, cuts its
limit on rate-limit answers and climbs back on successes (AIMD). :func:`cancel_scope` lets
a runner stop the model calls of the episodes it is playing (:class:`RunCancelled`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import random
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mindhelper_env.models.base import ModelError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileSemaphore", "backoff_delay", "default_lock_dir", "AdaptiveLimit",
           "RunCancelled", "cancel_scope", "check_cancelled", "cancellable_sleep",
           "shared_limit", "reset_shared_limits"]

logger = logging.getLogger(__name__)


def default_lock_dir() -> Path:
    """``$MINDHELPER_LOCK_DIR`` or ``<tmp>/mindhelper-model-locks``."""
    env = os.environ.get("MINDHELPER_LOCK_DIR")
    return Path(env) if env else Path(tempfile.gettempdir()) / "mindhelper-model-locks"


def backoff_delay(attempt: int, *, base: float, cap: float, seed: str) -> float:
    """Delay before retry ``attempt`` (0-based): ``min(cap, base * 2**attempt)`` times a
    jitter factor in [1, 1.5) drawn from a generator seeded by ``seed`` and ``attempt``
    (deterministic: the same request retries on the same schedule in every run)."""
    jitter = random.Random(f"{seed}:{attempt}").random() * 0.5
    return min(cap, base * (2 ** attempt)) * (1.0 + jitter)


class FileSemaphore:
    """At most ``limit`` concurrent holders per ``key`` (see the module docstring)."""

    def __init__(self, limit: int, key: str, directory: str | os.PathLike[str] | None = None,
                 *, poll: float = 0.01) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"concurrency limit must be a positive int, got {limit!r}")
        self.limit = limit
        self.key = key
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        self.directory = Path(directory) if directory is not None else default_lock_dir()
        self.path = self.directory / digest
        self.poll = poll
        self._local = threading.BoundedSemaphore(limit) if fcntl is None else None

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[int]:
        """Wait for a free slot (up to ``timeout`` seconds) and hold it; yields its index."""
        if self._local is not None:  # pragma: no cover - no fcntl
            if not self._local.acquire(timeout=-1 if timeout is None else timeout):
                raise TimeoutError(f"no free model slot for {self.key!r}")
            try:
                yield 0
            finally:
                self._local.release()
            return
        self.path.mkdir(parents=True, exist_ok=True)
        deadline = None if timeout is None else time.monotonic() + timeout
        got = self._scan()
        if got is None:
            # Only one thread of this process scans while the slots are full (the others
            # wait for their turn), so it can poll often without costing much CPU: a slot
            # given back is taken within ``poll`` seconds.
            turn = _scan_turn(self.path)
            while not turn.acquire(timeout=0.2):
                check_cancelled()
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"no free model slot for {self.key!r} in {timeout} s")
            try:
                delay = self.poll
                while (got := self._scan()) is None:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise TimeoutError(
                            f"no free model slot for {self.key!r} in {timeout} s")
                    cancellable_sleep(delay)
                    delay = min(delay * 1.5, 0.05)
            finally:
                turn.release()
        i, fh = got
        try:
            yield i
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            fh.close()

    def _scan(self) -> tuple[int, Any] | None:
        """One pass over the slots: ``(index, open file)`` of a slot now held, or None."""
        start = threading.get_ident() % self.limit  # threads start their scans apart
        for k in range(self.limit):
            i = (start + k) % self.limit
            fh = open(self.path / f"slot-{i}.lock", "a+b")  # noqa: SIM115
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                continue
            return i, fh
        return None


_turns: dict[Path, threading.Lock] = {}
_turns_lock = threading.Lock()


def _scan_turn(path: Path) -> threading.Lock:
    """The lock that lets one thread of this process at a time poll the slots of ``path``."""
    with _turns_lock:
        return _turns.setdefault(path, threading.Lock())


# --------------------------------------------------------------------------------------
# The adaptive in-process limit and cancellation
# --------------------------------------------------------------------------------------

#: Factor the in-process limit is cut by on a rate-limit answer (429, or 503 with
#: ``Retry-After``); it climbs back by one request per round of successes.
DECREASE = 0.8


class RunCancelled(ModelError):
    """The run this model call belongs to was stopped (Ctrl-C, a budget stop): the call is
    not made. Agents count it like any failed call; the runner drops the episode."""

    def __init__(self, message: str = "the run was stopped") -> None:
        super().__init__(message, "cancelled")


_scope = threading.local()


@contextmanager
def cancel_scope(event: threading.Event | None) -> Iterator[None]:
    """Model calls made by this thread inside the block raise :class:`RunCancelled` once
    ``event`` is set (instead of waiting for a slot or a retry)."""
    previous = getattr(_scope, "event", None)
    _scope.event = event
    try:
        yield
    finally:
        _scope.event = previous


def current_cancel_event() -> threading.Event | None:
    """The event of the innermost :func:`cancel_scope` of this thread, or None."""
    return getattr(_scope, "event", None)


def check_cancelled() -> None:
    """Raise :class:`RunCancelled` if this thread's run was stopped."""
    event = current_cancel_event()
    if event is not None and event.is_set():
        raise RunCancelled()


def cancellable_sleep(seconds: float) -> None:
    """``time.sleep`` that ends early (raising :class:`RunCancelled`) when the run stops."""
    event = current_cancel_event()
    if event is None:
        time.sleep(seconds)
        return
    if event.wait(max(0.0, seconds)):
        raise RunCancelled()


class AdaptiveLimit:
    """Requests in flight to one endpoint from this process, under a limit that adapts.

    The limit starts at ``ceiling`` (``None``: unlimited until the first rate-limit answer).
    A rate-limit answer (:meth:`release` with ``rate_limited=True``) cuts it to
    :data:`DECREASE` times the requests that were in flight, at most once per wave: answers
    to requests sent before the last cut do not cut again. ``retry_after`` seconds pause
    every new request to the endpoint. Each success raises the limit by ``1 / limit`` (one
    request per round of answers), back up to ``ceiling``. The limit never goes below
    ``floor``.

    Counters: ``cuts`` (times the limit was cut), ``rate_limited`` (rate-limit answers),
    ``peak`` (most requests in flight), ``lowest`` (the lowest limit reached; ``None`` while
    the limit was never finite).
    """

    def __init__(self, ceiling: int | None = None, *, floor: int = 1) -> None:
        if ceiling is not None and (isinstance(ceiling, bool) or int(ceiling) < 1):
            raise ValueError(f"ceiling must be a positive int or None, got {ceiling!r}")
        self.ceiling = int(ceiling) if ceiling is not None else None
        self.floor = max(1, int(floor))
        self.limit = float(self.ceiling) if self.ceiling is not None else math.inf
        self.in_flight = 0
        self.peak = 0
        self.cuts = 0
        self.rate_limited = 0
        self.lowest = self.limit
        self._paused_until = 0.0
        self._last_cut = -math.inf
        self._cond = threading.Condition()

    def set_ceiling(self, ceiling: int | None) -> None:
        """Lower the ceiling (several clients of one endpoint: the smallest wins)."""
        if ceiling is None:
            return
        with self._cond:
            if self.ceiling is None or int(ceiling) < self.ceiling:
                self.ceiling = int(ceiling)
                self.limit = min(self.limit, float(self.ceiling))
                self.lowest = min(self.lowest, self.limit)

    def acquire(self) -> float:
        """Wait for room (and the end of a pause); returns the start time to give back to
        :meth:`release`. Raises :class:`RunCancelled` when this thread's run stops."""
        event = current_cancel_event()
        with self._cond:
            while True:
                if event is not None and event.is_set():
                    raise RunCancelled()
                now = time.monotonic()
                if now < self._paused_until:
                    self._cond.wait(min(self._paused_until - now, 0.1))
                    continue
                if not math.isfinite(self.limit) \
                        or self.in_flight < max(self.floor, int(self.limit)):
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
                    return now
                self._cond.wait(0.1)

    def release(self, started: float, *, ok: bool, rate_limited: bool = False,
                retry_after: float = 0.0) -> None:
        """Give the slot back; adapt the limit to how the request ended."""
        with self._cond:
            in_flight = self.in_flight
            self.in_flight -= 1
            now = time.monotonic()
            if rate_limited:
                self.rate_limited += 1
                if started >= self._last_cut:
                    base = min(self.limit, float(in_flight))
                    self.limit = max(float(self.floor), math.floor(base * DECREASE))
                    self.lowest = min(self.lowest, self.limit)
                    self._last_cut = now
                    self.cuts += 1
                if retry_after > 0:
                    self._paused_until = max(self._paused_until, now + retry_after)
            elif ok and math.isfinite(self.limit):
                top = float(self.ceiling) if self.ceiling is not None else math.inf
                self.limit = min(top, self.limit + 1.0 / max(self.limit, 1.0))
            self._cond.notify_all()

    def stats(self) -> dict[str, Any]:
        with self._cond:
            return {"limit": None if not math.isfinite(self.limit) else round(self.limit, 2),
                    "ceiling": self.ceiling, "in_flight": self.in_flight, "peak": self.peak,
                    "cuts": self.cuts, "rate_limited": self.rate_limited,
                    "lowest": None if not math.isfinite(self.lowest) else self.lowest}


_limits: dict[str, AdaptiveLimit] = {}
_limits_lock = threading.Lock()


def shared_limit(endpoint: str, ceiling: int | None) -> AdaptiveLimit:
    """The process's :class:`AdaptiveLimit` of ``endpoint`` (one per endpoint, shared by all
    clients of this process, so episodes played in parallel threads adapt together)."""
    with _limits_lock:
        limit = _limits.get(endpoint)
        if limit is None:
            limit = _limits[endpoint] = AdaptiveLimit(ceiling)
        else:
            limit.set_ceiling(ceiling)
        return limit


def reset_shared_limits() -> None:
    """Forget every endpoint's adaptive limit (tests, benchmarks)."""
    with _limits_lock:
        _limits.clear()
