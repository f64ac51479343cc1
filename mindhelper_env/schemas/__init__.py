"""JSON Schemas (Draft 2020-12) of the MindHelper data layer (docs/data-format.md).

=================  ============================================================
name               describes
=================  ============================================================
``public``         one line of a suite's ``public.jsonl`` (what an agent may know)
``reference``      one line of a suite's ``reference.jsonl`` (ground truth)
``manifest``       an exported suite's ``manifest.json``
``result``         one result record (one agent × one episode)
``run``            an evaluation's ``run.json`` (settings and provenance)
=================  ============================================================

The schema files ship inside the package and are read with :mod:`importlib.resources`, so
they work from a wheel, a zip or an editable install. Cross-record rules (id closure,
duplicates, windows inside the horizon, reference programs that execute) are checked in
Python by :func:`mindhelper_env.scenarios.suites.validate_suite_dir`.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

__all__ = ["SCHEMA_NAMES", "load_schema", "get_validator", "schema_errors"]

#: Names accepted by :func:`load_schema` and :func:`get_validator`.
SCHEMA_NAMES: tuple[str, ...] = ("public", "reference", "manifest", "result", "run")


def _check_name(name: str) -> None:
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; expected one of {list(SCHEMA_NAMES)}")


@cache
def _schema(name: str) -> dict[str, Any]:
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return schema


def load_schema(name: str) -> dict[str, Any]:
    """Return (a copy of) the JSON Schema called ``name`` (one of :data:`SCHEMA_NAMES`)."""
    _check_name(name)
    return copy.deepcopy(_schema(name))


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(_schema(name))


def get_validator(name: str) -> Draft202012Validator:
    """A cached Draft 2020-12 validator for the schema called ``name``."""
    _check_name(name)
    return _validator(name)


def schema_errors(name: str, instance: Any, *, limit: int = 5) -> list[str]:
    """Human-readable schema violations of ``instance`` (empty list = valid).

    Each message is ``"<json path>: <reason>"``, e.g. ``"/people/0/kind: 'robot' is not one
    of [...]"``; at most ``limit`` messages are returned, plus one saying how many were left out.
    """
    errors = sorted(get_validator(name).iter_errors(instance),
                    key=lambda e: (list(map(str, e.absolute_path)), e.message))
    out: list[str] = []
    for err in errors[:limit]:
        path = "/" + "/".join(str(p) for p in err.absolute_path)
        message = err.message if len(err.message) <= 200 else err.message[:197] + "..."
        out.append(f"{path}: {message}")
    if len(errors) > limit:
        out.append(f"... and {len(errors) - limit} more schema error(s)")
    return out
