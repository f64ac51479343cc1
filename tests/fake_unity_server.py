"""A loopback stand-in for the VirtualHome Unity executable (127.0.0.1 only), for tests.

:class:`FakeUnity` answers the executable's JSON-over-POST protocol for the actions the
``virtualhome-unity`` backend uses. It keeps an environment graph (built from one of our
worlds by :func:`scene_from_world`: rooms and furniture only, ids shifted, plus a few nodes of
its own), replaces it on ``expand_scene``, adds a character node (and its cameras) on
``add_character``, and executes a small subset of ``render_script`` (walk, grab, open, close,
putin, putback move nodes and edges; lookat, pointat, sit, standup, switchon, switchoff are
accepted). ``camera_image`` answers base64 PNGs of one colour per camera index. Every request
body is kept in :attr:`FakeUnity.requests`.

``mode="lazy"`` accepts ``grab`` without moving anything (a simulator that diverges);
``mode="garbage"`` answers every request with bytes that are not JSON. :func:`silent_port`
gives a port that accepts connections and never answers; :func:`closed_port` one where
nothing listens.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import re
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any

from PIL import Image

from mindhelper_env.world.world import World
from tests.loopback import LoopbackServer

SHIFT = 1000
STATIC_CAMERAS = 3
CHARACTER_CAMERAS = ["PERSON_FROM_BACK", "FIRST_PERSON"]
_LINE = re.compile(r"^\s*<char(\d+)>\s*\[(\w+)\]((?:\s*<[^>]+>\s*\(\d+\))*)\s*$")
_ARG = re.compile(r"<([^>]+)>\s*\((\d+)\)")


def scene_from_world(world: World) -> dict[str, Any]:
    """A Unity-like apartment for a world: its rooms and furniture with ids + ``SHIFT``, each
    INSIDE its room, plus a floor per room and one object of the apartment's own."""
    g = world.graph
    nodes, edges = [], []
    for rid in world.rooms:
        n = g.nodes[rid]
        nodes.append({"id": rid + SHIFT, "class_name": n.class_name, "category": "Rooms",
                      "properties": [], "states": []})
        nodes.append({"id": rid + 2 * SHIFT, "class_name": "floor", "category": "Floors",
                      "properties": ["SURFACES"], "states": []})
        edges.append({"from_id": rid + 2 * SHIFT, "relation_type": "INSIDE",
                      "to_id": rid + SHIFT})
    for nid in sorted(g.nodes):
        n = g.nodes[nid]
        if n.category != "Furniture":
            continue
        nodes.append({"id": nid + SHIFT, "class_name": n.class_name, "category": "Furniture",
                      "properties": sorted(n.properties), "states": []})
        edges.append({"from_id": nid + SHIFT, "relation_type": "INSIDE",
                      "to_id": world.room_of(nid) + SHIFT})
    first = world.rooms[0] + SHIFT
    nodes.append({"id": 9 * SHIFT, "class_name": "plant", "category": "Decor",
                  "properties": [], "states": []})
    edges.append({"from_id": 9 * SHIFT, "relation_type": "INSIDE", "to_id": first})
    return {"nodes": nodes, "edges": edges}


def png(color: tuple[int, int, int], width: int, height: int) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def camera_color(index: int) -> tuple[int, int, int]:
    return (10 + 20 * index % 240, 200, 30)


