"""MindClaw's reasoning layer: Observation, Mental Reasoning and Action Generation.

Each module has a **symbolic** backend (no model) and a **model** backend (a
:class:`~mindhelper_env.models.ModelClient`):

* :class:`Observation` — symbolic: :meth:`MindMemory.perceive` (the belief tracker's
  perception and the observer's perspective rules). Model: additionally shows the model the
  window's narration and the cues perception found and asks which of them are real
  struggles (``{"cues": [indices]}``); the answer can only drop cues, never invent them.
  Off unless asked for (``backends={"observation": "model"}``), because it costs a call
  in every window with a cue.
* :class:`MentalReasoning` — symbolic: the cue's judgement by the observer's rules
  (perspective-taking over the belief table, goal inference from where things are kept).
  Model: a compact prompt with the cue and only the relevant belief-table rows; answer
  ``{"blocked": false}`` or ``{"blocked": true, "kind": "false_belief" | "implicit_goal",
  "object": id}``.
* :class:`ActionGeneration` — symbolic: the minimal helpful program
  (:meth:`BeliefTracker.help_program`). Model: the need and the rows about where the
  object is; answer ``{"program": [script lines]}``.

Model answers are parsed strictly (the first JSON object of the reply; ids must be known
to the memory; programs must parse with the script grammar). Anything else falls back to
the symbolic result and counts in ``usage.parse_failures``; a failed call (timeout, HTTP
error, replay miss) falls back too and counts in ``usage.fallbacks``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mindhelper_env.agents.base import Usage
from mindhelper_env.agents.mindclaw.memory import CueContext, MindMemory, Perception
from mindhelper_env.models.base import first_json_object
from mindhelper_env.scenarios.observer import Need
from mindhelper_env.world.script import parse_program, split_program

__all__ = ["Observation", "MentalReasoning", "ActionGeneration", "Verdict", "Call",
           "REASONING_SYSTEM", "ACTION_SYSTEM", "OBSERVATION_SYSTEM", "first_json_object"]

logger = logging.getLogger(__name__)

OBSERVATION_SYSTEM = (
    "You are the observation module of a household robot. Below are a window of narration "
    "and candidate struggle cues (numbered). Keep the cues that really show a person "
    "failing to get or do something. Answer one JSON object: {\"cues\": [numbers]}.")

REASONING_SYSTEM = (
    "You are the mental-reasoning module of a household robot. A person showed a struggle "
    "cue. Decide whether their task is blocked by a false belief (they expected an object "
    "at a place it has left while they were not watching) or by an implicit goal they cannot "
    "reach alone (every object of the class they search lies where nobody keeps one; out of "
    "reach; hands full at a closed container) with no adult with a free hand standing there "
    "to help. Answer one JSON object: {\"blocked\": false} or {\"blocked\": true, \"kind\": "
    "\"false_belief\" or \"implicit_goal\", \"object\": ID}; ID is the object they need "
    "(for hands full: the container).")

ACTION_SYSTEM = (
    "You are the action module of a household robot. Write the shortest program that "
    "unblocks the person, one script line per step: [walk] <class> (id), [open] <class> "
    "(id), [grab] <class> (id), [give] <class> (id) <character> (person id), [tell] "
    "<character> (person id) <class> (object id) <class> (place id). Answer one JSON "
    "object: {\"program\": [lines]}.")

_KINDS = ("false_belief", "implicit_goal")


@dataclass
class Call:
    """A summary of one model call for the trace."""

    module: str
    prompt_chars: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    answer: str = ""
    outcome: str = "ok"  # ok | parse_failure | call_failed

    def to_dict(self) -> dict[str, Any]:
        return {"module": self.module, "prompt_chars": self.prompt_chars,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "answer": self.answer[:160], "outcome": self.outcome}


@dataclass
class Verdict:
    """Mental Reasoning's judgement of one cue."""

    need: Need | None
    source: str  # symbolic | model | fallback
    calls: list[Call] = field(default_factory=list)


