"""Result files: names, strict reading, crash-safe appending and the records a resume keeps.

Lines are parsed strictly (:func:`strict_json`: no ``NaN``/``Infinity``, no duplicate keys, no
absurd nesting). Records are appended, flushed and ``fsync``-ed one by one and finally
rewritten sorted by ``(index, trial)``; :func:`load_existing` checks every kept record before a
resume.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mindhelper_env.evaluation import safety

__all__ = ["result_file_name", "read_result_file", "strict_json", "nesting_depth",
           "MAX_DEPTH", "append_line", "rewrite_sorted", "load_existing", "record_key"]

logger = logging.getLogger("mindhelper_env.evaluation")


def result_file_name(agent: str) -> str:
    """The result file of ``agent`` inside an output folder: ``<stem>.jsonl`` with a stem
    safe for any name (:func:`mindhelper_env.evaluation.safety.agent_file_stem`; ``oracle``
    -> ``oracle.jsonl``, ``org/model`` -> ``org~2Fmodel.jsonl``). The record keeps the name."""
    return safety.agent_file_stem(agent) + ".jsonl"


def record_key(record: Mapping[str, Any]) -> tuple[int, int]:
    """``(index, trial)`` of a result record (``trial`` 0 when absent)."""
    return int(record["index"]), int(record.get("trial", 0))



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
            rec = strict_json(raw.decode("utf-8"))
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


MAX_DEPTH = 100


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(f"number {token[:20]} is out of range")
    return value


def nesting_depth(text: str) -> int:
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


def strict_json(text: str) -> Any:
    """``json.loads`` without NaN/Infinity, duplicate keys or absurd nesting."""
    if text.count("[") + text.count("{") > MAX_DEPTH and nesting_depth(text) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    from mindhelper_env.scenarios.suites import no_duplicate_keys

    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                          object_pairs_hook=no_duplicate_keys)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None


def _dump_line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"


def append_line(fh: Any, record: Mapping[str, Any]) -> None:
    fh.write(_dump_line(record))
    fh.flush()
    os.fsync(fh.fileno())


def rewrite_sorted(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Atomically replace ``path`` with ``records`` sorted by ``(index, trial)``."""
    text = "".join(_dump_line(rec) for rec in sorted(records, key=record_key))
    safety.atomic_write_bytes(path, text.encode("utf-8"))


def load_existing(
    path: Path, *, agent: str, suite: str, ids: Sequence[str], trials: int = 1,
    repair: bool = True,
) -> dict[tuple[int, int], dict[str, Any]]:
    """Finished records of a previous run of ``agent`` (for ``resume``), by ``(index,
    trial)``. Every record is checked against the result schema, its suite, agent, index,
    episode id and trial (absent in a one-trial run, ``0 <= trial < trials`` otherwise)."""
    from mindhelper_env.schemas import schema_errors

    done: dict[tuple[int, int], dict[str, Any]] = {}
    where: dict[tuple[int, int], int] = {}
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
        trial = rec.get("trial", None if trials > 1 else 0)
        if "trial" in rec and trials == 1:
            raise ValueError(f"{loc}: record of trial {trial!r}, but this run has one trial")
        if isinstance(trial, bool) or not isinstance(trial, int) or not 0 <= trial < trials:
            raise ValueError(f"{loc}: bad trial {trial!r} (this run has {trials} trials)")
        key = (index, trial)
        if key in done:
            what = f"episode {ids[index]!r}" + (f" trial {trial}" if trials > 1 else "")
            raise ValueError(f"{loc}: duplicate {what} (first at line {where[key]})")
        done[key] = rec
        where[key] = lineno
    return done
