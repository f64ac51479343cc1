"""Versioned, deterministic evaluation suites and their public / reference export (docs/data-format.md).

A *suite* is a fixed list of episodes rebuilt on demand from :data:`SUITES` (each suite's
size, seed base, generator and house; ``mindhelper list`` and docs/evaluation.md list them).

**Houses.** The ``vh-`` suites are set in procedurally generated houses; a suite whose table
entry names a ``house`` is set in those real houses
(:func:`~mindhelper_env.world.houses.resolve_houses`): ``tdw-*`` in TDW's twelve
floorplan/layout houses, ``vh-scene1-dev-v2`` in VirtualHome's TestScene1 apartment. Their
episode specs carry ``"house"``.

**Releases.** Every released name is frozen in the release ledger
(:mod:`~mindhelper_env.scenarios.releases`, ``scenarios/suites/releases.json``): one content
digest forever, the generator that built it and its release date. The v1 suites
(``mh-gen-1.0``) and v0 are **withdrawn** (:data:`WITHDRAWN`): v0's narration stated
conclusions and its construction revealed the family; in v1 a perspective-free agent (where
things are, but not who saw what) and a timing hedge passed. Asking for one raises a one-line
:class:`~mindhelper_env.scenarios.releases.SuiteWithdrawnError` naming the suite that
replaces it.

**Seeds.** Episode ``i`` of a suite is ``generate_episode(family_i, seed_base + i)``. Training
must draw its seeds from :data:`TRAINING_SEED_RANGE` (``0 ≤ seed < 10**6``); every suite seed
is ``≥`` :data:`SUITE_SEED_MIN` (``10**9``) and the suites' seed ranges are pairwise disjoint
(checked at import), so no training episode is a suite episode. Use :func:`is_training_seed`
to check a seed. Suite seeds are also ``>`` :data:`RANDOM_SEED_MAX` (``2**31 - 1``), so the
seeds the package draws for random episodes (``sample_episode`` and the envs draw from
``[0, 2**31 - 1)``) never rebuild a suite episode either.

**Families.** Half of every suite needs help. Indices are cut into pairs; each pair holds
one help and one silent episode, in an order fixed by a sha256 hash of
``(seed_base, pair)``. The help episodes are split evenly over the seven help families, the
silent ones by :data:`~mindhelper_env.scenarios.spec.SILENT_SHARES` (each help family's
twins as a group as often as the help family itself, ``routine`` a tenth), both by
:func:`apportion`; each list is shuffled by hash, so neither the index nor the episode id
reveals the family. ``vh-test-v2`` has 71–72 episodes of each help family; 64–65 of each
twin group (``watched_move_seen`` and ``false_belief_told`` 65 each, 32 of each of the two
twins of the emptied, search, reach and blocked families, 16 of each relocation twin) and
50 ``routine``. The assignment uses only :mod:`hashlib`, so it does not depend on the NumPy
version.

**Pinned digests.** The sha256 of each suite's exported ``public.jsonl`` and
``reference.jsonl`` ship with the package (the release ledger):
:func:`validate_suite_dir` compares a directory against them, so an installed user can check
that a suite rebuilt on their machine is the published one (and :func:`spec_digest`).

**Versions.** Each suite records the generator version it was released with. If
:data:`~mindhelper_env.scenarios.spec.GENERATOR_VERSION` changes, the suite can no longer be
rebuilt and :func:`suite_episode` raises :class:`SuiteVersionError` saying what to do:
release new suite names instead of silently changing the episodes of a released one.

**Export.** :func:`export_suite` writes ``public.jsonl`` (what an agent may know, see
:func:`public_record`), ``reference.jsonl`` (ground truth, see :func:`reference_record`) and
``manifest.json`` (counts, versions, sha256 of both files). Files are byte-for-byte
deterministic. :func:`validate_suite_dir` checks an exported directory and returns a list
of problems, each naming the file and line. Episode ids are ``f"{suite}-{index:04d}"``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import operator
import os
import re
import tempfile
from collections import Counter
from collections.abc import Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from mindhelper_env.scenarios import releases as _releases
from mindhelper_env.scenarios import shipped as _shipped
from mindhelper_env.scenarios.generator import GENERATORS, generate_episode
from mindhelper_env.scenarios.jsonl import (
    _iter_jsonl,
    _reject_constant,
    load_jsonl,
    no_duplicate_keys,
    validate_result_record,
)
from mindhelper_env.scenarios.releases import SuiteVersionError, SuiteWithdrawnError
from mindhelper_env.scenarios.spec import (
    FAMILIES,
    HELP_FAMILIES,
    Reference,
    silent_shares,
)
from mindhelper_env.scenarios.suite_table import SUITES
from mindhelper_env.schemas import schema_errors
from mindhelper_env.world.script import ScriptParseError, parse_line

__all__ = [
    "SUITES",
    "TRAINING_SEED_RANGE",
    "SUITE_SEED_MIN",
    "RANDOM_SEED_MAX",
    "EXPORT_FORMAT",
    "PUBLIC_FILE",
    "REFERENCE_FILE",
    "MANIFEST_FILE",
    "FORBIDDEN_PUBLIC_KEYS",
    "FORBIDDEN_PUBLIC_WORDS",
    "SuiteVersionError",
    "SuiteWithdrawnError",
    "WITHDRAWN",
    "require_suite",
    "pinned_digests",
    "pin_digests", "spec_digest",
    "apportion",
    "no_duplicate_keys",
    "perceived_graph",
    "is_training_seed",
    "suite_names",
    "suite_info",
    "suite_family",
    "suite_seed",
    "suite_episode_id",
    "suite_episode",
    "suite_specs",
    "suite_references",
    "public_record",
    "reference_record",
    "export_suite",
    "validate_suite_dir",
    "load_jsonl", "validate_result_record",
]

logger = logging.getLogger(__name__)

#: Seeds that training (RL, imitation, prompt tuning) may use. Disjoint from every suite.
TRAINING_SEED_RANGE = range(0, 10**6)

#: Every suite seed is at least this large.
SUITE_SEED_MIN = 10**9

#: Random episodes (``sample_episode``, the envs) draw seeds below this; suites stay above it.
RANDOM_SEED_MAX = 2**31 - 1


#: Suites that were released and then withdrawn (from the release ledger): name -> the
#: one-line refusal, which names what replaces them.
WITHDRAWN: dict[str, str] = {
    r.name: str(_releases.withdrawal_message(r.name)).split(" was ", 1)[1]
    for r in _releases.releases() if not r.current
}


#: Value of ``manifest.json``'s ``format`` field.
EXPORT_FORMAT = "mindhelper-suite-v1"
PUBLIC_FILE = "public.jsonl"
REFERENCE_FILE = "reference.jsonl"
MANIFEST_FILE = "manifest.json"

#: Top-level keys a public record must never have: every reference field but the id, and
#: the spec fields that give the episode away (the seed rebuilds the whole episode).
FORBIDDEN_PUBLIC_KEYS: frozenset[str] = frozenset(
    (set(Reference.__dataclass_fields__) - {"episode_id"})
    | {"seed", "actors", "events", "beliefs", "activities", "reference"}
)
#: Words no key of a public record may contain, at any depth.
FORBIDDEN_PUBLIC_WORDS: tuple[str, ...] = (
    "family", "needs_intervention", "window", "mental_state", "reference_actions",
)



def _check_suite_table() -> None:
    """Fail at import if a suite's seeds touch training seeds or another suite's seeds."""
    spans = []
    for name, s in SUITES.items():
        if s["name"] != name:
            raise RuntimeError(f"SUITES[{name!r}] has name {s['name']!r}")
        lo, hi = s["seed_base"], s["seed_base"] + s["n"]
        if lo < max(SUITE_SEED_MIN, RANDOM_SEED_MAX + 1, TRAINING_SEED_RANGE.stop):
            raise RuntimeError(f"suite {name!r} seeds start at {lo}, inside the seeds used "
                               "for training or random episodes")
        spans.append((lo, hi, name))
    spans.sort()
    for (_, hi, a), (lo, _, b) in zip(spans, spans[1:], strict=False):
        if lo < hi:
            raise RuntimeError(f"suites {a!r} and {b!r} share seeds")


_check_suite_table()


# ---------------------------------------------------------------------------------- lookup
def is_training_seed(seed: int) -> bool:
    """True if ``seed`` lies in :data:`TRAINING_SEED_RANGE` (never used by a suite)."""
    return int(seed) in TRAINING_SEED_RANGE


def suite_names() -> list[str]:
    """Names of the known suites."""
    return list(SUITES)


def _suite(name: str) -> dict[str, Any]:
    withdrawn = _releases.withdrawal_message(name)
    if withdrawn:
        raise SuiteWithdrawnError(withdrawn)
    if not isinstance(name, str) or name not in SUITES:
        import difflib

        close = difflib.get_close_matches(name, list(SUITES), n=1) if isinstance(name, str) \
            else []
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"unknown suite {name!r}; {hint}known suites: {', '.join(SUITES)}")
    return SUITES[name]


def require_suite(name: str) -> dict[str, Any]:
    """The table entry of a suite the installed generator can play: ``ValueError`` for an
    unknown name, :class:`SuiteWithdrawnError` (one line naming the replacement) for a
    withdrawn one, :class:`SuiteVersionError` (saying what to do) for a released suite the
    running generator would change."""
    s = _suite(name)
    _releases.check_generator(name)
    running = _releases.running_generators()
    if s["generator"] not in running:  # an unreleased suite of another generator
        raise SuiteVersionError(
            f"suite {name!r} is declared for generator {s['generator']} and the installed "
            f"generator is {' / '.join(running)}, whose episodes differ: release new suite "
            f"names instead of reusing {name!r}")
    return s


def _index(name: str, index: Any) -> int:
    s = _suite(name)
    if isinstance(index, bool):
        raise ValueError(f"suite {name!r}: episode index must be an int, got {index!r}")
    try:
        i = operator.index(index)
    except TypeError:
        raise ValueError(
            f"suite {name!r}: episode index must be an int, got {index!r}") from None
    if not 0 <= i < s["n"]:
        raise ValueError(
            f"suite {name!r}: episode index {i} out of range; valid range is 0..{s['n'] - 1}")
    return i


def _hash_key(*parts: object) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()


def apportion(n: int, shares: Mapping[str, float]) -> dict[str, int]:
    """Split ``n`` episodes by ``shares`` (largest remainders; ties by name)."""
    total = sum(shares.values())
    exact = {f: n * w / total for f, w in shares.items()}
    counts = {f: int(x) for f, x in exact.items()}
    left = n - sum(counts.values())
    for f in sorted(exact, key=lambda f: (-(exact[f] - counts[f]), f))[:left]:
        counts[f] += 1
    return counts


@cache
def _assignment(seed_base: int, n: int, generator: str | None = None) -> tuple[str, ...]:
    """The family of every index of a suite (see the module docstring); the silent side by
    the generator's shares (:func:`~mindhelper_env.scenarios.spec.silent_shares`)."""
    n_help = n // 2
    n_silent = n - n_help

    def shuffled(counts: dict[str, int], tag: str) -> list[str]:
        picked = [f for f in sorted(counts) for _ in range(counts[f])]
        keyed = sorted(range(len(picked)), key=lambda i: _hash_key(seed_base, tag, "slot", i))
        return [picked[i] for i in keyed]

    helps = shuffled(apportion(n_help, {f: 1.0 for f in HELP_FAMILIES}), "help")
    silents = shuffled(apportion(n_silent, silent_shares(generator)), "silent")
    out: list[str] = []
    for pair in range((n + 1) // 2):
        help_first = int(_hash_key(seed_base, "pair", pair)[:8], 16) % 2 == 0
        for side in ((helps, silents) if help_first else (silents, helps)):
            if side:
                out.append(side.pop())
    return tuple(out)


def suite_family(name: str, index: int) -> str:
    """The family of episode ``index`` of suite ``name`` (no generation needed)."""
    i = _index(name, index)
    s = SUITES[name]
    return _assignment(s["seed_base"], s["n"], s["generator"])[i]


def suite_seed(name: str, index: int) -> int:
    """The generator seed of episode ``index`` of suite ``name`` (``seed_base + index``)."""
    return SUITES[name]["seed_base"] + _index(name, index)


def suite_episode_id(name: str, index: int) -> str:
    """The id of episode ``index`` of suite ``name``, e.g. ``vh-dev-v3-0003``."""
    return f"{name}-{_index(name, index):04d}"


def suite_info(name: str) -> dict[str, Any]:
    """Description of a suite: its table entry plus seed range and family / help counts."""
    s = _suite(name)
    fams = Counter(suite_family(name, i) for i in range(s["n"]))
    help_n = sum(fams[f] for f in HELP_FAMILIES)
    return {
        **s,
        "seeds": [s["seed_base"], s["seed_base"] + s["n"] - 1],
        "families": {f: fams[f] for f in FAMILIES},
        "help_episodes": help_n,
        "silent_episodes": s["n"] - help_n,
        "generator_ok": s["generator"] in GENERATORS,
        **_release_info(name),
    }


def _release_info(name: str) -> dict[str, Any]:
    """``released`` (date) and ``status``: current, frozen (+ ``newest``) or unreleased."""
    rel = _releases.release_of(name)
    if rel is None:
        return {"released": None, "status": "unreleased"}
    status = _releases.generation_status(name)
    newest = {"newest": _releases.newest_of_line(name)} if status == "frozen" else {}
    return {"released": rel.released, "status": status, **newest}


def _dumps(obj: Any) -> str:
    """Canonical compact JSON (the byte format of every exported line)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


@lru_cache(maxsize=4096)
def _episode_json(name: str, index: int) -> str:
    s = require_suite(name)
    shipped = _shipped.episode_lines(name)  # released and shipped: read, not generated
    if shipped is not None:
        return shipped[index]
    family = suite_family(name, index)
    seed = s["seed_base"] + index
    try:
        spec = generate_episode(family, seed, episode_id=suite_episode_id(name, index),
                                house=s.get("house"), generator=s["generator"])
    except RuntimeError as err:
        raise RuntimeError(f"suite {name!r} episode {index}: {err}") from err
    return _dumps(spec)


def suite_episode(name: str, index: int) -> dict[str, Any]:
    """The episode spec of ``index`` in suite ``name`` (a fresh copy; generation is cached).

    Raises ``ValueError`` for an unknown suite or an index out of range, and
    :class:`SuiteVersionError` when the installed generator cannot rebuild the suite.
    """
    require_suite(name)  # outside the cache: a withdrawal or a new generator is seen at once
    return json.loads(_episode_json(name, _index(name, index)))


def suite_specs(name: str) -> list[dict[str, Any]]:
    """All episode specs of suite ``name``, in index order (fresh copies)."""
    return [suite_episode(name, i) for i in range(_suite(name)["n"])]


@lru_cache(maxsize=64)
def _references_json(name: str, shipped: bool) -> str:
    refs = {}
    lines = _shipped.reference_lines(name) if shipped else None  # the ledger's bytes
    for i in range(SUITES[name]["n"]):
        rec = json.loads(lines[i]) if lines else reference_record(
            json.loads(_episode_json(name, i)))
        refs[rec["episode_id"]] = rec
    return _dumps(refs)


def suite_references(name: str) -> dict[str, dict[str, Any]]:
    """``{episode_id: reference record}`` for suite ``name`` (what ``mindhelper score`` needs).

    Cached per process; every call returns a fresh copy.
    """
    require_suite(name)
    return json.loads(_references_json(name, _shipped.enabled()))


# ---------------------------------------------------------------------------------- records
_ID_RE = re.compile(r"^(?P<suite>.+)-(?P<index>[0-9]{4,})$")


def _parse_episode_id(eid: Any) -> tuple[str, int] | None:
    m = _ID_RE.match(eid) if isinstance(eid, str) else None
    if m is None or m.group("suite") not in SUITES:
        return None
    return m.group("suite"), int(m.group("index"))


def public_record(spec: Mapping[str, Any], *, suite: str | None = None,
                  index: int | None = None) -> dict[str, Any]:
    """What an agent may know about a suite episode.

    Keys: ``episode_id``, ``suite``, ``index``, ``graph`` (the initial house graph as the
    robot sees it: with the characters and what they hold, but without the contents of
    closed containers), ``robot_id``, ``people`` (``id``, ``name``, ``kind`` of each person,
    by id) and ``horizon``. Never the family, the need for help, the window, mental states,
    beliefs, activities, events, the target, the seed or the reference program.

    ``suite`` and ``index`` are read from the episode id (``vh-dev-v3-0003``) unless given;
    a spec that is not a suite episode raises ``ValueError`` (its id may name its family).
    """
    eid = spec.get("episode_id")
    if suite is None or index is None:
        parsed = _parse_episode_id(eid)
        if parsed is None:
            raise ValueError(f"episode id {eid!r} is not a suite episode id like 'vh-dev-v3-0003'")
        suite = parsed[0] if suite is None else suite
        index = parsed[1] if index is None else index
    people = [{"id": int(a["id"]), "name": str(a["name"]), "kind": str(a["kind"])}
              for a in sorted(spec["actors"], key=lambda a: int(a["id"]))]
    return {
        "episode_id": str(eid),
        "suite": suite,
        "index": int(index),
        "graph": perceived_graph(spec["graph"]),
        "robot_id": int(spec["robot"]["id"]),
        "people": people,
        "horizon": int(spec["horizon"]),
    }


def perceived_graph(graph: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a VirtualHome graph without the nodes hidden in closed containers (and
    their edges): the house as a camera sees it."""
    from mindhelper_env.world.world import World

    world = World(copy.deepcopy(dict(graph)))
    hidden = {nid for nid in world.graph.nodes if world.is_hidden(nid)}
    out = copy.deepcopy(dict(graph))
    out["nodes"] = [n for n in out["nodes"] if n["id"] not in hidden]
    out["edges"] = [e for e in out["edges"]
                    if e["from_id"] not in hidden and e["to_id"] not in hidden]
    return out


def pinned_digests(name: str) -> dict[str, str] | None:
    """The released sha256 of suite ``name``'s exported files (``{file: sha256}``, from the
    release ledger) when the installed generator built them, else None."""
    _suite(name)
    rel = _releases.release_of(name)
    if rel is None or rel.generator not in _releases.running_generators():
        return None
    return rel.digests() or None


def spec_digest(name: str, limit: int | None = None) -> str:
    """The ledger's ``spec_sha256``: sha256 of every episode spec of ``name`` (canonical JSON
    lines, index order; the first ``limit`` when given): graph, people, schedules, doors, the
    switch's timings and the reference (docs/data-format.md)."""
    n = min(require_suite(name)["n"], _suite(name)["n"] if limit is None else int(limit))
    return hashlib.sha256("".join(_episode_json(name, i) + "\n" for i in range(n)).encode()
                          ).hexdigest()


def pin_digests(names: list[str] | None = None, note: str = "released",
                date: str | None = None) -> dict[str, dict[str, str]]:
    """Release the suites ``names`` (default: every suite of :data:`SUITES` not yet in the
    ledger): export each and append its entry (release ``date``, default today, and a
    one-line ``note``) to the release ledger. A released name is never re-released
    (``ValueError``). For maintainers, after adding new suite names for a new generator."""
    import datetime

    todo = names or [n for n in SUITES if _releases.release_of(n) is None]
    for name in todo:
        s = _suite(name)
        with tempfile.TemporaryDirectory() as tmp:
            out = export_suite(name, tmp)
            dig = {f: hashlib.sha256((out / f).read_bytes()).hexdigest()
                   for f in (PUBLIC_FILE, REFERENCE_FILE)}
        _releases.append_release(_releases.Release(
            name, str(s["generator"]), int(s["n"]), int(s["seed_base"]), s.get("house"),
            date or datetime.date.today().isoformat(), dig[PUBLIC_FILE], dig[REFERENCE_FILE],
            "current", (), note, spec_digest(name)))
    return {n: _releases.ledger()[n].digests() for n in todo}


def reference_record(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The ground truth of an episode (its ``reference``, with the spec's ``episode_id``)."""
    rec = copy.deepcopy(dict(spec["reference"]))
    rec["episode_id"] = spec["episode_id"]
    return rec


# ---------------------------------------------------------------------------------- export
def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        # mkstemp creates 0600; an exported suite is meant to be shared: the usual mode
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _file_entry(data: bytes, records: int) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "records": records}


def export_suite(name: str, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``public.jsonl``, ``reference.jsonl`` and ``manifest.json`` of suite ``name``.

    ``out_dir`` is created if needed; existing files of those names are replaced. The bytes
    are deterministic (canonical JSON, no timestamps). Returns ``Path(out_dir)``. Raises
    ``ValueError`` for an unknown suite or an ``out_dir`` that is not a directory.
    """
    from mindhelper_env import __version__

    s = _suite(name)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"{out}: cannot create directory ({err.strerror or err})") from err
    public_lines: list[str] = []
    reference_lines: list[str] = []
    families: Counter[str] = Counter()
    help_n = 0
    for i in range(s["n"]):
        spec = suite_episode(name, i)
        ref = reference_record(spec)
        families[ref["family"]] += 1
        help_n += bool(ref["needs_intervention"])
        public_lines.append(_dumps(public_record(spec, suite=name, index=i)) + "\n")
        reference_lines.append(_dumps(ref) + "\n")
    public = "".join(public_lines).encode()
    reference = "".join(reference_lines).encode()
    manifest = {
        "format": EXPORT_FORMAT,
        "suite": name,
        "version": s["version"],
        "generator": s["generator"],
        "created_by": f"mindhelper-env {__version__}",
        "episodes": s["n"],
        "help_episodes": help_n,
        "silent_episodes": s["n"] - help_n,
        "families": {f: families[f] for f in FAMILIES if families[f]},
        **({"house": s["house"]} if s.get("house") else {}),
        "files": {PUBLIC_FILE: _file_entry(public, s["n"]),
                  REFERENCE_FILE: _file_entry(reference, s["n"])},
    }
    _write_atomic(out / PUBLIC_FILE, public)
    _write_atomic(out / REFERENCE_FILE, reference)
    _write_atomic(out / MANIFEST_FILE, (json.dumps(manifest, sort_keys=True, indent=2) + "\n").encode())
    logger.info("exported suite %s (%d episodes) to %s", name, s["n"], out)
    return out


# ---------------------------------------------------------------------------------- validate
def _forbidden_in_public(rec: Mapping[str, Any]) -> list[str]:
    found = []
    for key in rec:
        if key in FORBIDDEN_PUBLIC_KEYS or any(w in key for w in FORBIDDEN_PUBLIC_WORDS):
            found.append(f"forbidden field {key!r} in a public record")
    stack: list[tuple[str, Any]] = [(f"/{k}", v) for k, v in rec.items()]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                if any(w in str(k) for w in FORBIDDEN_PUBLIC_WORDS):
                    found.append(f"forbidden field {k!r} at {path}")
                stack.append((f"{path}/{k}", v))
        elif isinstance(value, list):
            stack.extend((f"{path}/{j}", v) for j, v in enumerate(value))
    return found


def _read_records(path: Path, label: str, problems: list[str]
                  ) -> tuple[bytes | None, list[tuple[int, dict[str, Any]]]]:
    if not path.is_file():
        problems.append(f"{label}: missing")
        return None, []
    data = path.read_bytes()
    records = []
    for n, obj, problem in _iter_jsonl(data):
        if problem is not None:
            problems.append(f"{label}:{n}: {problem}")
        else:
            assert obj is not None
            records.append((n, obj))
    return data, records


def _check_manifest(root: Path, problems: list[str]) -> dict[str, Any] | None:
    path = root / MANIFEST_FILE
    if not path.is_file():
        problems.append(f"{MANIFEST_FILE}: missing")
        return None
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as err:
        problems.append(f"{MANIFEST_FILE}: invalid JSON ({err})")
        return None
    errs = schema_errors("manifest", manifest)
    problems.extend(f"{MANIFEST_FILE}: schema: {e}" for e in errs)
    if errs:
        return None
    return manifest


def _check_window(label: str, ref: Mapping[str, Any], horizon: int | None) -> list[str]:
    w = ref.get("window")
    if not isinstance(w, Mapping):
        return []
    onset, deadline = w.get("onset_tick"), w.get("deadline_tick")
    if not (isinstance(onset, int) and isinstance(deadline, int)):
        return []
    top = horizon if horizon is not None else deadline
    if not 0 <= onset <= deadline <= top:
        return [f"{label}: window onset {onset} / deadline {deadline} is not within "
                f"0 <= onset <= deadline <= horizon ({horizon})"]
    return []


def _replay(label: str, spec: dict[str, Any], ref: dict[str, Any]) -> list[str]:
    """Simulate the episode against the reference record; return problems."""
    from mindhelper_env.backends.symbolic import Simulation

    sim_spec = dict(spec)
    sim_spec["reference"] = ref
    out = []
    try:
        baseline = Simulation(sim_spec)
        baseline.run()
        if ref["needs_intervention"] and baseline.focus_succeeded():
            out.append(f"{label}: replay: the focus person succeeds without help, "
                       "but needs_intervention is true")
        if not ref["needs_intervention"] and not baseline.focus_succeeded():
            out.append(f"{label}: replay: the focus person fails without help, "
                       "but needs_intervention is false")
        if not ref["needs_intervention"]:
            return out
        onset = ref["window"]["onset_tick"]
        program = ref["reference_actions"]
        sim = Simulation(sim_spec)
        sim.run(max_ticks=onset)
        if sim.settled:
            return out + [f"{label}: replay: the episode is over before onset tick {onset}"]
        errors = sim.issue("\n".join(program))
        if errors:
            return out + [f"{label}: replay: reference program does not parse ({errors[0][1]})"]
        sim.run()
        for line in sim.robot_lines:
            if not line.ok:
                out.append(f"{label}: replay: reference line {line.line!r} failed at tick "
                           f"{line.tick} ({line.reason})")
        if not sim.focus_succeeded():
            out.append(f"{label}: replay: the reference program issued at onset tick {onset} "
                       "does not make the focus person succeed")
        if sim.harm():
            out.append(f"{label}: replay: the reference program harms")
    except Exception as err:  # a tampered record can break the simulator in many ways
        out.append(f"{label}: replay failed ({type(err).__name__}: {err})")
    return out


def _diff_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def validate_suite_dir(path: str | os.PathLike[str], *, replay: bool = True) -> list[str]:
    """Check an exported suite directory; return the problems found (empty list = valid).

    Each problem names the file (and line): ``"public.jsonl:17: invalid JSON (...)"``.
    Checks: JSON Schemas of every record and of the manifest; the manifest's sha256, byte and
    record counts of both files (a tampered or missing file); suite, version and generator;
    id closure between public and reference records; duplicate ids; forbidden fields in
    public records; ids of the form ``<suite>-<index>`` covering the whole suite; families
    consistent with ``needs_intervention`` and with the manifest counts; windows inside the
    horizon; reference programs that parse. With ``replay`` (the default) each episode is
    rebuilt with :func:`suite_episode`, both records are compared with the rebuilt ones, and
    the episode is simulated: without help it must fail exactly when help is needed, and the
    reference program issued at onset must execute and make the focus person succeed.

    Raises ``ValueError`` if ``path`` is not an existing directory.
    """
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{root}: not a directory (expected an exported suite)")
    problems: list[str] = []
    manifest = _check_manifest(root, problems)

    pub_data, pub_recs = _read_records(root / PUBLIC_FILE, PUBLIC_FILE, problems)
    ref_data, ref_recs = _read_records(root / REFERENCE_FILE, REFERENCE_FILE, problems)

    if manifest is not None:
        for fname, data in ((PUBLIC_FILE, pub_data), (REFERENCE_FILE, ref_data)):
            if data is None:
                continue
            entry = manifest["files"][fname]
            digest = hashlib.sha256(data).hexdigest()
            if digest != entry["sha256"]:
                problems.append(f"{fname}: sha256 {digest[:12]}… does not match the manifest "
                                f"({entry['sha256'][:12]}…): the file was modified or the "
                                "manifest is stale")
            if len(data) != entry["bytes"]:
                problems.append(f"{fname}: {len(data)} bytes, manifest says {entry['bytes']}")
            nlines = len(data.split(b"\n")) - (1 if data.endswith(b"\n") else 0) if data else 0
            if nlines != entry["records"]:
                problems.append(f"{fname}: {nlines} lines, manifest says {entry['records']}")

    # which suite are we looking at?
    suite: str | None = None
    if manifest is not None:
        suite = manifest["suite"]
    else:
        names = {r.get("suite") for _, r in pub_recs if isinstance(r.get("suite"), str)}
        suite = names.pop() if len(names) == 1 else None
    known = suite in SUITES
    can_replay = replay and known
    if manifest is not None:
        if not known:
            problems.append(f"{MANIFEST_FILE}: unknown suite {suite!r}; known suites: "
                            f"{', '.join(SUITES)}")
        else:
            s = SUITES[suite]
            if manifest["version"] != s["version"]:
                problems.append(f"{MANIFEST_FILE}: suite version {manifest['version']} but "
                                f"{suite} is version {s['version']}")
            if manifest["episodes"] != s["n"]:
                problems.append(f"{MANIFEST_FILE}: {manifest['episodes']} episodes but {suite} "
                                f"has {s['n']}")
        expected = SUITES[suite]["generator"] if known else None
        if manifest["generator"] not in GENERATORS or (
                expected is not None and manifest["generator"] != expected):
            problems.append(f"{MANIFEST_FILE}: generator {manifest['generator']!r} differs from "
                            f"{expected or ' / '.join(GENERATORS)!r}; episodes cannot be "
                            f"replayed")
            can_replay = False
    if known and manifest is not None:
        pinned = pinned_digests(suite)
        for fname, data in ((PUBLIC_FILE, pub_data), (REFERENCE_FILE, ref_data)):
            if pinned and data is not None and fname in pinned \
                    and hashlib.sha256(data).hexdigest() != pinned[fname]:
                problems.append(f"{fname}: sha256 differs from the digest published for "
                                f"{suite} ({pinned[fname][:12]}…): this is not the published suite")
    if known and SUITES[suite]["generator"] not in GENERATORS:
        problems.append(f"{suite}: built with generator {SUITES[suite]['generator']!r}, "
                        f"installed are {list(GENERATORS)}; episodes cannot be replayed")
        can_replay = False

    # public records
    public: dict[str, tuple[int, dict[str, Any]]] = {}
    indices: dict[int, str] = {}
    for n, rec in pub_recs:
        label = f"{PUBLIC_FILE}:{n}"
        problems.extend(f"{label}: {m}" for m in _forbidden_in_public(rec))
        errs = schema_errors("public", rec)
        problems.extend(f"{label}: schema: {e}" for e in errs)
        eid = rec.get("episode_id")
        if not isinstance(eid, str):
            continue
        if eid in public:
            problems.append(f"{label}: duplicate episode_id {eid!r} (first at line {public[eid][0]})")
            continue
        public[eid] = (n, rec)
        if errs:
            continue
        if suite is not None and rec["suite"] != suite:
            problems.append(f"{label}: suite {rec['suite']!r} but the export is {suite!r}")
        if known:
            idx = rec["index"]
            if idx >= SUITES[suite]["n"]:
                problems.append(f"{label}: index {idx} out of range for {suite} "
                                f"(0..{SUITES[suite]['n'] - 1})")
            elif eid != f"{suite}-{idx:04d}":
                problems.append(f"{label}: episode_id {eid!r} does not match index {idx} "
                                f"(expected {suite}-{idx:04d})")
            elif idx in indices:
                problems.append(f"{label}: index {idx} also used by {indices[idx]!r}")
            else:
                indices[idx] = eid
    if known and pub_data is not None:
        missing = [i for i in range(SUITES[suite]["n"]) if i not in indices]
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
            problems.append(f"{PUBLIC_FILE}: {len(missing)} episode(s) of {suite} missing "
                            f"(indices {shown})")

    # reference records
    refs: dict[str, tuple[int, dict[str, Any]]] = {}
    schema_ok: set[str] = set()
    families: Counter[str] = Counter()
    for n, rec in ref_recs:
        label = f"{REFERENCE_FILE}:{n}"
        errs = schema_errors("reference", rec)
        problems.extend(f"{label}: schema: {e}" for e in errs)
        eid = rec.get("episode_id")
        if not isinstance(eid, str):
            continue
        if eid in refs:
            problems.append(f"{label}: duplicate episode_id {eid!r} (first at line {refs[eid][0]})")
            continue
        refs[eid] = (n, rec)
        if pub_data is not None and eid not in public:
            problems.append(f"{label}: episode {eid!r} has no public record")
        if errs:
            continue
        schema_ok.add(eid)
        families[rec["family"]] += 1
        if rec["needs_intervention"] != (rec["family"] in HELP_FAMILIES):
            problems.append(f"{label}: family {rec['family']!r} but needs_intervention is "
                            f"{rec['needs_intervention']}")
        horizon = None
        if eid in public and isinstance(public[eid][1].get("horizon"), int):
            horizon = public[eid][1]["horizon"]
        problems.extend(_check_window(label, rec, horizon))
        for k, line in enumerate(rec["reference_actions"]):
            try:
                parse_line(line)
            except ScriptParseError as err:
                problems.append(f"{label}: reference_actions[{k}] {line!r} does not parse ({err})")
    if ref_data is not None:
        for eid, (n, _) in public.items():
            if eid not in refs:
                problems.append(f"{PUBLIC_FILE}:{n}: episode {eid!r} has no reference record")
    if manifest is not None and ref_data is not None:
        counted = {f: c for f, c in families.items() if c}
        if counted != manifest["families"]:
            problems.append(f"{MANIFEST_FILE}: family counts {manifest['families']} do not match "
                            f"{REFERENCE_FILE} ({counted})")
        help_n = sum(c for f, c in families.items() if f in HELP_FAMILIES)
        if help_n != manifest["help_episodes"] or sum(families.values()) - help_n != manifest[
                "silent_episodes"]:
            problems.append(f"{MANIFEST_FILE}: help/silent counts do not match {REFERENCE_FILE}")

    if can_replay:
        assert suite is not None
        for eid, (n, rec) in refs.items():
            label = f"{REFERENCE_FILE}:{n}"
            if eid not in schema_ok:
                continue
            parsed = _parse_episode_id(eid)
            if parsed is None or parsed[0] != suite or parsed[1] >= SUITES[suite]["n"]:
                problems.append(f"{label}: episode_id {eid!r} is not an episode of {suite}")
                continue
            spec = suite_episode(suite, parsed[1])
            want = reference_record(spec)
            if rec != want:
                problems.append(f"{label}: differs from the rebuilt ground truth of {eid} "
                                f"(fields: {', '.join(_diff_keys(rec, want))})")
            if eid in public:
                pn, prec = public[eid]
                want_pub = public_record(spec, suite=suite, index=parsed[1])
                if prec != want_pub:
                    problems.append(f"{PUBLIC_FILE}:{pn}: differs from the rebuilt episode "
                                    f"{eid} (fields: {', '.join(_diff_keys(prec, want_pub))})")
            problems.extend(_replay(label, spec, rec))
    logger.debug("validated %s: %d problem(s)", root, len(problems))
    return problems
