"""The release ledger of the suites: a released suite name means one content digest forever.

The ledger ships with the package (``scenarios/suites/releases.json``). It holds one entry per
suite name ever released: the name, the generator version that built it, its episode count,
seed base and house, the release date, the sha256 of its exported ``public.jsonl`` and
``reference.jsonl``, from ``mh-gen-3.1`` on the sha256 of its full episode specifications
(``spec_sha256``: people, schedules, calls, chores, doors, the switch and the reference;
see :func:`~mindhelper_env.scenarios.suites.spec_digest`), its ``status`` (``current`` or ``withdrawn``), the names that replace
it (``replaced_by``) and a one-line note. Entries are appended and never edited, except to
withdraw one (``status``, ``replaced_by`` and ``note`` change; the test suite holds a frozen
copy of the entries and fails on any other edit or a removal). ``spec_sha256`` is optional: an
entry released before the field existed (v2, v3) has none; the v4 entries had it recorded
once, computed from their own generator, and it is frozen from then on.

**The rule.** A code change that alters a released suite's episodes comes with a new
:data:`~mindhelper_env.scenarios.spec.GENERATOR_VERSION`; the suites it would change must be
released under new names (``vh-dev-v5`` ...). Until that is done, asking for a current suite
whose ledger generator differs from the running one raises :class:`SuiteVersionError`, which
says what to do. A withdrawn name is refused everywhere (``evaluate``, ``env.reset(options=
{"suite": ...})``, ``suite export``, ``score``, ``report``, ``render``, ``play`` and the
Python API) with one line naming its replacement (:class:`SuiteWithdrawnError`).

Releasing (maintainers): add the new names to :data:`~mindhelper_env.scenarios.suites.SUITES`,
then :func:`~mindhelper_env.scenarios.suites.pin_digests` (``pin_digests(["vh-dev-v5"],
note="...")``) exports each suite and appends its entry; :func:`withdraw` (``withdraw(
"vh-dev-v2", ["vh-dev-v5"], "on DATE, because ...")``) withdraws an old one.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mindhelper_env.scenarios import spec as _spec

__all__ = ["LEDGER_FILE", "LEDGER_FORMAT", "STATUSES", "Release", "SuiteVersionError",
           "SuiteWithdrawnError", "ledger", "release_of", "releases", "withdrawal_message",
           "suite_line", "newest_of_line", "generation_status", "newest_replacements",
           "check_generator", "running_generator", "running_generators", "append_release",
           "withdraw", "record_spec_digest"]

#: Where the ledger ships.
LEDGER_FILE = Path(__file__).with_name("suites") / "releases.json"
#: Value of the ledger's ``format`` field.
LEDGER_FORMAT = "mindhelper-suite-releases-1"
STATUSES = ("current", "withdrawn")
_FIELDS = ("name", "generator", "episodes", "seed_base", "house", "released", "public_sha256",
           "reference_sha256", "status", "replaced_by", "note")
#: Fields an entry may leave out (written only when set).
_OPTIONAL = ("spec_sha256",)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_RULE = ("A released name maps to one content digest forever; entries are appended, never "
         "edited except to withdraw (status, replaced_by, note).")


class SuiteVersionError(ValueError):
    """The running generator cannot rebuild a released suite (its episodes would differ)."""


class SuiteWithdrawnError(ValueError):
    """A withdrawn suite was asked for; the message names its replacement."""


@dataclass(frozen=True)
class Release:
    """One entry of the ledger (see the module docstring)."""

    name: str
    generator: str
    episodes: int
    seed_base: int
    house: str | None
    released: str
    public_sha256: str | None
    reference_sha256: str | None
    status: str
    replaced_by: tuple[str, ...]
    note: str
    #: sha256 of the suite's full episode specs (``None`` for entries released without it).
    spec_sha256: str | None = None

    @property
    def current(self) -> bool:
        return self.status == "current"

    def digests(self) -> dict[str, str]:
        """``{"public.jsonl": sha256, "reference.jsonl": sha256}`` (empty when unrecorded)."""
        out: dict[str, str] = {}
        if self.public_sha256:
            out["public.jsonl"] = self.public_sha256
        if self.reference_sha256:
            out["reference.jsonl"] = self.reference_sha256
        return out

    def to_dict(self) -> dict[str, Any]:
        out = {f: (list(self.replaced_by) if f == "replaced_by" else getattr(self, f))
               for f in _FIELDS}
        out.update({f: getattr(self, f) for f in _OPTIONAL if getattr(self, f) is not None})
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "entry") -> Release:
        missing = [f for f in _FIELDS if f not in d]
        extra = sorted(set(d) - set(_FIELDS) - set(_OPTIONAL))
        if missing or extra:
            raise ValueError(f"{where}: " + (f"missing {', '.join(missing)}" if missing
                                             else f"unknown field {extra[0]!r}"))
        if d["status"] not in STATUSES:
            raise ValueError(f"{where}: status {d['status']!r} is not one of {STATUSES}")
        repl = d["replaced_by"]
        if not isinstance(repl, list) or not all(isinstance(r, str) for r in repl):
            raise ValueError(f"{where}: replaced_by must be a list of names")
        if d["status"] == "withdrawn" and not repl:
            raise ValueError(f"{where}: a withdrawn suite names its replacement (replaced_by)")
        if d["status"] == "current" and not (d["public_sha256"] and d["reference_sha256"]):
            raise ValueError(f"{where}: a current suite records both digests")
        spec_sha = d.get("spec_sha256")
        if spec_sha is not None and not (isinstance(spec_sha, str) and _SHA256.match(spec_sha)):
            raise ValueError(f"{where}: spec_sha256 must be 64 lowercase hex digits")
        return cls(str(d["name"]), str(d["generator"]), int(d["episodes"]), int(d["seed_base"]),
                   d["house"], str(d["released"]), d["public_sha256"], d["reference_sha256"],
                   str(d["status"]), tuple(repl), str(d["note"]), spec_sha)


def _parse(data: Mapping[str, Any], where: str) -> dict[str, Release]:
    if not isinstance(data, Mapping) or data.get("format") != LEDGER_FORMAT:
        raise ValueError(f"{where}: not a suite release ledger (format {LEDGER_FORMAT!r})")
    out: dict[str, Release] = {}
    for k, entry in enumerate(data.get("releases") or []):
        rel = Release.from_dict(entry, f"{where}: releases[{k}]")
        if rel.name in out:
            raise ValueError(f"{where}: suite {rel.name!r} released twice")
        out[rel.name] = rel
    for rel in out.values():
        for new in rel.replaced_by:
            if new not in out:
                raise ValueError(f"{where}: {rel.name!r} is replaced by {new!r}, which was "
                                 "never released")
    return out


@cache
def _ledger_at(path: str, mtime_ns: int) -> dict[str, Release]:
    return _parse(json.loads(Path(path).read_text(encoding="utf-8")), path)


def ledger() -> dict[str, Release]:
    """Every released suite name -> its :class:`Release` (read from :data:`LEDGER_FILE`)."""
    path = LEDGER_FILE
    return dict(_ledger_at(str(path), path.stat().st_mtime_ns))


def releases() -> list[Release]:
    """The ledger's entries in release order."""
    return list(ledger().values())


