"""``direct-vlm``: the paper's direct-prompting baseline.

Every observation window the agent sends one chat prompt to a model and acts on its answer:

* **system message** — the task (intervene only when a false belief or an implicit goal
  blocks a person's task, otherwise answer none), the action grammar (verbs and their
  arguments, generated from :data:`~mindhelper_env.world.script.VERB_ARITY`), the answer
  format and a one-shot example. ``answer_format="json"`` (default): one JSON object
  ``{"intervene": bool, "program": [script lines]}``; ``"line"``: one line, ``none`` or
  ``help: LINE; LINE; ...`` (easier for small models). The prompts are the template files
  ``mindhelper_env/agents/prompts/direct-vlm.<format>.txt``; their version is recorded in
  ``usage.prompts``;
* **user message** — the places and rooms of the home (from ``info["candidates"]``, with
  ids), the narration so far, then the candidates that change every window (people,
  objects, the robot's own state), the current tick and, when the observation has
  ``"rgb"``, the window's frames (the last ``max_images``). What changes least comes first,
  so that consecutive prompts of an episode share a long prefix for a server's prompt
  cache (llama.cpp, vLLM's prefix caching).

**Vision track** (``obs_mode="rgb"``: the observation is the window's frames, no text;
docs/vision.md): the prompts are ``direct-vlm-rgb.<format>.txt``. The system message adds
what the pictures show (id marks, icons, the drawn events); the user message holds the ids
of the home (rooms, furniture, doors), the people and objects (ids, names, classes from
``info["candidates"]``), the history of the robot's own actions (what it issued, whether its
program is still running or failed) and the window's frames: every frame as its own image
(``frames="all"``, default) or one contact sheet per window (``frames="sheet"``,
:func:`mindhelper_env.agents.frames.contact_sheet`). No narration and no event list exist
in this track. The images' tokens by the client's rule (:mod:`mindhelper_env.models.images`)
are counted in ``usage.images`` / ``usage.image_tokens`` and in every cost estimate.

**Legend** (``legend=True``; CLI ``--agent direct-vlm:legend=true``): the picture legend
(:mod:`mindhelper_env.render.legend`: every glyph, pose, cell and icon with its name, at
``legend_scale``, default 3) is the first image of every request that carries frames, before
the window's frames, and the prompt says so. Each request stands alone (the model keeps
nothing between windows), so the legend is sent with each; its bytes never change within a
run, so a server's prompt cache can reuse it. It is an image part like a frame: counted in
``usage.images`` / ``usage.image_tokens`` by the client's rule, in the dry pass of a
budgeted run and in every budget reservation.

Narration budget: the reset description (the home at tick 0) is always kept, cut to at most
half of ``history_chars`` characters; then whole windows are added newest first while the
total stays within ``history_chars``; older windows are dropped and replaced by a line
saying how many were left out. The newest window is always included (its tail, if it alone
exceeds the budget). Windows with no narration are skipped.

Prompt size: with a client that knows the model's context length (client option
``context_length``; ``hf:`` reads it from the model) the prompt is fitted to it: the
narration budget is halved, then the candidate list cut, until the estimated prompt plus
``max_tokens`` fits (counted in ``usage.prompts_fitted``).

Structured output (client option ``structured``): the agent sends a constraint with each
request: a JSON schema of the answer object (``json_schema``, ``guided_json``) or a GBNF
grammar of either format whose ids are the known ids (``gbnf``, llama.cpp).

Answer parsing (JSON): the first JSON object at the top level of the reply
(:func:`mindhelper_env.models.answers.find_json_object`: code fences, surrounding prose and
single quotes are fine; a nested object is never the answer). ``intervene`` must be a boolean; when true, ``program`` must be a non-empty list of
script lines (or one string of lines) that all parse with
:func:`~mindhelper_env.world.script.parse_program` and mention only known ids: the current
candidates, the robot, and ids the robot saw in earlier events (an object put into a closed
container drops out of the candidates but the robot saw where it went). Anything else is
answered with ``"none"`` and counted in ``usage.parse_failures``. An exception from the
model client (timeout, HTTP error, replay miss) gives ``"none"`` and counts in
``usage.fallbacks`` and ``usage.errors`` (by kind; see
:mod:`mindhelper_env.models.accounting`). Every model call is one decision in
``usage.sources``: ``model`` (a usable answer) or ``failed``.

One intervention per episode: after the agent has acted once it answers ``"none"`` for the
rest of the episode without calling the model (the metrics score the first intervention;
the env runs the program to completion).

Cost control: ``max_calls=N`` caps the model calls per episode; after the N-th call the
agent answers ``"none"`` without a call, and each such window counts as a ``capped``
decision in ``usage.sources`` (a small model that never acts calls once per window: about
24 calls per ``vh-dev-v3`` episode).

Trace (copied into result records): one entry per model call: ``window``, ``tick``,
``prompt_tokens``, ``completion_tokens``, ``outcome`` (``ok``, ``parse_failure``,
``call_failed:<kind>``), ``prompt`` (template version) and the answer's first 160
characters.

Usage: ``model_calls`` counts every call made (answered or failed), ``prompt_tokens`` /
``completion_tokens`` add up the clients' counts, ``seconds`` the time spent in model calls,
and ``tokens_estimated`` is True if any count in the episode was an estimate.

>>> from mindhelper_env.agents import make_agent
>>> agent = make_agent("direct-vlm", model="openai:gpt-4o-mini")  # doctest: +SKIP

Without ``model=``, the spec comes from ``$MINDHELPER_MODEL`` (so ``mindhelper evaluate
--agents direct-vlm`` works); other keyword arguments go to
:func:`~mindhelper_env.models.make_client` (``cache_dir``, ``concurrency``, ``record`` ...).
"""

