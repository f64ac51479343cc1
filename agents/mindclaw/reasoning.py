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

Prompts are template files ``mindhelper_env/agents/prompts/mindclaw-<module>.<format>.txt``
with a one-shot example; their versions go into ``usage.prompts`` and each traced call.
Answer formats (``formats``): ``json`` for every module (default), or the compact ones a
small model can produce: ``letter`` for reasoning (the options are "not blocked" and, for
each object the relevant rows are about (at most :data:`MAX_OPTION_OBJECTS`), "false belief:
needs X" and "implicit goal: needs X"), ``line`` for action (script lines separated by
``;``) and observation (cue numbers, or ``none``). With a client option ``structured`` the
modules send a constraint (JSON schema, GBNF grammar or choice list).

Model answers are parsed strictly (the answer object at the top level of the reply, see
:func:`mindhelper_env.models.answers.find_json_object`; ids must be known to the memory;
programs must parse with the script grammar). An unusable answer counts in
``usage.parse_failures`` and a failed call (timeout, HTTP error, replay miss) in
``usage.fallbacks`` and ``usage.errors``; either way the module answers its "nothing"
(reasoning: not blocked; action: no program; observation: no cue kept), so the result
measures the model. ``fallback="symbolic"`` uses the symbolic result instead (an explicit
option, off by default). Every judgement counts in ``usage.sources``: ``model``,
``symbolic`` (the module has no model), ``fallback`` or ``failed``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mindhelper_env.agents.base import Usage
from mindhelper_env.agents.mindclaw.memory import CueContext, MindMemory, Perception
from mindhelper_env.models.accounting import accounted_call
from mindhelper_env.models.answers import (
    LETTERS,
    Constraint,
    answer_line,
    choice_letter,
    gbnf_literal,
    load_template,
)
from mindhelper_env.models.base import first_json_object
from mindhelper_env.scenarios.observer import Need
from mindhelper_env.world.script import parse_program, split_program

__all__ = ["Observation", "MentalReasoning", "ActionGeneration", "Verdict", "Call",
           "REASONING_SYSTEM", "ACTION_SYSTEM", "OBSERVATION_SYSTEM", "first_json_object",
           "FORMATS", "COMPACT_FORMATS", "FALLBACKS", "MAX_OPTION_OBJECTS"]

logger = logging.getLogger(__name__)

#: Answer formats per module; the first is the default.
FORMATS: dict[str, tuple[str, ...]] = {"observation": ("json", "line"),
                                       "reasoning": ("json", "letter"),
                                       "action": ("json", "line")}
#: ``formats="compact"``: the formats for small models.
COMPACT_FORMATS = {"observation": "line", "reasoning": "letter", "action": "line"}
#: What a module does with an unusable answer or a failed call.
FALLBACKS = ("none", "symbolic")
#: Objects offered as options by the ``letter`` format of Mental Reasoning.
MAX_OPTION_OBJECTS = 4

OBSERVATION_SYSTEM = load_template("mindclaw-observation.json").system.template
REASONING_SYSTEM = load_template("mindclaw-reasoning.json").system.template
ACTION_SYSTEM = load_template("mindclaw-action.json").system.template

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
    prompt: str = ""  # the template version

    def to_dict(self) -> dict[str, Any]:
        return {"module": self.module, "prompt_chars": self.prompt_chars,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "answer": self.answer[:160], "outcome": self.outcome, "prompt": self.prompt}


@dataclass
class Verdict:
    """Mental Reasoning's judgement of one cue."""

    need: Need | None
    source: str  # symbolic | model | fallback | failed
    calls: list[Call] = field(default_factory=list)


class _ModelModule:
    """Shared plumbing: the template, one accounted model call, the failure policy."""

    module = "module"

    def __init__(self, client: Any = None, usage: Usage | None = None,
                 max_tokens: int = 96, fmt: str | None = None, fallback: str = "none") -> None:
        self.client = client
        self.usage = usage if usage is not None else Usage()
        self.max_tokens = int(max_tokens)
        fmt = fmt or FORMATS[self.module][0]
        if fmt not in FORMATS[self.module]:
            raise ValueError(f"mindclaw {self.module}: answer format must be one of "
                             f"{FORMATS[self.module]}, got {fmt!r}")
        if fallback not in FALLBACKS:
            raise ValueError(f"mindclaw: fallback must be one of {FALLBACKS}, got {fallback!r}")
        self.fmt = fmt
        self.fallback = fallback
        self.template = load_template(f"mindclaw-{self.module}.{fmt}")

    @property
    def uses_model(self) -> bool:
        return self.client is not None

    @property
    def structured(self) -> bool:
        return bool(getattr(self.client, "structured", None))

    def ask(self, user_fields: dict[str, Any],
            constraint: Constraint | None = None) -> tuple[str | None, Call]:
        system, user = self.template.render(**user_fields)
        call = Call(self.module, len(system) + len(user), prompt=self.template.version)
        self.usage.prompts.setdefault(f"mindclaw.{self.module}", self.template.version)
        answer, _kind = accounted_call(
            self.client, self.usage,
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            max_tokens=self.max_tokens, temperature=0.0,
            constraint=constraint if self.structured else None, who=f"mindclaw {self.module}")
        if answer is None:
            call.outcome = "call_failed"
            return None, call
        call.prompt_tokens = answer.prompt_tokens
        call.completion_tokens = answer.completion_tokens
        call.answer = answer.text
        return answer.text, call

    def parse_failed(self, call: Call, why: str) -> None:
        self.usage.parse_failures += 1
        call.outcome = "parse_failure"
        logger.info("mindclaw %s: unusable answer (%s)", self.module, why)

    def failure_source(self) -> str:
        return "fallback" if self.fallback == "symbolic" else "failed"


