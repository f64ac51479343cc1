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
frame of the window before: an unchanged window is a quiet one), and no narration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["replay_episode", "Replayer", "window_sheet", "SHEET_WIDTH"]

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


def _window_view(obs: Any, last: Any) -> tuple[dict[str, Any], Any]:
    """The page's view of one observation: narration (text track), or the window's sheet
    and whether it changed (rgb track); and the frame the next window is compared with."""
    import numpy as np

    if not isinstance(obs, np.ndarray):
        return {"narration": str(obs["narration"])}, None
    frames = obs if obs.ndim == 4 else obs[None]
    changed = last is None or any(not np.array_equal(f, last) for f in frames)
    return {"narration": "", "frames": window_sheet(frames), "changed": bool(changed)}, \
        frames[-1].copy()


class Replayer:
    """One env per (env id, env kwargs), reused across episodes."""

    def __init__(self, env_id: str = "MindHelper-VirtualHome-v3",
                 env_kwargs: Mapping[str, Any] | None = None) -> None:
        import gymnasium as gym

        import mindhelper_env  # noqa: F401  (registers the envs)

        self.env = gym.make(env_id, **dict(env_kwargs or {}))

    def close(self) -> None:
        self.env.close()

    def replay(self, record: Mapping[str, Any], *, seed: int | None = None) -> dict[str, Any]:
        return replay_episode(self.env, record, seed=seed)


def _name(world: Any, nid: int | None, names: Mapping[int, str]) -> str | None:
    if nid is None:
        return None
    if nid in names:
        return names[nid]
    node = world.graph.nodes.get(nid)
    return f"{node.class_name} ({nid})" if node is not None else f"({nid})"


def replay_episode(env: Any, record: Mapping[str, Any], *, seed: int | None = None) -> dict[str, Any]:
    """Replay ``record`` (a result record with ``suite`` and ``index``) in ``env``.

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
    view, last = _window_view(obs, None)
    windows: list[dict[str, Any]] = [{"window": -1, "tick": 0, "end": 0, **view,
                                      "program": None}]
    try:
        done = False
        while not done:
            tick = int(info["tick"])
            program = programs.get(tick, "none")
            obs, _r, term, trunc, info = env.step(program)
            view, last = _window_view(obs, last)
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