from __future__ import annotations

import json
import logging
import os
import re
from typing import Any

import numpy as np

from mindhelper_env.agents.base import Usage
from mindhelper_env.agents.frames import (
    FRAME_MODES,
    LEGEND_INTRO,
    frame_parts,
    id_lists,
    is_rgb_observation,
    legend_image,
)
from mindhelper_env.models import ModelClient, make_client
from mindhelper_env.models.accounting import accounted_call
from mindhelper_env.models.answers import (
    Constraint,
    answer_line,
    find_json_object,
    gbnf_literal,
    load_template,
)
from mindhelper_env.models.base import prompt_tokens_estimate
from mindhelper_env.world.script import VERB_ARITY, parse_program, split_program

__all__ = ["DirectVLMAgent", "parse_answer", "SYSTEM_PROMPT", "ANSWER_FORMATS",
           "answer_constraint"]

#: Answer formats of ``direct-vlm`` (template ``direct-vlm.<format>.txt``).
ANSWER_FORMATS = ("json", "line")

logger = logging.getLogger(__name__)

_ARG_NAMES = {
    "walk": "<place|object|character|room> (id)", "find": "<object> (id)",
    "open": "<container> (id)", "close": "<container> (id)", "grab": "<object> (id)",
    "putback": "<object> (id) <surface> (id)", "putin": "<object> (id) <container> (id)",
    "drop": "<object> (id)", "switchon": "<appliance> (id)", "switchoff": "<appliance> (id)",
    "sit": "<seat> (id)", "standup": "",
    "give": "<object> (id) <character> (person id)",
    "tell": "<character> (person id) <object> (id) <place> (id)",
}


def _grammar() -> str:
    lines = []
    for verb in VERB_ARITY:
        args = _ARG_NAMES.get(verb, " ".join(["<class> (id)"] * VERB_ARITY[verb]))
        lines.append(f"  [{verb}] {args}".rstrip())
    return "\n".join(lines)


def _template(fmt: str) -> Any:
    return load_template(f"direct-vlm.{fmt}")


#: The system message of the default (JSON) format.
SYSTEM_PROMPT = _template("json").system.substitute(grammar=_grammar())

_NONE_WORDS = ("none", "no", "nothing", "no help", "do nothing")


