"""Build the static HTML report of one or more evaluation folders (see docs/report.md).

The steps: read each folder's ``run.json`` and result files; replay every distinct
(episode, programs) pair once (:mod:`mindhelper_env.report.replay`, in a process pool),
which also gives the references; score every agent (:mod:`mindhelper_env.metrics`) with
bootstrap intervals (:mod:`mindhelper_env.report.stats`); render the Jinja2 templates of
``report/templates`` into ``index.html`` (leaderboard, floors, breakdowns, paired
comparisons), ``episodes.html`` (every episode, with filters) and one page per episode and
agent under ``episodes/``; charts are SVG files drawn by matplotlib. Nothing refers to the
network: the pages open from disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from mindhelper_env.report.explain import fold_quiet_windows, plural, why_no_help
from mindhelper_env.report.hints import EXTRA_HINT
from mindhelper_env.report.stats import (
    CI_METRICS,
    DEFAULT_RESAMPLES,
    bootstrap,
    correct,
    paired_bootstrap,
)

__all__ = ["ReportError", "check_report_extra", "write_report", "load_runs", "EXTRA_HINT"]

logger = logging.getLogger(__name__)

#: The trivial floors: (label, agent of the run that plays it, how it behaves).
FLOORS = (("always silent", "silent", "never acts"),
          ("first cue", "reactive", "intervenes at the first visible struggle"),
          ("random", "random", "acts at random (p = 0.1 per window)"))
_METRIC_LABELS = {"harm_rate": "harm", "silent_all": "silent-all"}


class ReportError(ValueError):
    """A run folder the report cannot use (the message names it)."""


def check_report_extra() -> None:
    """Raise ``ImportError`` with the install hint when Jinja2 or matplotlib is missing."""
    import importlib.util

    for module in ("jinja2", "matplotlib"):
        if importlib.util.find_spec(module) is None:
            raise ImportError(f"{EXTRA_HINT} ({module} is not installed)")


# ------------------------------------------------------------------------------ reading


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                raise ReportError(f"{path}:{lineno}: not JSON ({exc})") from None
            if not isinstance(rec, dict) or not isinstance(rec.get("episode_id"), str):
                raise ReportError(f"{path}:{lineno}: not a result record")
            out.append(rec)
    return out


def load_runs(run_dirs: Sequence[str | os.PathLike[str]]) -> dict[str, Any]:
    """``{"suite", "settings", "agents": {label: {"records", "run_dir", "name"}}}``.

    Every folder needs a ``run.json`` (what ``evaluate`` writes) and all must be of one
    suite. The agents are those of ``summary.json``'s ``files`` (else every ``*.jsonl``); an
    agent name met in two folders is labelled ``name (folder)``."""
    if not run_dirs:
        raise ReportError("no run folder given")
    suite = None
    settings: dict[str, Any] = {}
    agents: dict[str, dict[str, Any]] = {}
    seen_names: dict[str, int] = {}
    for raw in run_dirs:
        d = Path(raw)
        run_file = d / "run.json"
        if not run_file.is_file():
            raise ReportError(f"{d}: no run.json (not a folder written by mindhelper evaluate)")
        try:
            run = json.loads(run_file.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ReportError(f"{run_file}: not JSON ({exc})") from None
        if suite is not None and run.get("suite") != suite:
            raise ReportError(f"{d}: suite {run.get('suite')!r}, not {suite!r} "
                              "(one suite per report)")
        suite = run.get("suite")
        settings.setdefault("env_id", run.get("env_id", "MindHelper-VirtualHome-v3"))
        settings.setdefault("env_kwargs", run.get("env_kwargs") or {})
        files: list[Path] = []
        spend: dict[str, Any] = {}
        summary_file = d / "summary.json"
        if summary_file.is_file():
            try:
                summary = json.loads(summary_file.read_text())
                files = [d / f for f in summary.get("files", {}).values()]
                spend = (summary.get("spend") or {}).get("by_agent") or {}
            except (ValueError, AttributeError):
                files = []
        if not files:
            files = sorted(p for p in d.glob("*.jsonl") if not p.name.startswith("."))
        for path in files:
            if not path.is_file():
                continue
            records = _read_jsonl(path)
            if not records:
                continue
            name = str(records[0].get("agent") or path.stem)
            seen_names[name] = seen_names.get(name, 0) + 1
            label = name if name not in agents else f"{name} ({d.name})"
            agents[label] = {"records": sorted(records, key=lambda r: r.get("index", 0)),
                             "run_dir": d, "name": name, "seed": int(run.get("seed", 0)),
                             "file": path.name, "raw": records,
                             "provenance": run.get("provenance"),
                             "spend": spend.get(name) if isinstance(spend, dict) else None}
    if not agents:
        raise ReportError(f"no result records in {', '.join(str(d) for d in run_dirs)}")
    _verify(str(suite), agents)
    # one agent from several folders: every one of its rows labelled by its folder
    agents = {(f"{info['name']} ({Path(info['run_dir']).name})"
               if seen_names.get(info["name"], 0) > 1 else label): info
              for label, info in agents.items()}
    return {"suite": suite, "settings": settings, "agents": agents}


def _verify(suite: str, agents: Mapping[str, Any]) -> None:
    """Refuse a withdrawn or out-of-date suite and records of another generator, suite
    digest or reference, or edited ones (one line naming both sides)."""
    from mindhelper_env.evaluation.provenance import verify_records

    items = [(f"{info['run_dir']}/{info['file']}:{k}", rec) for info in agents.values()
             for k, rec in enumerate(info["raw"], start=1)]
    try:
        verify_records(suite, items)
    except ValueError as exc:
        raise ReportError(str(exc)) from None


# ------------------------------------------------------------------------------ replays


def _replay_chunk(env_id: str, env_kwargs: dict[str, Any],
                  items: list[tuple[str, dict[str, Any], int]],
                  frames_root: Path | None = None) -> list[tuple[str, Any]]:
    """Worker: replay ``(key, record, seed)`` items; ``(key, result | error string)``. With
    ``frames_root`` (the vision track) each replay writes its frames at native size into
    ``frames_root/<folder>`` (:func:`_frames_folder`; the report's ``frames/``)."""
    from mindhelper_env.report.replay import Replayer

    rp = Replayer(env_id, env_kwargs)
    out: list[tuple[str, Any]] = []
    try:
        for key, record, seed in items:
            name = _frames_folder(key, record)
            where = {} if frames_root is None else {"frames_dir": frames_root / name,
                                                    "frames_href": f"frames/{name}"}
            try:
                out.append((key, rp.replay(record, seed=seed, **where)))
            except Exception as exc:  # one bad record must not stop the report
                out.append((key, f"{type(exc).__name__}: {exc}"))
    finally:
        rp.close()
    return out


def _replay_key(record: Mapping[str, Any]) -> str:
    return json.dumps([record.get("index"), record.get("actions")], sort_keys=True)


def _frames_folder(key: str, record: Mapping[str, Any]) -> str:
    """The folder of one replay's full-size frames under the report's ``frames/`` (one per
    distinct episode and programs: agents that played an episode alike share it)."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    return f"e{int(record.get('index') or 0)}-{digest}"


def _replay_all(agents: Mapping[str, Any], settings: Mapping[str, Any],
                workers: int, frames_root: Path | None = None) -> dict[str, Any]:
    """Every distinct (episode, programs) replayed once; chunks hold whole episodes so a
    worker generates each episode once."""
    by_index: dict[int, dict[str, tuple[dict[str, Any], int]]] = {}
    for info in agents.values():
        for rec in info["records"]:
            key = _replay_key(rec)
            seed = info["seed"] + int(rec.get("index", 0))
            by_index.setdefault(int(rec.get("index", 0)), {}).setdefault(key, (rec, seed))
    indices = sorted(by_index)
    n_chunks = max(1, min(len(indices), workers * 4))
    chunks: list[list[tuple[str, dict[str, Any], int]]] = [[] for _ in range(n_chunks)]
    for k, index in enumerate(indices):
        chunks[k % n_chunks].extend((key, rec, seed) for key, (rec, seed)
                                    in by_index[index].items())
    env_id, env_kwargs = str(settings["env_id"]), dict(settings["env_kwargs"])
    results: dict[str, Any] = {}
    if workers <= 1 or len(chunks) <= 1:
        for chunk in chunks:
            results.update(_replay_chunk(env_id, env_kwargs, chunk, frames_root))
        return results
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(_replay_chunk, env_id, env_kwargs, c, frames_root)
                   for c in chunks if c]
        for f in futures:
            results.update(f.result())
    return results


# ------------------------------------------------------------------------------ scoring


def _pct(x: Any) -> Any:
    return None if x is None else round(float(x) * 100, 2)


def _outcome_label(o: Mapping[str, Any]) -> str:
    if o["needs_help"]:
        if o["helpful_precise"]:
            return "helped in time"
        if o["precise"]:
            return "in time, not helpful" if not o["harm"] else "in time, harmful"
        return "premature" if o["premature"] else "late" if o["late"] else "missed"
    return "silent (correct)" if o["silent"] else "false alarm"


def _score(agents: Mapping[str, Any], refs: Mapping[str, Any], *, seed: int,
           resamples: int) -> dict[str, Any]:
    from mindhelper_env.metrics import as_percentages, compute_metrics, episode_outcome

    scored: dict[str, Any] = {}
    for label, info in agents.items():
        records = [r for r in info["records"] if r["episode_id"] in refs]
        clean = [{**r, "agent": label} for r in records]
        metrics = as_percentages(compute_metrics(clean, refs))
        outcomes = [episode_outcome(r, refs[r["episode_id"]]) for r in records]
        scored[label] = {"metrics": metrics, "outcomes": outcomes,
                         "ci": bootstrap(outcomes, resamples=resamples, seed=seed),
                         "records": {r["episode_id"]: r for r in records}}
    return scored


def _floors(scored: Mapping[str, Any], agents: Mapping[str, Any],
            refs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trivial floors: from the run when it has the agent, else ``always silent``
    computed from the references (it never acts: PHR 0, PSR 100; a help episode fails
    without help by the suite's validation) and the others marked as not in the run."""
    first = next(iter(scored.values()))
    ids = [o["episode_id"] for o in first["outcomes"]]
    rows = []
    for label, agent, how in FLOORS:
        match = next((a for a, info in agents.items() if info["name"] == agent), None)
        if match is not None:
            m = scored[match]["metrics"]
            rows.append({"label": label, "how": how, "source": f"from the run ({match})",
                         "values": {k: m.get(k) for k in CI_METRICS}})
        elif agent == "silent":
            n_help = sum(1 for e in ids if refs[e]["needs_intervention"])
            n_sil = len(ids) - n_help
            vals = {"PHA": 50.0 if n_help and n_sil else (0.0 if n_help else 100.0),
                    "PHR": 0.0 if n_help else None, "PIR": 0.0 if n_help else None,
                    "PSR": 100.0 if n_sil else None, "PIA": None, "TA": 0.0 if n_help else None,
                    "SR": 0.0 if n_help else None, "AC": 0.0 if n_help else None,
                    "harm_rate": 0.0, "silent_all": 100.0}
            vals["PIA"] = vals["PHA"]
            rows.append({"label": label, "how": how, "values": vals,
                         "source": "computed (never acts; help episodes fail without help)"})
        else:
            rows.append({"label": label, "how": how, "values": {},
                         "source": f"not in these runs (add --agents {agent})"})
    return rows


# ------------------------------------------------------------------------------ pages


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mindhelper_env.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["num"] = lambda v, d=1: "n/a" if v is None else f"{float(v):.{d}f}"
    env.filters["label"] = lambda k: _METRIC_LABELS.get(k, k)
    env.filters["plural"] = plural
    return env


def _name_of(names: Mapping[int, str], nid: Any) -> str | None:
    if nid is None:
        return None
    try:
        return names.get(int(nid), f"({nid})")
    except (TypeError, ValueError):
        return str(nid)


def _agent_belief_timeline(record: Mapping[str, Any], target: int | None,
                           names: Mapping[int, str]) -> dict[int, list[tuple[int, Any]]] | None:
    """The agent's belief about the task object over time, per person: from a MindClaw
    trace's committed changes ``[(tick, place name)]``; ``None`` when there is none."""
    trace = record.get("trace")
    if target is None or not isinstance(trace, list):
        return None
    out: dict[int, list[tuple[int, Any]]] = {}
    found = False
    for entry in trace:
        if not isinstance(entry, Mapping):
            continue
        for ch in entry.get("changes") or []:
            if not isinstance(ch, Mapping) or ch.get("actor") is None:
                continue
            found = True
            if ch.get("object") == target:
                tick = int(entry.get("tick", ch.get("tick", 0)))
                out.setdefault(int(ch["actor"]), []).append((tick, _name_of(names, ch["new"])))
    return out if found else None


def _belief_rows(replay: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """Tick-by-tick truth (rows only where something changes) with the agent's belief."""
    names = replay["names"]
    target = (replay.get("target") or {}).get("id")
    people = replay["people"]
    agent_tl = _agent_belief_timeline(record, target, names)
    snap = record.get("belief") if isinstance(record.get("belief"), Mapping) else None
    rows = []
    last = None
    for state in replay["truth"]:
        tick = state["tick"]
        cells = []
        for p in people:
            true = state["beliefs"].get(p["id"])
            mine = None
            if agent_tl is not None:
                for t, place in agent_tl.get(p["id"], []):
                    if t <= tick:
                        mine = place
            cells.append({"truth": true, "false": true is not None and true != state["location"],
                          "agent": mine,
                          "agent_wrong": agent_tl is not None and mine != true})
        sig = (state["location"], tuple((c["truth"], c["agent"]) for c in cells))
        if sig != last:
            rows.append({"tick": tick, "location": state["location"], "cells": cells})
            last = sig
    snapshot = None
    if snap and target is not None:
        tick = int(snap.get("tick", 0))
        snapshot = {"tick": tick, "people": []}
        for p in people:
            a = (snap.get("agent") or {}).get(str(p["id"]), {}).get(str(target))
            t = (snap.get("truth") or {}).get(str(p["id"]), {}).get(str(target))
            snapshot["people"].append({"name": p["name"], "agent": _name_of(names, a),
                                       "truth": _name_of(names, t), "match": a == t})
    return {"rows": rows, "has_agent": agent_tl is not None, "snapshot": snapshot}


def _model_calls(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Model calls the record's trace holds (MindClaw's ``calls``, direct-vlm's entries)."""
    out = []
    for entry in record.get("trace") or []:
        if not isinstance(entry, Mapping):
            continue
        calls = entry.get("calls")
        if isinstance(calls, list):
            for c in calls:
                if isinstance(c, Mapping):
                    out.append({"window": entry.get("window"), "tick": entry.get("tick"), **c})
        elif "prompt_tokens" in entry:
            out.append(dict(entry))
    keys = ("window", "tick", "module", "prompt", "prompt_chars", "prompt_tokens",
            "completion_tokens", "answer", "outcome")
    return [{k: c.get(k) for k in keys} for c in out]


def _timeline(replay: Mapping[str, Any] | None, record: Mapping[str, Any],
              ref: Mapping[str, Any], outcome: Mapping[str, Any]) -> dict[str, Any]:
    """Coordinates of the episode's timeline SVG (the template draws it)."""
    ticks = max(int(record.get("ticks") or 0), 1)
    width, left, right = 900, 110, 20
    scale = (width - left - right) / ticks

    def x(t: float) -> float:
        return round(left + t * scale, 1)

    window = ref.get("window")
    lanes = []
    if replay is not None:
        for p in replay["people"]:
            segs = []
            for state in replay["truth"]:
                b = state["beliefs"].get(p["id"])
                kind = "none" if b is None else "true" if b == state["location"] else "false"
                if segs and segs[-1]["kind"] == kind:
                    segs[-1]["end"] = state["tick"] + 1
                else:
                    segs.append({"kind": kind, "start": state["tick"], "end": state["tick"] + 1})
            lanes.append({"name": p["name"], "segments": [
                {"kind": s["kind"], "x": x(s["start"]),
                 "w": max(round((min(s["end"], ticks) - s["start"]) * scale, 1), 0.5)}
                for s in segs if s["start"] < ticks]})
    issued = [{"x": x(int(a["tick"])), "tick": int(a["tick"]), "acts": bool(a.get("acts"))}
              for a in record.get("actions") or []]
    executed = [{"x": x(int(e["tick"]) + 0.5), "ok": bool(e.get("ok")), "tick": int(e["tick"]),
                 "line": e.get("line")} for e in record.get("executed") or []]
    lane_h = 18
    top = 40
    height = top + lane_h * (len(lanes) + 2) + 30
    return {
        "width": width, "height": height, "left": left, "top": top, "lane_h": lane_h,
        "x_end": x(ticks),
        "grid": [{"x": x(t), "t": t} for t in range(0, ticks + 1, 3)],
        "labels": [{"x": x(t), "t": t} for t in range(0, ticks + 1, 12)],
        "window": None if not window else {
            "x": x(int(window["onset_tick"])),
            "w": round((int(window["deadline_tick"]) - int(window["onset_tick"]) + 1) * scale, 1),
            "onset": int(window["onset_tick"]), "deadline": int(window["deadline_tick"])},
        "lanes": lanes,
        "robot_y": top + lane_h * len(lanes),
        "issued": issued, "executed": executed,
        "t_I": None if outcome["t_I"] is None else {"x": x(int(outcome["t_I"])),
                                                    "t": int(outcome["t_I"])},
    }


def _windows(replay: Mapping[str, Any] | None, record: Mapping[str, Any],
             t_i: int | None) -> list[dict[str, Any]]:
    if replay is None:
        return []
    executed = record.get("executed") or []
    out = []
    for w in replay["windows"]:
        lines = [e for e in executed if w["tick"] <= int(e["tick"]) < w["end"]] \
            if w["window"] >= 0 else []
        out.append({**w, "executed": lines,
                    "scored": t_i is not None and w["window"] >= 0 and w["tick"] == t_i})
    return out


def _media(record: Mapping[str, Any], run_dir: Path, out: Path, slug: str) -> list[str]:
    """Frames the run saved (``evaluate --videos``): copied into the report."""
    from mindhelper_env.evaluation.safety import agent_file_stem

    found = []
    stem = f"{agent_file_stem(str(record.get('agent')))}-{record['episode_id']}"
    for sub in ("videos", "frames"):
        folder = run_dir / sub
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob(stem + "*")):
            if path.suffix.lower() in (".gif", ".png", ".jpg", ".jpeg", ".webp") \
                    and path.is_file() and not path.is_symlink():
                dest = out / "media" / slug
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest / path.name)
                found.append(f"../../media/{slug}/{path.name}")
    return found


def _charts(out: Path, scored: Mapping[str, Any], suite: str) -> list[dict[str, str]]:
    from mindhelper_env.plots import plot_family, plot_intervals

    table = {a: s["metrics"] for a, s in scored.items()}
    n = max(s["metrics"]["episodes"] for s in scored.values())
    subtitle = f"{suite}, {plural(n, 'episode')}"
    charts = _CHARTS
    (out / "charts").mkdir(parents=True, exist_ok=True)
    plot_intervals({a: (s["metrics"], s["ci"]) for a, s in scored.items()},
                   out / "charts" / "intervals.svg", subtitle=subtitle)
    plot_family(table, out / "charts" / "per_family.svg", subtitle=subtitle)
    return charts


#: What a report folder holds; ``overwrite=True`` clears these and nothing else.
REPORT_ENTRIES = ("index.html", "episodes.html", "episodes", "media", "charts", "provenance.html",
                  "provenance.json", "frames", "legend.png")


def check_out_dir(out: Path, overwrite: bool) -> list[Path]:
    """The entries of ``out`` to clear before writing (none for a missing or empty folder).

    A folder that holds anything is refused unless ``overwrite``; even then, a folder that
    holds anything but a report's own files (:data:`REPORT_ENTRIES`; a run folder, say) is
    refused, so that nothing but an earlier report is ever deleted."""
    if out.is_symlink():
        raise ReportError(f"{out}: a symbolic link (refused)")
    if not out.exists():
        return []
    if not out.is_dir():
        raise ReportError(f"argument --out: {out} exists and is not a directory")
    entries = sorted(out.iterdir())
    if not entries:
        return []
    names = [e.name for e in entries]
    shown = ", ".join(names[:4]) + (" ..." if len(names) > 4 else "")
    foreign = [n for n in names if n not in REPORT_ENTRIES]
    if foreign:
        raise ReportError(f"argument --out: {out} is not empty and holds files that are not a "
                          f"report's ({', '.join(foreign[:4])}{' ...' if len(foreign) > 4 else ''}"
                          "); choose a new or empty folder")
    if not overwrite:
        raise ReportError(f"argument --out: {out} already holds a report ({shown}); add "
                          "--overwrite (overwrite=True) to replace it, or choose a new folder")
    return entries


def write_report(out_dir: str | os.PathLike[str], run_dirs: Sequence[str | os.PathLike[str]],
                 *, seed: int = 0, resamples: int = DEFAULT_RESAMPLES,
                 workers: int | None = None, overwrite: bool = False) -> dict[str, Any]:
    """Write the report of ``run_dirs`` into ``out_dir``; returns ``{"index", "pages",
    "seconds", "timings"}``. Raises ``ImportError`` (:data:`EXTRA_HINT`) without the
    ``report`` extra and :class:`ReportError` for an unusable folder, before writing.

    ``out_dir`` must be missing or empty; with ``overwrite=True`` it may hold an earlier
    report, which is replaced (:func:`check_out_dir`)."""
    check_report_extra()
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    out = Path(out_dir)
    stale = check_out_dir(out, overwrite)
    runs = load_runs(run_dirs)
    settings = runs["settings"]
    workers = max(1, int(workers if workers is not None else (os.cpu_count() or 1)))

    frames_tmp = None  # the vision track's full-size frames, moved into out/frames below
    if (settings.get("env_kwargs") or {}).get("obs_mode") == "rgb":
        import tempfile

        parent = out.resolve().parent
        frames_tmp = Path(tempfile.mkdtemp(prefix=".mh-report-frames-",
                                           dir=parent if parent.is_dir() else None))
    try:
        return _write(out, run_dirs, stale, runs, workers, timings, t0, frames_tmp,
                      seed=seed, resamples=resamples)
    finally:
        if frames_tmp is not None and frames_tmp.exists():
            shutil.rmtree(frames_tmp, ignore_errors=True)


def _write(out: Path, run_dirs: Sequence[str | os.PathLike[str]], stale: list[Path],
           runs: dict[str, Any], workers: int, timings: dict[str, float], t0: float,
           frames_tmp: Path | None, *, seed: int, resamples: int) -> dict[str, Any]:
    """:func:`write_report` once its arguments are checked (``frames_tmp``: where the
    replays write the full-size frames before they move into ``out/frames``)."""
    suite, settings, agents = runs["suite"], runs["settings"], runs["agents"]
    t = time.perf_counter()
    replays = _replay_all(agents, settings, workers, frames_tmp)
    timings["replay"] = time.perf_counter() - t
    refs: dict[str, Any] = {}
    for value in replays.values():
        if isinstance(value, dict):
            ref = value["reference"]
            refs.setdefault(ref["episode_id"], ref)
    missing = {r["episode_id"] for a in agents.values() for r in a["records"]} - set(refs)
    if missing:
        from mindhelper_env.scenarios import suites as _suites

        for info in agents.values():
            for r in info["records"]:
                if r["episode_id"] in missing and r["episode_id"] not in refs:
                    refs[r["episode_id"]] = _suites.reference_record(
                        _suites.suite_episode(suite, int(r["index"])))

    t = time.perf_counter()
    scored = _score(agents, refs, seed=seed, resamples=resamples)
    labels = list(scored)
    slugs = {a: f"a{k}" for k, a in enumerate(labels)}
    pairs = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            p = paired_bootstrap(scored[a]["outcomes"], scored[b]["outcomes"],
                                 resamples=resamples, seed=seed)
            pairs.append({"a": a, "b": b, "id": f"{slugs[a]}-{slugs[b]}", **p})
            pairs.append({"a": b, "b": a, "id": f"{slugs[b]}-{slugs[a]}", **_reversed(p)})
    timings["score"] = time.perf_counter() - t

    out.mkdir(parents=True, exist_ok=True)
    for entry in stale:  # an earlier report (overwrite=True): its files only
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif entry.exists() or entry.is_symlink():
            entry.unlink()
    legend = None
    if frames_tmp is not None:
        shutil.move(str(frames_tmp), str(out / "frames"))
        from mindhelper_env.render.legend import write_legend

        legend = write_legend(out / "legend.png").name  # what the pictures' marks mean
    all_ids = sorted({e for s in scored.values() for e in s["records"]},
                     key=lambda e: (len(e), e))
    families = sorted({refs[e]["family"] for e in all_ids})
    n_help = sum(1 for e in all_ids if refs[e]["needs_intervention"])
    common = {"suite": suite, "agents": labels, "slugs": slugs, "n_episodes": len(all_ids),
              "n_help": n_help, "n_silent": len(all_ids) - n_help, "seed": seed,
              "resamples": resamples, "families": families,
              "run_dirs": [str(d) for d in run_dirs], "legend": legend}
    # The charts and the episode pages are drawn by forked workers that inherit this state
    # (nothing is pickled but the job lists); the index and the episode list meanwhile here.
    global _STATE
    env = _environment()
    env.get_template("episode.html.j2")  # compiled once, before the workers fork
    _STATE = {"out": out, "scored": scored, "agents": agents, "refs": refs,
              "replays": replays, "labels": labels, "slugs": slugs, "common": common,
              "env": env}
    jobs: list[list[tuple[str, str, str | None, str | None]]] = []
    for a in labels:
        (out / "episodes" / slugs[a]).mkdir(parents=True, exist_ok=True)
        ordered = sorted(scored[a]["records"], key=lambda e: (len(e), e))
        for k, e in enumerate(ordered):
            jobs.append([(a, e, ordered[k - 1] if k else None,
                          ordered[k + 1] if k + 1 < len(ordered) else None)])
    n_chunks = max(1, min(len(jobs), workers * 4))
    chunks: list[list[tuple[str, str, str | None, str | None]]] = [[] for _ in range(n_chunks)]
    for k, job in enumerate(jobs):
        chunks[k % n_chunks].extend(job)
    methods = multiprocessing.get_all_start_methods()
    pool = None
    try:
        if workers > 1 and "fork" in methods:
            ctx = multiprocessing.get_context("fork")
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
            chart_job = pool.submit(_charts_job)
            page_jobs = [pool.submit(_pages_job, c) for c in chunks if c]
        t = time.perf_counter()
        charts = _CHARTS
        _write_index(env, out, scored, agents, refs, labels, slugs, pairs, charts, common,
                     all_ids)
        timings["index"] = time.perf_counter() - t
        if pool is None:
            t = time.perf_counter()
            _charts_job()
            timings["charts"] = time.perf_counter() - t
            t = time.perf_counter()
            pages = sum(_pages_job(c) for c in chunks if c)
            timings["pages"] = time.perf_counter() - t
        else:
            t = time.perf_counter()
            chart_job.result()
            pages = sum(f.result() for f in page_jobs)
            timings["charts+pages"] = time.perf_counter() - t
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        _STATE = None
    total = time.perf_counter() - t0
    logger.info("report: %d episode pages in %.1f s (%s)", pages, total,
                ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    return {"index": out / "index.html", "pages": pages, "seconds": round(total, 3),
            "timings": {k: round(v, 3) for k, v in timings.items()}}


#: What the page workers inherit (set by :func:`write_report` only while it runs).
_STATE: dict[str, Any] | None = None
#: The charts of the index page (files under ``charts/``).
_CHARTS = [{"file": "charts/intervals.svg", "title": "Headline metrics with 95 % intervals"},
           {"file": "charts/per_family.svg", "title": "Per family"}]


def _charts_job() -> int:
    st = _STATE
    assert st is not None
    _charts(st["out"], st["scored"], st["common"]["suite"])
    return len(_CHARTS)


def _write_index(env: Any, out: Path, scored: Mapping[str, Any], agents: Mapping[str, Any],
                 refs: Mapping[str, Any], labels: Sequence[str], slugs: Mapping[str, str],
                 pairs: list[dict[str, Any]], charts: list[dict[str, str]],
                 common: Mapping[str, Any], all_ids: Sequence[str]) -> None:
    """``index.html`` (leaderboard, floors, charts, breakdowns, paired comparisons) and
    ``episodes.html`` (every episode, with filters)."""
    from mindhelper_env.report.provenance import provenance_context, write_provenance

    prov = provenance_context(agents)
    leaderboard = []
    for a in labels:
        m = scored[a]["metrics"]
        eff = m.get("efficiency") or {}
        belief = m.get("belief") or {}
        leaderboard.append({
            "agent": a, "slug": slugs[a], "episodes": m["episodes"], "n_help": m["n_help"],
            "n_silent": m["n_silent"],
            "cells": [{"key": k, "value": m.get(k), "ci": scored[a]["ci"].get(k)}
                      for k in CI_METRICS],
            "belief": belief.get("accuracy"), "belief_task": belief.get("task_accuracy"),
            "belief_episodes": belief.get("episodes"),
            "tokens": eff.get("tokens_per_episode"), "calls": eff.get("model_calls_per_episode"),
            "unmeasured": a in prov["unmeasured"],
        })
    write_provenance(out, env, prov, common)
    # what each model-backed agent spent (summary.json's spend, written with --price)
    spend = [{"agent": a, "usd": float(row.get("usd") or 0.0),
              "tokens": int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0),
              "calls": int(row.get("model_calls") or 0)}
             for a in labels for row in [agents[a].get("spend")] if isinstance(row, dict)]
    index_html = env.get_template("index.html.j2").render(
        page="index", root=".", metrics=CI_METRICS, leaderboard=leaderboard,
        model_columns=any(row["tokens"] or row["calls"] for row in leaderboard),
        floors=_floors(scored, agents, refs), breakdown=_breakdown_rows(scored, labels),
        pairs=pairs, charts=charts, prov=prov, spend=spend, **common)
    (out / "index.html").write_text(index_html, encoding="utf-8")
    rows = []
    for e in all_ids:
        ref = refs[e]
        cells = []
        for a in labels:
            if e not in scored[a]["records"]:
                cells.append(None)
                continue
            o = _outcome_of(scored[a], e)
            cells.append({"ok": correct(o), "label": _outcome_label(o),
                          "href": f"episodes/{slugs[a]}/{e}.html"})
        rows.append({"id": e, "family": ref["family"], "help": ref["needs_intervention"],
                     "cells": cells})
    (out / "episodes.html").write_text(env.get_template("episodes.html.j2").render(
        page="episodes", root=".", rows=rows, **common), encoding="utf-8")


def _pages_job(items: list[tuple[str, str, str | None, str | None]]) -> int:
    """Write the episode pages ``(agent, episode, previous, next)``; returns how many."""
    st = _STATE
    assert st is not None
    out, scored, refs, replays = st["out"], st["scored"], st["refs"], st["replays"]
    labels, slugs, common = st["labels"], st["slugs"], st["common"]
    page_tpl = st["env"].get_template("episode.html.j2")
    for a, e, prev, nxt in items:
        rec = scored[a]["records"][e]
        ref = refs[e]
        o = _outcome_of(scored[a], e)
        replay = replays.get(_replay_key(rec))
        replay_error = replay if isinstance(replay, str) else None
        replay = replay if isinstance(replay, dict) else None
        others = []
        for b in labels:
            if e in scored[b]["records"]:
                ob = _outcome_of(scored[b], e)
                others.append({"agent": b, "ok": correct(ob), "label": _outcome_label(ob),
                               "href": f"../{slugs[b]}/{e}.html", "self": b == a})
        html = page_tpl.render(
            page="episode", root="../..", agent=a, episode_id=e, ref=ref, record=rec,
            outcome=o, outcome_label=_outcome_label(o), ok=correct(o),
            replay=replay, replay_error=replay_error,
            timeline=_timeline(replay, rec, ref, o),
            windows=fold_quiet_windows(_frame_files(
                _windows(replay, rec, o["t_I"]), out / "episodes" / slugs[a] / f"{e}-frames",
                f"{e}-frames"), ref.get("window")),
            why_no_help=why_no_help(ref, (replay.get("target") or {}).get("name")
                                    if replay is not None else None),
            beliefs=_belief_rows(replay, rec) if replay is not None else None,
            calls=_model_calls(rec),
            media=_media(rec, st["agents"][a]["run_dir"], out, slugs[a]),
            others=others, prev=f"{prev}.html" if prev else None,
            next=f"{nxt}.html" if nxt else None, **common)
        (out / "episodes" / slugs[a] / f"{e}.html").write_text(html, encoding="utf-8")
    return len(items)


def _frame_files(windows: list[dict[str, Any]], folder: Path, href: str) -> list[dict[str, Any]]:
    """The vision track's windows with their contact sheets written to ``folder`` (one PNG a
    window, ``w<window>.png``; the reset view ``reset.png``) and ``"sheet"`` set to the
    file's address from the page (``"full"``: the addresses of the frames at native size);
    text-track windows are returned as they are."""
    out = []
    for w in windows:
        frames = w.get("frames")
        if not isinstance(frames, bytes):
            out.append(w)
            continue
        name = "reset.png" if w["window"] < 0 else f"w{w['window']}.png"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(frames)
        view = {**{k: v for k, v in w.items() if k != "frames"}, "sheet": f"{href}/{name}"}
        if w.get("full"):  # the frames at native size, under the report's frames/
            view["full"] = [f"../../{f}" for f in w["full"]]
        out.append(view)
    return out


def _reversed(pair: Mapping[str, Any]) -> dict[str, Any]:
    """B − A from A − B: the same resamples, so the interval is the mirror image."""
    metrics = {}
    for k, m in pair["metrics"].items():
        ci = m["ci"]
        metrics[k] = {"a": m["b"], "b": m["a"],
                      "diff": None if m["diff"] is None else round(-m["diff"], 2) + 0.0,
                      "ci": None if ci is None else [round(-ci[1], 2) + 0.0,
                                                     round(-ci[0], 2) + 0.0]}
    return {"episodes": pair["episodes"], "disagree": pair["disagree"],
            "a_only": pair["b_only"], "b_only": pair["a_only"], "metrics": metrics}


def _outcome_of(scored_agent: dict[str, Any], episode_id: str) -> dict[str, Any]:
    cache = scored_agent.get("_by_id")
    if cache is None:
        cache = scored_agent["_by_id"] = {o["episode_id"]: o for o in scored_agent["outcomes"]}
    return cache[episode_id]


def _breakdown_rows(scored: Mapping[str, Any], labels: Sequence[str]) -> list[dict[str, Any]]:
    """Sections (family, task type, ability) of rows ``{name, episodes, n_help, n_silent,
    values: [PHA, PHR, PSR per agent]}``; counts are the first agent's that has the group."""
    sections = []
    first = scored[labels[0]]["metrics"]
    fams = sorted({f for a in labels for f in (scored[a]["metrics"].get("per_family") or {})})
    rows = []
    for f in fams:
        counts = next((scored[a]["metrics"]["per_family"][f] for a in labels
                       if f in (scored[a]["metrics"].get("per_family") or {})), {})
        rows.append({"name": f, "episodes": counts.get("episodes", 0),
                     "n_help": counts.get("n_help", 0), "n_silent": counts.get("n_silent", 0),
                     "values": [((scored[a]["metrics"].get("per_family") or {}).get(f) or {})
                                for a in labels]})
    sections.append({"title": "family", "rows": rows,
                     "note": "help families: PHR; silent families: PSR"})
    for key, title in (("task_type", "task type"), ("ability", "ability"),
                       ("twin_group", "twin group")):
        rows = []
        for name, block in ((first.get("breakdown") or {}).get(key) or {}).items():
            rows.append({"name": name, "episodes": block.get("episodes", 0),
                         "n_help": block.get("n_help", 0), "n_silent": block.get("n_silent", 0),
                         "values": [((scored[a]["metrics"].get("breakdown") or {}).get(key) or {})
                                    .get(name) or {} for a in labels]})
        sections.append({"title": title, "rows": rows, "note": "PHA (PHR / PSR)"})
    return sections
