"""A person plays the robot at the terminal (``mindhelper play``).

:class:`HumanAgent` is an ordinary agent: each window it shows the narration (and, on
request, what the robot can see) and reads one line — a program (script lines separated by
``;``) or nothing for ``none``. Its episodes are recorded and scored like any other agent's.

A line naming an id that nothing in the episode has shown (not in view, never narrated) is
refused at the prompt and asked again: a typo never becomes the scored intervention.

At an interactive terminal with :mod:`readline`, Tab completes verbs, ``<class> (id)``
arguments of the people, objects and places in view, and the commands ``?`` (show what is in
view, places by name), ``help`` (the action grammar) and ``quit`` (stay silent for the rest
of the episode).
"""

from __future__ import annotations

import re
import textwrap
import time
from collections.abc import Callable
from typing import Any

from mindhelper_env.agents.base import Usage
from mindhelper_env.world.script import VERB_ARITY, ScriptParseError, is_silence, parse_program

__all__ = ["HumanAgent", "GRAMMAR", "INTRO", "candidate_words", "complete_line",
           "describe_view", "unknown_ids"]

INTRO = """You are the robot helper in this home. Each turn you read what happened in the last
few ticks and answer with a program, or with nothing to stay silent and let time pass.
The task: intervene only when someone is blocked - they look for something where it no
longer is (a false belief), or cannot reach or open what they need - and nobody else will
help in time. Help counts only within that person's window: before it is a false alarm,
after it is too late. Your first intervention (any line other than walking) is the one that
is scored; later ones do not change it. When nobody is blocked, staying silent is right."""

GRAMMAR = """Answer with nothing (stay silent) or script lines separated by ';', e.g.
  [walk] <fridge> (12); [open] <fridge> (12); [grab] <apple> (31)
  [walk] <character> (5); [give] <apple> (31) <character> (5)
  [tell] <character> (5) <apple> (31) <fridge> (12)
""" + textwrap.fill("Verbs: " + ", ".join(sorted(VERB_ARITY)) + ". Walking is free; any "
                   "other line is an intervention. Commands: ? (what you can see, places by "
                   "name), help, quit (silent to the end; recorded), Ctrl-C (stop; not "
                   "recorded).", width=88)


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


_NARRATED = re.compile(r"(?:\bthe ([a-z][a-z_]*) |\b([a-z][a-z_]*) )?\((\d+)\)")


def _node_names(info: dict[str, Any], known: dict[int, str] | None = None) -> dict[int, str]:
    """``id -> "the fridge (12)"`` / ``"the kitchen (4)"`` / ``"Emma (5)"`` for everything
    the candidates list (``known`` adds names met earlier)."""
    names = dict(known or {})
    cands = info.get("candidates", {}) if isinstance(info, dict) else {}
    for key in ("rooms", "locations", "objects"):
        for o in cands.get(key, []) or []:
            names[int(o["id"])] = f"the {o['class']} ({o['id']})"
    for a in cands.get("actors", []) or []:
        names[int(a["id"])] = f"{a['name']} ({a['id']})"
    return names


def describe_view(info: dict[str, Any], known: dict[int, str] | None = None) -> str:
    """What ``?`` prints: people, objects and places in view, every place by name and id."""
    cands = info.get("candidates", {}) if isinstance(info, dict) else {}
    names = _node_names(info, known)

    def name(nid: Any) -> str:
        if nid is None:
            return "?"
        return names.get(int(nid), f"({nid})")

    def held(ids: Any) -> str:
        return " and ".join(name(h) for h in ids) if ids else ""

    people = [f"{a['name']} ({a['id']}, {a['kind']}) in {name(a.get('room'))}"
              + (f", holding {held(a['holding'])}" if a.get("holding") else "")
              for a in cands.get("actors", []) or []]
    boxes = {loc["id"] for loc in cands.get("locations", []) or []
             if loc.get("open") is not None}  # containers: things lie in them, not on them
    objects = [f"{name(o['id'])} {'in' if o.get('location') in boxes else 'on'} "
               f"{name(o.get('location'))} in {name(o.get('room'))}"
               for o in cands.get("objects", []) or []]
    by_room: dict[Any, list[str]] = {}
    for loc in cands.get("locations", []) or []:
        state = {True: ", open", False: ", closed"}.get(loc.get("open"), "")
        by_room.setdefault(loc.get("room"), []).append(f"{loc['class']} ({loc['id']}{state})")
    places = [f"{name(r)}: {', '.join(items)}" for r, items in by_room.items()]
    robot = info.get("robot", {}) if isinstance(info, dict) else {}
    return ("people: " + ("; ".join(people) or "none in view") + "\n"
            "objects: " + ("; ".join(objects) or "none in view") + "\n"
            "places: " + ("\n  ".join([""] + places) if places else "none in view") + "\n"
            f"you (the robot, {robot.get('id', 1)}) are in {name(robot.get('room'))}, "
            f"holding {held(robot.get('holding')) or 'nothing'}")


def unknown_ids(lines: list[Any], known: set[int]) -> list[int]:
    """The ids of parsed script ``lines`` that are not in ``known``, in order, once each."""
    out: list[int] = []
    for ln in lines:
        for _cls, nid in ln.args:
            if nid not in known and nid not in out:
                out.append(nid)
    return out


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
        self._known: set[int] = set()  # ids the episode has shown so far
        self._names: dict[int, str] = {}

    def reset(self, *, seed: int | None = None) -> None:
        self.usage = Usage()
        self._quit = False
        self._known = set()
        self._names = {}

    def _learn(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Remember every id shown: the candidates, the robot and the narration's ids."""
        self._names = _node_names(info, self._names)
        self._known.update(self._names)
        robot = info.get("robot") if isinstance(info, dict) else None
        if isinstance(robot, dict) and isinstance(robot.get("id"), int):
            self._known.add(robot["id"])
        text = observation.get("narration", "") if isinstance(observation, dict) else ""
        for m in _NARRATED.finditer(str(text)):
            nid = int(m.group(3))
            self._known.add(nid)
            if m.group(1) and nid not in self._names:
                self._names[nid] = f"the {m.group(1)} ({nid})"

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
        self._learn(observation, info)
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
                    self._output(describe_view(info, self._names))
                    continue
                if line == "help":
                    self._output(GRAMMAR)
                    continue
                if line == "quit":
                    self._quit = True
                    return "none"
                if not line or is_silence(line):
                    return "none"
                lines, errors = parse_program(line)
                if errors:
                    bad, why = errors[0]
                    self._output(f"not understood: {bad!r}: {why}. Type help for the grammar.")
                    self.usage.parse_failures += 1
                    continue
                unknown = unknown_ids(lines, self._known) if self._known else []
                if unknown:
                    ids = ", ".join(f"({i})" for i in unknown)
                    self._output(f"not sent: nothing with id {ids} has been seen in this "
                                 "episode. Type ? for the ids in view.")
                    self.usage.parse_failures += 1
                    continue
                return line
        except ScriptParseError:
            self._quit = True
            return "none"
        # KeyboardInterrupt (Ctrl-C) propagates: the player stopped, the episode is not played
        # to its end and so not recorded (mindhelper play)
        finally:
            self.usage.seconds += time.perf_counter() - t0
