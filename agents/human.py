"""A person plays the robot at the terminal (``mindhelper play``).

:class:`HumanAgent` is an ordinary agent: each window it shows the narration (and, on
request, what the robot can see) and reads one line — a program (script lines separated by
``;``) or nothing for ``none``. Its episodes are recorded and scored like any other agent's.

At an interactive terminal with :mod:`readline`, Tab completes verbs, ``<class> (id)``
arguments of the people, objects and places in view, and the commands ``?`` (show what is in
view), ``help`` (the action grammar) and ``quit`` (stay silent for the rest of the episode).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mindhelper_env.agents.base import Usage
from mindhelper_env.world.script import VERB_ARITY, ScriptParseError, is_silence, parse_program

__all__ = ["HumanAgent", "GRAMMAR", "candidate_words", "complete_line"]

GRAMMAR = """Answer with nothing (stay silent) or script lines separated by ';', e.g.
  [walk] <fridge> (12); [open] <fridge> (12); [grab] <apple> (31)
  [walk] <character> (5); [give] <apple> (31) <character> (5)
  [tell] <character> (5) <apple> (31) <fridge> (12)
Verbs: """ + ", ".join(sorted(VERB_ARITY)) + """. Walking is free; any other line is an
intervention. Commands: ? (what you can see), help, quit (silent to the end)."""


def candidate_words(info: dict[str, Any]) -> list[str]:
    """Completion words: verbs and ``<class> (id)`` of everything in view."""
    words = [f"[{v}]" for v in sorted(VERB_ARITY)]
    cands = info.get("candidates", {}) if isinstance(info, dict) else {}
    for a in cands.get("actors", []) or []:
        words.append(f"<character> ({a['id']})")
    for key in ("objects", "locations"):
        for o in cands.get(key, []) or []:
            words.append(f"<{o['class']}> ({o['id']})")
    return words + ["?", "help", "quit"]


def _describe(info: dict[str, Any]) -> str:
    cands = info.get("candidates", {})
    people = ", ".join(f"{a['name']} ({a['id']}, {a['kind']}) in room {a['room']}"
                       + (f" holding {a['holding']}" if a.get("holding") else "")
                       for a in cands.get("actors", []))
    objects = ", ".join(f"{o['class']} ({o['id']}) at {o['location']}"
                        for o in cands.get("objects", []))
    robot = info.get("robot", {})
    return (f"people: {people or 'none in view'}\nobjects: {objects or 'none in view'}\n"
            f"you are in room {robot.get('room')}, holding {robot.get('holding') or 'nothing'}")


def complete_line(words: list[str], text: str) -> list[str]:
    """Tab completions of ``text`` (the line since the last ``;``): the words that continue
    its last token — at the start of the line or after a verb or an object (``[walk] <fr``
    -> ``[walk] <fridge> (12)``), each returned as the whole completed text."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == " "]
    for start in starts:  # the longest tail first: "<fridge> (1" keeps its space
        head, tail = text[:start], text[start:]
        matches = [head + w for w in words if w.startswith(tail)]
        if matches:
            return matches
    return []


class HumanAgent:
    """Reads the robot's program from a person.

    ``input_fn`` and ``output_fn`` default to :func:`input` and :func:`print`; tests and
    other front ends pass their own.
    """

    name = "human"

    def __init__(self, input_fn: Callable[[str], str] | None = None,
                 output_fn: Callable[[str], None] | None = None) -> None:
        self._input = input_fn or input
        self._output = output_fn or print
        self.usage = Usage()
        self._quit = False
        self._words: list[str] = []
        self._readline_ready = False

    def reset(self, *, seed: int | None = None) -> None:
        self.usage = Usage()
        self._quit = False

    def _setup_readline(self) -> None:
        if self._readline_ready or self._input is not input:
            return
        self._readline_ready = True
        try:
            import readline
        except ImportError:  # no readline (e.g. Windows): plain input still works
            return

        def complete(text: str, state: int) -> str | None:
            matches = complete_line(self._words, text)
            return matches[state] if state < len(matches) else None

        readline.set_completer_delims(";")
        readline.set_completer(complete)
        readline.parse_and_bind("tab: complete")

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        self.usage.decisions += 1
        self._output(f"--- tick {info.get('tick')} ---\n{observation.get('narration', '')}")
        if info.get("action_error"):
            self._output(f"(your last program: {info['action_error']})")
        if self._quit:
            return "none"
        self._words = candidate_words(info)
        self._setup_readline()
        t0 = time.perf_counter()
        try:
            while True:
                try:
                    line = self._input("robot> ").strip()
                except EOFError:
                    self._quit = True
                    return "none"
                if line in ("?", "look"):
                    self._output(_describe(info))
                    continue
                if line == "help":
                    self._output(GRAMMAR)
                    continue
                if line == "quit":
                    self._quit = True
                    return "none"
                if not line or is_silence(line):
                    return "none"
                _lines, errors = parse_program(line)
                if errors:
                    bad, why = errors[0]
                    self._output(f"not understood: {bad!r}: {why}. Type help for the grammar.")
                    self.usage.parse_failures += 1
                    continue
                return line
        except (ScriptParseError, KeyboardInterrupt):
            self._quit = True
            return "none"
        finally:
            self.usage.seconds += time.perf_counter() - t0
