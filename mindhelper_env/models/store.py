"""Cassettes (record / replay) and the on-disk response cache.

Both are keyed by :func:`~mindhelper_env.models.base.request_key` of the canonical request
(model id, messages with frames hashed, ``max_tokens`` and ``temperature``).

A *cassette* is a JSON-lines file, one entry per distinct request::

    {"key": "<sha256>", "model": "openai:gpt-4o", "request": {...canonical...},
     "completion": {"text", "prompt_tokens", "completion_tokens", "seconds",
                    "tokens_estimated"}}

``record:`` answers a request already in the cassette from it (so a request asked twice
gets the same answer in the recording run and in every replay) and otherwise asks the
wrapped client and appends the answer. Appends take an exclusive ``flock`` on the file and
first read what other processes appended, so parallel evaluation workers can record into
one cassette. ``replay:`` answers from the cassette only and raises
:class:`~mindhelper_env.models.base.ReplayMissError` for a request it does not hold.

The *cache* (``cache_dir=``) stores one JSON file per key under ``<dir>/<key[:2]>/`` (written
atomically); a hit is returned with ``cached=True`` and the original call's numbers.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from mindhelper_env.models.base import (
    Completion,
    ModelClient,
    ModelError,
    ReplayMissError,
    call_client,
    canonical_request,
    request_key,
    request_params,
)

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["CachedClient", "RecordClient", "ReplayClient", "read_cassette"]

logger = logging.getLogger(__name__)


def _stored(c: Completion) -> dict[str, Any]:
    d = c.to_dict()
    d.pop("cached", None)
    return d


def _parse_lines(text: str, path: Path, first_line: int = 1) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(text.splitlines(), start=first_line):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict) or not isinstance(entry.get("key"), str) \
                    or not isinstance(entry.get("completion"), dict):
                raise ValueError("not a cassette entry")
        except ValueError as err:
            raise ValueError(f"cassette {path}, line {n}: {err}") from None
        out.append(entry)
    return out


def read_cassette(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All entries of a cassette file (ValueError naming the line if one is malformed)."""
    p = Path(path)
    return _parse_lines(p.read_text(encoding="utf-8"), p)


class ReplayClient:
    """``replay:FILE``: answers only from a cassette."""

    def __init__(self, path: str | os.PathLike[str], *, model: str | None = None,
                 context_length: int | None = None, structured: str | None = None,
                 image_tokens: str | int | None = None, **_live_options: Any) -> None:
        # options of the live client that do not change a request (timeout, retries,
        # concurrency ...) are accepted and ignored, so a recorded command line replays
        # with --replay; ``context_length`` must be the recorded one (prompts are fitted
        # to it), ``structured`` is read from the cassette
        from mindhelper_env.models.images import check_image_rule

        #: the image-token rule usage is counted with (as in the recording run)
        self.image_tokens = check_image_rule(image_tokens)
        self.path = Path(path)
        if not self.path.is_file():
            raise ValueError(f"replay:{path}: no such cassette file")
        entries = read_cassette(self.path)
        models = sorted({str(e.get("model")) for e in entries})
        if model is None:
            if len(models) > 1:
                raise ValueError(f"replay:{path}: the cassette holds several models {models}; "
                                 f"pass model=")
            model = models[0] if models else "unknown"
        self.model_id = model
        self._answers: dict[str, dict[str, Any]] = {}
        modes = set()
        for e in entries:
            self._answers.setdefault(e["key"], e["completion"])
            params = (e.get("request") or {}).get("params") or {}
            modes.add(str(params["structured"]) if params.get("structured") else None)
        recorded = {m for m in modes if m}
        if len(recorded) > 1:
            raise ValueError(f"replay:{path}: the cassette mixes structured-output modes "
                             f"{sorted(recorded)}")
        if structured and recorded and structured not in recorded:
            raise ValueError(f"replay:{path}: recorded with structured="
                             f"{sorted(recorded)[0]!r}, not {structured!r}")
        #: the structured-output mode requests are keyed with: the ``structured`` option as
        #: recorded, else the cassette's mode when every entry was recorded with it
        self.structured = structured or (sorted(recorded)[0]
                                         if recorded and None not in modes else None)
        self.context_length = int(context_length) if context_length else None

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256,
                 temperature: float = 0.0, constraint: Any = None) -> Completion:
        key = request_key(canonical_request(
            self.model_id, messages,
            request_params(max_tokens, temperature, constraint, self.structured)))
        hit = self._answers.get(key)
        if hit is None:
            raise ReplayMissError(f"replay:{self.path}: no recorded answer for request "
                                  f"{key[:12]} (model {self.model_id})")
        return Completion.from_dict(hit, cached=True)


