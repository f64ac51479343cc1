"""A Trigger that asks a language model for each window's operation (``trigger="hf:CKPT"``).

>>> from mindhelper_env.agents import make_agent
>>> agent = make_agent("mindclaw", trigger="hf:runs/sft/checkpoint")  # doctest: +SKIP

The rule and learned Triggers choose one operation per dispatch; a language model is asked
**once per window**, before anything in it is committed, which operation sums the window up
— the same question as the ground-truth labels answer
(:mod:`mindhelper_env.scenarios.trigger_labels`), so a model fine-tuned on
``mindhelper export-trigger-data`` sees at run time exactly the prompts it was trained on.
The prompt is the template ``prompts/mindclaw-trigger.line.txt`` filled by
:func:`trigger_fields`: the tick, the window's narration (its last
:data:`NARRATION_CHARS` characters), the pending belief-table changes (counts per
operation and the first :data:`MAX_ROWS` rows), the window's struggle cues with their
clues (:func:`cue_clues`: the cue flags the MLP Trigger observes), the summary
operations (:func:`~.trigger.window_op`) of what the last :data:`RECENT_WINDOWS` windows
ran, and the people of the grounding candidates.

The answer (the first line, an operation's name) becomes the window's **plan**, which
:class:`WindowPlanTrigger` carries out one dispatch at a time:

* pending belief changes are always committed first, in table order (the memory stays true
  whatever the answer; reasoning needs it);
* ``action_run``: the skill matchers, then ``reasoning_run`` on the window's cues until a
  need is found, then ``action_run`` (the program); nothing to act on ends the window;
* ``reasoning_run``: the cues are judged (skills first) but nothing is issued — a cue
  outside the precise window is something to reason about, not to act on;
* anything else: ``noop``.

Belief changes are committed whatever the plan, and without a cue ``action_run`` and
``reasoning_run`` have nothing to work on: plans differ only in a window with an unhandled
cue before the intervention, so by default (``ask="cues"``) the model is asked only there
(:meth:`WindowPlanTrigger.answer_matters`); ``ask="always"`` asks in every window until the
intervention. Once the robot has acted the model is never asked.

An answer that is not an operation counts in ``usage.parse_failures`` and plans ``noop``; a
failed call counts in ``usage.fallbacks`` / ``usage.errors`` and plans ``noop``: an
evaluation never stops for a bad checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mindhelper_env.agents.base import Usage
from mindhelper_env.agents.mindclaw.memory import BELIEF_OPS, CueContext, MindMemory
from mindhelper_env.agents.mindclaw.skills import SkillBook
from mindhelper_env.agents.mindclaw.trigger import (
    MAX_DISPATCHES,
    TRIGGER_OPS,
    Trigger,
    WindowState,
    look_context,
    window_op,
)

__all__ = ["WindowPlanTrigger", "ModelTrigger", "make_trigger", "trigger_fields", "trigger_messages",
           "cue_clues", "CLUES", "parse_operation", "TEMPLATE", "NARRATION_CHARS", "MAX_ROWS",
           "RECENT_WINDOWS"]

#: The prompt template (``mindhelper_env/agents/prompts/<TEMPLATE>.txt``).
TEMPLATE = "mindclaw-trigger.line"
NARRATION_CHARS = 360
MAX_ROWS = 3
RECENT_WINDOWS = 3


def _people(info: Mapping[str, Any]) -> str:
    """The people of ``info["candidates"]``: ``Name (id) kind``, and what they hold."""
    cands = info.get("candidates") if isinstance(info, Mapping) else None
    if not isinstance(cands, Mapping):
        return "none"
    out = []
    for a in cands.get("actors") or []:
        if isinstance(a, Mapping):
            held = [str(h) for h in a.get("holding") or []]
            out.append(f"{a.get('name')} ({a.get('id')}) {a.get('kind')}"
                       + (f" holding {', '.join(held)}" if held else ""))
    return ", ".join(out) if out else "none"


#: The cue flags a prompt states (``yes``/``no`` each; the signature's own ``kind`` is in
#: the cue's sentence), in this order: the MLP Trigger's cue features
#: (:data:`~.trigger.OBSERVATION_NAMES`), computed by the memory from the committed table.
CLUES = ("noticed", "believed_here", "expected_missing", "astray_class", "usual_place",
         "small", "hands_full", "knows_other", "usual_seen")


def cue_clues(memory: MindMemory, ctx: CueContext) -> str:
    """``Clues: noticed no, believed here yes, ...`` for one cue (see :data:`CLUES`): what
    the memory's table says about it, the same facts the MLP Trigger's observation holds."""
    knows_other, usual_seen = look_context(memory, ctx)
    flags = {**ctx.signature, "knows_other": knows_other, "usual_seen": usual_seen}
    return "Clues: " + ", ".join(f"{k.replace('_', ' ')} {'yes' if flags.get(k) else 'no'}"
                                 for k in CLUES) + "."


def trigger_fields(memory: MindMemory, state: WindowState, obs: Mapping[str, Any],
                   info: Mapping[str, Any], recent: Sequence[str]) -> dict[str, str]:
    """The template's fields for one window (see the module docstring)."""
    narration = " ".join(str(obs.get("narration", "")).split()) if isinstance(obs, Mapping) \
        else ""
    if len(narration) > NARRATION_CHARS:
        narration = "..." + narration[-NARRATION_CHARS:]
    p = state.perception
    counts = [f"{op.removeprefix('belief_')} {p.count(op)}" for op in BELIEF_OPS if p.count(op)]
    rows = []
    for op in BELIEF_OPS:
        for ch in p.pending.get(op, []):
            if len(rows) >= MAX_ROWS:
                break
            who = "robot sees" if ch.actor is None else f"{memory.name(ch.actor)} believes"
            old = "" if ch.old is None else f" (was {memory.name(ch.old)})"
            rows.append(f"{who} {memory.name(ch.obj)} at {memory.name(ch.new)}{old}")
    pending = "none" if not counts else "; ".join(counts) + ". " + "; ".join(rows)
    cues = [f"{memory.describe_cue(c.cue)} {cue_clues(memory, c)}" for c in p.cues
            if not c.handled]
    recent_ops = list(recent)[-RECENT_WINDOWS:]
    return {"tick": str(state.tick), "narration": narration or "(nothing seen)",
            "pending": pending, "cues": " ".join(cues) if cues else "none",
            "recent": ", ".join(recent_ops) if recent_ops else "none",
            "candidates": _people(info)}


