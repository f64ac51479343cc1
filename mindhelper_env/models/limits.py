"""Retry back-off and a concurrency limit shared across processes.

:class:`FileSemaphore` allows at most ``n`` holders among all threads *and processes* that
use the same directory and key: slot ``i`` is the file ``<dir>/<key>/slot-<i>.lock`` and a
holder owns it through an exclusive, non-blocking ``flock`` on its own open file. The OS
drops the lock if a holder dies, so a crashed worker never leaks a slot. Evaluation
workers (``--workers 2``) that talk to the same endpoint therefore share one limit.
On systems without ``fcntl`` the limit only holds within one process.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileSemaphore", "backoff_delay", "default_lock_dir"]

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
        delay = self.poll
        while True:
            for i in range(self.limit):
                fh = open(self.path / f"slot-{i}.lock", "a+b")  # noqa: SIM115
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    fh.close()
                    continue
                try:
                    yield i
                finally:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
                    fh.close()
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"no free model slot for {self.key!r} in {timeout} s")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.2)