class _ModelModule:
    """Shared plumbing: one accounted model call."""

    module = "module"

    def __init__(self, client: Any = None, usage: Usage | None = None,
                 max_tokens: int = 96) -> None:
        self.client = client
        self.usage = usage if usage is not None else Usage()
        self.max_tokens = int(max_tokens)

    @property
    def uses_model(self) -> bool:
        return self.client is not None

    def ask(self, system: str, user: str) -> tuple[str | None, Call]:
        call = Call(self.module, len(system) + len(user))
        self.usage.model_calls += 1
        try:
            answer = self.client.complete(
                [{"role": "system", "content": system}, {"role": "user", "content": user}],
                max_tokens=self.max_tokens, temperature=0.0)
        except Exception as err:  # a model failure must not end the episode
            self.usage.fallbacks += 1
            call.outcome = "call_failed"
            logger.warning("mindclaw %s: model call failed (%s: %s); using the symbolic "
                           "result", self.module, type(err).__name__, err)
            return None, call
        self.usage.seconds += answer.seconds
        self.usage.prompt_tokens += answer.prompt_tokens
        self.usage.completion_tokens += answer.completion_tokens
        self.usage.tokens_estimated = self.usage.tokens_estimated or answer.tokens_estimated
        call.prompt_tokens = answer.prompt_tokens
        call.completion_tokens = answer.completion_tokens
        call.answer = answer.text
        return answer.text, call

    def parse_failed(self, call: Call, why: str) -> None:
        self.usage.parse_failures += 1
        call.outcome = "parse_failure"
        logger.info("mindclaw %s: unusable answer (%s); using the symbolic result",
                    self.module, why)


class Observation(_ModelModule):
    """Perception of one window (see the module docstring)."""

    module = "observation"

    def run(self, memory: MindMemory, obs: Mapping[str, Any],
            info: Mapping[str, Any]) -> tuple[Perception, list[Call]]:
        perception = memory.perceive(obs, info)
        if not self.uses_model or not perception.cues:
            return perception, []
        numbered = "\n".join(f"{i}. {memory.describe_cue(c.cue)}"
                             for i, c in enumerate(perception.cues))
        user = (f"Narration:\n{str(obs.get('narration', '')).strip()[-1500:]}\n\n"
                f"Candidate cues:\n{numbered}")
        text, call = self.ask(OBSERVATION_SYSTEM, user)
        if text is None:
            return perception, [call]
        obj = first_json_object(text)
        keep = obj.get("cues") if obj is not None else None
        n = len(perception.cues)
        if not isinstance(keep, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n for i in keep):
            self.parse_failed(call, "'cues' is not a list of cue numbers")
            return perception, [call]
        perception.cues = [c for i, c in enumerate(perception.cues) if i in set(keep)]
        return perception, [call]