def trigger_messages(fields: Mapping[str, str]) -> list[dict[str, str]]:
    """The system and user messages of the template filled with ``fields``."""
    from mindhelper_env.models.answers import load_template

    system, user = load_template(TEMPLATE).render(**fields)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_operation(text: str | None) -> str | None:
    """The operation a reply names (its first line, exactly one of :data:`TRIGGER_OPS`,
    case and surrounding punctuation ignored), or None."""
    from mindhelper_env.models.answers import answer_line

    line = answer_line(text).strip().strip(".,;:!`'\"").strip().lower()
    return line if line in TRIGGER_OPS else None


class WindowPlanTrigger(Trigger):
    """A Trigger that decides one operation per window (:meth:`choose`) and carries it out
    as a plan (see the module docstring). Subclasses implement :meth:`choose`."""

    def __init__(self, skills: SkillBook | None = None) -> None:
        super().__init__(skills)
        self.usage = Usage()
        self.obs: Mapping[str, Any] = {}
        self.info: Mapping[str, Any] = {}
        self.reset()

    def reset(self, usage: Usage | None = None) -> None:
        """A new episode (the agent calls this from its ``reset``)."""
        if usage is not None:
            self.usage = usage
        self.recent: list[str] = []
        self._plan: str = "noop"
        self._state_id: int | None = None
        self.policy_errors = 0

    def see(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> None:
        """The window's observation (the agent calls this before each step)."""
        self.obs, self.info = obs, info

    def choose(self, memory: MindMemory, state: WindowState, messages: list[dict[str, str]],
               asked: bool) -> str:  # pragma: no cover - abstract
        """The window's plan. ``asked``: the answer can change what the robot does (see
        :meth:`answer_matters`)."""
        raise NotImplementedError

    @staticmethod
    def answer_matters(state: WindowState) -> bool:
        """Only with an unhandled cue and no intervention yet do plans differ in what they
        run: belief changes are committed whatever the plan, and without a cue
        ``action_run`` and ``reasoning_run`` have nothing to work on."""
        return not state.acted and state.next_cue() is not None

    def _start(self, memory: MindMemory, state: WindowState) -> None:
        if self._state_id is not None:
            self.recent.append(window_op(self._ops))
        self._state_id = id(state)
        self._ops: list[str] = []
        if state.acted:
            self._plan = "noop"
            return
        messages = trigger_messages(trigger_fields(memory, state, self.obs, self.info,
                                                   self.recent))
        self._plan = self.choose(memory, state, messages, self.answer_matters(state))

    def dispatch(self, memory: MindMemory, state: WindowState) -> str:
        if self._state_id != id(state):
            self._start(memory, state)
        op = self._next(state)
        self._ops.append(op)
        return op

    def _next(self, state: WindowState) -> str:
        state.dispatches += 1
        if state.dispatches > MAX_DISPATCHES:
            return "noop"
        for op in BELIEF_OPS:
            if state.perception.count(op):
                return op
        if self._plan not in ("action_run", "reasoning_run") or state.acted:
            return "noop"
        skill_op = self._skill(state)
        if self._plan == "action_run":
            if skill_op == "action_run" or state.needs:
                return "action_run"
        if state.next_cue() is not None and (self._plan == "action_run" or not state.needs):
            return "reasoning_run"
        return "noop"


class ModelTrigger(WindowPlanTrigger):
    """The window's operation from a model client (``hf:CKPT``, ``openai:...``, ...)."""

    def __init__(self, client: Any, skills: SkillBook | None = None,
                 max_tokens: int = 12, ask: str = "cues") -> None:
        if ask not in ("cues", "always"):
            raise ValueError(f"ask must be 'cues' or 'always', got {ask!r}")
        self.client = client
        self.max_tokens = int(max_tokens)
        self.ask = ask
        super().__init__(skills)

    def choose(self, memory: MindMemory, state: WindowState, messages: list[dict[str, str]],
               asked: bool) -> str:
        if not asked and self.ask == "cues":
            return "noop"  # every answer runs the same operations here: no call
        from mindhelper_env.models.accounting import accounted_call
        from mindhelper_env.models.answers import load_template

        self.usage.prompts.setdefault("mindclaw.trigger", load_template(TEMPLATE).version)
        answer, _kind = accounted_call(self.client, self.usage, messages,
                                       max_tokens=self.max_tokens, temperature=0.0,
                                       who="mindclaw trigger")
        if answer is None:
            return "noop"
        op = parse_operation(answer.text)
        if op is None:
            self.usage.parse_failures += 1
            return "noop"
        return op


def make_trigger(trigger: Any, skills: SkillBook | None = None) -> WindowPlanTrigger:
    """``trigger=`` of :class:`~.agent.MindClawAgent`: a model spec string (``"hf:CKPT"``,
    see :func:`mindhelper_env.models.make_client`), a model client, or a
    :class:`WindowPlanTrigger`."""
    if isinstance(trigger, WindowPlanTrigger):
        return trigger
    if isinstance(trigger, str):
        from mindhelper_env.models import make_client

        if not trigger.strip():
            raise ValueError("trigger: expected a model spec such as 'hf:PATH', got ''")
        return ModelTrigger(make_client(trigger), skills)
    if callable(getattr(trigger, "complete", None)):
        return ModelTrigger(trigger, skills)
    raise ValueError(f"trigger: expected a model spec string (e.g. 'hf:PATH'), a model "
                     f"client or a WindowPlanTrigger, got {type(trigger).__name__}")
