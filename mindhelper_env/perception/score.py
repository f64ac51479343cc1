"""Per-verb precision and recall of perceived events against the text track's events.

Two event lists of the package's schema (``render/text.py``'s ``event_dict``) are compared as
multisets of keys ``(tick, actor, verb, arg ids, room, contents ids)``: an event counts as
recalled only when every one of these fields matches (``actor_name`` and the arg classes
follow from the ids and ``info["candidates"]``, so they are not compared).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["event_key", "VerbScore", "EventScore"]

EventKey = tuple[int, int, str, tuple[int, ...], Any, tuple[int, ...] | None]


def _ids(items: Any) -> tuple[int, ...]:
    return tuple(int(a["id"]) for a in items or () if isinstance(a, Mapping) and "id" in a)


def event_key(ev: Mapping[str, Any]) -> EventKey:
    """The fields an event is compared by: ``(tick, actor, verb, arg ids, room, contents)``
    (``contents``, sorted, is ``None`` for every verb but ``open``)."""
    contents = tuple(sorted(_ids(ev.get("contents")))) if ev.get("verb") == "open" else None
    return (int(ev["tick"]), int(ev["actor"]), str(ev["verb"]), _ids(ev.get("args")),
            ev.get("room"), contents)


@dataclass
class VerbScore:
    """Matched (``tp``), perceived but not in the text (``fp``), missed (``fn``) events."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


@dataclass
class EventScore:
    """Per-verb counts accumulated over windows (:meth:`add`), with a few examples of
    each kind of mismatch for debugging (``missed``, ``spurious``)."""

    verbs: dict[str, VerbScore] = field(default_factory=dict)
    missed: list[EventKey] = field(default_factory=list)
    spurious: list[EventKey] = field(default_factory=list)
    keep_examples: int = 20

    def add(self, text_events: Iterable[Mapping[str, Any]],
            perceived: Iterable[Mapping[str, Any]]) -> None:
        want = Counter(event_key(e) for e in text_events)
        got = Counter(event_key(e) for e in perceived)
        for key in want.keys() | got.keys():
            s = self.verbs.setdefault(key[2], VerbScore())
            hit = min(want[key], got[key])
            s.tp += hit
            s.fn += want[key] - hit
            s.fp += got[key] - hit
            if want[key] > hit and len(self.missed) < self.keep_examples:
                self.missed.append(key)
            if got[key] > hit and len(self.spurious) < self.keep_examples:
                self.spurious.append(key)

    def merge(self, other: EventScore) -> None:
        for verb, s in other.verbs.items():
            mine = self.verbs.setdefault(verb, VerbScore())
            mine.tp += s.tp
            mine.fp += s.fp
            mine.fn += s.fn
        self.missed.extend(other.missed[: max(0, self.keep_examples - len(self.missed))])
        self.spurious.extend(other.spurious[: max(0, self.keep_examples - len(self.spurious))])

    @property
    def total(self) -> VerbScore:
        out = VerbScore()
        for s in self.verbs.values():
            out.tp += s.tp
            out.fp += s.fp
            out.fn += s.fn
        return out

    def table(self) -> dict[str, dict[str, float | int]]:
        """``{verb: {"events", "precision", "recall", "tp", "fp", "fn"}}``, by verb name."""
        return {v: {"events": s.tp + s.fn, "precision": s.precision, "recall": s.recall,
                    "tp": s.tp, "fp": s.fp, "fn": s.fn}
                for v, s in sorted(self.verbs.items())}
