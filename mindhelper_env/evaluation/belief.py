"""The agent's belief at the intervention tick, beside the truth (for belief accuracy).

:func:`belief_record` is called by the episode player once, when an agent that has a
``belief_snapshot()`` method (MindClaw, the belief tracker) issues its first acting program.
The agent's table is its own; the truth is every simulated person's belief table at the same
moment, read by the runner (scorer side, never the agent), as the Trigger labels are.
Records of agents without the method are unchanged.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["belief_at_intervention", "belief_record", "table_json"]

logger = logging.getLogger(__name__)


def table_json(table: Any) -> dict[str, dict[str, int]]:
    """``{person: {object: place}}`` with string keys, sorted (JSON-ready)."""
    out: dict[str, dict[str, int]] = {}
    for pid in sorted(table, key=int):
        row = table[pid] or {}
        out[str(int(pid))] = {str(int(o)): int(row[o]) for o in sorted(row, key=int)
                              if row[o] is not None}
    return out


def belief_record(env: Any, agent: Any, tick: int) -> dict[str, Any] | None:
    """``{"tick", "agent": table, "truth": table}``, or ``None`` when the agent's snapshot
    fails or the env has no simulated people (logged at debug level; no record key then)."""
    try:
        mine = table_json(agent.belief_snapshot())
        sim = env.unwrapped.simulation
        truth = table_json({a.id: dict(a.beliefs) for a in sim.actors})
    except Exception as exc:  # a broken snapshot must not stop the evaluation
        logger.debug("belief snapshot skipped: %s: %s", type(exc).__name__, exc)
        return None
    return {"tick": int(tick), "agent": mine, "truth": truth}


def belief_at_intervention(env: Any, agent: Any, action: str,
                           info: Any) -> dict[str, Any] | None:
    """The episode player's hook, called after each decision until it returns non-``None``:
    ``None`` while ``action`` does not act, then :func:`belief_record` (``{}`` when that
    fails, so the player stops asking and writes no key)."""
    from mindhelper_env.metrics import program_acts

    if not program_acts(action):
        return None
    tick = info.get("tick", 0) if hasattr(info, "get") else 0
    return belief_record(env, agent, int(tick)) or {}
