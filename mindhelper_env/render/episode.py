"""Record an episode as frames and a timeline, and save them (``mindhelper render``).

:func:`record_episode` plays one episode through the plain Gymnasium API and, through the
env's per-tick hook (``env.unwrapped.on_tick``), draws one top-down frame per tick and notes
each person's room and activity; a frame's captions are the events of the window being played
so far, as the robot reads them. :func:`save_episode_media` writes the video (``.gif`` or
``.mp4``) and ``<stem>-timeline.png`` next to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mindhelper_env.render.text import narrate_event
from mindhelper_env.render.video import VIDEO_FORMATS, check_output_path

__all__ = ["EpisodeRecording", "record_episode", "save_episode_media", "timeline_path"]


@dataclass
class EpisodeRecording:
    """Frames (one per tick, plus the start), the timeline record and the result record."""

    frames: list[np.ndarray] = field(default_factory=list)
    timeline: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)


class _Recorder:
    def __init__(self, env: Any, size: int) -> None:
        from mindhelper_env.render.topdown import TopDownRenderer

        self.env = env.unwrapped
        self.renderer = TopDownRenderer(size=size)
        self.frames: list[np.ndarray] = []
        self.lanes: dict[str, list[dict[str, Any]]] = {}
        self.captions: list[str] = []
        self.window: int | None = None

    def frame(self, sim: Any, events: list[Any], *, lanes: bool = True) -> None:
        names = self.env.character_names
        window = getattr(self.env, "_window", None)  # the observation window being played
        if window != self.window:  # captions tell the current window only, as the robot reads
            self.captions, self.window = [], window
        new = [f"[t={ev.tick}] " + narrate_event(sim.world, ev, names) for ev in events]
        self.captions = self.captions + new
        self.frames.append(self.renderer.render(
            sim.world,
            actors={a.id: (a.name, a.kind) for a in sim.actors},
            captions=self.captions,
            title=f"tick {sim.tick}",
            cache_key=id(sim),
        ))
        if lanes:
            self._lanes(sim)

    def _lanes(self, sim: Any) -> None:
        w = sim.world
        for a in sim.actors:
            room = w.chars[a.id].room
            rname = w.graph.nodes[room].class_name if room is not None else "?"
            label = f"{rname}: {a.doing or a.status or 'idle'}"
            lane = self.lanes.setdefault(a.name, [])
            t = max(sim.tick - 1, 0)
            if lane and lane[-1]["label"] == label and lane[-1]["end"] >= t:
                lane[-1]["end"] = t + 1
            else:
                lane.append({"start": t, "end": t + 1, "label": label})

    def __call__(self, sim: Any, events: list[Any]) -> None:
        self.frame(sim, events)


def record_episode(env: Any, agent: Any, *, seed: int | None = None,
                   options: dict[str, Any] | None = None, size: int = 256,
                   agent_name: str | None = None) -> EpisodeRecording:
    """Play one episode with ``agent`` and record a frame per tick and a timeline."""
    rec = _Recorder(env, size)
    obs, info = env.reset(seed=seed, options=options)
    agent.reset(seed=seed)
    rec.frame(env.unwrapped.simulation, [], lanes=False)
    env.unwrapped.on_tick = rec
    try:
        while True:
            obs, _, term, trunc, info = env.step(agent.act(obs, info))
            if term or trunc:
                break
    finally:
        env.unwrapped.on_tick = None
    record = info["episode_record"]
    ref = record["reference"]
    sim = env.unwrapped.simulation
    timeline = {
        "episode_id": record["episode_id"],
        "ticks": max(int(record["ticks"]), 1),
        "lanes": rec.lanes,
        "robot_actions": [{"tick": ln.tick, "label": ln.line, "ok": ln.ok}
                          for ln in sim.robot_lines],
        "window": ref.get("window"),
        "outcome": "success" if record["focus_success"] else "failure",
        "agent": agent_name or str(getattr(agent, "name", type(agent).__name__)),
        "family": ref.get("family", ""),
    }
    return EpisodeRecording(frames=rec.frames, timeline=timeline, record=record)


def timeline_path(video: str | Path) -> Path:
    """``ep3.gif`` -> ``ep3-timeline.png`` (same folder)."""
    p = Path(video)
    return p.with_name(f"{p.stem}-timeline.png")


def check_video_path(path: str | Path) -> Path:
    """Check a video output path (``.gif``/``.mp4``, existing writable folder) up front."""
    return check_output_path(path, VIDEO_FORMATS, kind="video")


def save_episode_media(recording: EpisodeRecording, video: str | Path, *,
                       fps: float = 4) -> tuple[Path, Path]:
    """Write the video and its timeline PNG; returns both paths."""
    from mindhelper_env.render.timeline import plot_timeline
    from mindhelper_env.render.video import write_video

    p = check_video_path(video)
    out = write_video(recording.frames, p, fps=fps)
    tl = plot_timeline(recording.timeline, timeline_path(p))
    return out, tl
