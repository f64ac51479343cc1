"""The pixel-perception reference on the vision track (``python benchmarks/bench_perception.py``).

Three measurements (docs/vision.md, "The pixel parser"):

1. **events** (``--events SUITE...``, default ``vh-dev-v5 tdw-dev-v5``): every episode is
   played twice in lockstep with the same actions (the text belief tracker's), once with
   ``obs_mode="text"`` and once with ``obs_mode="rgb"``; each window's frames go through
   :class:`~mindhelper_env.perception.PixelPerception` and its events are compared with
   the text events by ``(tick, actor, verb, arg ids, room, contents)``. Prints precision
   and recall per verb (goal: >= 99.5 % each), and how often the perceived state (rooms,
   holdings, object locations, open containers) differs from text mode's ``info``.
2. **tracker** (``--pha SUITE...``, default ``vh-test-v5 tdw-test-v5``): PHA of
   ``belief-tracker`` with ``observe="pixels"`` on the suite played in ``rgb`` mode, beside
   the text tracker's on the same episodes, the episodes whose decisions (tick, program) or
   belief tables at the intervention differ, and the wall and CPU time of the pixel-fed run
   (goal: PHA >= 99; full ``vh-test-v5`` in <= 10 min on 2 cores: the CPU seconds per
   episode are printed with what they make for 1,000 episodes on 2 cores, which a loaded
   machine's wall time does not show).
3. **instruments** (``--instruments SUITE...``, default ``vh-dev-v5 tdw-dev-v5``): the non-mind
   instruments (``physical-rules``, ``coarse-mind``) fed by pixels beside text
   (goal: within 2 PHA).

``--limit N`` plays the first N episodes of each suite; ``--workers`` plays in processes;
``--frame-size`` is the rgb frames' size; ``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from mindhelper_env.agents import make_agent
from mindhelper_env.evaluation.episode import make_env, run_episode, suite_env_id
from mindhelper_env.metrics import compute_metrics
from mindhelper_env.perception import MIN_FRAME_SIZE, EventScore, PixelPerception, text_view
from mindhelper_env.scenarios.suites import SUITES, suite_references

DEFAULT_FRAME_SIZE = MIN_FRAME_SIZE


def _state_diffs(text_info: dict[str, Any], view_info: dict[str, Any]) -> list[str]:
    """Which state fields of the perceived ``info`` differ from text mode's."""
    out = []
    tc, vc = text_info["candidates"], view_info["candidates"]
    for key, fields in (("actors", ("room", "holding")), ("objects", ("location",)),
                        ("locations", ("open",))):
        want = {d["id"]: tuple(d.get(f) for f in fields) for d in tc.get(key, [])}
        got = {d["id"]: tuple(d.get(f) for f in fields) for d in vc.get(key, [])}
        if want != got:
            out.append(key)
    robot_t, robot_v = text_info.get("robot", {}), view_info.get("robot", {})
    if (robot_t.get("room"), robot_t.get("holding")) != (robot_v.get("room"), robot_v.get("holding")):
        out.append("robot")
    if "doors" in text_info:
        if [(d["id"], d["open"]) for d in text_info["doors"]] != \
                [(d["id"], d["open"]) for d in view_info.get("doors", [])]:
            out.append("doors")
    return out


def events_chunk(job: tuple[str, list[int], int]) -> dict[str, Any]:
    """Play episodes ``indices`` of ``suite`` in lockstep (text, rgb); score the events."""
    suite, indices, size = job
    env_id = suite_env_id(suite)
    text_env = make_env(env_id)
    rgb_env = make_env(env_id, obs_mode="rgb", frame_size=size)
    driver = make_agent("belief-tracker")
    score = EventScore()
    windows = state_bad = unreadable = 0
    bad_fields: dict[str, int] = {}
    seconds = 0.0
    for i in indices:
        opts = {"suite": suite, "index": i}
        tobs, tinfo = text_env.reset(options=opts)
        frames, rinfo = rgb_env.reset(options=opts)
        driver.reset()
        perception = PixelPerception()
        t0 = time.perf_counter()
        perceived = perception.reset(frames, rinfo)
        seconds += time.perf_counter() - t0
        while True:
            view = text_view(perceived, rinfo)[1]
            diffs = _state_diffs(tinfo, view)
            windows += 1
            if diffs:
                state_bad += 1
                for d in diffs:
                    bad_fields[d] = bad_fields.get(d, 0) + 1
            unreadable += perceived.unreadable
            action = driver.act(tobs, tinfo)
            tobs, _, te, tr, tinfo = text_env.step(action)
            frames, _, rte, rtr, rinfo = rgb_env.step(action)
            if (te or tr) != (rte or rtr):
                raise RuntimeError(f"{suite}/{i}: the text and rgb episodes ended apart")
            t0 = time.perf_counter()
            perceived = perception.observe(frames, rinfo)
            seconds += time.perf_counter() - t0
            score.add(tinfo["events"], perceived.events)
            if te or tr:
                break
    return {"score": score, "windows": windows, "state_bad": state_bad,
            "bad_fields": bad_fields, "unreadable": unreadable, "seconds": seconds}


