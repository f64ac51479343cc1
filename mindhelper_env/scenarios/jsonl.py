"""Strict JSON Lines for suite and result files: no ``NaN``/``Infinity``, no duplicate keys,
one error per bad line (``"line N: reason"``), and the result-record schema check."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mindhelper_env.schemas import schema_errors

__all__ = ["no_duplicate_keys", "load_jsonl", "validate_result_record"]


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _iter_jsonl(data: bytes) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """Yield ``(line_number, record, None)`` or ``(line_number, None, problem)`` per line."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for n, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            yield n, None, f"not valid UTF-8 (byte {err.start})"
            continue
        if not text.strip():
            yield n, None, "empty line"
            continue
        try:
            obj = json.loads(text, parse_constant=_reject_constant,
                             object_pairs_hook=no_duplicate_keys)
        except json.JSONDecodeError as err:
            yield n, None, f"invalid JSON ({err.msg} at column {err.colno})"
            continue
        except ValueError as err:
            yield n, None, f"invalid JSON ({err})"
            continue
        if not isinstance(obj, dict):
            yield n, None, f"expected a JSON object, got {type(obj).__name__}"
            continue
        yield n, obj, None


def load_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a JSONL file of JSON objects.

    Raises ``ValueError("<path>:<line>: <reason>")`` on the first corrupt, truncated, empty or
    non-object line, and ``ValueError("<path>: <reason>")`` if the file cannot be read.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise ValueError(f"{p}: cannot read ({err.strerror or err})") from err
    out = []
    for n, obj, problem in _iter_jsonl(data):
        if problem is not None:
            raise ValueError(f"{p}:{n}: {problem}")
        assert obj is not None
        out.append(obj)
    return out


def validate_result_record(record: Any) -> list[str]:
    """Schema problems of one result record (``result.schema.json``); empty list = valid."""
    return schema_errors("result", record)
