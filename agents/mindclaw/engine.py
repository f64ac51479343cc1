"""MindClaw's Engine: the per-window loop over Memory, Trigger and the reasoning layer.

For each observation window :meth:`Engine.step`

1. runs :class:`~.reasoning.Observation` (perception into pending belief-table changes and
   cue contexts);
2. calls the :class:`~.trigger.Trigger` until it returns ``action_run`` or ``noop``, and
   executes each operation: a belief operation commits its pending changes to the Memory,
   ``reasoning_run`` judges the next cue with :class:`~.reasoning.MentalReasoning`,
   ``action_run`` asks :class:`~.reasoning.ActionGeneration` for the program of the first
   need found (if none can be written, the need is dropped and dispatching goes on);
3. appends the window's **trace**: ``window``, ``tick``, ``ops`` (in order),
   ``belief_changes`` (count per belief operation) and ``changes`` (the first
   :data:`TRACE_CHANGES` committed rows), ``cues``, ``skills`` (skill matches),
   ``reasoning`` (per judged cue: signature, verdict, source), ``calls`` (model calls:
   module, prompt size, tokens, answer prefix, outcome, prompt version), ``action``,
   ``action_source`` and ``predicted`` (the window's summary operation,
   :func:`~.trigger.window_op`).

Decisions by source (``usage.sources``): each cue a skill settles counts as ``skill``; each
judgement, program and (with a model observation backend) cue selection counts as the
module reports it (``model``, ``symbolic``, ``fallback``, ``failed``).

One intervention per episode: once a program was issued, the Trigger can no longer choose
``reasoning_run`` or ``action_run`` (the mask forbids them) and the engine stops recording
``trigger_ops``; Memory keeps being updated for the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mindhelper_env.agents.mindclaw.memory import BELIEF_OPS, MindMemory
from mindhelper_env.agents.mindclaw.reasoning import (
    ActionGeneration,
    MentalReasoning,
    Observation,
)
from mindhelper_env.agents.mindclaw.trigger import Trigger, WindowState, window_op

__all__ = ["Engine", "TRACE_CHANGES"]

#: Committed rows kept per window in the trace (the counts are always complete).
TRACE_CHANGES = 12


class Engine:
    """Memory + Trigger + Observation / MentalReasoning / ActionGeneration."""

    def __init__(self, memory: MindMemory, trigger: Trigger, observation: Observation,
                 reasoning: MentalReasoning, action: ActionGeneration) -> None:
        self.memory = memory
        self.trigger = trigger
        self.observation = observation
        self.reasoning = reasoning
        self.action = action
        self.reset()

    def reset(self) -> None:
        self.memory.reset()
        self.acted = False
        self.window = 0
        self.trace: list[dict[str, Any]] = []
        self.trigger_ops: list[dict[str, Any]] = []

    def step(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> str:
        """One window: returns ``"none"`` or the program (lines joined by newlines)."""
        state = self.begin_window(obs, info)
        while not self.execute(self.trigger.dispatch(self.memory, state)):
            pass
        return self.end_window()

    # The window loop in three parts, so that an outside caller (the Trigger env,
    # :mod:`mindhelper_env.envs.trigger`) can choose the operations one at a time.
    def begin_window(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> WindowState:
        """Perceive one window; returns the Trigger's :class:`WindowState` for it."""
        perception, calls = self.observation.run(self.memory, obs, info)
        self.state = WindowState(perception, acted=self.acted)
        self._ops: list[str] = []
        self._counts = {op: 0 for op in BELIEF_OPS}
        self._changes: list[dict[str, Any]] = []
        self._reasoning: list[dict[str, Any]] = []
        self._calls = list(calls)
        self._program: list[str] = []
        self._action_source: str | None = None
        self._n_cues = len(perception.cues)
        return self.state

    def execute(self, op: str) -> bool:
        """Execute one operation of the current window; True when the window is over
        (``noop``, or ``action_run`` that wrote a program)."""
        state = self.state
        self._ops.append(op)
        if op in BELIEF_OPS:
            done = self.memory.commit(op)
            self._counts[op] += len(done)
            room = TRACE_CHANGES - len(self._changes)
            self._changes += [dict(c.to_dict(), op=op) for c in done[:max(room, 0)]]
        elif op == "reasoning_run":
            ctx = state.next_cue()
            if ctx is None:
                return False
            ctx.handled = True
            verdict = self.reasoning.judge(self.memory, ctx)
            self._calls += verdict.calls
            need = verdict.need
            self._reasoning.append({
                "cue_tick": ctx.cue.tick, "person": ctx.cue.person, "kind": ctx.cue.kind,
                "place": ctx.cue.place, "signature": dict(ctx.signature),
                "blocked": None if need is None else need.kind,
                "object": None if need is None else need.target, "source": verdict.source,
            })
            if need is not None:
                state.needs.append((need, verdict.source))
        elif op == "action_run":
            if not state.needs:
                return False
            need, _why = state.needs.pop(0)
            program, self._action_source, more = self.action.generate(self.memory, need)
            self._calls += more
            if program:
                self._program = program
                return True
        else:  # noop
            return True
        return False

    def end_window(self) -> str:
        """Close the current window (trace, ``trigger_ops``); returns ``"none"`` or the
        program."""
        state, ops, program = self.state, self._ops, self._program
        if state.skill_hits:  # cues the deterministic skill matchers settled
            self.reasoning.usage.count_source("skill", len(state.skill_hits))
        issued = bool(program)
        if issued:
            predicted = "action_run"
        else:
            predicted = window_op([o for o in ops if o != "action_run"]
                                  + (["reasoning_run"] if "action_run" in ops else []))
        entry = {
            "window": self.window, "tick": state.perception.tick, "ops": ops,
            "belief_changes": self._counts, "changes": self._changes, "cues": self._n_cues,
            "skills": list(state.skill_hits), "reasoning": self._reasoning,
            "calls": [c.to_dict() for c in self._calls],
            "action": "\n".join(program) if issued else None,
            "action_source": self._action_source if issued else None,
            "predicted": predicted,
        }
        self.trace.append(entry)
        if not self.acted:
            self.trigger_ops.append({"predicted": predicted, "window": self.window,
                                     "tick": state.perception.tick})
        self.window += 1
        if issued:
            self.acted = True
            return "\n".join(program)
        return "none"