class RecordClient:
    """``record:FILE=SPEC``: replays known requests, asks ``inner`` and appends the rest."""

    def __init__(self, inner: ModelClient, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.structured = getattr(inner, "structured", None)
        self.context_length = getattr(inner, "context_length", None)
        self.image_tokens = getattr(inner, "image_tokens", None)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch(exist_ok=True)
        self._answers: dict[str, dict[str, Any]] = {}
        self._offset = 0
        self._lock = threading.Lock()
        with self._lock:
            self._catch_up()

    def _catch_up(self) -> None:
        """Read entries appended since the last read (by us or by other processes)."""
        with open(self.path, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1  # ignore a line another process is still writing
        for e in _parse_lines(data[:end].decode("utf-8"), self.path):
            self._answers.setdefault(e["key"], e["completion"])
        self._offset += end

    @property
    def thread_safe(self) -> bool:
        """Whether episodes may use copies of this client in parallel threads (the wrapped
        client's answer)."""
        return bool(getattr(self.inner, "thread_safe", True))

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256,
                 temperature: float = 0.0, constraint: Any = None) -> Completion:
        canon = canonical_request(self.model_id, messages, request_params(
            max_tokens, temperature, constraint, self.structured))
        key = request_key(canon)
        with self._lock:
            hit = self._answers.get(key)
            if hit is None:
                self._catch_up()
                hit = self._answers.get(key)
        if hit is not None:
            return Completion.from_dict(hit, cached=True)
        answer = call_client(self.inner, messages, max_tokens=max_tokens,
                             temperature=temperature, constraint=constraint)
        entry = {"key": key, "model": self.model_id, "request": canon,
                 "completion": _stored(answer)}
        line = (json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock, open(self.path, "ab") as fh:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                self._catch_up()
                if key in self._answers:  # another process recorded it meanwhile
                    return Completion.from_dict(self._answers[key], cached=True)
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
                self._offset += len(line)
                self._answers[key] = entry["completion"]
            finally:
                if fcntl is not None:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return answer


class CachedClient:
    """An on-disk response cache in front of another client (``cache_dir=``)."""

    def __init__(self, inner: ModelClient, directory: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.structured = getattr(inner, "structured", None)
        self.context_length = getattr(inner, "context_length", None)
        self.image_tokens = getattr(inner, "image_tokens", None)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    @property
    def thread_safe(self) -> bool:
        """Whether episodes may use copies of this client in parallel threads (the wrapped
        client's answer)."""
        return bool(getattr(self.inner, "thread_safe", True))

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256,
                 temperature: float = 0.0, constraint: Any = None) -> Completion:
        canon = canonical_request(self.model_id, messages, request_params(
            max_tokens, temperature, constraint, self.structured))
        key = request_key(canon)
        path = self._path(key)
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                return Completion.from_dict(data["completion"], cached=True)
            except (OSError, ValueError, KeyError, TypeError, ModelError) as err:
                logger.warning("ignoring unreadable cache entry %s: %s", path, err)
        answer = call_client(self.inner, messages, max_tokens=max_tokens,
                             temperature=temperature, constraint=constraint)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"key": key, "request": canon, "completion": _stored(answer)}, fh,
                          sort_keys=True)
            os.replace(tmp, path)
        except OSError as err:
            logger.warning("cannot write cache entry %s: %s", path, err)
            Path(tmp).unlink(missing_ok=True)
        return answer