def play_chunk(job: tuple[str, str, dict[str, Any], list[int], str, int]) -> list[dict[str, Any]]:
    """Records of agent ``name`` (with ``kwargs``) on episodes ``indices``, ``obs`` mode."""
    suite, name, kwargs, indices, obs, size = job
    env_kw = {"obs_mode": "rgb", "frame_size": size} if obs == "rgb" else {}
    cpu = time.process_time()
    env = make_env(suite_env_id(suite), **env_kw)
    agent = make_agent(name, **kwargs)
    out = []
    for i in indices:
        rec = run_episode(env, agent, options={"suite": suite, "index": i}, timing=False)
        rec["agent"] = name
        out.append(rec)
    if out:  # this process's CPU time, on the chunk's first record (popped by the caller)
        out[0]["_cpu_seconds"] = time.process_time() - cpu
    return out


def _split(indices: list[int], parts: int) -> list[list[int]]:
    parts = max(1, min(parts, len(indices)))
    return [indices[k::parts] for k in range(parts)]


def _map(fn: Any, jobs: list[Any], workers: int) -> list[Any]:
    if workers <= 1:
        return [fn(j) for j in jobs]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(fn, jobs))


def _indices(suite: str, limit: int | None) -> list[int]:
    n = SUITES[suite]["n"]
    return list(range(n if limit is None else min(n, limit)))


