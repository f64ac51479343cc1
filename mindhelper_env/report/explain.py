"""What the episode page says in words: why a silent episode needed no help, counts with
their noun, and the narration table with its long quiet stretches folded.

Pure functions of the reference, the replay and the record (the report is post-hoc: the
ground truth is allowed here)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["why_no_help", "plural", "fold_quiet_windows", "WHY_NO_HELP", "MIN_FOLD"]

#: Why nobody needed the robot, per silent family ({person}: the focus person; {thing}: the
#: task object, or the container for the ``blocked`` twins). docs/scenarios.md tells the
#: same stories.
WHY_NO_HELP: dict[str, str] = {
    "false_belief_irrelevant": "{thing} was moved while {person} was away, but {person} "
                               "never needed it again: the out-of-date belief blocked nothing.",
    "false_belief_witnessed": "{person} saw the move: {person} watched {thing} being moved and "
                              "took it from its new place.",
    "false_belief_self_corrected": "{thing} was moved while {person} was away, but {person} "
                                   "saw it at its new place before needing it: the false "
                                   "belief corrected itself.",
    "false_belief_spare": "{thing} was gone from where {person} left it, but {person} had seen "
                          "another one lying in the room and took that.",
    "watched_move_seen": "{person} saw {thing} move (or saw it at its new place on coming "
                         "back), so {person} knew where it was.",
    "false_belief_told": "{person} heard where {thing} had been moved to and went there.",
    "emptied_witnessed": "{person} watched {thing} being emptied and took one from the other "
                         "place.",
    "emptied_spare": "{thing} was emptied while {person} was away, but {person} had seen "
                     "another one in the room and took it.",
    "search_self_found": "{person} looked for {thing} and found one at the next usual place "
                         "without help.",
    "search_seen_astray": "{person} had seen {thing} lying where nobody keeps it, so after the "
                          "empty look at the usual place {person} fetched it.",
    "reach_helped": "{person} could not reach {thing}, but an adult standing at the shelf "
                    "noticed and handed it over: help was already on its way.",
    "reach_noticed": "{person} could not reach {thing}, but an adult across the room noticed "
                     "and came over to hand it over: help was already on its way.",
    "blocked_helped": "{person} could not open {thing} with full hands, but an attentive adult "
                      "standing there noticed and opened it: help was already on its way.",
    "blocked_noticed": "{person} could not open {thing} with full hands, but an attentive adult "
                       "across the room noticed and came to open it: help was already on its "
                       "way.",
    "routine": "Ordinary routine: {person} knew where everything was and nobody was blocked.",
}

#: The shortest run of quiet windows that is folded into one row.
MIN_FOLD = 3

_LEADING_ID = re.compile(r"^[a-z][a-z_]* \(\d+\)$")


def _with_article(name: str | None) -> str:
    if not name:
        return "the object"
    return f"the {name}" if _LEADING_ID.match(name) else name


def why_no_help(ref: Mapping[str, Any], target_name: str | None = None) -> str | None:
    """One sentence for a silent episode's page: why the robot should have stayed out of it
    (None for an episode that needs help). ``target_name``: the task object as the replay
    names it (``milk (100)``)."""
    if ref.get("needs_intervention"):
        return None
    family = str(ref.get("family") or "")
    person = str(ref.get("focus_name") or "the person")
    template = WHY_NO_HELP.get(family)
    if template is None:
        return f"Nobody was blocked in this episode ({family or 'unknown family'})."
    text = template.format(person=person, thing=_with_article(target_name))
    return text[0].upper() + text[1:]


def plural(n: Any, noun: str, many: str | None = None) -> str:
    """``1 agent``, ``2 agents``, ``0 episodes``."""
    count = int(n)
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


def _quiet(w: Mapping[str, Any], window: Mapping[str, Any] | None) -> bool:
    """Nothing seen, no program, nothing executed, not scored, outside the help window."""
    if w.get("window", -1) < 0 or w.get("program") or w.get("executed") or w.get("scored"):
        return False
    if any(line.startswith("[t=") for line in str(w.get("narration") or "").splitlines()):
        return False
    if w.get("changed"):  # the vision track: the frames show something happen
        return False
    if window:
        onset, deadline = int(window["onset_tick"]), int(window["deadline_tick"])
        if int(w["end"]) > onset and int(w["tick"]) <= deadline:
            return False
    return True


def fold_quiet_windows(windows: Sequence[Mapping[str, Any]],
                       window: Mapping[str, Any] | None,
                       min_run: int = MIN_FOLD) -> list[dict[str, Any]]:
    """The narration table's rows: each run of at least ``min_run`` quiet windows becomes one
    row ``{"fold": True, "count", "first", "last", "tick", "end", "narrations"}`` (the
    distinct narrations, in order); every other window stays as it is (``"fold": False``)."""
    rows: list[dict[str, Any]] = []
    run: list[Mapping[str, Any]] = []

    def flush() -> None:
        if len(run) >= min_run:
            texts: list[str] = []
            for w in run:
                text = str(w.get("narration") or "")
                if text not in texts:
                    texts.append(text)
            rows.append({"fold": True, "count": len(run), "first": run[0]["window"],
                         "last": run[-1]["window"], "tick": run[0]["tick"],
                         "end": run[-1]["end"], "narrations": texts})
        else:
            rows.extend({**w, "fold": False} for w in run)
        run.clear()

    for w in windows:
        if _quiet(w, window):
            run.append(w)
            continue
        flush()
        rows.append({**w, "fold": False})
    flush()
    return rows
