"""Provenance: what a number was measured with, in every file a run writes.

``run.json`` and ``summary.json`` carry the run's full provenance (:func:`run_provenance`):
the package version, the generator version, the suite's name, release status and digests,
the env id and kwargs, each agent's name, spec, options, the sha256 of its data files
(skills, learned Trigger, model checkpoint) and model spec, the seed, trials, Python and
platform, the command line and the start time. Each result record carries only a compact
stamp (:func:`stamp`, ~200 bytes)::

    "provenance": {"key": "<run key of this agent>", "generator": "mh-gen-2.5",
                   "suite_digest": "<sha256 of the suite's reference.jsonl, 16 hex>",
                   "reference": "<sha256 of this episode's reference record, 16 hex>",
                   "checksum": "<sha256 of the record without its checksum, 16 hex>"}

``key`` finds the agent's block in ``run.json`` (it hashes the agent's name, spec and data
files and the run's package, generator, suite, env, seed and trials: never the start time,
the command line or how a model is reached, so a rerun or a replay writes the same bytes). Scoring,
reports and ``--resume`` check each stamp (:func:`check_record`): a record made by another
generator, on another suite digest, against another ground truth (family, needs-help,
window), or edited after it was written is refused with one line naming both sides.

Observation tracks (:data:`OBS_TRACKS`): a run on the vision track (``evaluate --obs rgb``,
env kwarg ``obs_mode="rgb"``: frames only) says so in ``run.json``'s provenance
(``"obs": "rgb"``, with the frames' ``"picture"`` and ``"frame_size"``) and in every record's
stamp (``"obs": "rgb"``, covered by the checksum;
a text-track record has no ``obs`` key, so text records are unchanged). Scoring, reports and
``--resume`` never mix the tracks: records of both in one scoring or report, or kept records
of the other track in a resumed run, are refused (:func:`check_one_track`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PROVENANCE_FORMAT", "STAMP_KEYS", "file_digest", "suite_provenance",
           "suite_generator",
           "agent_provenance", "run_provenance", "agent_key", "stamp", "check_record",
           "record_checksum", "reference_digest", "short", "verify_records", "OBS_TRACKS",
           "obs_track", "record_track", "check_one_track"]

PROVENANCE_FORMAT = 1
#: Option names whose values never go into a file (``api_key=...``).
_SECRET = re.compile(r"key|token|secret|password|credential", re.IGNORECASE)
#: Keys of a record's ``provenance`` stamp (and ``obs`` on the vision track).
STAMP_KEYS = ("key", "generator", "suite_digest", "reference", "checksum")
#: The observation tracks: ``text`` (narration and events; also ``text+rgb``) and ``rgb``
#: (the window's frames only).
OBS_TRACKS = ("text", "rgb")


def obs_track(env_kwargs: Mapping[str, Any] | None) -> str:
    """The track of a run's env kwargs: ``"rgb"`` for ``obs_mode="rgb"``, else ``"text"``."""
    return "rgb" if (env_kwargs or {}).get("obs_mode") == "rgb" else "text"


def record_track(record: Mapping[str, Any]) -> str:
    """The track a record was played on (its stamp's ``obs``; ``"text"`` without one)."""
    prov = record.get("provenance")
    track = prov.get("obs") if isinstance(prov, Mapping) else None
    return str(track) if track else "text"


def check_one_track(items: Sequence[tuple[str, Mapping[str, Any]]],
                    track: str | None = None) -> str | None:
    """The one track of ``(location, record)`` items (None for no items); ``ValueError``
    naming a record of each side when they mix tracks (or differ from ``track``)."""
    first: tuple[str, str] | None = (("this run", track) if track is not None else None)
    for loc, rec in items:
        t = record_track(rec)
        if first is None:
            first = (loc, t)
        elif t != first[1]:
            raise ValueError(
                f"{loc}: a record of the {t} track, {first[0]} is of the {first[1]} track: "
                "records of the text and vision (obs rgb) tracks are never mixed; score, "
                "report or resume each track on its own")
    return None if first is None else first[1]
_SHORT = 16


def short(digest: str | None) -> str | None:
    """The first 16 hex digits of a sha256 (what records carry)."""
    return None if digest is None else str(digest)[:_SHORT]


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode("utf-8")


