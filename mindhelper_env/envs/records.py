"""Episode records in ``info`` in a form Gymnasium's vector envs can stack.

Gymnasium's vector envs merge the sub-envs' ``info`` dicts key by key into arrays; a key
whose value is ``None`` in one episode and a dict or an int in another cannot be merged
(it raises, and an ``AsyncVectorEnv`` then hangs in ``close()``). So no number, bool or
dict the MindHelper envs put in ``info`` is ever ``None`` (strings and lists, stacked as
object arrays, may be); for the episode record:

* ``info["episode_record"]`` is the episode record (:meth:`MindHelperEnv.episode_record`)
  with the reference's null fields left out (``window`` and ``target_object`` of an
  episode that needs no help): absent instead of ``None``, so ``reference.get("window")``
  still returns ``None``;
* ``info["episode_record_json"]`` is the complete record, nulls included, as one JSON
  string (``json.loads`` gives back exactly :meth:`MindHelperEnv.episode_record`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["record_info", "stable_record", "complete_final_info"]

#: Types that are never a Mapping (the isinstance check against the ABC is slow).
_PLAIN = frozenset({str, int, float, bool, list, tuple})


#: ``json.dumps(..., separators=(",", ":"))``, with one encoder for every record.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def _without_nulls(d: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        if v is None:
            continue
        t = type(v)
        out[k] = _without_nulls(v) if t is dict or (t not in _PLAIN and isinstance(v, Mapping)) \
            else v
    return out


def stable_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with the reference's null fields (at any depth: e.g. ``window``,
    ``target_object``) left out, so that no key is ``None`` in one episode and a number or
    a dict in another."""
    out = dict(record)
    ref = out.get("reference")
    if isinstance(ref, Mapping):
        out["reference"] = _without_nulls(ref)
    return out


def record_info(record: Mapping[str, Any]) -> dict[str, Any]:
    """The ``info`` entries of a finished episode: ``episode_record`` and its JSON."""
    return {"episode_record": stable_record(record),
            "episode_record_json": _COMPACT.encode(record)}


def complete_final_info(env: Any, info: dict[str, Any]) -> dict[str, Any]:
    """Add the episode record to a final ``info`` that lacks it (e.g. an outer ``TimeLimit``
    truncated the episode before the env ended it). The record is marked ``truncated``.

    ``env`` is any env or wrapper whose ``unwrapped`` has an ``episode_record()`` method;
    otherwise ``info`` is returned unchanged.
    """
    if "episode_record" in info:
        return info
    getter = getattr(getattr(env, "unwrapped", env), "episode_record", None)
    if not callable(getter):
        return info
    record = dict(getter())
    if not record.get("terminated"):
        record["truncated"] = True
    info.update(record_info(record))
    return info