def _program_from(obj_program: Any, known_ids: set[int] | None,
                  max_lines: int) -> tuple[str | None, str]:
    program = obj_program
    if isinstance(program, str):
        program = split_program(program)
    if not isinstance(program, list) or not program \
            or not all(isinstance(x, str) for x in program):
        return None, "'program' is not a non-empty list of strings"
    if len(program) > max_lines:
        return None, f"program longer than {max_lines} lines"
    lines, errors = parse_program("\n".join(p.replace(";", "\n") for p in program))
    if errors:
        raw, why = errors[0]
        return None, f"bad line {raw!r}: {why}"
    if not lines:
        return None, "empty program"
    if known_ids is not None:
        for line in lines:
            unknown = [i for i in line.ids if i not in known_ids]
            if unknown:
                return None, f"unknown id {unknown[0]} in {str(line)!r}"
    return "\n".join(str(x) for x in lines), ""


def parse_answer(text: str, known_ids: set[int] | None = None,
                 max_lines: int = 32, fmt: str = "json") -> tuple[str | None, str]:
    """Turn a model reply into an action: ``(action, "")`` or ``(None, reason)``.

    ``action`` is ``"none"`` or the program's canonical lines joined by newlines. ``fmt``
    is the answer format (:data:`ANSWER_FORMATS`).
    """
    if fmt == "line":
        line = answer_line(text)
        low = line.lower().strip(" .!")
        if not line:
            return None, "empty answer"
        if low in _NONE_WORDS:
            return "none", ""
        m = re.match(r"^(?:help|intervene)\s*[:\-]?\s*(.*)$", line, flags=re.I)
        body = m.group(1) if m else line
        if not body.lstrip().startswith("["):
            return None, "neither 'none' nor 'help: LINE; ...'"
        return _program_from([p for p in body.split(";") if p.strip()], known_ids, max_lines)
    obj = find_json_object(text or "")
    if obj is None:
        return None, "no JSON object in the answer"
    intervene = obj.get("intervene")
    if isinstance(intervene, str) and intervene.strip().lower() in ("true", "false"):
        intervene = intervene.strip().lower() == "true"
    if not isinstance(intervene, bool):
        return None, "'intervene' is not a boolean"
    if not intervene:
        return "none", ""
    return _program_from(obj.get("program"), known_ids, max_lines)


_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "intervene": {"type": "boolean"},
        "program": {"type": "array", "maxItems": 8,
                    "items": {"type": "string",
                              "pattern": r"^\[[a-z]+\]( <[a-z_]+> \([0-9]+\)){0,3}$"}},
    },
    "required": ["intervene", "program"],
    "additionalProperties": False,
}


def answer_constraint(fmt: str, known_ids: set[int] | None = None,
                      max_lines: int = 8) -> Constraint:
    """The structured-output constraint of an answer format: the JSON schema (JSON format
    only) and a GBNF grammar whose script lines use only ``known_ids``."""
    ids = sorted(known_ids or ())
    id_rule = " | ".join(gbnf_literal(str(i)) for i in ids) if ids else "[0-9]+"
    rules = [f"id ::= {id_rule}", 'cls ::= [a-z_] [a-z_]*',
             'arg ::= "<" cls "> (" id ")"']
    steps = []
    for verb, arity in VERB_ARITY.items():
        name = f"v-{verb}"
        rules.append(f"{name} ::= {gbnf_literal(f'[{verb}]')}"
                     + "".join(' " " arg' for _ in range(arity)))
        steps.append(name)
    rules.append("step ::= " + " | ".join(steps))
    more = max(0, max_lines - 1)
    if fmt == "line":
        root = f'root ::= "none" | "help: " step ("; " step){{0,{more}}}'
        return Constraint(None, "\n".join([root, *rules]), None, "direct_vlm_line")
    rules.append('line ::= "\\"" step "\\""')
    root = ('root ::= ' + gbnf_literal('{"intervene": false, "program": []}')
            + ' | ' + gbnf_literal('{"intervene": true, "program": [')
            + f' line (", " line){{0,{more}}} "]}}"')
    return Constraint(_ANSWER_SCHEMA, "\n".join([root, *rules]), None, "direct_vlm_answer")


def _frames(rgb: Any, limit: int) -> list[np.ndarray]:
    if rgb is None or limit <= 0:
        return []
    arr = np.asarray(rgb)
    if arr.ndim == 3:
        frames = [arr]
    elif arr.ndim == 4:
        frames = list(arr)
    else:
        return []
    return [np.ascontiguousarray(f, dtype=np.uint8) for f in frames[-limit:]]


