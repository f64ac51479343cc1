"""The ``virtualhome-unity`` backend: mirror a symbolic episode in VirtualHome's Unity simulator.

The symbolic :class:`~mindhelper_env.backends.symbolic.Simulation` stays the source of truth
(ground truth, rewards and metrics come from it). :class:`UnityMirror` replays each tick of it
in a running VirtualHome executable so that the robot gets rendered camera frames, and checks
that Unity's scene graph agrees with the symbolic state.

**Client.** :class:`UnityClient` speaks the executable's HTTP protocol with the standard
library only: every request is one ``POST`` of a JSON object ``{"id": str, "action": str,
"intParams": [int, ...], "stringParams": [str, ...]}`` to the executable's address; the answer
is a JSON object with ``"success"`` (bool), ``"message"`` (a string, often JSON-encoded) and,
for some actions, ``"value"`` (an int) or ``"message_list"`` (e.g. base64-encoded PNG images).
The actions used are ``idle``, ``clear``, ``environment``, ``environment_graph``,
``expand_scene``, ``add_character``, ``render_script``, ``camera_count``,
``character_cameras`` and ``camera_image``.

**Errors.** A refused connection, or no answer within ``timeout`` seconds, raises
:class:`SimulatorUnavailable` (a :class:`ConnectionError`) naming the address and how to start
the executable. An answer that is not a JSON object, an HTTP error status, or
``"success": false`` where the request must succeed raises :class:`UnityError`. Neither is
caught by the environment: a simulator that fails in the middle of an evaluation stops it with
that message instead of silently producing frames or counters from a stale scene.

**Matching the scene.** At reset the mirror loads a Unity apartment (``environment``), reads
its graph and matches our rooms and furniture to Unity's by normalized class name
(:func:`~mindhelper_env.world.script.normalize_class`, with the aliases in
:data:`CLASS_ALIASES`): each of our rooms takes the first unused Unity room of the same class
(else the first unused room, else the first room); each piece of our furniture takes the first
unused Unity node of its class in the matched room, else one elsewhere in the apartment, else
one already taken. The episode's everyday objects (GRABBABLE nodes) are then added to Unity's
graph as new nodes, INSIDE or ON the matched furniture and INSIDE the matched room, and the
graph is sent back with ``expand_scene``; the openable/switchable state (OPEN/CLOSED, ON/OFF)
of matched furniture is copied too. An object whose place has no match is left out and counted
(``unplaced``). :attr:`UnityMirror.id_map` maps our node ids to Unity's. Finally one character
is added per person, the robot first (``<char0>``), then the people by id.

**Replaying a tick.** The tick's events become one ``render_script`` call: one
``<charK> [verb] <class> (unity id) ...`` entry per character, entries of different characters
joined with ``|`` (a character that did two things in the tick gives a second script line).
Walks are sent once, when they start (Unity walks the whole way at once; our walk crosses one
door per tick). See :data:`VERB_MAP` for substitutes and skipped verbs.

**Graph check.** With ``check_graph`` the mirror reads Unity's graph after each script and
compares, for every placed object, where Unity has it with where the symbolic world has it:
held by the same character (HOLDS_RH/HOLDS_LH); else INSIDE or ON the matched container (the
relation is not compared); else, for an object standing free in a room, INSIDE that room.
Each object in the wrong place adds one to ``mismatches`` at every check (so one object left
behind for ten ticks counts ten); ``mismatched_now`` is the number wrong at the last check.
Objects a person holds at the start are set down on a surface in the person's room and then
walked to and grabbed by that person's character (two setup script lines each). A character is added in its
room when that room's Unity class is one ``add_character`` accepts (kitchen, bedroom,
livingroom, bathroom); otherwise at a random place, and then walked to its room.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from mindhelper_env.world.script import normalize_class

__all__ = [
    "UnityClient",
    "UnityMirror",
    "UnityError",
    "SimulatorUnavailable",
    "VERB_MAP",
    "RESYNC_VERBS",
    "CLASS_ALIASES",
    "DEFAULT_URL",
    "BACKEND_OPTIONS",
]

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 30.0

#: How each event verb is sent to Unity: the same verb, a substitute, or ``None`` (skipped and
#: counted in ``lines_skipped``). ``look`` (looked over a place), ``stand`` (stood at a closed
#: container with full hands) become ``lookat`` the place; ``stretch`` (reached for something
#: too high) becomes ``pointat`` the object; ``find`` is sent as ``walk``. ``drop``, ``give``
#: and background ``move`` events have no Unity script action: the object is moved to where
#: the symbolic world has it with ``expand_scene`` instead (see :data:`RESYNC_VERBS`; counted
#: in ``resyncs``). ``tell`` changes nothing visible and is skipped.
VERB_MAP: dict[str, str | None] = {
    "walk": "walk",
    "find": "walk",
    "open": "open",
    "close": "close",
    "grab": "grab",
    "putback": "putback",
    "putin": "putin",
    "switchon": "switchon",
    "switchoff": "switchoff",
    "sit": "sit",
    "standup": "standup",
    "look": "lookat",
    "stand": "lookat",
    "stretch": "pointat",
    "drop": None,
    "give": None,
    "tell": None,
    "move": None,
}

#: Verbs whose object (first argument) is put in place with ``expand_scene`` after the tick's
#: script: held by the character the symbolic world says (HOLDS_RH/HOLDS_LH), or INSIDE/ON its
#: container and INSIDE its room.
RESYNC_VERBS = frozenset({"drop", "give", "move"})

#: Which of an event's arguments the Unity line names (by position in ``Event.args``).
_ARG_SLICE: dict[str, slice] = {
    "look": slice(0, 1), "stand": slice(0, 1), "stretch": slice(0, 1), "standup": slice(0, 0),
}

#: Unity class names our classes may go by (normalized), tried after the class itself.
CLASS_ALIASES: dict[str, tuple[str, ...]] = {
    "kitchencabinet": ("kitchencabinets",),
    "sofa": ("couch",),
    "tv": ("television",),
    "cellphone": ("phone",),
    "wallshelf": ("shelf",),
}

#: Room classes Unity's ``add_character`` accepts as ``initial_room``.
_START_ROOMS = ("kitchen", "bedroom", "livingroom", "bathroom")
_STATE_KEYS = frozenset({"OPEN", "CLOSED", "ON", "OFF"})
_HOLDS = ("HOLDS_RH", "HOLDS_LH")

#: Keys ``backend_options`` may have (see :class:`UnityMirror`).
BACKEND_OPTIONS = ("url", "timeout", "environment", "camera", "check_graph", "characters",
                   "skip_animation")


class SimulatorUnavailable(ConnectionError):
    """No VirtualHome executable answered at the address within the timeout."""


class UnityError(RuntimeError):
    """The executable answered with an error, a failure or something that is not its protocol."""


class UnityClient:
    """A small client for the VirtualHome Unity executable's HTTP protocol.

    Parameters
    ----------
    url:
        the executable's address (``http://host:port``).
    timeout:
        seconds to wait for the connection and for each answer.
    """

    def __init__(self, url: str = DEFAULT_URL, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http:// address, got {url!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                or not 0 < timeout < float("inf"):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.url = url
        self.timeout = float(timeout)
        self.requests_sent = 0

    # ------------------------------------------------------------------ transport
    def request(self, action: str, int_params: Sequence[int] = (),
                string_params: Sequence[str] = ()) -> dict[str, Any]:
        """Send one request and return the decoded answer (a dict with ``success``)."""
        self.requests_sent += 1
        body = {
            "id": f"{time.time():.6f}-{self.requests_sent}",
            "action": action,
            "intParams": [int(x) for x in int_params],
            "stringParams": [str(s) for s in string_params],
        }
        data = json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            detail = _short(err.read())
            raise UnityError(f"VirtualHome at {self.url} answered '{action}' with HTTP "
                             f"{err.code}: {detail}") from None
        except urllib.error.URLError as err:
            raise self._unavailable(err.reason) from None
        except (TimeoutError, ConnectionError) as err:
            raise self._unavailable(err) from None
        except http.client.HTTPException as err:
            raise UnityError(f"VirtualHome at {self.url} answered '{action}' with something "
                             f"that is not HTTP ({type(err).__name__}: {_short(err)})") from None
        except OSError as err:
            raise self._unavailable(err) from None
        try:
            answer = json.loads(raw)
        except ValueError:
            raise UnityError(f"VirtualHome at {self.url} answered '{action}' with something "
                             f"that is not JSON: {_short(raw)}") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("success"), bool):
            raise UnityError(f"VirtualHome at {self.url} answered '{action}' without a "
                             f"boolean 'success': {_short(raw)}")
        return answer

    def _unavailable(self, reason: Any) -> SimulatorUnavailable:
        return SimulatorUnavailable(
            f"no VirtualHome executable answered at {self.url} within {self.timeout:g} s "
            f"({reason}); start it (e.g. ./linux_exec.x86_64 -batchmode -http-port=8080) or "
            "use the default symbolic backend")

    def _ok(self, action: str, int_params: Sequence[int] = (),
            string_params: Sequence[str] = ()) -> dict[str, Any]:
        answer = self.request(action, int_params, string_params)
        if not answer["success"]:
            raise UnityError(f"VirtualHome '{action}' failed: {_short(answer.get('message'))}")
        return answer

    # ------------------------------------------------------------------ actions
    def check_connection(self) -> bool:
        """``idle``: True when the executable answers."""
        return bool(self.request("idle")["success"])

    idle = check_connection

    def reset(self, environment: int | None = None) -> None:
        """``clear`` then ``environment``: load apartment ``environment`` (no characters)."""
        ints = [] if environment is None else [int(environment)]
        self._ok("clear", ints)
        self._ok("environment", ints)

    def environment_graph(self) -> dict[str, Any]:
        """The current scene graph ``{"nodes": [...], "edges": [...]}``."""
        graph = _json_message(self._ok("environment_graph"), "environment_graph")
        if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list) \
                or not isinstance(graph.get("edges"), list):
            raise UnityError("VirtualHome 'environment_graph' did not return a graph with "
                             "'nodes' and 'edges'")
        return graph

    def expand_scene(self, graph: dict[str, Any], *, randomize: bool = False,
                     random_seed: int = -1, animate_character: bool = False,
                     ignore_placing_obstacles: bool = False, transfer_transform: bool = True,
                     prefabs_map: dict[str, Any] | None = None) -> Any:
        """Change the scene to ``graph`` (add, move or restate objects); returns the message."""
        config = {"randomize": bool(randomize), "random_seed": int(random_seed),
                  "animate_character": bool(animate_character),
                  "ignore_obstacles": bool(ignore_placing_obstacles),
                  "transfer_transform": bool(transfer_transform)}
        strings = [json.dumps(config), json.dumps(graph)]
        if prefabs_map is not None:
            strings.append(json.dumps(prefabs_map))
        return _maybe_json(self._ok("expand_scene", (), strings).get("message"))

    def add_character(self, prefab: str = "Chars/Male1", initial_room: str = "",
                      position: Sequence[float] | None = None) -> None:
        """Add a character: at ``position``, else in ``initial_room`` (one of kitchen,
        bedroom, livingroom, bathroom), else at a random place."""
        if position is not None:
            mode, pos = "fix_position", [float(x) for x in position]
        else:
            mode, pos = ("fix_room" if initial_room else "random"), [0.0, 0.0, 0.0]
            if initial_room and initial_room not in _START_ROOMS:
                raise ValueError(f"initial_room must be one of {_START_ROOMS} or '', "
                                 f"got {initial_room!r}")
        params = {"character_resource": prefab, "mode": mode,
                  "character_position": {"x": pos[0], "y": pos[1], "z": pos[2]},
                  "initial_room": initial_room}
        self._ok("add_character", (), [json.dumps(params)])

    def render_script(self, lines: Sequence[str], *, skip_animation: bool = True,
                      recording: bool = False, image_synthesis: Sequence[str] = ("normal",),
                      camera_mode: Sequence[str] = ("AUTO",), frame_rate: int = 5,
                      image_width: int = 640, image_height: int = 480,
                      find_solution: bool = False, processing_time_limit: int = 10,
                      time_scale: float = 1.0, output_folder: str = "Output/",
                      file_name_prefix: str = "script") -> tuple[bool, Any]:
        """Execute script lines (``<char0> [walk] <fridge> (12)``, several characters joined
        with ``|``); returns ``(success, message)``. A script Unity cannot execute is not an
        exception: the mirror counts it and its graph check shows the consequences."""
        params = {"randomize_execution": False, "random_seed": -1,
                  "processing_time_limit": int(processing_time_limit),
                  "skip_execution": False, "output_folder": output_folder,
                  "file_name_prefix": file_name_prefix, "frame_rate": int(frame_rate),
                  "image_synthesis": list(image_synthesis), "find_solution": bool(find_solution),
                  "save_pose_data": False, "save_scene_states": False,
                  "camera_mode": list(camera_mode), "recording": bool(recording),
                  "image_width": int(image_width), "image_height": int(image_height),
                  "time_scale": float(time_scale), "skip_animation": bool(skip_animation)}
        answer = self.request("render_script", (), [json.dumps(params), *lines])
        return answer["success"], _maybe_json(answer.get("message"))

    def camera_count(self) -> int:
        """Number of cameras: the apartment's static cameras, then each character's."""
        value = self._ok("camera_count").get("value")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UnityError(f"VirtualHome 'camera_count' returned no count: {value!r}")
        return value

    def character_cameras(self) -> list[str]:
        """Names of the cameras every character carries (in index order)."""
        names = _maybe_json(self._ok("character_cameras").get("message"))
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise UnityError(f"VirtualHome 'character_cameras' returned no names: {names!r}")
        return names

    def camera_image(self, camera_indices: int | Iterable[int], mode: str = "normal",
                     image_width: int = 640, image_height: int = 480) -> list[np.ndarray]:
        """Render cameras; returns one ``uint8`` H × W × 3 array per camera index."""
        if isinstance(camera_indices, (int, np.integer)):
            camera_indices = [int(camera_indices)]
        indices = [int(i) for i in camera_indices]
        params = {"mode": mode, "image_width": int(image_width),
                  "image_height": int(image_height)}
        answer = self._ok("camera_image", indices, [json.dumps(params)])
        images = answer.get("message_list")
        if not isinstance(images, list) or len(images) != len(indices):
            raise UnityError(f"VirtualHome 'camera_image' returned "
                             f"{'no list' if not isinstance(images, list) else len(images)} "
                             f"images for {len(indices)} cameras")
        return [_decode_png(s) for s in images]


def _source_id(node: Any, unodes: dict[int, dict[str, Any]]) -> int | None:
    """The Unity id a node of a converted VirtualHome house came from
    (:func:`~mindhelper_env.world.houses.virtualhome_house` keeps ``source_id`` and
    ``source_class``), if the Unity scene has that node with that class; else None."""
    src = node.extra.get("source_id") if node.extra else None
    if not isinstance(src, int) or src not in unodes:
        return None
    cls = node.extra.get("source_class")
    if cls is not None and normalize_class(str(unodes[src].get("class_name", ""))) \
            != normalize_class(str(cls)):
        return None
    return src


def _short(value: Any, limit: int = 200) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _maybe_json(message: Any) -> Any:
    if isinstance(message, str):
        try:
            return json.loads(message)
        except ValueError:
            return message
    return message


def _json_message(answer: dict[str, Any], action: str) -> Any:
    message = answer.get("message")
    if not isinstance(message, str):
        return message
    try:
        return json.loads(message)
    except ValueError:
        raise UnityError(f"VirtualHome '{action}' returned a message that is not JSON: "
                         f"{_short(message)}") from None


def _decode_png(data: Any) -> np.ndarray:
    try:
        from PIL import Image
    except ImportError as err:  # pragma: no cover - depends on the installed extras
        raise ImportError("Unity camera frames need Pillow: pip install "
                          "'mindhelper-env[video]'") from err
    if not isinstance(data, str):
        raise UnityError(f"VirtualHome 'camera_image' returned a {type(data).__name__}, "
                         "not a base64 string")
    try:
        with Image.open(io.BytesIO(base64.b64decode(data, validate=True))) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8).copy()
    except (ValueError, OSError) as err:
        raise UnityError(f"VirtualHome 'camera_image' returned an image that cannot be "
                         f"decoded ({err})") from None


# ---------------------------------------------------------------------- the mirror
class UnityMirror:
    """Replays an episode of the symbolic simulation in a VirtualHome executable.

    Parameters
    ----------
    client:
        a :class:`UnityClient` (or ``url``/``timeout`` to build one).
    environment:
        the Unity apartment to load at every reset (0–49 in VirtualHome 2.3).
    camera:
        ``None``: no frames; an int: that camera index; a string: the robot's character
        camera of that name (see :meth:`UnityClient.character_cameras`).
    check_graph:
        compare Unity's graph with the symbolic state after every tick.
    characters:
        prefabs for the robot and the people, used in turn (``Chars/...``).
    skip_animation:
        ask Unity to teleport instead of animating (faster, frames still change).
    """

    def __init__(self, client: UnityClient | None = None, *, url: str = DEFAULT_URL,
                 timeout: float = DEFAULT_TIMEOUT, environment: int = 0,
                 camera: int | str | None = "PERSON_FROM_BACK", check_graph: bool = True,
                 characters: Sequence[str] = ("Chars/Male2", "Chars/Female1", "Chars/Male1",
                                              "Chars/Female2"),
                 skip_animation: bool = True) -> None:
        self.client = client if client is not None else UnityClient(url, timeout)
        if isinstance(environment, bool) or not isinstance(environment, (int, np.integer)) \
                or environment < 0:
            raise ValueError(f"environment must be a non-negative int, got {environment!r}")
        if camera is not None and (isinstance(camera, bool)
                                   or not isinstance(camera, (int, np.integer, str))
                                   or (not isinstance(camera, str) and camera < 0)):
            raise ValueError(f"camera must be None, a camera index or a camera name, got "
                             f"{camera!r}")
        if not isinstance(check_graph, bool):
            raise ValueError(f"check_graph must be a bool, got {check_graph!r}")
        if isinstance(characters, str) or not characters \
                or not all(isinstance(c, str) and c for c in characters):
            raise ValueError(f"characters must be a non-empty list of prefab names, got "
                             f"{characters!r}")
        self.environment = int(environment)
        self.camera = camera
        self.check_graph = check_graph
        self.characters = list(characters)
        self.skip_animation = bool(skip_animation)
        self.id_map: dict[int, int] = {}
        self.char_index: dict[int, int] = {}
        self.camera_index: int | None = None
        self.mismatch_log: list[tuple[int, int, str, str]] = []
        self._classes: dict[int, str] = {}
        self._unity_rooms: set[int] = set()
        self._tracked: list[int] = []
        self._walking: dict[int, int] = {}
        self._uroom: dict[int, int] = {}
        self._resync_objects: list[int] = []
        self.stats = self._zero_stats()

    @staticmethod
    def _zero_stats() -> dict[str, int]:
        return {"lines_sent": 0, "lines_skipped": 0, "lines_substituted": 0,
                "script_failures": 0, "resyncs": 0, "mismatches": 0, "mismatched_now": 0,
                "graph_checks": 0, "frames": 0, "unplaced": 0}

    def info(self) -> dict[str, int]:
        """The counters, as plain ints (safe for vector envs)."""
        return {k: int(v) for k, v in self.stats.items()}

    # ------------------------------------------------------------------ reset
    def reset(self, sim: Any) -> None:
        """Load the apartment, add the episode's objects and characters, map the ids."""
        self.stats = self._zero_stats()
        self.mismatch_log = []
        self._walking = {}
        client = self.client
        client.reset(self.environment)
        graph = client.environment_graph()
        world = sim.world
        ours = world.graph
        unodes = {int(n["id"]): n for n in graph["nodes"] if isinstance(n, dict) and "id" in n}
        self._unity_rooms = {i for i, n in unodes.items() if n.get("category") == "Rooms"}
        self._uroom = {}
        for e in graph["edges"]:
            if isinstance(e, dict) and e.get("relation_type") == "INSIDE" \
                    and e.get("to_id") in self._unity_rooms:
                self._uroom[int(e["from_id"])] = int(e["to_id"])
        id_map = self._match_rooms(world, unodes)
        self._match_furniture(world, unodes, id_map)
        # everyday objects: new nodes placed on/in the matched furniture
        next_id = max(unodes, default=0) + 1
        new_nodes, new_edges, tracked = [], [], []
        held_at_start: list[tuple[int, int]] = []
        for nid in sorted(ours.nodes):
            node = ours.nodes[nid]
            if "GRABBABLE" not in node.properties or nid in world.chars:
                continue
            place = world.placement(nid)
            room = world.room_of(nid)
            holder = world.holder(nid)
            if holder is not None and room is not None:
                # set down in the room, grabbed once the characters exist
                place = self._put_down_place(world, room, id_map)
                held_at_start.append((holder, nid))
            if place is None or place[1] not in id_map:
                self.stats["unplaced"] += 1
                continue
            rel, parent = place
            uid = next_id
            next_id += 1
            id_map[nid] = uid
            tracked.append(nid)
            new_nodes.append({"id": uid, "class_name": node.class_name,
                              "category": node.category or "Props",
                              "properties": sorted(node.properties),
                              "states": sorted(node.states)})
            if parent in world.rooms:
                new_edges.append({"from_id": uid, "relation_type": "INSIDE",
                                  "to_id": id_map[parent]})
                continue
            new_edges.append({"from_id": uid, "relation_type": rel, "to_id": id_map[parent]})
            if room is not None and room in id_map:
                new_edges.append({"from_id": uid, "relation_type": "INSIDE",
                                  "to_id": id_map[room]})
        for nid, uid in id_map.items():  # openable/switchable states of matched furniture
            if nid in world.rooms or nid in tracked:
                continue
            unode = unodes[uid]
            states = [s for s in unode.get("states", []) if s not in _STATE_KEYS]
            states += sorted(s for s in ours.nodes[nid].states if s in _STATE_KEYS)
            unode["states"] = states
        graph = {"nodes": list(unodes.values()) + new_nodes,
                 "edges": list(graph["edges"]) + new_edges}
        client.expand_scene(graph)
        self._tracked = tracked
        # script lines name a node by Unity's own class for it (``freezer``, ``home_office``)
        self._classes = {uid: str(unodes[uid].get("class_name") or ours.nodes[nid].class_name)
                         if uid in unodes else ours.nodes[nid].class_name
                         for nid, uid in id_map.items()}
        # characters: the robot first, then the people by id
        static_cameras = client.camera_count() if self.camera is not None else 0
        before = {int(n["id"]) for n in client.environment_graph()["nodes"]
                  if n.get("class_name") == "character"}
        order = [sim.robot] + [a.id for a in sim.actors]
        walk_in: list[tuple[int, int]] = []  # characters Unity cannot start in their room
        for k, cid in enumerate(order):
            room = world.chars[cid].room
            uroom = id_map.get(room) if room is not None else None
            rclass = normalize_class(str(unodes[uroom].get("class_name", ""))) \
                if uroom is not None else ""
            if uroom is not None and rclass not in _START_ROOMS:
                walk_in.append((cid, room))
            client.add_character(self.characters[k % len(self.characters)],
                                 rclass if rclass in _START_ROOMS else "")
        after = sorted(int(n["id"]) for n in client.environment_graph()["nodes"]
                       if n.get("class_name") == "character" and int(n["id"]) not in before)
        if len(after) != len(order):
            raise UnityError(f"VirtualHome has {len(after)} new characters after adding "
                             f"{len(order)}")
        self.char_index = {}
        for k, (cid, uid) in enumerate(zip(order, after, strict=True)):
            id_map[cid] = uid
            self.char_index[cid] = k
            self._classes[uid] = "character"
        self.id_map = id_map
        self.camera_index = self._pick_camera(static_cameras)
        # characters that started at random walk to their room; objects people hold at the
        # start are walked to and grabbed
        setup = [f"<char{self.char_index[c]}> [walk] <{self._classes[id_map[r]]}> "
                 f"({id_map[r]})" for c, r in walk_in]
        setup += [f"<char{self.char_index[c]}> [{verb}] <{ours.nodes[o].class_name}> "
                  f"({id_map[o]})" for c, o in held_at_start for verb in ("walk", "grab")
                  if c in self.char_index]
        for row in setup:
            ok, message = client.render_script([row], skip_animation=True)
            self.stats["lines_sent"] += 1
            if not ok:
                raise UnityError(f"VirtualHome could not set up the episode ('{row}'): "
                                 f"{_short(message)}")
        if self.check_graph:
            self.check(sim)

    @staticmethod
    def _put_down_place(world: Any, room: int, id_map: dict[int, int]) -> tuple[str, int]:
        """ON the first matched surface in ``room``, else INSIDE the room."""
        nodes = world.graph.nodes
        for nid in sorted(world.room_nodes(room)):
            n = nodes[nid]
            if n.category == "Furniture" and "SURFACES" in n.properties and nid in id_map:
                return "ON", nid
        return "INSIDE", room

    def _match_rooms(self, world: Any, unodes: dict[int, dict[str, Any]]) -> dict[int, int]:
        by_class: dict[str, list[int]] = {}
        for uid in sorted(self._unity_rooms):
            by_class.setdefault(normalize_class(str(unodes[uid].get("class_name", ""))),
                                []).append(uid)
        used: set[int] = set()
        id_map: dict[int, int] = {}
        if not self._unity_rooms:
            raise UnityError("the VirtualHome scene has no rooms (no node of category 'Rooms')")
        for rid in sorted(world.rooms):
            key = world.graph.nodes[rid].key
            src = _source_id(world.graph.nodes[rid], unodes)
            cands = [src] if src in self._unity_rooms and src not in used else \
                [u for u in by_class.get(key, []) if u not in used]
            if not cands:
                cands = [u for u in sorted(self._unity_rooms) if u not in used] \
                    or sorted(self._unity_rooms)
            id_map[rid] = cands[0]
            used.add(cands[0])
        return id_map

    def _match_furniture(self, world: Any, unodes: dict[int, dict[str, Any]],
                         id_map: dict[int, int]) -> None:
        by_class: dict[str, list[int]] = {}
        for uid in sorted(unodes):
            if uid in self._unity_rooms:
                continue
            by_class.setdefault(normalize_class(str(unodes[uid].get("class_name", ""))),
                                []).append(uid)
        used: set[int] = set()
        ours = world.graph
        for nid in sorted(ours.nodes):
            node = ours.nodes[nid]
            if node.category != "Furniture":
                continue
            src = _source_id(node, unodes)
            if src is not None and src not in used and src not in self._unity_rooms:
                id_map[nid] = src  # a house converted from this very scene graph
                used.add(src)
                continue
            keys = (node.key, *CLASS_ALIASES.get(node.key, ()))
            cands = [u for k in keys for u in by_class.get(k, [])]
            if not cands:
                continue
            room = id_map.get(world.room_of(nid) or -1)
            pick = next((u for u in cands if u not in used and self._uroom.get(u) == room),
                        None)
            if pick is None:
                pick = next((u for u in cands if u not in used), cands[0])
            id_map[nid] = pick
            used.add(pick)

    def _pick_camera(self, static_cameras: int) -> int | None:
        cam = self.camera
        if cam is None:
            return None
        if not isinstance(cam, str):
            return int(cam)
        names = self.client.character_cameras()
        total = self.client.camera_count()
        if cam not in names:
            raise UnityError(f"VirtualHome has no character camera {cam!r}; it has {names}")
        if total < static_cameras + len(names):
            raise UnityError(f"VirtualHome reports {total} cameras, fewer than its "
                             f"{static_cameras} static ones plus the robot's {len(names)}")
        return static_cameras + names.index(cam)  # the robot is the first character

    # ------------------------------------------------------------------ ticks
    def script_for(self, events: Iterable[Any]) -> list[str]:
        """The script lines (characters joined with ``|``) that replay a tick's events."""
        per_char: dict[int, list[str]] = {}
        for ev in events:
            line = self._line(ev)
            if line is not None:
                per_char.setdefault(self.char_index[ev.actor], []).append(line)
        rows: list[str] = []
        depth = max((len(v) for v in per_char.values()), default=0)
        for i in range(depth):
            rows.append("|".join(f"<char{k}> {v[i]}" for k, v in sorted(per_char.items())
                                 if i < len(v)))
        return rows

    def _line(self, ev: Any) -> str | None:
        verb = ev.verb
        if verb in RESYNC_VERBS and ev.args and ev.args[0] in self.id_map:
            self._resync_objects.append(ev.args[0])
            return None
        target = VERB_MAP.get(verb)
        if ev.actor not in self.char_index or target is None:
            self.stats["lines_skipped"] += 1
            return None
        if target == "walk":
            dest = ev.args[0] if ev.args else None
            if self._walking.get(ev.actor) == dest:
                if ev.done:
                    self._walking.pop(ev.actor, None)
                return None  # already walking there in Unity
            if not ev.done:
                self._walking[ev.actor] = dest
            else:
                self._walking.pop(ev.actor, None)
        else:
            self._walking.pop(ev.actor, None)
        args = ev.args[_ARG_SLICE.get(verb, slice(None))]
        parts = [f"[{target}]"]
        for a in args:
            uid = self.id_map.get(a)
            if uid is None:
                self.stats["lines_skipped"] += 1
                return None
            parts.append(f"<{self._classes[uid]}> ({uid})")
        if target != verb:
            self.stats["lines_substituted"] += 1
        self.stats["lines_sent"] += 1
        return " ".join(parts)

    def step(self, sim: Any, events: Iterable[Any]) -> None:
        """Replay one tick's events in Unity, then (optionally) check the graph."""
        self._resync_objects = []
        rows = self.script_for(events)
        if rows:
            ok, _message = self.client.render_script(rows, skip_animation=self.skip_animation)
            if not ok:
                self.stats["script_failures"] += 1
        if self._resync_objects:
            self.resync(sim, self._resync_objects)
        if self.check_graph:
            self.check(sim)

    def resync(self, sim: Any, objects: Iterable[int]) -> None:
        """Put objects where the symbolic world has them, with ``expand_scene`` on Unity's
        current graph (for events no script action can replay)."""
        world, id_map = sim.world, self.id_map
        graph = self.client.environment_graph()
        moved = {id_map[o]: o for o in objects if o in id_map}
        edges = [e for e in graph["edges"] if not (
            (e.get("from_id") in moved and e.get("relation_type") in ("INSIDE", "ON"))
            or (e.get("to_id") in moved and e.get("relation_type") in _HOLDS))]
        for uid, obj in moved.items():
            holder = world.holder(obj)
            if holder is not None:
                if holder not in id_map:
                    continue
                hand = "HOLDS_RH" if obj in world.graph.targets(holder, "HOLDS_RH") \
                    else "HOLDS_LH"
                edges.append({"from_id": id_map[holder], "relation_type": hand, "to_id": uid})
                continue
            place, room = world.placement(obj), world.room_of(obj)
            if place is None or place[1] not in id_map:
                continue
            edges.append({"from_id": uid, "relation_type": place[0] if place[1] != room
                          else "INSIDE", "to_id": id_map[place[1]]})
            if room is not None and place[1] != room and room in id_map:
                edges.append({"from_id": uid, "relation_type": "INSIDE", "to_id": id_map[room]})
        self.client.expand_scene({"nodes": graph["nodes"], "edges": edges})
        self.stats["resyncs"] += len(moved)

    def frame(self, size: int) -> np.ndarray:
        """The robot camera's current image, ``size`` × ``size`` × 3 ``uint8``."""
        if self.camera_index is None:
            raise UnityError("the mirror has no camera (backend_options camera=None)")
        img = self.client.camera_image([self.camera_index], "normal", size, size)[0]
        self.stats["frames"] += 1
        if img.shape != (size, size, 3):
            from PIL import Image

            img = np.asarray(Image.fromarray(img).resize((size, size)), dtype=np.uint8)
        return img

    # ------------------------------------------------------------------ graph check
    def check(self, sim: Any) -> int:
        """Compare Unity's graph with the symbolic state; returns this check's mismatches."""
        graph = self.client.environment_graph()
        held: dict[int, int] = {}
        places: dict[int, set[int]] = {}
        for e in graph["edges"]:
            try:
                src, rel, dst = int(e["from_id"]), e["relation_type"], int(e["to_id"])
            except (KeyError, TypeError, ValueError):
                raise UnityError(f"VirtualHome graph has a malformed edge: {_short(e)}") from None
            if rel in _HOLDS:
                held[dst] = src
            elif rel in ("INSIDE", "ON"):
                places.setdefault(src, set()).add(dst)
        world, id_map = sim.world, self.id_map
        bad = 0
        for nid in self._tracked:
            uid = id_map[nid]
            holder = world.holder(nid)
            where = places.get(uid, set())
            if holder is not None:
                want = id_map.get(holder)
                ok = held.get(uid) == want
                expect = f"held by {want}"
            else:
                place = world.placement(nid)
                want = id_map.get(place[1]) if place else None
                ok = want is not None and uid not in held and want in where
                expect = f"in/on {want}"
            if not ok:
                bad += 1
                if len(self.mismatch_log) < 1000:
                    got = f"held by {held[uid]}" if uid in held else f"in/on {sorted(where)}"
                    self.mismatch_log.append((int(world.tick), nid, expect, got))
        self.stats["graph_checks"] += 1
        self.stats["mismatches"] += bad
        self.stats["mismatched_now"] = bad
        return bad
