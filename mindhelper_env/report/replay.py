"""Replay a recorded episode to recover what the record does not keep (the report is post-hoc,
so ground truth is allowed here).

A result record keeps the robot's programs with their issue ticks, not the narration nor
anyone's mind. :func:`replay_episode` resets the suite episode, issues each recorded program at
its recorded tick (``none`` otherwise) and collects, window by window, the narration the robot
read, and tick by tick every person's true belief about the task object and where that object
really is. The env is deterministic, so the replay is the recorded episode; ``matches`` says
whether the replayed programs, executed lines and outcome equal the record's (a record written
by another env version may differ: the page then says so).

On the vision track (a run with ``obs_mode="rgb"``) the replay re-renders the frames the
agent saw (the env is deterministic, so they are the frames of the run): each window keeps
one contact sheet of its frames as PNG bytes (``"frames"``, at most :data:`SHEET_WIDTH`
pixels wide; :func:`window_sheet`) and ``"changed"`` (whether any frame differs from the last
frame of the window before: an unchanged window is a quiet one), and no narration. With a
``frames_dir``, every frame is also written there at its native size
(:func:`write_full_frames`: ``reset-K.png``, ``wW-K.png``, one PNG a frame, palette colours
exact) and each window lists the files in ``"full"`` (``"<frames_href>/<file>"``) and the
frames' size in ``"full_size"`` ``[height, width]``: the report's full-size view. They go
to disk as they are drawn, never into the replay's result, so a report of many episodes
holds no more in memory than before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["replay_episode", "Replayer", "window_sheet", "write_full_frames", "frame_png",
           "SHEET_WIDTH"]

#: The widest contact sheet the episode page shows (wider sheets are scaled down by an
#: integer factor, nearest pixel).
SHEET_WIDTH = 480


def window_sheet(frames: Any) -> bytes:
    """PNG bytes of one window's frames side by side (a row, 2 white pixels apart), scaled
    down by the smallest integer factor that fits :data:`SHEET_WIDTH`."""
    import io

    import numpy as np
    from PIL import Image

    arr = np.asarray(frames, dtype=np.uint8)
    if arr.ndim == 3:
        arr = arr[None]
    n, h, w = arr.shape[:3]
    sheet = np.full((h, n * w + (n - 1) * 2, 3), 255, dtype=np.uint8)
    for k in range(n):
        sheet[:, k * (w + 2): k * (w + 2) + w] = arr[k]
    step = -(-sheet.shape[1] // SHEET_WIDTH)
    if step > 1:
        sheet = sheet[::step, ::step]
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(sheet)).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def frame_png(frame: Any) -> bytes:
    """PNG bytes of one RGB frame at its native size: a palette PNG whose colours are the
    frame's own (:data:`~mindhelper_env.render.sprites.PALETTE`; small and fast to write),
    or an RGB PNG when a pixel is no palette colour."""
    import io

    import numpy as np
    from PIL import Image

    from mindhelper_env.render.sprites import PALETTE, palette_index

    arr = np.ascontiguousarray(np.asarray(frame, dtype=np.uint8))
    idx = palette_index(arr)
    buf = io.BytesIO()
    if idx.size and int(idx.min()) >= 0:
        img = Image.fromarray(idx.astype(np.uint8))  # mode L; putpalette makes it P
        img.putpalette(PALETTE.reshape(-1).tolist())
        img.save(buf, format="PNG")
    else:
        Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def write_full_frames(frames: Any, folder: Any, stem: str,
                      previous: list[Any] | None = None) -> list[str]:
    """Write each frame of a window to ``folder`` at its native size (``<stem>-<k>.png``,
    :func:`frame_png`); returns the file names, oldest first. A frame equal to the one
    before it is not written again: its name is the earlier file's. ``previous`` (a list
    ``[frame, name]``, updated) carries the last frame over from the window before."""
    from pathlib import Path

    import numpy as np

    arr = np.asarray(frames, dtype=np.uint8)
    if arr.ndim == 3:
        arr = arr[None]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    last = previous if previous is not None else []
    names = []
    for k, frame in enumerate(arr):
        if len(last) == 2 and np.array_equal(last[0], frame):
            names.append(last[1])
            continue
        name = f"{stem}-{k}.png"
        (folder / name).write_bytes(frame_png(frame))
        last[:] = [frame.copy(), name]
        names.append(name)
    return names


def _window_view(obs: Any, last: Any, full: tuple[Any, str, str, list[Any]] | None = None
                 ) -> tuple[dict[str, Any], Any]:
    """The page's view of one observation: narration (text track), or the window's sheet
    and whether it changed (rgb track; with ``full`` = ``(folder, href, stem, previous)``
    its frames at native size too, :func:`write_full_frames`); and the frame the next
    window is compared with."""
    import numpy as np

    if not isinstance(obs, np.ndarray):
        return {"narration": str(obs["narration"])}, None
    frames = obs if obs.ndim == 4 else obs[None]
    changed = last is None or any(not np.array_equal(f, last) for f in frames)
    view: dict[str, Any] = {"narration": "", "frames": window_sheet(frames),
                            "changed": bool(changed)}
    if full is not None:
        folder, href, stem, previous = full
        view["full"] = [f"{href}/{n}"
                        for n in write_full_frames(frames, folder, stem, previous)]
        view["full_size"] = [int(frames.shape[1]), int(frames.shape[2])]
    return view, frames[-1].copy()


class Replayer:
    """One env per (env id, env kwargs), reused across episodes."""

    def __init__(self, env_id: str = "MindHelper-VirtualHome-v3",
                 env_kwargs: Mapping[str, Any] | None = None) -> None:
        import gymnasium as gym

        import mindhelper_env  # noqa: F401  (registers the envs)

        self.env = gym.make(env_id, **dict(env_kwargs or {}))

    def close(self) -> None:
        self.env.close()

    def replay(self, record: Mapping[str, Any], *, seed: int | None = None,
               frames_dir: Any = None, frames_href: str = "") -> dict[str, Any]:
        return replay_episode(self.env, record, seed=seed, frames_dir=frames_dir,
                              frames_href=frames_href)


def _name(world: Any, nid: int | None, names: Mapping[int, str]) -> str | None:
    if nid is None:
        return None
    if nid in names:
        return names[nid]
    node = world.graph.nodes.get(nid)
    return f"{node.class_name} ({nid})" if node is not None else f"({nid})"


def replay_episode(env: Any, record: Mapping[str, Any], *, seed: int | None = None,
                   frames_dir: Any = None, frames_href: str = "") -> dict[str, Any]:
    """Replay ``record`` (a result record with ``suite`` and ``index``) in ``env``; on the
    vision track with ``frames_dir``, every frame is written there at native size (see the
    module docstring; ``frames_href`` prefixes the file names in ``"full"``).

    Returns ``{"windows": [{"window", "tick", "end", "narration", "program"}],
    "target": {"id", "name"} | None, "people": [{"id", "name"}],
    "truth": [{"tick", "location", "beliefs": {person_id: place_name | None}}],
    "names": {node_id: name}, "matches": bool}``.
    """
    base = env.unwrapped
    suite, index = record.get("suite"), record.get("index")
    if not isinstance(suite, str) or not isinstance(index, int):
        raise ValueError("the record has no suite and index to replay")
    programs: dict[int, str] = {}
    for action in record.get("actions") or []:
        programs.setdefault(int(action["tick"]), str(action["program"]))
    truth: list[dict[str, Any]] = []
    state: dict[str, Any] = {}

    def snapshot(sim: Any, _events: Any = None) -> None:
        target = state["target"]
        if target is None:
            return
        world = sim.world
        beliefs = {a.id: _name(world, a.beliefs.get(target), state["names"])
                   for a in sim.actors}
        loc = world.holder(target)
        if loc is None:
            loc = world.location(target)
        truth.append({"tick": int(sim.tick), "location": _name(world, loc, state["names"]),
                      "beliefs": beliefs})

    obs, info = env.reset(seed=seed, options={"suite": suite, "index": index})
    ref = base.ground_truth
    sim = base.simulation
    names = dict(base.character_names)
    names.setdefault(1, "Robot")
    state["names"] = names
    state["target"] = ref.target_object
    people = [{"id": a.id, "name": a.name} for a in sim.actors]
    snapshot(sim)
    base.on_tick = snapshot
    written: list[Any] = []  # the last frame written at native size, and its file

    def full(stem: str) -> tuple[Any, str, str, list[Any]] | None:
        return None if frames_dir is None else (frames_dir, frames_href, stem, written)

    view, last = _window_view(obs, None, full("reset"))
    windows: list[dict[str, Any]] = [{"window": -1, "tick": 0, "end": 0, **view,
                                      "program": None}]
    try:
        done = False
        while not done:
            tick = int(info["tick"])
            program = programs.get(tick, "none")
            obs, _r, term, trunc, info = env.step(program)
            view, last = _window_view(obs, last, full(f"w{int(info['window']) - 1}"))
            windows.append({"window": int(info["window"]) - 1, "tick": tick,
                            "end": int(info["tick"]), **view,
                            "program": None if program == "none" else program})
            done = term or trunc
    finally:
        base.on_tick = None
    final = base.episode_record()
    matches = (final["actions"] == list(record.get("actions") or [])
               and final["executed"] == list(record.get("executed") or [])
               and final["focus_success"] == record.get("focus_success")
               and final["harm"] == record.get("harm"))
    target = None
    if ref.target_object is not None:
        target = {"id": ref.target_object,
                  "name": _name(sim.world, ref.target_object, names)}
    return {"windows": windows, "target": target, "people": people, "truth": truth,
            "names": {int(k): v for k, v in names.items()}, "matches": bool(matches),
            "reference": ref.to_dict()}
