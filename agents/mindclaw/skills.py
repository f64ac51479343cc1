"""MindClaw skills: cue signatures whose right Trigger operation is (almost) always the same.

A **skill** maps a cue signature (the coarse features of
:meth:`~mindhelper_env.agents.mindclaw.memory.MindMemory.cue_signature`) to a Trigger
operation — ``noop`` (nothing to reason about) or ``action_run`` (act without asking) —
with a confidence and a support count. Skills whose confidence reaches the book's
threshold act as deterministic matchers in the Trigger; every other cue goes to the
policy (which asks for ``reasoning_run``).

**Mining** (:func:`mine_skills`) works offline on rollouts of training episodes
(:func:`mindhelper_env.cli.mine_skills.collect_rollouts`): MindClaw plays each episode with skills switched off, so every
cue is reasoned about, and records per cue its signature and what the reasoning decided
(``action_run`` when it found the person blocked, else ``noop``), together with whether the
rollout was *successful* (a help episode helped precisely, a silent one left alone). For
each signature and operation, confidence is the number of times the operation was taken in
successful rollouts divided by all occurrences of the signature (in successful and failed
rollouts); a skill is kept when its support is at least ``min_support`` and its confidence
at least ``min_confidence``. The shipped ``skills.json`` was mined this way from training
seeds (see its ``source``); ``mindhelper mine-skills`` re-mines it (the rollouts and the command
live in :mod:`mindhelper_env.cli.mine_skills`, above the evaluation layer whose training
episodes they use; all generalisations of a signature that keep the cue kind are candidates;
see :func:`mine_skills`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["Skill", "SkillBook", "CueOutcome", "mine_skills", "default_skills", "SKILLS_FILE",
           "SIGNATURE_KEYS", "default_skills_path"]

logger = logging.getLogger(__name__)

#: The file shipped next to this module.
SKILLS_FILE = "skills.json"
#: The signature keys a skill can condition on.
SIGNATURE_KEYS = ("kind", "noticed", "believed_here", "expected_missing", "astray_class",
                  "usual_place", "small", "hands_full")
_SKILL_OPS = ("noop", "action_run")
_FORMAT = "mindclaw-skills-1"


@dataclass(frozen=True)
class Skill:
    """``when`` (signature key -> value, all must match) -> ``op``."""

    name: str
    when: dict[str, Any]
    op: str
    confidence: float
    support: int

    def matches(self, signature: Mapping[str, Any]) -> bool:
        return all(signature.get(k) == v for k, v in self.when.items())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Skill:
        when = d.get("when")
        if not isinstance(when, Mapping) or any(k not in SIGNATURE_KEYS for k in when):
            raise ValueError(f"skill {d.get('name')!r}: 'when' must map signature keys "
                             f"{SIGNATURE_KEYS} to values")
        op = d.get("op")
        if op not in _SKILL_OPS:
            raise ValueError(f"skill {d.get('name')!r}: op must be one of {_SKILL_OPS}, got {op!r}")
        return cls(str(d["name"]), dict(when), str(op), float(d["confidence"]),
                   int(d["support"]))


@dataclass
class SkillBook:
    """A list of skills, the confidence threshold for deterministic use, and provenance."""

    skills: list[Skill] = field(default_factory=list)
    threshold: float = 0.97
    source: dict[str, Any] = field(default_factory=dict)

    def match(self, signature: Mapping[str, Any]) -> Skill | None:
        """The most specific, then most confident, skill matching ``signature``, if any
        reaches the threshold."""
        best: Skill | None = None
        for s in self.skills:
            if s.confidence < self.threshold or not s.matches(signature):
                continue
            if best is None or (len(s.when), s.confidence) > (len(best.when), best.confidence):
                best = s
        return best

    def confidence(self, signature: Mapping[str, Any]) -> float:
        """Confidence of the best matching skill at any threshold (0.0 when none)."""
        found = [s.confidence for s in self.skills if s.matches(signature)]
        return max(found, default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {"format": _FORMAT, "threshold": self.threshold, "source": self.source,
                "skills": [s.to_dict() for s in self.skills]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SkillBook:
        if not isinstance(d, Mapping) or d.get("format") != _FORMAT:
            raise ValueError(f"not a MindClaw skills file (expected format {_FORMAT!r})")
        skills = d.get("skills")
        if not isinstance(skills, list):
            raise ValueError("skills file: 'skills' must be a list")
        return cls([Skill.from_dict(s) for s in skills], float(d.get("threshold", 0.97)),
                   dict(d.get("source") or {}))

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n",
                              encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SkillBook:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except ValueError as err:
            raise ValueError(f"{path}: invalid JSON ({err})") from None
        return cls.from_dict(data)


def default_skills() -> SkillBook:
    """The skill book shipped with the package (a read-only input: ``mindhelper
    mine-skills`` writes under ``--out``; give MindClaw another book with ``skills=PATH``)."""
    text = resources.files(__package__).joinpath(SKILLS_FILE).read_text(encoding="utf-8")
    return SkillBook.from_dict(json.loads(text))


def default_skills_path() -> Path:
    """Where the shipped skill book lies (for its digest in run provenance)."""
    return Path(__file__).with_name(SKILLS_FILE)


@dataclass(frozen=True)
class CueOutcome:
    """One reasoned cue of a rollout: its signature, the operation taken, rollout success."""

    signature: dict[str, Any]
    op: str
    success: bool


def _patterns(signature: Mapping[str, Any]) -> list[tuple[tuple[str, Any], ...]]:
    """Every generalisation of a signature that keeps ``kind`` (2**5 patterns)."""
    rest = [k for k in SIGNATURE_KEYS if k != "kind"]
    out = []
    for mask in range(1 << len(rest)):
        keys = ["kind"] + [k for i, k in enumerate(rest) if mask >> i & 1]
        out.append(tuple((k, signature.get(k)) for k in SIGNATURE_KEYS if k in keys))
    return out


def mine_skills(outcomes: Iterable[CueOutcome], *, min_support: int = 20,
                min_confidence: float = 0.97, source: Mapping[str, Any] | None = None
                ) -> SkillBook:
    """Skills from rollout outcomes (see the module docstring).

    Every generalisation of each signature that keeps ``kind`` is a candidate pattern; a
    pattern becomes a skill for an operation when it reaches ``min_support`` and
    ``min_confidence``, unless a more general pattern already is a skill for the same
    operation.
    """
    table: dict[tuple[tuple[str, Any], ...], dict[str, int]] = {}
    for o in outcomes:
        for pat in _patterns(o.signature):
            row = table.setdefault(pat, {"total": 0})
            row["total"] += 1
            if o.success:
                row[o.op] = row.get(o.op, 0) + 1
    found: list[Skill] = []
    for pat, row in sorted(table.items(), key=lambda kv: (len(kv[0]), repr(kv[0]))):
        total = row["total"]
        for op in _SKILL_OPS:
            conf = row.get(op, 0) / total
            if total < min_support or conf < min_confidence:
                continue
            when = dict(pat)
            if any(s.op == op and set(s.when.items()) < set(when.items()) for s in found):
                continue  # a more general skill says the same
            name = op + ":" + ",".join(f"{k}={v}" for k, v in pat)
            found.append(Skill(name, when, op, round(conf, 4), total))
    return SkillBook(found, min_confidence, dict(source or {}))