class MentalReasoning(_ModelModule):
    """Is the person of a cue blocked, and by what? (see the module docstring)."""

    module = "reasoning"

    @staticmethod
    def symbolic(ctx: CueContext) -> Need | None:
        return ctx.cue.need

    def prompt(self, memory: MindMemory, ctx: CueContext) -> str:
        rows = memory.relevant_rows(ctx)
        parts = [memory.describe_cue(ctx.cue)]
        if rows["beliefs"]:
            parts.append("What they believed before: " + "; ".join(rows["beliefs"]) + ".")
        else:
            parts.append("What they believed before: nothing relevant.")
        if rows["facts"]:
            parts.append("Where the robot last saw things: " + "; ".join(rows["facts"]) + ".")
        parts.append("Standing there: " + ("; ".join(rows["people"]) or "nobody") + ".")
        return "\n".join(parts)

    def judge(self, memory: MindMemory, ctx: CueContext) -> Verdict:
        sym = self.symbolic(ctx)
        if not self.uses_model:
            return Verdict(sym, "symbolic")
        text, call = self.ask(REASONING_SYSTEM, self.prompt(memory, ctx))
        if text is None:
            return Verdict(sym, "fallback", [call])
        need, why = self.parse(text, memory, ctx)
        if why:
            self.parse_failed(call, why)
            return Verdict(sym, "fallback", [call])
        return Verdict(need, "model", [call])

    @staticmethod
    def parse(text: str, memory: MindMemory, ctx: CueContext) -> tuple[Need | None, str]:
        """``(need or None, "")`` or ``(None, reason)`` for an unusable answer."""
        obj = first_json_object(text)
        if obj is None:
            return None, "no JSON object in the answer"
        blocked = obj.get("blocked")
        if not isinstance(blocked, bool):
            return None, "'blocked' is not a boolean"
        if not blocked:
            return None, ""
        kind = obj.get("kind")
        if kind not in _KINDS:
            return None, f"'kind' must be one of {_KINDS}"
        target = obj.get("object")
        t = memory.tracker
        if isinstance(target, bool) or not isinstance(target, int) or (
                target not in t.where and target not in t.is_container):
            return None, f"unknown object {target!r}"
        return Need(str(kind), ctx.cue.person, target, ctx.cue.kind), ""


class ActionGeneration(_ModelModule):
    """The program that unblocks a person (see the module docstring)."""

    module = "action"

    def prompt(self, memory: MindMemory, need: Need) -> str:
        t = memory.tracker
        person = t.people.get(need.person)
        who = f"{person.name} ({person.id})" if person is not None else f"({need.person})"
        loc = t.where.get(need.target)
        lines = [f"{who} is blocked ({need.kind.replace('_', ' ')}, cue: {need.cue}) and "
                 f"needs {memory.name(need.target)}."]
        if need.target in t.is_container and loc is None:
            state = "open" if t.open.get(need.target) else "closed"
            lines.append(f"{memory.name(need.target)} is a {state} container.")
        else:
            lines.append(f"The robot last saw it at {memory.name(loc)}"
                         + (f" ({'open' if t.open.get(loc) else 'closed'} container)"
                            if loc in t.is_container else "") + ".")
        lines.append(f"The robot ({t.robot_id}) is in {memory.name(t.robot_room)}.")
        return "\n".join(lines)

    def generate(self, memory: MindMemory, need: Need) -> tuple[list[str], str, list[Call]]:
        """``(program, source, calls)``; an empty program means none can be written."""
        sym = memory.tracker.help_program(need)
        if not self.uses_model:
            return sym, "symbolic", []
        text, call = self.ask(ACTION_SYSTEM, self.prompt(memory, need))
        if text is None:
            return sym, "fallback", [call]
        program, why = self.parse(text, memory)
        if why:
            self.parse_failed(call, why)
            return sym, "fallback", [call]
        return program, "model", [call]

    @staticmethod
    def parse(text: str, memory: MindMemory, max_lines: int = 12) -> tuple[list[str], str]:
        obj = first_json_object(text)
        if obj is None:
            return [], "no JSON object in the answer"
        program = obj.get("program")
        if isinstance(program, str):
            program = split_program(program)
        if not isinstance(program, list) or not program or len(program) > max_lines \
                or not all(isinstance(x, str) for x in program):
            return [], f"'program' is not a list of 1 to {max_lines} strings"
        lines, errors = parse_program("\n".join(p.replace(";", "\n") for p in program))
        if errors:
            return [], f"bad line {errors[0][0]!r}: {errors[0][1]}"
        if not lines:
            return [], "empty program"
        t = memory.tracker
        known = set(t.classes) | set(t.where) | set(t.people) | {t.robot_id}
        for line in lines:
            unknown = [i for i in line.ids if i not in known]
            if unknown:
                return [], f"unknown id {unknown[0]} in {str(line)!r}"
        return [str(x) for x in lines], ""