class FakeUnity(LoopbackServer):
    def __init__(self, scene: dict[str, Any], mode: str = "ok") -> None:
        self.scene = scene
        self.mode = mode
        self.graph: dict[str, Any] = {"nodes": [], "edges": []}
        self.characters = 0
        self.requests: list[dict[str, Any]] = []
        self.scripts: list[list[str]] = []
        self.failed_lines: list[str] = []
        super().__init__()

    def actions(self) -> list[str]:
        return [r["action"] for r in self.requests]

    # ------------------------------------------------------------------ protocol
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if fake.mode == "garbage":
                    out = b"<html>this is not the simulator</html>"
                else:
                    req = json.loads(body)
                    with fake._lock:
                        fake.requests.append(req)
                        answer = fake.answer(req)
                    out = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        return Handler

    def answer(self, req: dict[str, Any]) -> dict[str, Any]:
        action = req["action"]
        ints, strings = req.get("intParams", []), req.get("stringParams", [])
        ok = {"success": True, "message": ""}
        if action == "idle":
            return ok
        if action == "clear":
            self.graph, self.characters = {"nodes": [], "edges": []}, 0
            return ok
        if action == "environment":
            self.graph, self.characters = copy.deepcopy(self.scene), 0
            return ok
        if action == "environment_graph":
            return {"success": True, "message": json.dumps(self.graph)}
        if action == "expand_scene":
            config, graph = json.loads(strings[0]), json.loads(strings[1])
            assert set(config) == {"randomize", "random_seed", "animate_character",
                                   "ignore_obstacles", "transfer_transform"}
            self.graph = graph
            return {"success": True, "message": "{}"}
        if action == "add_character":
            params = json.loads(strings[0])
            rooms = [n for n in self.graph["nodes"] if n["category"] == "Rooms"]
            room = next((n for n in rooms if n["class_name"] == params["initial_room"]),
                        rooms[0])
            self.characters += 1
            cid = self.characters
            self.graph["nodes"].append({"id": cid, "class_name": "character",
                                        "category": "Characters", "properties": [],
                                        "states": [], "prefab_name": params[
                                            "character_resource"]})
            self.graph["edges"].append({"from_id": cid, "relation_type": "INSIDE",
                                        "to_id": room["id"]})
            return ok
        if action == "camera_count":
            return {"success": True, "message": "",
                    "value": STATIC_CAMERAS + self.characters * len(CHARACTER_CAMERAS)}
        if action == "character_cameras":
            return {"success": True, "message": json.dumps(CHARACTER_CAMERAS)}
        if action == "camera_image":
            params = json.loads(strings[0])
            return {"success": True, "message": "", "message_list": [
                png(camera_color(i), params["image_width"], params["image_height"])
                for i in ints]}
        if action == "render_script":
            json.loads(strings[0])
            self.scripts.append(list(strings[1:]))
            failed = []
            for row in strings[1:]:
                for part in row.split("|"):
                    if not self._execute(part):
                        failed.append(part)
            self.failed_lines.extend(failed)
            return {"success": not failed, "message": json.dumps({"failed": failed})}
        return {"success": False, "message": f"unknown action {action}"}

    # ------------------------------------------------------------------ script subset
    def _execute(self, part: str) -> bool:
        m = _LINE.match(part)
        if m is None:
            return False
        char = int(m.group(1)) + 1
        verb = m.group(2)
        args = [(cls, int(i)) for cls, i in _ARG.findall(m.group(3))]
        nodes = {n["id"]: n for n in self.graph["nodes"]}
        if char not in nodes or any(i not in nodes or nodes[i]["class_name"] != cls
                                    for cls, i in args):
            return False
        edges = self.graph["edges"]
        if verb in ("walk", "putin", "putback") and self._room(args[-1][1]) is None:
            return False
        if verb == "walk":
            room = self._room(args[0][1])
            edges[:] = [e for e in edges
                        if not (e["from_id"] == char and e["relation_type"] == "INSIDE")]
            edges.append({"from_id": char, "relation_type": "INSIDE", "to_id": room})
        elif verb == "grab" and self.mode == "lazy":
            pass
        elif verb == "grab":
            obj = args[0][1]
            edges[:] = [e for e in edges if not (e["from_id"] == obj and e["relation_type"]
                                                 in ("INSIDE", "ON"))]
            hand = "HOLDS_LH" if any(e["from_id"] == char and e["relation_type"] == "HOLDS_RH"
                                     for e in edges) else "HOLDS_RH"
            edges.append({"from_id": char, "relation_type": hand, "to_id": obj})
        elif verb in ("putin", "putback"):
            obj, dst = args[0][1], args[1][1]
            edges[:] = [e for e in edges if not (e["to_id"] == obj and e["relation_type"]
                                                 in ("HOLDS_RH", "HOLDS_LH"))]
            rel = "INSIDE" if verb == "putin" else "ON"
            edges.append({"from_id": obj, "relation_type": rel, "to_id": dst})
            edges.append({"from_id": obj, "relation_type": "INSIDE",
                          "to_id": self._room(dst)})
        elif verb in ("open", "close"):
            node = nodes[args[0][1]]
            node["states"] = [s for s in node["states"] if s not in ("OPEN", "CLOSED")] \
                + ["OPEN" if verb == "open" else "CLOSED"]
        elif verb not in ("lookat", "pointat", "sit", "standup", "switchon", "switchoff",
                          "turnto"):
            return False
        return True

    def _room(self, nid: int) -> int | None:
        rooms = {n["id"] for n in self.graph["nodes"] if n["category"] == "Rooms"}
        if nid in rooms:
            return nid
        for e in self.graph["edges"]:
            if e["from_id"] == nid and e["relation_type"] == "INSIDE" and e["to_id"] in rooms:
                return e["to_id"]
        return None


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def silent_port() -> socket.socket:
    """A listening socket that never accepts: connections succeed, answers never come.
    Close it when done."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s
