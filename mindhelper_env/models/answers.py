"""Reading model answers: a robust JSON-object finder, the single-line and choice-letter
formats, prompt templates and structured-output constraints.

**JSON answers** (:func:`find_json_object`): the answer object is the first JSON object that
stands at the top level of the reply: code fences (```` ```json ````), leading prose and
trailing text around it are fine. An object nested inside another bracket is never taken
for the answer: in ``[intervene: false, "program": [{"intervene": true}]]`` the object is
inside two lists, so it is not the answer (the old reader took ``intervene: true``); the
outer square brackets, which small models write for an object (``[key: value, ...]``), are
read as that object: ``intervene: false``.
Lenient repairs, tried only when the strict parse fails: single quotes for strings,
Python's ``True``/``False``/``None``, bare keys (``{intervene: false}``) and a trailing
comma.

**Single-line answers** (:func:`answer_line`): the first non-empty line after fences and a
leading ``Answer:`` are removed.

**Choice letters** (:func:`choice_letter`): ``B``, ``B.``, ``(B)``, ``Answer: B`` or
``B) not blocked``: the first standalone capital letter among the offered ones.

**Templates** (:func:`load_template`): plain-text files in ``mindhelper_env/agents/prompts``,
``NAME.txt``; the first line is ``# version: ...``, then the system message, a line
``=== user ===`` and the user message. Fields are ``$name`` (:class:`string.Template`), so
JSON braces need no escaping. The version goes into every record (``usage.prompts``).

**Constraints** (:class:`Constraint`): what an answer may look like, for servers that can
enforce it (client option ``structured``): a JSON schema (``response_format`` with
``json_schema`` for OpenAI-compatible servers, ``guided_json`` for vLLM), a GBNF grammar
(llama.cpp's ``grammar``) and, for choice answers, the list of choices (vLLM's
``guided_choice``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template
from typing import Any

__all__ = ["find_json_object", "answer_line", "choice_letter", "load_template",
           "PromptTemplate", "Constraint", "gbnf_literal", "LETTERS"]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?|```")


def _strip_fences(text: str) -> str:
    return _FENCE.sub("\n", text)


def _top_level_braces(text: str, opener: str = "{") -> list[int]:
    """Offsets of every ``opener`` that is outside any bracket and any double-quoted
    string."""
    out = []
    depth = 0
    in_str = False
    esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "[{(":
            if ch == opener and depth == 0:
                out.append(i)
            depth += 1
        elif ch in "]})":
            depth = max(depth - 1, 0)
    return out


def _matching_end(text: str, start: int) -> int:
    """Offset after the bracket matching ``text[start]`` (``{`` or ``[``; quotes of either
    kind respected), or -1."""
    depth = 0
    quote = ""
    esc = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _repair(chunk: str) -> str:
    """Single quotes -> double quotes, Python literals -> JSON, bare keys quoted, trailing
    commas dropped."""
    out = []
    i = 0
    while i < len(chunk):
        ch = chunk[i]
        if ch == '"':
            j = i + 1
            while j < len(chunk) and chunk[j] != '"':
                j += 2 if chunk[j] == "\\" else 1
            out.append(chunk[i:j + 1])
            i = j + 1
        elif ch == "'":
            j = i + 1
            buf = []
            while j < len(chunk) and chunk[j] != "'":
                if chunk[j] == "\\" and j + 1 < len(chunk):
                    buf.append(chunk[j + 1])
                    j += 2
                    continue
                buf.append(chunk[j])
                j += 1
            out.append(json.dumps("".join(buf)))
            i = j + 1
        else:
            out.append(ch)
            i += 1
    text = "".join(out)
    text = re.sub(r"\bTrue\b", "true", text)
    text = re.sub(r"\bFalse\b", "false", text)
    text = re.sub(r"\bNone\b", "null", text)
    text = re.sub(r'([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*:)', r'\1"\2"\3', text)
    text = re.sub(r",(\s*[}\]])", r"\1", text)
    return text


def find_json_object(text: str | None) -> dict[str, Any] | None:
    """The answer object of a reply (see the module docstring), or None."""
    if not text:
        return None
    body = _strip_fences(text)
    decoder = json.JSONDecoder()
    for start in _top_level_braces(body):
        try:
            obj, _ = decoder.raw_decode(body, start)
        except ValueError:
            end = _matching_end(body, start)
            if end < 0:
                continue
            try:
                obj = json.loads(_repair(body[start:end]))
            except ValueError:
                continue
        if isinstance(obj, dict):
            return obj
    # a pseudo-object in square brackets: [intervene: false, "program": [...]]
    for start in _top_level_braces(body, "["):
        if not _PSEUDO_KEY.match(body, start + 1):
            continue
        end = _matching_end(body, start)
        if end < 0:
            continue
        try:
            obj = json.loads(_repair("{" + body[start + 1:end - 1] + "}"))
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


_PSEUDO_KEY = re.compile(r"""\s*["']?[A-Za-z_][A-Za-z0-9_]*["']?\s*:""")


def answer_line(text: str | None) -> str:
    """The first meaningful line of a reply (fences, quotes and ``Answer:`` removed)."""
    for line in _strip_fences(text or "").splitlines():
        line = line.strip().strip("`").strip()
        line = re.sub(r"^(final\s+)?answer\s*[:\-]\s*", "", line, flags=re.I).strip()
        if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'":
            line = line[1:-1].strip()
        if line:
            return line
    return ""


def choice_letter(text: str | None, n_choices: int) -> str | None:
    """The chosen letter among the first ``n_choices`` (see the module docstring)."""
    allowed = LETTERS[:max(0, n_choices)]
    body = _strip_fences(text or "").strip()
    if not body or not allowed:
        return None
    m = re.match(r"^\W*([A-Z])(?![A-Za-z])", body)
    if m and m.group(1) in allowed:
        return m.group(1)
    m = re.search(r"(?:answer|option|choice)\s*(?:is|:)?\s*\(?([A-Z])(?![A-Za-z])", body,
                  flags=re.I)
    if m and m.group(1).upper() in allowed:
        return m.group(1).upper()
    return None


@dataclass(frozen=True)
class Constraint:
    """What an answer may look like (see the module docstring); any field may be None."""

    schema: dict[str, Any] | None = None
    grammar: str | None = None
    choices: tuple[str, ...] | None = None
    name: str = "answer"

    def key(self, mode: str) -> dict[str, Any]:
        """The part of a request key that this constraint adds under ``mode``."""
        if mode == "gbnf":
            return {"structured": mode, "grammar": self.grammar}
        if mode == "guided_json" and self.choices is not None and self.schema is None:
            return {"structured": mode, "choices": list(self.choices)}
        return {"structured": mode, "schema": self.schema}

    def usable(self, mode: str) -> bool:
        if mode == "gbnf":
            return self.grammar is not None
        if mode == "guided_json":
            return self.schema is not None or self.choices is not None
        return self.schema is not None  # json_schema

    def request_fields(self, mode: str) -> dict[str, Any]:
        """Keyword arguments for the chat-completions call (``response_format`` or
        ``extra_body``)."""
        if mode == "json_schema":
            return {"response_format": {"type": "json_schema", "json_schema": {
                "name": self.name, "schema": self.schema, "strict": True}}}
        if mode == "gbnf":
            return {"extra_body": {"grammar": self.grammar}}
        if self.schema is not None:
            return {"extra_body": {"guided_json": self.schema}}
        return {"extra_body": {"guided_choice": list(self.choices or ())}}


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return json.dumps(text)


@dataclass(frozen=True)
class PromptTemplate:
    """A system and a user template and the version string of their file."""

    name: str
    version: str
    system: Template
    user: Template

    def render(self, **fields: Any) -> tuple[str, str]:
        return self.system.substitute(fields), self.user.substitute(fields)


@cache
def load_template(name: str) -> PromptTemplate:
    """``mindhelper_env/agents/prompts/NAME.txt`` (see the module docstring)."""
    try:
        raw = resources.files("mindhelper_env.agents").joinpath("prompts", f"{name}.txt") \
            .read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as err:
        raise ValueError(f"no prompt template {name!r}") from err
    first, _, rest = raw.partition("\n")
    m = re.match(r"#\s*version:\s*(\S+)", first)
    if not m:
        raise ValueError(f"prompt template {name!r}: the first line must be '# version: V'")
    system, sep, user = rest.partition("\n=== user ===\n")
    if not sep:
        raise ValueError(f"prompt template {name!r}: no '=== user ===' line")
    return PromptTemplate(name, m.group(1), Template(system.strip("\n")),
                          Template(user.strip("\n")))
