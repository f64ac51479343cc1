"""The household env's observations: the spaces of its ``obs_mode`` values and the
vision track's ``obs_mode="rgb"`` (frames only; :class:`RgbObservation`).

``"text"`` and ``"text+rgb"`` are built by :class:`~mindhelper_env.envs.virtualhome.
MindHelperEnv` itself; this module gives their spaces and the ``text+rgb`` frame renderer.
In ``"rgb"`` the observation is a ``(window_ticks, S, S, 3)`` uint8 array, one frame per
tick of the window, drawn by :class:`~mindhelper_env.render.frames.FrameRenderer`, and
``info`` holds only what is needed to act (:meth:`RgbObservation.info`): no events, no
narration, nothing that says where movable things are now.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from mindhelper_env.backends.symbolic import ROBOT_ID
from mindhelper_env.envs.frame_size import warn_lossy
from mindhelper_env.envs.records import record_info
from mindhelper_env.render.text import CHARSET

__all__ = ["OBS_MODES", "check_obs_mode", "observation_space", "RgbObservation",
           "make_topdown_renderer"]

#: The observation modes of the household envs.
OBS_MODES = ("text", "text+rgb", "rgb")


def check_obs_mode(obs_mode: Any) -> str:
    if obs_mode not in OBS_MODES:
        raise ValueError(f"obs_mode must be one of {list(OBS_MODES)}, got {obs_mode!r}")
    return str(obs_mode)


def observation_space(obs_mode: str, *, max_ticks: int, frame_size: int, frame_stack: int,
                      window_ticks: int, narration_max: int, events_max: int) -> spaces.Space:
    """The observation space of a mode: a ``Dict`` for ``text`` and ``text+rgb``, a plain
    ``Box(0, 255, (window_ticks, S, S, 3), uint8)`` for ``rgb``."""
    if obs_mode == "rgb":
        if frame_stack != 1:
            raise ValueError("frame_stack is for obs_mode='text+rgb'; with 'rgb' obs holds "
                             "every frame of the window (stack windows with gymnasium's "
                             "FrameStackObservation over mindhelper_env.wrappers.WindowImage)")
        return spaces.Box(0, 255, (window_ticks, frame_size, frame_size, 3), np.uint8)
    charset = "".join(sorted(CHARSET))
    space = spaces.Dict({
        "narration": spaces.Text(max_length=narration_max, min_length=0, charset=charset),
        "events": spaces.Text(max_length=events_max, min_length=0, charset=charset),
        "tick": spaces.Discrete(max_ticks + 1),
    })
    if obs_mode == "text+rgb":
        shape: tuple[int, ...] = (frame_size, frame_size, 3)
        if frame_stack > 1:
            shape = (frame_stack, *shape)
        space.spaces["rgb"] = spaces.Box(0, 255, shape, np.uint8)
    return space


def make_topdown_renderer(size: int) -> Any:
    """The top-down renderer of ``text+rgb`` frames and ``render()`` (needs Pillow)."""
    try:
        from mindhelper_env.render.topdown import TopDownRenderer
    except ImportError as err:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "RGB frames need Pillow: install the video extra: pip install 'mindhelper-env[video]'"
        ) from err
    return TopDownRenderer(size=size)


class RgbObservation:
    """The ``obs_mode="rgb"`` observation of one env: frames of the window and the
    constant, event-free ``info`` (see docs/vision.md).

    The env calls :meth:`reset` after building an episode's simulation, :meth:`tick` after
    every tick of a window and :meth:`window` at the end of the window. NumPy only (no
    Pillow): the frames are blitted sprites (:mod:`mindhelper_env.render.sprites`)."""

    def __init__(self, frame_size: int, window_ticks: int, picture: int | None = None) -> None:
        from mindhelper_env.render.frames import FrameRenderer

        self.renderer = FrameRenderer(frame_size) if picture is None \
            else FrameRenderer(frame_size, picture=picture)
        self.window_ticks = int(window_ticks)
        self._shape = (self.window_ticks, frame_size, frame_size, 3)
        self._buf: np.ndarray | None = None  # the window being drawn (handed out at its end)
        self._n = 0
        self._candidates: dict[str, Any] = {}

    def reset(self, env: Any, sim: Any) -> np.ndarray:
        """Start an episode; the initial frame repeated ``window_ticks`` times."""
        w = sim.world
        grabbable, furniture, room_list = env._node_lists(sim)
        robot = ROBOT_ID
        cand = {
            "actors": [{"id": a.id, "name": a.name, "kind": a.kind} for a in sim.actors],
            "objects": [{"id": i, "class": c} for i, c in grabbable.items()],
            "locations": [{"id": i, "class": c, "room": r} for i, c, _, r in furniture],
            "rooms": [{"id": r, "class": c} for r, c in room_list],
            "doors": [{"id": d, "rooms": list(rs)} for d, rs in sorted(w.doors.items())],
        }
        self._candidates = cand
        people = {a.id: a.kind for a in sim.actors}
        people[robot] = "robot"
        self.renderer.begin(w, rooms=cand["rooms"], locations=cand["locations"],
                            doors=cand["doors"], objects=grabbable, people=people)
        need = self.renderer.layout.lossless_size
        if need > self.renderer.size:
            warn_lossy(self.renderer.size, need)
        first = np.empty(self._shape, np.uint8)
        self.renderer.frame(w, [], [], _seen_rooms(env), out=first[0])
        first[1:] = first[0]
        self._buf, self._n = None, 0
        return first

    def tick(self, env: Any, sim: Any, events: list[Any], seen: list[Any]) -> None:
        """Draw the frame of the tick just played."""
        if self._buf is None:
            self._buf, self._n = np.empty(self._shape, np.uint8), 0
        self.renderer.frame(sim.world, events, seen, _seen_rooms(env), out=self._buf[self._n])
        self._n += 1

    def window(self) -> np.ndarray:
        """The window's frames, ``(window_ticks, S, S, 3)``; a window cut short repeats its
        last frame."""
        frames, n = self._buf, self._n
        self._buf, self._n = None, 0
        if frames is None or n == 0:  # pragma: no cover - a window plays at least one tick
            raise RuntimeError("no frame was drawn in this window")
        frames[n:] = frames[n - 1]
        return frames

    def info(self, env: Any, sim: Any, action_error: str | None) -> dict[str, Any]:
        """``info`` in ``rgb`` mode: ``tick``, ``window``, ``pending_program``,
        ``action_error``, ``robot`` (``{"id"}``), ``candidates`` (constant for the episode:
        ``actors``, ``objects``, ``locations``, ``rooms``, ``doors``, ids and classes only) and
        ``perception`` where the episode has a rule other than ``room``."""
        cand = self._candidates
        info: dict[str, Any] = {
            "tick": sim.tick,
            "window": env._window,
            "pending_program": [str(x) for x in sim.pending],
            "action_error": action_error,
            "candidates": {k: [dict(d) if k != "doors" else {"id": d["id"],
                                                              "rooms": list(d["rooms"])}
                               for d in v] for k, v in cand.items()},
            "robot": {"id": ROBOT_ID},
        }
        if sim.perception != "room":
            info["perception"] = sim.perception
        if env._mirror is not None:
            info[env._mirror_key] = env._mirror.info()
        return info

    def step(self, env: Any, errors: list[str], reward: float, terminated: bool,
             truncated: bool) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """The end of a window in ``rgb`` mode: ``(frames, reward, terminated, truncated,
        info)``, with the final reward and the episode record at the end, as in the text
        modes."""
        sim = env._sim
        info = self.info(env, sim, "; ".join(errors) if errors else None)
        if terminated or truncated:
            env._done = True
            reward += env._final_reward()
            info.update(record_info(env.episode_record()))
        return self.window(), float(reward), bool(terminated), bool(truncated), info


def _seen_rooms(env: Any) -> list[int] | None:
    """The rooms the robot sees (None: every room, ``observability="home"``)."""
    return None if env.observability == "home" else env._visible_rooms()