class DirectVLMAgent:
    """Direct prompting of a (vision-)language model; see the module docstring."""

    name = "direct-vlm"

    def __init__(self, model: str | ModelClient | None = None, *, max_tokens: int = 256,
                 temperature: float = 0.0, history_chars: int = 6000, max_images: int = 4,
                 answer_format: str = "json", max_calls: int | None = None,
                 frames: str = "all", legend: bool = False, legend_scale: int = 3,
                 **client_opts: Any) -> None:
        if model is None:
            model = os.environ.get("MINDHELPER_MODEL")
            if not model:
                raise ValueError("direct-vlm needs a model: make_agent('direct-vlm', "
                                 "model='openai:MODEL@http://host:port/v1') or set "
                                 "MINDHELPER_MODEL")
        if isinstance(model, str):
            self.client: ModelClient = make_client(model, **client_opts)
        elif client_opts:
            raise ValueError("client options need a spec string, not a client instance")
        else:
            self.client = model
        if int(history_chars) < 200:
            raise ValueError(f"history_chars must be at least 200, got {history_chars!r}")
        if answer_format not in ANSWER_FORMATS:
            raise ValueError(f"answer_format must be one of {ANSWER_FORMATS}, got "
                             f"{answer_format!r}")
        if max_calls is not None and int(max_calls) < 1:
            raise ValueError(f"max_calls must be at least 1, got {max_calls!r}")
        if frames not in FRAME_MODES:
            raise ValueError(f"frames must be one of {FRAME_MODES}, got {frames!r}")
        self.frames = frames
        #: the picture legend sent before the frames (``legend=True``), or None
        self.legend = legend_image(legend, legend_scale)
        self.max_calls = None if max_calls is None else int(max_calls)
        self.answer_format = answer_format
        self.template = _template(answer_format)
        self._system = self.template.system.substitute(grammar=_grammar())
        self.rgb_template = load_template(f"direct-vlm-rgb.{answer_format}")
        self._rgb_system = self.rgb_template.system.substitute(grammar=_grammar())
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.history_chars = int(history_chars)
        self.max_images = int(max_images)
        self.usage = Usage()
        #: one entry per model call of the episode: window, tick, tokens, outcome, prompt
        self.trace: list[dict[str, Any]] = []
        self._window = 0
        self.last_prompt: list[dict[str, Any]] | None = None
        self.last_reply: str | None = None
        self._reset_state()

    def _reset_state(self) -> None:
        self._scene: str | None = None
        self._windows: list[str] = []
        self._seen_ids: set[int] = set()
        self._acted = False
        #: the robot's own actions (rgb track's history): (window, tick, program)
        self._own: list[tuple[int, int, str]] = []

    def reset(self, *, seed: int | None = None) -> None:
        self.usage = Usage()
        self.trace = []
        self._window = 0
        self._reset_state()

    # -- prompt ------------------------------------------------------------------------

    def _observe(self, observation: dict[str, Any]) -> None:
        if is_rgb_observation(observation):
            return  # frames only: nothing to remember as text
        text = str(observation.get("narration", "")).strip()
        if self._scene is None:
            self._scene = text
        elif text:
            self._windows.append(text)
        try:
            events = json.loads(observation.get("events") or "[]")
        except (TypeError, ValueError):
            events = []
        for ev in events if isinstance(events, list) else []:
            for arg in ev.get("args", []) if isinstance(ev, dict) else []:
                if isinstance(arg, dict) and isinstance(arg.get("id"), int):
                    self._seen_ids.add(arg["id"])

    def narration(self, budget: int | None = None) -> str:
        """The bounded narration history (see the module docstring)."""
        budget = self.history_chars if budget is None else int(budget)
        scene = (self._scene or "")[: budget // 2]
        left = budget - len(scene)
        kept: list[str] = []
        for i, w in enumerate(reversed(self._windows)):
            if len(w) + 1 > left:
                if i == 0:
                    kept.append(w[-max(left - 1, 0):])
                    left = 0
                break
            kept.append(w)
            left -= len(w) + 1
        dropped = len(self._windows) - len(kept)
        parts = [scene]
        if dropped:
            parts.append(f"[... {dropped} earlier window(s) left out ...]")
        parts += list(reversed(kept))
        return "\n".join(p for p in parts if p)

    @staticmethod
    def _candidates(info: dict[str, Any]) -> tuple[str, str]:
        """The candidates in two blocks: ``(places, now)``. Places and rooms hardly change
        in an episode and go before the narration; people, objects and the robot change
        every window and go after it, so that consecutive prompts of an episode share a
        long prefix (a server's prompt cache then skips most of the prompt)."""
        c = info.get("candidates") or {}
        names = {d["id"]: d.get("class", "?") for k in ("objects", "locations", "rooms")
                 for d in c.get(k) or [] if isinstance(d, dict) and "id" in d}
        names.update({a["id"]: f"character {a.get('name', '')}".rstrip()
                      for a in c.get("actors") or [] if isinstance(a, dict) and "id" in a})
        def place(i: Any) -> str:
            return f"{names.get(i, '?')} ({i})" if i is not None else "?"
        places = ["Places:"]
        for loc in c.get("locations") or []:
            state = {True: ", open", False: ", closed"}.get(loc.get("open"), "")
            places.append(f"- <{loc['class']}> ({loc['id']}) in {place(loc.get('room'))}"
                          f"{state}")
        places.append("Rooms: " + ", ".join(f"<{r['class']}> ({r['id']})"
                                            for r in c.get("rooms") or []))
        now = ["People (use <character> (id)):"]
        for a in c.get("actors") or []:
            held = ", ".join(place(h) for h in a.get("holding") or []) or "nothing"
            now.append(f"- {a.get('name')} ({a.get('id')}), {a.get('kind')}, in "
                       f"{place(a.get('room'))}, holding {held}")
        now.append("Objects:")
        now += [f"- <{o['class']}> ({o['id']}) at {place(o.get('location'))} in "
                f"{place(o.get('room'))}" for o in c.get("objects") or []]
        robot = info.get("robot") or {}
        held = ", ".join(place(h) for h in robot.get("holding") or []) or "nothing"
        now.append(f"You are the robot ({robot.get('id')}), in {place(robot.get('room'))}, "
                   f"holding {held}.")
        return "\n".join(places), "\n".join(now)

    @staticmethod
    def _cut(block: str, max_rows: int | None) -> str:
        rows = block.splitlines()
        if max_rows is None or len(rows) <= max_rows:
            return block
        return "\n".join(rows[:max_rows] + [f"[... {len(rows) - max_rows} more left out]"])

    def _messages(self, observation: dict[str, Any], info: dict[str, Any],
                  history: int, max_candidates: int | None) -> list[dict[str, Any]]:
        places, now = self._candidates(info)
        frames = _frames(observation.get("rgb"), self.max_images)
        images = (f"\n{LEGEND_INTRO if self.legend is not None else ''}The {len(frames)} "
                  f"image(s) below show the home at the end of the window.\n"
                  if frames else "")
        _, text = self.template.render(
            grammar="", tick=int(observation.get("tick", info.get("tick", 0))),
            places=self._cut(places, max_candidates), candidates=self._cut(now, max_candidates),
            narration=self.narration(history), images=images)
        legend = [self.legend] if frames and self.legend is not None else []
        return [{"role": "system", "content": self._system},
                {"role": "user", "content": [text, *legend, *frames]}]

    def history(self, info: dict[str, Any]) -> str:
        """The robot's own actions so far (the rgb track's history; no narration)."""
        if not self._own:
            return "You have not intervened yet."
        lines = [f"- window {w}, tick {t}: you issued " + "; ".join(p.splitlines())
                 for w, t, p in self._own]
        if info.get("pending_program"):
            lines.append("Your program is still running.")
        if info.get("action_error"):
            lines.append(f"Your last action failed: {info['action_error']}")
        return "\n".join(lines)

    def _rgb_messages(self, observation: Any, info: dict[str, Any],
                      max_candidates: int | None) -> list[dict[str, Any]]:
        places, things = id_lists(info)
        frames, intro = frame_parts(observation, self.frames)
        _, text = self.rgb_template.render(
            grammar="", window=self._window - 1, tick=int(info.get("tick", 0)),
            places=self._cut(places, max_candidates), candidates=self._cut(things, max_candidates),
            history=self.history(info),
            images=f"\n{LEGEND_INTRO if self.legend is not None else ''}{intro}\n")
        legend = [self.legend] if self.legend is not None else []
        return [{"role": "system", "content": self._rgb_system},
                {"role": "user", "content": [text, *legend, *frames]}]

    def build_messages(self, observation: dict[str, Any],
                       info: dict[str, Any]) -> list[dict[str, Any]]:
        """The prompt for the current window (call after the window was observed), fitted
        to the client's ``context_length`` when it has one (see the module docstring; in the
        rgb track only the id lists can be cut: the frames are the observation)."""
        if is_rgb_observation(observation):
            messages = self._rgb_messages(observation, info, None)
            window = getattr(self.client, "context_length", None)
            if window:
                budget = int(window) - self.max_tokens - 16
                full = rows = max(len(b.splitlines()) for b in id_lists(info))
                while prompt_tokens_estimate(self.client, messages) > budget and rows > 4:
                    rows = max(4, rows // 2)
                    messages = self._rgb_messages(observation, info, rows)
                self.usage.prompts_fitted += rows != full
            return messages
        messages = self._messages(observation, info, self.history_chars, None)
        window = getattr(self.client, "context_length", None)
        if not window:
            return messages
        budget = int(window) - self.max_tokens - 16
        history, rows = self.history_chars, None
        n_rows = max(len(b.splitlines()) for b in self._candidates(info))
        while prompt_tokens_estimate(self.client, messages) > budget:
            if history > 200:
                history = max(200, history // 2)
            elif rows is None or rows > 4:
                rows = max(4, (n_rows if rows is None else rows) // 2)
            else:
                break
            messages = self._messages(observation, info, history, rows)
        if history != self.history_chars or rows is not None:
            self.usage.prompts_fitted += 1
        return messages

    def _known_ids(self, info: dict[str, Any]) -> set[int]:
        ids = set(self._seen_ids)
        c = info.get("candidates") or {}
        for key in ("actors", "objects", "locations", "rooms"):
            ids.update(d["id"] for d in c.get(key) or [] if isinstance(d, dict) and "id" in d)
        robot = info.get("robot") or {}
        if isinstance(robot.get("id"), int):
            ids.add(robot["id"])
        return ids

    # -- acting ------------------------------------------------------------------------

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        self.usage.decisions += 1
        rgb = is_rgb_observation(observation)
        template = self.rgb_template if rgb else self.template
        self.usage.prompts.setdefault(self.name, template.version)
        self._observe(observation)
        window = self._window
        self._window += 1
        if self._acted:
            return "none"
        if self.max_calls is not None and len(self.trace) >= self.max_calls:
            self.usage.count_source("capped")
            return "none"
        messages = self.build_messages(observation, info)
        self.last_prompt = messages
        known = self._known_ids(info)
        constraint = (answer_constraint(self.answer_format, known)
                      if getattr(self.client, "structured", None) else None)
        answer, kind = accounted_call(self.client, self.usage, messages,
                                      max_tokens=self.max_tokens,
                                      temperature=self.temperature, constraint=constraint,
                                      who=self.name)
        tick = int(info.get("tick", 0)) if rgb \
            else int(observation.get("tick", info.get("tick", 0)))
        entry: dict[str, Any] = {
            "window": window, "tick": tick,
            "prompt_tokens": 0, "completion_tokens": 0, "outcome": "ok",
            "prompt": template.version}
        self.trace.append(entry)
        if answer is None:
            entry["outcome"] = f"call_failed:{kind}"
            self.usage.count_source("failed")
            return "none"
        entry["prompt_tokens"] = answer.prompt_tokens
        entry["completion_tokens"] = answer.completion_tokens
        entry["answer"] = answer.text[:160]
        self.last_reply = answer.text
        action, why = parse_answer(answer.text, known, fmt=self.answer_format)
        if action is None:
            entry["outcome"] = "parse_failure"
            self.usage.parse_failures += 1
            self.usage.count_source("failed")
            logger.info("direct-vlm: unusable answer (%s); answering none", why)
            return "none"
        self.usage.count_source("model")
        if action != "none":
            self._acted = True
            self._own.append((window, tick, action))
        return action
