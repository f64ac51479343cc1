"""An optional TDW mirror of an episode in a TDW house (needs the ``tdw`` extra and a TDW build
that the user starts).

The symbolic world stays the simulator; :class:`TDWMirror` only shows it. For an episode in a
house from :mod:`mindhelper_env.world.tdw_house` it builds TDW command lists with TDW's own
static helpers (``Controller.get_add_scene``, ``Controller.get_add_object``,
``TDWUtils.create_avatar``, the ``Replicant`` / ``WheelchairReplicant`` add-ons'
initialization commands; none of them needs a running build or a ``Controller`` instance):

* :meth:`TDWMirror.commands_for_reset`: load the house's floorplan scene, add every furniture
  model exactly as the layout placed it (the node's ``"tdw"`` entry: model, position,
  rotation, scale, kinematic, gravity), add each everyday object as the TDW model of
  :data:`~mindhelper_env.world.tdw_house.TDW_OBJECT_MODELS` at its place (on top of a surface,
  at the centre of a container; kinematic, so it stays where the symbolic world says), add
  each character as a Replicant (a wheelchair Replicant for wheelchair users) standing in its
  room, and an overhead camera whose ``_img`` pass is sent every frame;
* :meth:`TDWMirror.commands_for_tick`: after a tick, teleport every object that an event moved
  to where it now is (held: at its holder's hand height; on or in furniture: as above) and
  every character that walked, sat or stood up to its room (beside the furniture it is near).

Characters are teleported, not animated: the mirror shows *where* things are, tick by tick.
Object ids in TDW are the graph's node ids; Replicant ids are the character ids.

:meth:`TDWMirror.connect` attaches to a build already listening on the port
(``Controller(port=..., launch_build=False, check_version=False)``) and raises
:class:`SimulatorUnavailable` if none answers in time; :meth:`TDWMirror.send` sends commands
and keeps the response; :meth:`TDWMirror.frame` decodes its image into an ``HxWx3`` ``uint8``
array (for ``obs["rgb"]``).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from mindhelper_env.world.graph import SceneGraph
from mindhelper_env.world.tdw_house import INSTALL_HINT, TDW_OBJECT_MODELS
from mindhelper_env.world.world import Event, World

__all__ = ["TDWMirror", "SimulatorUnavailable", "AVATAR_ID", "REPLICANT_NAMES"]

#: The overhead camera's avatar id.
AVATAR_ID = "mh_overhead"
#: Replicant model per kind of character (``wheelchair`` uses the wheelchair library).
REPLICANT_NAMES = {"robot": "replicant_0", "adult": "man_casual", "adult_alt": "woman_casual",
                   "child": "girl_casual", "wheelchair": "man_casual"}
#: Height at which a held object is shown (metres).
HAND_HEIGHT = 1.0
_MOVING = frozenset({"grab", "putin", "putback", "drop", "give"})
_STEPPING = frozenset({"walk", "find", "sit", "standup", "run"})


class SimulatorUnavailable(TimeoutError):
    """No TDW build answered on the port in time."""


def _tdw() -> tuple[Any, Any]:
    """TDW's ``Controller`` class and ``TDWUtils`` (imported on first use)."""
    try:
        with warnings.catch_warnings():  # tdw.librarian imports the deprecated pkg_resources
            warnings.simplefilter("ignore")
            from tdw.controller import Controller
            from tdw.tdw_utils import TDWUtils
    except ImportError as err:
        raise ImportError(f"the TDW mirror needs the tdw package: {INSTALL_HINT}") from err
    return Controller, TDWUtils


def _replicant_commands(kind: str, rid: int, position: dict[str, float],
                        alt: bool) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "wheelchair":
            from tdw.add_ons.wheelchair_replicant import WheelchairReplicant

            agent: Any = WheelchairReplicant(replicant_id=rid, position=position,
                                             name=REPLICANT_NAMES["wheelchair"])
        else:
            from tdw.add_ons.replicant import Replicant

            key = "adult_alt" if kind == "adult" and alt else kind
            agent = Replicant(replicant_id=rid, position=position,
                              name=REPLICANT_NAMES.get(key, REPLICANT_NAMES["adult"]))
    return list(agent.get_initialization_commands())


def _point(v: Iterable[float]) -> dict[str, float]:
    x, y, z = (round(float(c), 4) for c in v)
    return {"x": x, "y": y, "z": z}


