"""Safety pieces of the evaluation runner.

* :class:`OutputLock`: one writer per output folder (an advisory ``fcntl.flock`` on
  ``<out>/.mindhelper.lock`` that also records the holder's pid, host and command);
* :func:`agent_file_stem`: a result file name derived safely from any agent name
  (``org/model`` -> ``org~2Fmodel``; never a path, never hidden, never outside the folder,
  and no ``%`` that a browser would decode in a report's links);
* :func:`atomic_write_bytes`, :func:`open_append`, :func:`refuse_symlink`: files are
  replaced atomically (temporary file + rename) and symbolic links are never followed;
* :func:`worker_guard`: run in each worker process; the worker ignores Ctrl-C (its parent
  handles it) and exits as soon as its parent dies (``PR_SET_PDEATHSIG`` on Linux plus a
  portable watch thread);
* :func:`sigint_blocked` and :func:`sigterm_as_interrupt`: used by the parent while it starts
  workers and while it runs, so that Ctrl-C and SIGTERM both end a run with one
  :class:`KeyboardInterrupt` in the parent and none in the workers.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "LOCK_FILE",
    "OutputLock",
    "OutputLocked",
    "Terminated",
    "agent_file_stem",
    "atomic_write_bytes",
    "open_append",
    "refuse_symlink",
    "worker_guard",
    "sigint_blocked",
    "sigterm_as_interrupt",
    "cpu_count",
]

logger = logging.getLogger(__name__)

#: The lock file inside an output folder.
LOCK_FILE = ".mindhelper.lock"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def cpu_count() -> int:
    """CPUs this process may run on (affinity-aware where the platform tells)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------------------
# Lock
# --------------------------------------------------------------------------------------


class OutputLocked(ValueError):
    """Another process holds the output folder's lock."""


class OutputLock:
    """An exclusive, non-blocking advisory lock on an output folder.

    ``acquire`` raises :class:`OutputLocked` naming the holder (pid, host, command, start
    time) when another process (or another open of the same folder in this process) holds
    it. The lock dies with its holder: the kernel releases ``flock`` locks when the process
    exits, however it exits, so a killed run never leaves a stale lock behind.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> OutputLock:
        import fcntl

        refuse_symlink(self.path)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise OutputLocked(
                    f"{self.folder}: another evaluate is writing to this folder ({holder}); "
                    "wait for it to finish or choose another --out") from None
            raise
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join(sys.argv) or sys.executable,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
        os.fsync(fd)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        import fcntl

        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        raw = os.pread(fd, 4096, 0).decode("utf-8", "replace")
        info = json.loads(raw)
        return (f"pid {info.get('pid')} on {info.get('host')}, started {info.get('started')}: "
                f"{info.get('command')}")
    except (OSError, ValueError, AttributeError):
        return "holder unknown"


# --------------------------------------------------------------------------------------
# File names and files
# --------------------------------------------------------------------------------------

_SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+@=")
_MAX_STEM = 120


def agent_file_stem(name: str) -> str:
    """A file-name stem for agent ``name``: letters, digits and ``-_.+@=`` are kept, every
    other character becomes ``~XX`` per UTF-8 byte (``org/model`` -> ``org~2Fmodel``; not
    ``%XX``, which a browser decodes in a link: reports and media use these names), a
    leading dot becomes ``~2E``; long names are cut and suffixed with a hash. Distinct names
    give distinct stems, and the stem is never a path, ``.``/``..`` or a hidden file."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"agent name must be a non-empty string, got {name!r}")
    parts = []
    for ch in name:
        if ch in _SAFE_CHARS:
            parts.append(ch)
        else:
            parts.extend(f"~{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    stem = "".join(parts)
    if stem.startswith("."):
        stem = "~2E" + stem[1:]
    if len(stem) > _MAX_STEM:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        stem = f"{stem[:_MAX_STEM - 18]}~~{digest}"  # "~~" is never an encoding
    return stem


def refuse_symlink(path: Path) -> None:
    """Raise ``ValueError`` if ``path`` is a symbolic link (it would be followed)."""
    if path.is_symlink():
        raise ValueError(f"{path}: is a symbolic link; refusing to follow it (remove it or "
                         "choose another --out)")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically: a temporary file in the same folder is
    written, ``fsync``-ed and renamed over ``path``. A symbolic link at ``path`` is
    replaced, never followed."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # a leftover of a killed run with the same pid
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(p.parent)
    return p


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | _CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def open_append(path: str | os.PathLike[str]) -> Any:
    """Open an existing file for appending (text, UTF-8) without following a symlink."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _CLOEXEC)
    return os.fdopen(fd, "a", encoding="utf-8")


# --------------------------------------------------------------------------------------
# Processes and signals
# --------------------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1
_WATCH_INTERVAL = 0.25


def _set_parent_death_signal() -> None:
    """Linux: have the kernel SIGKILL this process when its parent dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - unusual libc
        pass


def _watch_parent(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)
        time.sleep(_WATCH_INTERVAL)


def worker_guard(parent_pid: int) -> None:
    """Call first thing in a worker process: ignore Ctrl-C (the parent stops the pool) and
    exit as soon as the parent (``parent_pid``) is gone."""
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _set_parent_death_signal()
    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True,
                     name="mindhelper-parent-watch").start()


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """Block SIGINT in the calling (main) thread while worker processes are started: they
    inherit the blocked mask, so an early Ctrl-C never raises inside a half-started worker;
    in the parent the signal stays pending and is delivered when the block ends."""
    if not _in_main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's :class:`KeyboardInterrupt`."""


def _raise_terminated(signum: int, _frame: Any) -> None:
    raise Terminated(f"signal {signum}")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into :class:`Terminated` (a ``KeyboardInterrupt``) while the block runs
    (main thread only; elsewhere a no-op)."""
    if not _in_main_thread():
        yield
        return
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except (ValueError, OSError):  # pragma: no cover - embedded interpreters
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