def file_digest(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def reference_digest(reference: Mapping[str, Any]) -> str:
    """Short sha256 of one episode's reference record (family, needs-help, window, ...);
    absent and ``None`` fields are the same."""
    body = {k: v for k, v in reference.items() if v is not None}
    return hashlib.sha256(_canonical(body)).hexdigest()[:_SHORT]


def record_checksum(record: Mapping[str, Any]) -> str:
    """Short sha256 of a record with its ``provenance.checksum`` left out."""
    body = dict(record)
    prov = dict(body.get("provenance") or {})
    prov.pop("checksum", None)
    body["provenance"] = prov
    return hashlib.sha256(_canonical(body)).hexdigest()[:_SHORT]


def suite_generator(name: str) -> str:
    """The generator that builds suite ``name``'s episodes in this installation."""
    from mindhelper_env.scenarios import releases
    from mindhelper_env.scenarios.suites import SUITES

    entry = SUITES.get(name) or {}
    return str(entry.get("generator") or releases.running_generator())


def suite_provenance(name: str) -> dict[str, Any]:
    """The suite's release: generator, status, release date and digests (``None`` digests
    for a suite not yet in the release ledger)."""
    from mindhelper_env.scenarios import releases

    rel = releases.release_of(name)
    if rel is None:
        return {"name": name, "generator": suite_generator(name), "status": "unreleased",
                "released": None, "public_sha256": None, "reference_sha256": None}
    return {"name": name, "generator": rel.generator, "status": rel.status,
            "released": rel.released, "public_sha256": rel.public_sha256,
            "reference_sha256": rel.reference_sha256}


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return f"<{type(value).__name__}>"


def _data_files(agent: Any) -> dict[str, dict[str, Any]]:
    """``{role: {"path", "sha256"}}`` of the files an agent read (its ``data_files``
    mapping of role -> path, also through wrappers' ``agent``/``inner``)."""
    seen: set[int] = set()
    out: dict[str, dict[str, Any]] = {}
    while agent is not None and id(agent) not in seen:
        seen.add(id(agent))
        files = getattr(agent, "data_files", None)
        if isinstance(files, Mapping):
            for role, path in files.items():
                if path is None:
                    continue
                p = Path(path)
                digest = file_digest(p) if p.is_file() else None
                if digest is None and p.is_dir():  # a checkpoint folder: its files' digests
                    h = hashlib.sha256()
                    for f in sorted(q for q in p.rglob("*") if q.is_file()):
                        h.update(f"{f.relative_to(p)}\0{file_digest(f)}\n".encode())
                    digest = h.hexdigest()
                out[str(role)] = {"path": str(p), "sha256": digest}
        agent = getattr(agent, "agent", None) or getattr(agent, "inner", None)
    return out


class _Files:
    def __init__(self, files: Mapping[str, str]) -> None:
        self.data_files = files


def agent_provenance(label: str, spec: str, options: Mapping[str, Any],
                     agent: Any = None) -> dict[str, Any]:
    """One agent's block: row name, spec, options (JSON-safe, without the runner's ``env``
    and ``seed``; the values of secrets such as ``api_key`` redacted), its data files' sha256
    and its model spec."""
    opts = {k: ("<redacted>" if _SECRET.search(k) else _json_safe(v))
            for k, v in sorted(options.items()) if k not in ("env", "seed")}
    model = opts.get("model")
    if model is None and agent is not None:
        model = getattr(agent, "model_spec", None)
    files = _data_files(agent) if agent is not None else {}
    if isinstance(model, str) and model.startswith("hf:") and Path(model[3:]).exists():
        files.update(_data_files(_Files({"model": model[3:]})))  # a local checkpoint
    block: dict[str, Any] = {"name": label, "spec": spec, "options": opts,
                             "data_files": files,
                             "model": _json_safe(model)}
    block["key"] = agent_key(block)
    return block


#: The parts of an agent's block its key hashes. Its options and model spec stay out: they
#: also say how a model is reached (an endpoint URL, a cassette to record to or replay
#: from, a concurrency), and a replay's records must equal the recording's byte for byte;
#: both are in the block the key points to.
KEY_FIELDS = ("name", "spec", "data_files")


def agent_key(block: Mapping[str, Any], run: Mapping[str, Any] | None = None) -> str:
    """The short key of an agent's block (:data:`KEY_FIELDS`, with the run's invariant part
    when given)."""
    body = {k: block.get(k) for k in KEY_FIELDS}
    if run is not None:
        body["run"] = {k: run.get(k) for k in ("package_version", "generator", "suite",
                                               "env_id", "env_kwargs", "seed", "trials")}
    return hashlib.sha256(_canonical(body)).hexdigest()[:_SHORT]


def run_provenance(*, suite: str, env_id: str, env_kwargs: Mapping[str, Any], seed: int,
                   trials: int, agents: Mapping[str, Mapping[str, Any]],
                   argv: Sequence[str] | None = None,
                   started: str | None = None) -> dict[str, Any]:
    """The run's provenance (``run.json``'s and ``summary.json``'s ``provenance``); each
    agent block's ``key`` hashes the agent and the run's invariant part."""
    from mindhelper_env import __version__

    run: dict[str, Any] = {
        "format": PROVENANCE_FORMAT,
        "package": "mindhelper-env",
        "package_version": __version__,
        "generator": suite_generator(suite),
        "suite": suite_provenance(suite),
        "env_id": env_id,
        "env_kwargs": _json_safe(dict(env_kwargs)),
        "obs": obs_track(env_kwargs),
        "seed": int(seed),
        "trials": int(trials),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "command": _command(sys.argv if argv is None else argv),
        "started": started or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if run["obs"] == "rgb":  # what the frames looked like: their picture and size
        from mindhelper_env.render.sprites import PICTURE

        run["picture"] = int(env_kwargs.get("picture", PICTURE))
        run["frame_size"] = env_kwargs.get("frame_size")
    run["agents"] = {}
    for label, block in agents.items():
        b = dict(block)
        b["key"] = agent_key(b, run)
        run["agents"][label] = b
    return run


def _command(argv: Sequence[str]) -> list[str]:
    """The command line, with ``python -m mindhelper_env.cli``'s path shown as the command."""
    args = [str(a) for a in argv]
    if args and (Path(args[0]).name == "mindhelper"
                 or args[0].replace("\\", "/").endswith("mindhelper_env/cli/__main__.py")):
        args[0] = "mindhelper"
    return args


def stamp(record: dict[str, Any], run: Mapping[str, Any], label: str,
          reference: Mapping[str, Any] | None) -> dict[str, Any]:
    """``record`` with its compact ``provenance`` stamp (the checksum last)."""
    prov: dict[str, Any] = {
        "key": run["agents"][label]["key"],
        "generator": run["generator"],
        "suite_digest": short(run["suite"].get("reference_sha256")),
        "reference": reference_digest(reference) if reference is not None else None,
    }
    if run.get("obs", "text") != "text":
        prov["obs"] = run["obs"]
    record["provenance"] = prov
    prov["checksum"] = record_checksum(record)
    return record


def check_record(record: Mapping[str, Any], *, generator: str, suite_digest: str | None,
                 reference: Mapping[str, Any] | None, track: str | None = None) -> str | None:
    """The first reason to refuse ``record`` (one line naming both sides), or ``None``.
    With ``track``, a record of the other observation track is refused too.

    A record without a stamp (written before 0.4) passes here; callers count those."""
    prov = record.get("provenance")
    if prov is None:
        if track not in (None, "text"):
            return f"record of the text track (no stamp), this run is on the {track} track"
        return _reference_problem(record, reference)
    if not isinstance(prov, Mapping) or any(k not in prov for k in STAMP_KEYS):
        return "provenance stamp is malformed (tampered or truncated record)"
    if prov["checksum"] != record_checksum(record):
        return (f"checksum {record_checksum(record)} does not match the record's "
                f"{prov['checksum']}: the record was edited after it was written")
    if track is not None and record_track(record) != track:
        return (f"record of the {record_track(record)} track, this run is on the {track} "
                "track: the text and vision (obs rgb) tracks are never mixed")
    if prov["generator"] != generator:
        return (f"record made by generator {prov['generator']}, this installation runs "
                f"{generator}; rerun the agent with this version or score with the version "
                "that made it")
    want = short(suite_digest)
    if want is not None and prov["suite_digest"] is not None and prov["suite_digest"] != want:
        return (f"record made on suite digest {prov['suite_digest']}, the suite's released "
                f"digest is {want}")
    if reference is not None and prov["reference"] is not None \
            and prov["reference"] != reference_digest(reference):
        return (f"record made against reference {prov['reference']}, the suite's reference "
                f"is {reference_digest(reference)} ({_reference_fields(record, reference)})")
    return _reference_problem(record, reference)


def _reference_fields(record: Mapping[str, Any], reference: Mapping[str, Any]) -> str:
    fam = record.get("family")
    if fam is not None and fam != reference.get("family"):
        return f"family {fam!r} in the record, {reference.get('family')!r} in the reference"
    return "the episode's ground truth (family, needs-help or window) differs"


def _reference_problem(record: Mapping[str, Any],
                       reference: Mapping[str, Any] | None) -> str | None:
    if reference is None:
        return None
    fam = record.get("family")
    if fam is not None and fam != reference.get("family"):
        return (f"family {fam!r} in the record, {reference.get('family')!r} in the suite's "
                "reference: the record does not belong to this suite's episode")
    return None


def verify_records(suite: str, items: Sequence[tuple[str, Mapping[str, Any]]]) -> int:
    """Check the stamp of every ``(location, record)`` of ``suite`` against the installed
    generator, the suite's released digest and its references (:func:`check_record`);
    ``ValueError`` ``"<location>: <reason>"`` for the first refused record, or for records
    of two observation tracks (:func:`check_one_track`). Returns the number of records
    without a stamp."""
    from mindhelper_env.scenarios import releases
    from mindhelper_env.scenarios.suites import require_suite, suite_references

    require_suite(suite)
    rel = releases.release_of(suite)
    digest = rel.reference_sha256 if rel is not None else None
    generator = suite_generator(suite)
    refs = suite_references(suite)
    check_one_track(items)
    unstamped = 0
    for loc, rec in items:
        eid = str(rec.get("episode_id"))
        if eid not in refs:
            raise ValueError(f"{loc}: episode {eid!r} is not in suite {suite!r}")
        problem = check_record(rec, generator=generator, suite_digest=digest,
                               reference=refs[eid])
        if problem:
            raise ValueError(f"{loc}: {problem}")
        unstamped += "provenance" not in rec
    return unstamped