class Observation(_ModelModule):
    """Perception of one window (see the module docstring)."""

    module = "observation"

    def run(self, memory: MindMemory, obs: Mapping[str, Any],
            info: Mapping[str, Any]) -> tuple[Perception, list[Call]]:
        perception = memory.perceive(obs, info)
        if not self.uses_model or not perception.cues:
            return perception, []
        n = len(perception.cues)
        numbered = "\n".join(f"{i}. {memory.describe_cue(c.cue)}"
                             for i, c in enumerate(perception.cues))
        nums = " | ".join(gbnf_literal(str(i)) for i in range(n))
        if self.fmt == "line":
            grammar = f'root ::= "none" | num (" " num){{0,{n - 1}}}\nnum ::= {nums}'
            schema = None
        else:
            grammar = (f'root ::= "{{\\"cues\\": [" (num (", " num){{0,{n - 1}}})? "]}}"'
                       f"\nnum ::= {nums}")
            schema = {"type": "object", "required": ["cues"], "additionalProperties": False,
                      "properties": {"cues": {"type": "array", "maxItems": n, "items": {
                          "type": "integer", "minimum": 0, "maximum": n - 1}}}}
        text, call = self.ask({"narration": str(obs.get("narration", "")).strip()[-1500:],
                               "cues": numbered}, Constraint(schema, grammar, None, "cues"))
        keep: Any = None
        if text is not None:
            if self.fmt == "line":
                line = answer_line(text).lower().strip(" .")
                if line in ("none", "no", "nothing"):
                    keep = []
                elif line and all(tok.isdigit() for tok in line.replace(",", " ").split()):
                    keep = [int(tok) for tok in line.replace(",", " ").split()]
            else:
                obj = first_json_object(text)
                keep = obj.get("cues") if obj is not None else None
            if not isinstance(keep, list) or not all(
                    isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n
                    for i in keep):
                self.parse_failed(call, "'cues' is not a list of cue numbers")
                keep = None
        if keep is None:
            source = self.failure_source()
            if source == "failed":
                perception.cues = []
        else:
            source = "model"
            perception.cues = [c for i, c in enumerate(perception.cues) if i in set(keep)]
        self.usage.count_source(source)
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

    @staticmethod
    def options(memory: MindMemory, ctx: CueContext) -> list[tuple[str, Need | None]]:
        """The ``letter`` format's options, in order: not blocked, then per object (the
        cue's place first for a stand cue, then believed-at-the-place objects, then by id;
        at most :data:`MAX_OPTION_OBJECTS`) a false-belief and an implicit-goal need. The
        objects are the belief table's relevant ones and the object the robot's own
        tracker suspects (``cue.need``), so that every answer the free formats can give is
        an option even when the committed table lags (an emptied container whose contents
        the person believed in)."""
        cue = ctx.cue
        objs = set(memory.relevant_objects(ctx))
        believed = {o for o, loc in ctx.prior_beliefs.items() if loc == cue.place}
        if cue.need is not None:  # with the believed-here objects, in id order among them
            objs.add(cue.need.target)
            believed.add(cue.need.target)
        order = sorted(objs, key=lambda o: (o not in believed, o))
        if cue.kind == "stand":
            order = [cue.place] + [o for o in order if o != cue.place]
        out: list[tuple[str, Need | None]] = [("not blocked", None)]
        for obj in order[:MAX_OPTION_OBJECTS]:
            for kind in _KINDS:
                label = f"{kind.replace('_', ' ')}: needs {memory.name(obj)}"
                out.append((label, Need(kind, cue.person, obj, cue.kind)))
        return out[:len(LETTERS)]

    def judge(self, memory: MindMemory, ctx: CueContext) -> Verdict:
        sym = self.symbolic(ctx)
        if not self.uses_model:
            self.usage.count_source("symbolic")
            return Verdict(sym, "symbolic")
        fields = {"cue": self.prompt(memory, ctx)}
        options: list[tuple[str, Need | None]] = []
        if self.fmt == "letter":
            options = self.options(memory, ctx)
            letters = LETTERS[:len(options)]
            fields["options"] = "\n".join(f"{letters[i]}. {label}"
                                          for i, (label, _) in enumerate(options))
            constraint = Constraint(None, "root ::= " + " | ".join(
                gbnf_literal(x) for x in letters), tuple(letters), "choice")
        else:
            constraint = self.constraint(memory, ctx)
        text, call = self.ask(fields, constraint)
        if text is None:
            return self._failed(sym, call)
        if self.fmt == "letter":
            letter = choice_letter(text, len(options))
            if letter is None:
                self.parse_failed(call, "no option letter in the answer")
                return self._failed(sym, call)
            need = options[LETTERS.index(letter)][1]
            self.usage.count_source("model")
            return Verdict(need, "model", [call])
        need, why = self.parse(text, memory, ctx)
        if why:
            self.parse_failed(call, why)
            return self._failed(sym, call)
        self.usage.count_source("model")
        return Verdict(need, "model", [call])

    def _failed(self, sym: Need | None, call: Call) -> Verdict:
        source = self.failure_source()
        self.usage.count_source(source)
        return Verdict(sym if source == "fallback" else None, source, [call])

    @staticmethod
    def constraint(memory: MindMemory, ctx: CueContext) -> Constraint:
        """The JSON format's schema and grammar (object ids: the relevant objects)."""
        ids = sorted(memory.relevant_objects(ctx) | {ctx.cue.place})
        id_rule = " | ".join(gbnf_literal(str(i)) for i in ids)
        grammar = "\n".join([
            'root ::= ' + gbnf_literal('{"blocked": false}') + ' | '
            + gbnf_literal('{"blocked": true, "kind": "') + ' kind '
            + gbnf_literal('", "object": ') + ' id "}"',
            'kind ::= "false_belief" | "implicit_goal"', f"id ::= {id_rule}"])
        schema = {"type": "object", "required": ["blocked"], "additionalProperties": False,
                  "properties": {"blocked": {"type": "boolean"},
                                 "kind": {"type": "string", "enum": list(_KINDS)},
                                 "object": {"type": "integer", "enum": ids}}}
        return Constraint(schema, grammar, None, "verdict")

    @staticmethod
    def parse(text: str, memory: MindMemory, ctx: CueContext) -> tuple[Need | None, str]:
        """``(need or None, "")`` or ``(None, reason)`` for an unusable answer."""
        obj = first_json_object(text)
        if obj is None:
            return None, "no JSON object in the answer"
        blocked = obj.get("blocked")
        if isinstance(blocked, str) and blocked.strip().lower() in ("true", "false"):
            blocked = blocked.strip().lower() == "true"
        if not isinstance(blocked, bool):
            return None, "'blocked' is not a boolean"
        if not blocked:
            return None, ""
        kind = obj.get("kind")
        if kind not in _KINDS:
            return None, f"'kind' must be one of {_KINDS}"
        target = obj.get("object")
        if isinstance(target, str) and target.strip().isdigit():
            target = int(target.strip())
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
            self.usage.count_source("symbolic")
            return sym, "symbolic", []
        text, call = self.ask({"need": self.prompt(memory, need)}, self.constraint(memory))
        if text is not None:
            program, why = self.parse(text, memory, fmt=self.fmt)
            if not why:
                self.usage.count_source("model")
                return program, "model", [call]
            self.parse_failed(call, why)
        source = self.failure_source()
        self.usage.count_source(source)
        return (sym if source == "fallback" else []), source, [call]

    def constraint(self, memory: MindMemory) -> Constraint:
        """The format's grammar (ids known to the memory) and, for JSON, its schema."""
        from mindhelper_env.agents.direct_vlm import answer_constraint

        t = memory.tracker
        known = set(t.classes) | set(t.where) | set(t.people) | {t.robot_id}
        base = answer_constraint("line", known, max_lines=12)
        steps = base.grammar.split("\n", 1)[1]
        if self.fmt == "line":
            return Constraint(None, 'root ::= step ("; " step){0,11}\n' + steps, None,
                              "program")
        grammar = ('root ::= ' + gbnf_literal('{"program": [') + ' line (", " line){0,11} "]}"\n'
                   + 'line ::= "\\"" step "\\""\n' + steps)
        schema = {"type": "object", "required": ["program"], "additionalProperties": False,
                  "properties": {"program": {"type": "array", "minItems": 1, "maxItems": 12,
                                             "items": {"type": "string"}}}}
        return Constraint(schema, grammar, None, "program")

    @staticmethod
    def parse(text: str, memory: MindMemory, max_lines: int = 12,
              fmt: str = "json") -> tuple[list[str], str]:
        if fmt == "line":
            line = answer_line(text)
            program: Any = [p for p in line.split(";") if p.strip()]
        else:
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