def release_of(name: str) -> Release | None:
    """The ledger entry of ``name``, or ``None`` for a name never released."""
    return ledger().get(name) if isinstance(name, str) else None


def running_generator() -> str:
    """The default generator version of the installed code."""
    return str(_spec.GENERATOR_VERSION)


def running_generators() -> tuple[str, ...]:
    """Every generator version the installed code builds (``generator.GENERATORS`` where
    the code builds several, else the default one)."""
    from mindhelper_env.scenarios import generator as _generator

    several = getattr(_generator, "GENERATORS", None)
    return tuple(str(g) for g in several) if several else (running_generator(),)


def suite_line(name: str) -> str:
    """The line a suite name belongs to: the name without its ``-vN`` generation suffix
    (``vh-dev-v5`` -> ``vh-dev``); generations of a line are versions of one suite."""
    m = re.fullmatch(r"(.+)-v(\d+)", name)
    return m.group(1) if m else name


def _generation(name: str) -> int:
    m = re.fullmatch(r".+-v(\d+)", name)
    return int(m.group(1)) if m else -1


def newest_of_line(name: str) -> str | None:
    """The newest generation of ``name``'s line among the suites the ledger holds as
    current (not withdrawn), or ``None`` when the line has none."""
    line = suite_line(name)
    current = [r.name for r in releases() if r.current and suite_line(r.name) == line]
    return max(current, key=_generation) if current else None