class TDWMirror:
    """Mirror a symbolic episode in a TDW build listening on ``port``.

    Use :meth:`commands_for_reset` / :meth:`commands_for_tick` offline (they only build
    command lists), and :meth:`connect` / :meth:`send` / :meth:`frame` with a build running.
    """

    def __init__(self, port: int = 1071, timeout: float = 10.0, *, width: int = 256,
                 height: int = 256) -> None:
        self.port = int(port)
        self.timeout = float(timeout)
        self.width, self.height = int(width), int(height)
        self.controller: Any = None
        self.world: World | None = None
        self.last_response: list[bytes] = []
        #: everyday objects whose class has no TDW model (not shown)
        self.skipped: list[int] = []
        self._added: set[int] = set()
        self._kinds: dict[int, str] = {}

    # ------------------------------------------------------------------ commands
    def commands_for_reset(self, spec_or_world: dict[str, Any] | World) -> list[dict[str, Any]]:
        """Commands that build the episode's scene. ``spec_or_world``: an episode spec (its
        ``graph`` and ``actors``) or a :class:`World`. Keep passing the live world to
        :meth:`commands_for_tick` when the mirror was reset from a spec."""
        controller, utils = _tdw()
        if isinstance(spec_or_world, World):
            world = spec_or_world
            kinds = {cid: str(world.graph.nodes[cid].extra.get("kind", "adult"))
                     for cid in world.chars}
        elif isinstance(spec_or_world, dict) and "graph" in spec_or_world:
            world = World(SceneGraph.from_virtualhome(spec_or_world["graph"]))
            kinds = {int(a["id"]): str(a.get("kind", "adult"))
                     for a in spec_or_world.get("actors", [])}
        else:
            raise TypeError("commands_for_reset needs an episode spec (with 'graph') or a World")
        g = world.graph
        scene = next((n.extra["tdw"]["scene"] for n in g.nodes.values()
                      if n.category == "Rooms" and isinstance(n.extra.get("tdw"), dict)), None)
        if scene is None:
            raise ValueError("not a TDW house: no room names its TDW scene "
                             "(build episodes on mindhelper_env.world.tdw_house graphs)")
        self.world = world
        self._kinds = {cid: ("robot" if cid == 1 else kinds.get(cid, "adult"))
                       for cid in world.chars}
        self.skipped = []
        self._added = set()
        cmds: list[dict[str, Any]] = [controller.get_add_scene(scene_name=scene)]
        for nid in sorted(g.nodes):
            node = g.nodes[nid]
            t = node.extra.get("tdw")
            if node.category != "Furniture" or not isinstance(t, dict):
                continue
            cmds.append(controller.get_add_object(
                model_name=t["model"], object_id=nid, position=dict(t["position"]),
                rotation=dict(t["rotation"]), library=t.get("library", "models_core.json")))
            cmds.append({"$type": "set_kinematic_state", "id": nid,
                         "is_kinematic": bool(t.get("kinematic", False)),
                         "use_gravity": bool(t.get("gravity", True))})
            scale = t.get("scale_factor") or {"x": 1, "y": 1, "z": 1}
            if any(float(v) != 1.0 for v in scale.values()):
                cmds.append({"$type": "scale_object", "id": nid, "scale_factor": dict(scale)})
        for nid in sorted(g.nodes):
            node = g.nodes[nid]
            if node.category != "Props":
                continue
            model = TDW_OBJECT_MODELS.get(node.key)
            if model is None:
                self.skipped.append(nid)
                continue
            cmds.append(controller.get_add_object(model_name=model, object_id=nid,
                                                  position=self.object_position(nid),
                                                  library="models_core.json"))
            cmds.append({"$type": "set_kinematic_state", "id": nid, "is_kinematic": True,
                         "use_gravity": False})
            self._added.add(nid)
        adults = 0
        for cid in sorted(world.chars):
            kind = self._kinds[cid]
            cmds += _replicant_commands(kind, cid, self.character_position(cid),
                                        alt=kind == "adult" and adults % 2 == 1)
            adults += kind == "adult"
        cmds += self._camera_commands(utils)
        return cmds

    def _camera_commands(self, utils: Any) -> list[dict[str, Any]]:
        assert self.world is not None
        rooms = [self.world.graph.nodes[r].bounding_box for r in self.world.rooms]
        xs = [b["center"][0] + s * b["size"][0] / 2 for b in rooms for s in (-1, 1)]
        zs = [b["center"][2] + s * b["size"][2] / 2 for b in rooms for s in (-1, 1)]
        cx, cz = (min(xs) + max(xs)) / 2, (min(zs) + max(zs)) / 2
        span = max(max(xs) - min(xs), max(zs) - min(zs))
        cmds = list(utils.create_avatar(avatar_id=AVATAR_ID,
                                        position=_point((cx, 0.9 * span + 2.0, cz - 0.01)),
                                        look_at=_point((cx, 0.0, cz))))
        cmds += [{"$type": "set_screen_size", "width": self.width, "height": self.height},
                 {"$type": "set_pass_masks", "pass_masks": ["_img"], "avatar_id": AVATAR_ID},
                 {"$type": "send_images", "frequency": "always", "ids": [AVATAR_ID]}]
        return cmds

    def commands_for_tick(self, events: Iterable[Event | dict[str, Any]],
                          world: World | None = None) -> list[dict[str, Any]]:
        """Teleports after a tick's ``events`` (:class:`~mindhelper_env.world.world.Event` or
        their dicts), to the places in ``world`` (default: the world of the last reset)."""
        if world is not None:
            self.world = world
        if self.world is None:
            raise RuntimeError("call commands_for_reset first")
        objects: list[int] = []
        people: list[int] = []
        for ev in events:
            d = ev.to_dict() if isinstance(ev, Event) else ev
            if not d.get("ok", True):
                continue
            verb, args = d.get("verb", ""), [int(a) for a in d.get("args", [])]
            if verb in _MOVING:
                objects += [a for a in args if a in self._added]
                # give hands an object to another character: it moved too
            if verb in _STEPPING or verb in _MOVING:
                people.append(int(d["actor"]))
        cmds: list[dict[str, Any]] = []
        for cid in dict.fromkeys(people):
            if cid in self.world.chars:
                cmds.append({"$type": "teleport_object", "id": cid,
                             "position": self.character_position(cid)})
        for nid in dict.fromkeys(objects):
            if nid in self.world.graph.nodes:
                cmds.append({"$type": "teleport_object", "id": nid,
                             "position": self.object_position(nid)})
        return cmds

    # ------------------------------------------------------------------ positions
    def object_position(self, nid: int) -> dict[str, float]:
        """Where an everyday object is shown: in a character's hand, on top of a surface, at
        the centre of a container (or of its own box when it has no place)."""
        assert self.world is not None
        w = self.world
        holder = w.holder(nid)
        if holder is not None:
            p = self.character_position(holder)
            return {"x": p["x"], "y": HAND_HEIGHT, "z": p["z"]}
        place = w.placement(nid)
        if place is not None:
            rel, parent = place
            box = w.graph.nodes[parent].bounding_box
            if box and w.graph.nodes[parent].category != "Rooms":
                (x, y, z), (_, h, _) = box["center"], box["size"]
                return _point((x, y + h / 2 if rel == "ON" else y, z))
        box = w.graph.nodes[nid].bounding_box
        if box:
            return _point(box["center"])
        room = w.room_of(nid)
        rb = w.graph.nodes[room].bounding_box if room is not None else None
        return _point((rb["center"][0], 0.0, rb["center"][2]) if rb else (0.0, 0.0, 0.0))

    def character_position(self, cid: int) -> dict[str, float]:
        """A character stands in its room: 0.6 m in front of the furniture it is near (towards
        the room's centre), else near the room's centre, characters side by side."""
        assert self.world is not None
        w = self.world
        c = w.chars[cid]
        room = c.room
        rb = w.graph.nodes[room].bounding_box if room is not None else None
        rx, rz = (rb["center"][0], rb["center"][2]) if rb else (0.0, 0.0)
        target = c.sitting_on if c.sitting_on is not None else c.near
        tb = w.graph.nodes[target].bounding_box if target is not None and \
            target in w.graph.nodes else None
        if tb and target != room:
            fx, fz = tb["center"][0], tb["center"][2]
            dx, dz = rx - fx, rz - fz
            dist = float(np.hypot(dx, dz)) or 1.0
            step = min(0.6 + max(tb["size"][0], tb["size"][2]) / 2, dist)
            return _point((fx + dx / dist * step, 0.0, fz + dz / dist * step))
        order = sorted(w.chars).index(cid)
        return _point((rx + 0.7 * (order % 3 - 1), 0.0, rz + 0.7 * (order // 3)))

    # ------------------------------------------------------------------ the build
    def connect(self) -> Any:
        """Attach to the TDW build on :attr:`port`; :class:`SimulatorUnavailable` if its
        ``Controller`` is not up within :attr:`timeout` seconds (TDW's constructor blocks
        until a build answers; its thread is a daemon and is left waiting)."""
        controller_cls, _ = _tdw()
        box: dict[str, Any] = {}

        def attach() -> None:
            try:
                box["controller"] = controller_cls(port=self.port, launch_build=False,
                                                   check_version=False)
            except BaseException as err:  # reported to the caller below
                box["error"] = err

        thread = threading.Thread(target=attach, name=f"tdw-connect-{self.port}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive() or "error" in box:
            raise SimulatorUnavailable(
                f"no TDW build connected on port {self.port} within {self.timeout:g} s; start "
                f"your TDW build first (e.g. ./TDW.x86_64 -port={self.port}), then retry"
                + (f" ({box['error']!r})" if "error" in box else "")
            ) from box.get("error")
        self.controller = box["controller"]
        return self.controller

    def send(self, commands: list[dict[str, Any]]) -> list[bytes]:
        """Send ``commands`` to the connected build; returns (and keeps) its response."""
        if self.controller is None:
            raise RuntimeError("not connected: call connect() first")
        self.last_response = list(self.controller.communicate(commands))
        return self.last_response

    def frame(self, response: list[bytes] | None = None) -> np.ndarray | None:
        """The overhead camera's ``_img`` pass in ``response`` (default: the last response)
        as an ``HxWx3`` ``uint8`` array, or None when the response holds no image."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from tdw.output_data import Images, OutputData
        _, utils = _tdw()
        for raw in self.last_response if response is None else response:
            if OutputData.get_data_type_id(raw) != "imag":
                continue
            images = Images(raw)
            for i in range(images.get_num_passes()):
                if images.get_pass_mask(i) == "_img":
                    img = utils.get_pil_image(images, i).convert("RGB")
                    return np.asarray(img, dtype=np.uint8).copy()
        return None

    def close(self, *, terminate: bool = False) -> None:
        """Forget the build; ``terminate=True`` also asks it to quit."""
        if self.controller is not None and terminate:
            self.controller.communicate({"$type": "terminate"})
        self.controller = None


#: Keys ``backend_options`` may have with ``backend="tdw"`` (see :class:`TDWEnvMirror`).
BACKEND_OPTIONS = ("port", "timeout")


class TDWEnvMirror:
    """The env's side of ``backend="tdw"``: drives a :class:`TDWMirror` from the closed loop.

    The env calls :meth:`reset` after building each episode's simulation (connecting on the
    first call), :meth:`step` after every tick, :meth:`frame` for ``obs["rgb"]`` and
    :meth:`info` for ``info["tdw"]``. Frames are the overhead camera's ``_img`` pass at the
    env's ``frame_size``; a response without an image repeats the last frame (counted in
    ``missing_frames``). A build that stops answering raises from ``reset``/``step``.
    """

    def __init__(self, port: int = 1071, timeout: float = 10.0, *, size: int = 128) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ValueError(f"backend_options port must be an int in 1..65535, got {port!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                or not 0 < timeout <= 3600:
            raise ValueError(f"backend_options timeout must be a number of seconds in "
                             f"(0, 3600], got {timeout!r}")
        self.mirror = TDWMirror(port, float(timeout), width=size, height=size)
        self.size = int(size)
        self._last: np.ndarray | None = None
        self.stats = {"commands_sent": 0, "frames": 0, "missing_frames": 0, "episodes": 0}

    def _send(self, commands: list[dict[str, Any]]) -> None:
        try:
            self.mirror.send(commands)
        except Exception as err:  # the socket layer raises many kinds; say what happened
            raise SimulatorUnavailable(f"the TDW build on port {self.mirror.port} stopped "
                                       f"answering ({type(err).__name__}: {err})") from err
        self.stats["commands_sent"] += len(commands)

    def reset(self, sim: Any) -> None:
        if self.mirror.controller is None:
            self.mirror.connect()
        # a previous episode's objects and replicants go before the new scene loads
        self._send([{"$type": "destroy_all_objects"}])
        self._send(self.mirror.commands_for_reset(sim.world))
        self._last = None
        self.stats["episodes"] += 1

    def step(self, sim: Any, events: Iterable[Any]) -> None:
        self._send(self.mirror.commands_for_tick(list(events), sim.world))

    def frame(self, size: int) -> np.ndarray:
        img = self.mirror.frame()
        if img is None:
            self.stats["missing_frames"] += 1
            img = self._last if self._last is not None else np.zeros((size, size, 3), np.uint8)
        else:
            self.stats["frames"] += 1
        if img.shape[:2] != (size, size):
            from PIL import Image

            img = np.asarray(Image.fromarray(img).resize((size, size)), dtype=np.uint8)
        self._last = img
        return img.copy()

    def info(self) -> dict[str, int]:
        return dict(self.stats)