def measure_events(suite: str, limit: int | None, workers: int, size: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    parts = _map(events_chunk, [(suite, ix, size) for ix in _split(_indices(suite, limit), workers)],
                 workers)
    score = EventScore()
    total: dict[str, Any] = {"windows": 0, "state_bad": 0, "unreadable": 0, "seconds": 0.0,
                             "bad_fields": {}}
    for p in parts:
        score.merge(p["score"])
        for k in ("windows", "state_bad", "unreadable", "seconds"):
            total[k] += p[k]
        for f, n in p["bad_fields"].items():
            total["bad_fields"][f] = total["bad_fields"].get(f, 0) + n
    total.update(suite=suite, episodes=len(_indices(suite, limit)), verbs=score.table(),
                 missed=[list(k) for k in score.missed], spurious=[list(k) for k in score.spurious],
                 wall_seconds=time.perf_counter() - t0)
    return total


def measure_agents(suite: str, limit: int | None, workers: int, size: int,
                   agents: list[str]) -> dict[str, Any]:
    refs = suite_references(suite)
    indices = _indices(suite, limit)
    out: dict[str, Any] = {"suite": suite, "episodes": len(indices), "agents": {}}
    for name in agents:
        row: dict[str, Any] = {}
        decisions: dict[str, dict[str, Any]] = {}
        for obs, kwargs in (("text", {}), ("rgb", {"observe": "pixels"})):
            t0 = time.perf_counter()
            jobs = [(suite, name, kwargs, ix, obs, size) for ix in _split(indices, workers)]
            recs = [r for part in _map(play_chunk, jobs, workers) for r in part]
            wall = time.perf_counter() - t0
            cpu = sum(r.pop("_cpu_seconds", 0.0) for r in recs)
            m = compute_metrics(recs, refs, by_family=False)
            row[obs] = {"PHA": 100 * m["PHA"], "PIA": 100 * m["PIA"], "wall_seconds": wall,
                        # acts that raised (e.g. frames below the layout's size): "none"
                        "fallbacks": sum(r["usage"].get("fallbacks", 0) for r in recs),
                        "cpu_seconds": cpu, "cpu_seconds_per_episode": cpu / max(1, len(recs))}
            # what the agent did and when, and its belief tables when it first acted
            decisions[obs] = {r["episode_id"]: ([(a.get("tick"), a.get("program"))
                                                 for a in r.get("actions", [])],
                                                (r.get("belief") or {}).get("agent"))
                              for r in recs}
        apart = sorted(e for e in decisions["text"] if decisions["text"][e] != decisions["rgb"].get(e))
        row["episodes_decided_apart"] = len(apart)
        row["apart"] = apart[:20]
        # of which: the interventions (tick, program) differ; only the belief tables differ
        row["interventions_apart"] = sum(
            decisions["text"][e][0] != decisions["rgb"].get(e, (None,))[0] for e in apart)
        row["beliefs_apart"] = row["episodes_decided_apart"] - row["interventions_apart"]
        row["PHA_gap"] = row["rgb"]["PHA"] - row["text"]["PHA"]
        out["agents"][name] = row
    return out


def _print_events(res: dict[str, Any]) -> None:
    print(f"\n== events: {res['suite']}, {res['episodes']} episodes, {res['windows']} windows "
          f"({res['wall_seconds']:.0f} s; perception {res['seconds']:.1f} s)")
    print(f"{'verb':<12}{'events':>8}{'precision':>11}{'recall':>9}{'fp':>6}{'fn':>6}")
    for verb, v in res["verbs"].items():
        print(f"{verb:<12}{v['events']:>8}{100 * v['precision']:>10.2f}%{100 * v['recall']:>8.2f}%"
              f"{v['fp']:>6}{v['fn']:>6}")
    print(f"windows whose perceived state differs from text mode's info: {res['state_bad']} "
          f"{res['bad_fields'] or ''}; unreadable marks/events: {res['unreadable']}")
    if res["missed"]:
        print("  missed (first):", res["missed"][:5])
    if res["spurious"]:
        print("  spurious (first):", res["spurious"][:5])


def _print_agents(res: dict[str, Any]) -> None:
    print(f"\n== agents fed by pixels: {res['suite']}, {res['episodes']} episodes")
    for name, row in res["agents"].items():
        print(f"{name:<16} PHA text {row['text']['PHA']:.1f}  pixels {row['rgb']['PHA']:.1f} "
              f"(gap {row['PHA_gap']:+.1f}); fallbacks {row['rgb']['fallbacks']}; "
              "episodes decided apart: "
              f"{row['episodes_decided_apart']} {row['apart'][:5] or ''} "
              f"(interventions {row.get('interventions_apart', '?')}, belief tables only "
              f"{row.get('beliefs_apart', '?')}); wall text {row['text']['wall_seconds']:.0f} s, "
              f"rgb+pixels {row['rgb']['wall_seconds']:.0f} s (CPU "
              f"{row['rgb']['cpu_seconds_per_episode']:.2f} s/episode: "
              f"{row['rgb']['cpu_seconds_per_episode'] * 1000 / 2 / 60:.1f} min per 1,000 "
              "episodes on 2 cores)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", nargs="*", default=["vh-dev-v5", "tdw-dev-v5"])
    ap.add_argument("--pha", nargs="*", default=["vh-test-v5", "tdw-test-v5"])
    ap.add_argument("--instruments", nargs="*", default=["vh-dev-v5", "tdw-dev-v5"])
    ap.add_argument("--limit", type=int, default=None, help="first N episodes of each suite")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--frame-size", type=int, default=DEFAULT_FRAME_SIZE)
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    # the envs and the renderer are imported here, before any worker forks: every worker
    # measures the code this run started with
    make_env("MindHelper-VirtualHome-v3", obs_mode="rgb", frame_size=args.frame_size).close()
    out: dict[str, Any] = {"frame_size": args.frame_size, "limit": args.limit,
                           "events": [], "tracker": [], "instruments": []}
    ok = True
    for suite in args.events:
        res = measure_events(suite, args.limit, args.workers, args.frame_size)
        _print_events(res)
        out["events"].append(res)
        ok &= all(v["precision"] >= 0.995 and v["recall"] >= 0.995 for v in res["verbs"].values())
    for suite in args.pha:
        res = measure_agents(suite, args.limit, args.workers, args.frame_size, ["belief-tracker"])
        _print_agents(res)
        out["tracker"].append(res)
        ok &= res["agents"]["belief-tracker"]["rgb"]["PHA"] >= 99.0
    for suite in args.instruments:
        res = measure_agents(suite, args.limit, args.workers, args.frame_size,
                             ["physical-rules", "coarse-mind"])
        _print_agents(res)
        out["instruments"].append(res)
        ok &= all(abs(r["PHA_gap"]) <= 2.0 for r in res["agents"].values())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    print("\nall goals met" if ok else "\nsome goal NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