def generation_status(name: str) -> str:
    """``"current"`` (the newest generation of its line), ``"frozen"`` (an older generation
    that is not withdrawn: it still plays, unchanged, to reproduce its results),
    ``"withdrawn"`` or ``"unreleased"``."""
    rel = release_of(name)
    if rel is None:
        return "unreleased"
    if not rel.current:
        return "withdrawn"
    return "current" if newest_of_line(name) == name else "frozen"


def newest_replacements(name: str) -> list[str]:
    """What to use instead of a withdrawn suite today: its ledger replacements, followed
    through later withdrawals, each advanced to the newest generation of its line."""
    out: list[str] = []
    seen: set[str] = set()
    rel = release_of(name)
    todo = list(rel.replaced_by) if rel is not None else []
    while todo:
        new = todo.pop(0)
        if new in seen:
            continue
        seen.add(new)
        rel = release_of(new)
        if rel is not None and not rel.current:
            todo.extend(rel.replaced_by)
            continue
        newest = newest_of_line(new) or new
        if newest not in out:
            out.append(newest)
    return out


def withdrawal_message(name: str) -> str | None:
    """The one-line refusal of a withdrawn suite (``None`` if ``name`` is not withdrawn): it
    names the newest generation of the suites that replaced it (and, when that is not the
    replacement the ledger recorded, that one too)."""
    rel = release_of(name)
    if rel is None or rel.current:
        return None
    note = rel.note.rstrip(".")
    newest = newest_replacements(name) or list(rel.replaced_by)
    then = [f"{r}, {generation_status(r)}" for r in rel.replaced_by if r not in newest]
    return (f"suite {name!r} was withdrawn ({note}); use {' or '.join(newest)}"
            + (f" (the newest generation; replaced at the time by {'; '.join(then)})"
               if then else ""))


def check_generator(name: str, generator: str | None = None) -> None:
    """Raise :class:`SuiteVersionError` when ``name`` was released with a generator the
    installed code no longer builds (``generator``, default: :func:`running_generators`);
    unreleased names pass."""
    rel = release_of(name)
    supported = (generator,) if generator else running_generators()
    if rel is None or rel.generator in supported:
        return
    running = " / ".join(supported)
    raise SuiteVersionError(
        f"suite {name!r} was released with generator {rel.generator} and the installed "
        f"generator is {running}, whose episodes differ: a released name keeps its episodes "
        f"forever, so release new suite names for {running} (add them to SUITES, then "
        "suites.pin_digests([NEW])) and withdraw "
        f"{name!r} pointing to them (releases.withdraw({name!r}, [NEW], NOTE)); to reproduce "
        f"results on {name!r}, install the mindhelper-env release built on {rel.generator}")


# ---------------------------------------------------------------------------- maintainers
def _write(path: Path, data: Mapping[str, Any]) -> None:
    _parse(data, str(path))  # never write a ledger that does not load
    text = json.dumps(data, indent=1) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load_raw(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"format": LEDGER_FORMAT, "rule": _RULE, "releases": []}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def append_release(entry: Release, path: Path | None = None) -> None:
    """Append ``entry`` to the ledger; ``ValueError`` if its name was ever released."""
    path = path or LEDGER_FILE
    data = _load_raw(path)
    if any(e.get("name") == entry.name for e in data["releases"]):
        raise ValueError(f"suite {entry.name!r} is already released; a released name is "
                         "never re-released (choose a new name)")
    data["releases"].append(entry.to_dict())
    _write(path, data)


def record_spec_digest(name: str, digest: str, path: Path | None = None) -> None:
    """Record ``spec_sha256`` on an entry released without one (once: a recorded spec digest
    is never edited; ``ValueError`` if it is set or ``name`` was never released). For the
    suites released before the field existed, computed from their own generator."""
    path = path or LEDGER_FILE
    data = _load_raw(path)
    for e in data["releases"]:
        if e.get("name") == name:
            if e.get("spec_sha256") is not None:
                raise ValueError(f"suite {name!r} already records its spec digest")
            e["spec_sha256"] = digest
            _write(path, data)
            return
    raise ValueError(f"suite {name!r} was never released")


def withdraw(name: str, replaced_by: Sequence[str], note: str,
             path: Path | None = None) -> None:
    """Withdraw ``name`` in favour of ``replaced_by`` (the only edit the ledger allows)."""
    path = path or LEDGER_FILE
    data = _load_raw(path)
    for e in data["releases"]:
        if e.get("name") == name:
            e.update(status="withdrawn", replaced_by=list(replaced_by), note=note)
            _write(path, data)
            return
    raise ValueError(f"suite {name!r} was never released")
