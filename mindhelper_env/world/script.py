"""VirtualHome script lines: parsing and formatting.

A script line names a verb in brackets followed by zero to three ``<class_name> (id)``
arguments, e.g. ``[walk] <fridge> (12)`` or ``[putin] <apple> (31) <fridge> (12)``.
Verbs are case-insensitive. An optional VirtualHome character prefix (``<char0>``) is
accepted and ignored. A *program* is several lines separated by newlines or ``;``.
The single word ``none`` (any case, surrounding white space ignored) is silence.

Extensions: ``[give] <apple> (31) <character> (2)`` (hand an object to a person; anyone may
give) and the robot-only ``[tell] <character> (2) <apple> (31) <fridge> (12)``.

:data:`MOVEMENT_VERBS` are the verbs that only move the speaker (walk, find, standup); every
other verb acts on an object or a person. For scoring, a robot's *intervention* is its first
executed line whose verb is not a movement verb.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "VERB_ARITY",
    "ROBOT_ONLY_VERBS",
    "MOVEMENT_VERBS",
    "ScriptLine",
    "ScriptParseError",
    "parse_line",
    "parse_program",
    "is_silence",
    "normalize_class",
]

#: Number of ``<class> (id)`` arguments each verb takes.
VERB_ARITY: dict[str, int] = {
    "walk": 1,
    "find": 1,
    "open": 1,
    "close": 1,
    "grab": 1,
    "putback": 2,
    "putin": 2,
    "drop": 1,
    "switchon": 1,
    "switchoff": 1,
    "sit": 1,
    "standup": 0,
    "give": 2,
    "tell": 3,
}

#: Verbs only the robot may use.
ROBOT_ONLY_VERBS = frozenset({"tell"})

#: Verbs that only move the one who executes them. Robot lines with these verbs are free: they
#: are not interventions (the robot may walk over to look).
MOVEMENT_VERBS = frozenset({"walk", "find", "standup"})

# Spellings VirtualHome programs use for the same verbs.
_VERB_ALIASES = {"run": "walk", "walktowards": "walk", "putobjback": "putback"}

_MAX_LINE_CHARS = 512
_SPLIT_RE = re.compile(r"[\n;]")
_LINE_RE = re.compile(r"^\s*(?:<char\d+>\s*)?\[\s*([A-Za-z_]+)\s*\]\s*(.*?)\s*$")
_ARG_RE = re.compile(r"<\s*([A-Za-z0-9_ .\-']+?)\s*>\s*\(\s*(-?\d+)(?:\.\d+)?\s*\)\s*")


def normalize_class(name: str) -> str:
    """Canonical form of a class name: lower case, no underscores or spaces.

    VirtualHome spells some classes both ways (``kitchen_counter`` / ``kitchencounter``);
    both normalize to the same key.
    """
    return name.strip().lower().replace("_", "").replace(" ", "")


class ScriptParseError(ValueError):
    """A script line that does not follow the grammar; ``str(err)`` says why."""


@dataclass(frozen=True, slots=True)
class ScriptLine:
    """One parsed script line: a verb and its ``(class_name, node_id)`` arguments."""

    verb: str
    args: tuple[tuple[str, int], ...] = ()

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple([a[1] for a in self.args])

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.args)

    def __str__(self) -> str:
        parts = [f"[{self.verb}]"] + [f"<{c}> ({i})" for c, i in self.args]
        return " ".join(parts)


#: Lines parsed lately (text -> ScriptLine, or the reason it is malformed); script lines are
#: immutable, so programs that repeat lines share them. Cleared when full.
_PARSED: dict[str, ScriptLine | str] = {}
_PARSED_MAX = 4096


def parse_line(text: str) -> ScriptLine:
    """Parse one script line; raise :class:`ScriptParseError` with the reason if malformed."""
    if not isinstance(text, str):
        raise ScriptParseError(f"script line must be a string, got {type(text).__name__}")
    if len(text) > _MAX_LINE_CHARS:
        raise ScriptParseError(f"line longer than {_MAX_LINE_CHARS} characters")
    parsed = _PARSED.get(text)
    if parsed is None:
        try:
            parsed = _parse_line(text)
        except ScriptParseError as err:
            parsed = str(err)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = parsed
    if type(parsed) is str:
        raise ScriptParseError(parsed)
    return parsed


def _parse_line(text: str) -> ScriptLine:
    m = _LINE_RE.match(text)
    if m is None:
        raise ScriptParseError("expected '[verb] <class> (id) ...'")
    verb = m.group(1).lower()
    verb = _VERB_ALIASES.get(verb, verb)
    if verb not in VERB_ARITY:
        raise ScriptParseError(f"unknown verb '{verb}'")
    rest = m.group(2)
    args: list[tuple[str, int]] = []
    pos = 0
    while pos < len(rest):
        am = _ARG_RE.match(rest, pos)
        if am is None:
            raise ScriptParseError(f"cannot read argument at '{rest[pos:pos + 30]}'")
        args.append((am.group(1).strip().lower(), int(am.group(2))))
        pos = am.end()
    want = VERB_ARITY[verb]
    if len(args) != want:
        raise ScriptParseError(f"[{verb}] takes {want} argument(s), got {len(args)}")
    return ScriptLine(verb, tuple(args))


def is_silence(action: str) -> bool:
    """True if ``action`` is the silent action ``none``."""
    return isinstance(action, str) and action.strip().lower() == "none"


def split_program(action: str) -> list[str]:
    """Split a program into its non-blank raw lines (newline or ``;`` separated)."""
    return [p for p in (q.strip() for q in _SPLIT_RE.split(action)) if p]


def parse_program(action: str) -> tuple[list[ScriptLine], list[tuple[str, str]]]:
    """Parse a program leniently.

    Returns the parsed lines and a list of ``(raw_line, reason)`` for lines that were
    skipped. Never raises for string input.
    """
    lines: list[ScriptLine] = []
    errors: list[tuple[str, str]] = []
    for raw in split_program(action):
        try:
            lines.append(parse_line(raw))
        except ScriptParseError as err:
            errors.append((raw[:80], str(err)))
    return lines, errors
