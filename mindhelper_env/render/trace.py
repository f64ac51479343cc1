"""Readable text of an agent's per-window trace (MindClaw: Trigger operations, belief-table
changes, cues, skills, model calls, the program), written next to a rendered video."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["format_trace"]


def _ops(ops: Sequence[str]) -> str:
    counts = Counter(ops)
    seen: list[str] = []
    for op in ops:
        if op not in seen:
            seen.append(op)
    return ", ".join(f"{op} x{counts[op]}" if counts[op] > 1 else op for op in seen)


def format_trace(trace: Sequence[Mapping[str, Any]], *, max_changes: int = 6) -> str:
    """One block per window: operations in order, belief-table changes (the first
    ``max_changes`` with their evidence), skills that fired, reasoning, model calls and the
    program issued. Unknown keys are ignored, so any agent's list of dicts renders."""
    out: list[str] = []
    for w in trace:
        head = f"window {w.get('window', '?')} (tick {w.get('tick', '?')})"
        ops = w.get("ops") or []
        out.append(f"{head}: {_ops(ops) if ops else 'no operations'}")
        changes = w.get("changes") or []
        for ch in changes[:max_changes]:
            who = "robot sees" if ch.get("actor") is None else f"person {ch.get('actor')} believes"
            out.append(f"    {who} {ch.get('object')}: {ch.get('old')} -> {ch.get('new')} "
                       f"({ch.get('evidence', '')})")
        if len(changes) > max_changes:
            out.append(f"    ... and {len(changes) - max_changes} more belief changes")
        for sk in w.get("skills") or []:
            name = sk.get("skill") if isinstance(sk, Mapping) else sk
            out.append(f"    skill: {name}")
        for r in w.get("reasoning") or []:
            out.append(f"    reasoning: {r}")
        calls = w.get("calls") or []
        if calls:
            tokens = sum(int(c.get("prompt_tokens", 0)) + int(c.get("completion_tokens", 0))
                         for c in calls if isinstance(c, Mapping))
            out.append(f"    model calls: {len(calls)} ({tokens} tokens)")
        if w.get("action"):
            src = f" [{w['action_source']}]" if w.get("action_source") else ""
            out.append("    program" + src + ": " + str(w["action"]).replace("\n", "; "))
    return "\n".join(out) + "\n"
