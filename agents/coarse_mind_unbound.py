"""``coarse-mind-unbound``: the coarse-mind ladder's rules of perception, applied house-wide.

The ladder (:mod:`mindhelper_env.agents.coarse_mind`) forms each person's belief table by a
rule of perception (on the phone, at a chore facing away, out of the room: nothing seen or
heard; through an open door: a take or a put seen) and judges a struggle against the
struggler's own table. This agent keeps the rules and drops the binding: *if anyone was
busy, away or out of earshot when the thing happened, someone has a false belief*, and
whoever later looks is judged as if that belief were theirs. Every person's table, when a
struggle is judged, is their own overlaid with every *stale* belief anyone holds (a belief
about an object that is no longer where it was believed), so a look at the old place by
anyone is taken for a false belief whoever missed the move.

If this agent passes a belief group, the group is decided by *whether somebody missed the
event*, not by *whether the person who looks missed it*: a mind that tracks no one in
particular would pass. Attention (who notices a struggle) is the rung's own rule, unchanged.

``coarse-mind-unbound`` uses rung (d), the ladder's finest perception;
``make_agent("coarse-mind-unbound", rung="b")`` builds it on another rung.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mindhelper_env.agents.coarse_mind import RUNGS, CoarseMindAgent, CoarseMindTracker
from mindhelper_env.agents.tracker import BeliefTracker

__all__ = ["UnboundCoarseMindTracker", "UnboundCoarseMindAgent"]


class UnboundCoarseMindTracker(CoarseMindTracker):
    """Per-person tables by the rung's rule; struggles judged on the house-wide overlay."""

    def house_stale(self) -> dict[int, int]:
        """``{object: place}``: every belief anyone holds that the robot knows is stale (the
        object is no longer at the believed place); the first holder's by person id."""
        out: dict[int, int] = {}
        for pid in sorted(self.people):
            for obj, b in self.people[pid].beliefs.items():
                if obj not in out and obj in self.where and self.where[obj] != b.place:
                    out[obj] = b.place
        return out

    def _views(self) -> dict[int, Any]:
        views = super()._views()
        stale = self.house_stale()
        if not stale:
            return views
        return {pid: replace(v, beliefs={**v.beliefs, **stale}) for pid, v in views.items()}


class UnboundCoarseMindAgent(CoarseMindAgent):
    """The coarse mind of ``rung`` (default ``"d"``) judging every struggle on the house-wide
    overlay of stale beliefs (see the module)."""

    name = "coarse-mind-unbound"
    tracker_class: type[BeliefTracker] = UnboundCoarseMindTracker

    def __init__(self, rung: str = "d") -> None:
        if rung not in RUNGS:
            raise ValueError(f"coarse-mind-unbound: unknown rung {rung!r}; expected one of "
                             f"{', '.join(RUNGS)}")
        super().__init__(rung)
        self.name = "coarse-mind-unbound" + ("" if rung == "d" else f"-{rung}")
