"""The TDW mirror's command lists, checked offline against TDW's own helpers and data; its
connection and frame decoding with a fake ``Controller`` and fake image output (no test
starts or reaches a TDW build).

Skipped without the tdw extra, except when ``MINDHELPER_REQUIRE_TDW=1`` (set by ``.ci/run``).
"""

from __future__ import annotations

import io
import json
import threading
import time

import numpy as np
import pytest

from mindhelper_env.world import World
from mindhelper_env.world import tdw_house as th
from mindhelper_env.world.house import generate_house
from mindhelper_env.world.houses import House, HouseSet
from tests.conftest import require_tdw

require_tdw()

from mindhelper_env.backends import tdw_build  # noqa: E402
from mindhelper_env.backends.tdw_build import (  # noqa: E402
    AVATAR_ID,
    HAND_HEIGHT,
    SimulatorUnavailable,
    TDWMirror,
)


@pytest.fixture(scope="module")
def data():
    return th.tdw_data()


@pytest.fixture(scope="module")
def houses(data):
    return th.convert_tdw_houses(data)


def _world(houses, name: str = "floorplan_2b") -> World:
    """A TDW house with objects, the robot, an adult, a child and a wheelchair user."""
    world = World(HouseSet([House(name, houses[name], "tdw")], name).build(
        np.random.default_rng(7)))
    rooms = world.rooms
    for cid, kind in ((1, "robot"), (2, "adult"), (3, "child"), (4, "wheelchair"), (5, "adult")):
        world.add_character(cid, rooms[cid % len(rooms)], name=f"p{cid}", robot=cid == 1)
        world.graph.nodes[cid].extra["kind"] = kind
    return world


def _by_type(cmds, kind):
    return [c for c in cmds if c["$type"] == kind]


def test_reset_commands_build_the_house(houses, data):
    world = _world(houses)
    mirror = TDWMirror()
    cmds = mirror.commands_for_reset(world)
    assert all(isinstance(c, dict) and isinstance(c.get("$type"), str) for c in cmds)
    json.dumps(cmds)  # plain JSON, as the build receives it
    scenes = _by_type(cmds, "add_scene")
    assert len(scenes) == 1 and scenes[0]["name"] == "floorplan_2b"
    assert scenes[0]["name"] in data["scenes"]
    assert cmds[0]["$type"] == "add_scene"  # the scene before anything is put into it
    added = {c["id"]: c for c in _by_type(cmds, "add_object")}
    assert all(c["name"] in data["models"] for c in added.values())
    g = world.graph
    furniture = [n for n in g.nodes.values() if n.category == "Furniture"]
    props = [n for n in g.nodes.values() if n.category == "Props"]
    assert props and not mirror.skipped
    assert set(added) == {n.id for n in furniture} | {n.id for n in props}
    for n in furniture:
        c, t = added[n.id], n.extra["tdw"]
        assert c["name"] == n.prefab_name == t["model"]
        assert c["position"] == t["position"] and c["rotation"] == t["rotation"]
    kin = {c["id"]: c for c in _by_type(cmds, "set_kinematic_state")}
    shelf = next(n for n in furniture if n.extra.get("added"))
    assert kin[shelf.id]["is_kinematic"] and not kin[shelf.id]["use_gravity"]
    for n in props:
        c = added[n.id]
        assert c["name"] == th.TDW_OBJECT_MODELS[n.key]
        rel, parent = world.placement(n.id)
        pb = g.nodes[parent].bounding_box
        top = pb["center"][1] + pb["size"][1] / 2
        assert c["position"]["y"] == pytest.approx(top if rel == "ON" else pb["center"][1],
                                                   abs=1e-3)
        assert (c["position"]["x"], c["position"]["z"]) == pytest.approx(
            (pb["center"][0], pb["center"][2]), abs=1e-3)
        assert kin[n.id]["is_kinematic"]


def test_reset_commands_match_tdw_helpers(houses):
    """The add-object commands are exactly what TDW's own Controller helper returns."""
    from tdw.controller import Controller

    world = _world(houses, "floorplan_5a")
    cmds = TDWMirror().commands_for_reset(world)
    added = {c["id"]: c for c in _by_type(cmds, "add_object")}
    node = next(n for n in world.graph.nodes.values() if n.category == "Furniture")
    t = node.extra["tdw"]
    assert added[node.id] == Controller.get_add_object(
        t["model"], object_id=node.id, position=t["position"], rotation=t["rotation"],
        library="models_core.json")
    assert _by_type(cmds, "add_scene")[0] == Controller.get_add_scene("floorplan_5a")


def test_characters_become_replicants(houses, data):
    world = _world(houses)
    cmds = TDWMirror().commands_for_reset(world)
    walkers = {c["id"]: c for c in _by_type(cmds, "add_replicant")}
    wheel = {c["id"]: c for c in _by_type(cmds, "add_wheelchair_replicant")}
    assert set(walkers) == {1, 2, 3, 5} and set(wheel) == {4}
    assert all(c["name"] in data["replicants"] for c in walkers.values())
    assert all(c["name"] in data["wheelchair_replicants"] for c in wheel.values())
    assert walkers[3]["name"] == "girl_casual" and walkers[2]["name"] != walkers[5]["name"]
    for cid, c in {**walkers, **wheel}.items():
        room = world.graph.nodes[world.chars[cid].room].bounding_box
        for k, axis in ((0, "x"), (2, "z")):
            assert abs(c["position"][axis] - room["center"][k]) <= room["size"][k] / 2


def test_camera_sends_img_pass(houses):
    cmds = TDWMirror(width=64, height=48).commands_for_reset(_world(houses))
    assert {"$type": "create_avatar", "type": "A_Img_Caps_Kinematic", "id": AVATAR_ID} in cmds
    masks = _by_type(cmds, "set_pass_masks")
    assert masks == [{"$type": "set_pass_masks", "pass_masks": ["_img"], "avatar_id": AVATAR_ID}]
    send = _by_type(cmds, "send_images")
    assert send and send[0]["ids"] == [AVATAR_ID] and send[0]["frequency"] == "always"
    assert {"$type": "set_screen_size", "width": 64, "height": 48} in cmds


def test_reset_from_a_spec(houses, data):
    """An episode generated in a TDW house: the spec path, with the spec's actor kinds."""
    from mindhelper_env.scenarios.generator import generate_episode

    spec = generate_episode("implicit_goal_reach", 3,
                            house=House("floorplan_4c", houses["floorplan_4c"], "tdw"))
    cmds = TDWMirror().commands_for_reset(spec)
    kinds = {a["id"]: a["kind"] for a in spec["actors"]}
    wheel = {c["id"] for c in _by_type(cmds, "add_wheelchair_replicant")}
    assert wheel == {cid for cid, k in kinds.items() if k == "wheelchair"}
    assert _by_type(cmds, "add_scene")[0]["name"] == "floorplan_4c"
    assert all(c["name"] in data["models"] for c in _by_type(cmds, "add_object"))


def test_not_a_tdw_house():
    world = World(generate_house(np.random.default_rng(0)))
    with pytest.raises(ValueError, match="not a TDW house"):
        TDWMirror().commands_for_reset(world)
    with pytest.raises(TypeError):
        TDWMirror().commands_for_reset([1, 2])
    with pytest.raises(RuntimeError, match="commands_for_reset"):
        TDWMirror().commands_for_tick([])


def test_tick_commands_follow_the_world(houses):
    world = _world(houses)
    mirror = TDWMirror()
    mirror.commands_for_reset(world)
    # the adult walks to an object on a surface and grabs it
    obj = next(n.id for n in world.graph.nodes.values() if n.category == "Props"
               and world.placement(n.id)[0] == "ON" and world.reachable(2, n.id))
    cls = world.graph.nodes[obj].class_name
    line = f"[walk] <{cls}> ({obj})"
    for _ in range(10):
        assert world.execute(2, line).ok
        if world.is_close(2, obj):
            break
    assert world.is_close(2, obj)
    cmds = mirror.commands_for_tick([{"tick": 1, "actor": 2, "verb": "walk", "args": [obj],
                                      "ok": True, "room": world.chars[2].room}])
    assert cmds == [{"$type": "teleport_object", "id": 2,
                     "position": mirror.character_position(2)}]
    assert world.execute(2, f"[grab] <{cls}> ({obj})").ok
    cmds = mirror.commands_for_tick([{"tick": 2, "actor": 2, "verb": "grab", "args": [obj],
                                      "ok": True, "room": world.chars[2].room}])
    moved = {c["id"]: c["position"] for c in cmds}
    assert moved[obj]["y"] == HAND_HEIGHT
    assert (moved[obj]["x"], moved[obj]["z"]) == (moved[2]["x"], moved[2]["z"])
    # a failed line or a look moves nothing
    assert mirror.commands_for_tick([{"actor": 2, "verb": "grab", "args": [obj],
                                      "ok": False}]) == []
    assert mirror.commands_for_tick([{"actor": 2, "verb": "look", "args": [obj],
                                      "ok": True}]) == []


def test_tick_commands_during_an_episode(houses):
    """Run a generated episode in a TDW house; after every tick the teleports put each moved
    object where the symbolic world has it."""
    from mindhelper_env.backends.symbolic import Simulation
    from mindhelper_env.scenarios.generator import generate_episode

    spec = generate_episode("false_belief_relocation", 1,
                            house=House("floorplan_1c", houses["floorplan_1c"], "tdw"))
    sim = Simulation(spec)
    mirror = TDWMirror()
    mirror.commands_for_reset(sim.world)
    n_moves = 0
    for _ in range(30):
        events = sim.step_tick()
        cmds = mirror.commands_for_tick(events, sim.world)
        assert all(c["$type"] == "teleport_object" for c in cmds)
        for c in cmds:
            if c["id"] in sim.world.chars:
                assert c["position"] == mirror.character_position(c["id"])
            else:
                n_moves += 1
                assert c["position"] == mirror.object_position(c["id"])
        if sim.terminated or sim.truncated:
            break
    assert n_moves > 0


class _BlockingController:
    release = threading.Event()
    calls: list[dict] = []

    def __init__(self, **kwargs):
        type(self).calls.append(kwargs)
        type(self).release.wait(30)


def test_connect_times_out_without_a_build(monkeypatch):
    import tdw.controller

    _BlockingController.release.clear()
    monkeypatch.setattr(tdw.controller, "Controller", _BlockingController)
    mirror = TDWMirror(port=1071, timeout=0.3)
    t = time.perf_counter()
    try:
        with pytest.raises(SimulatorUnavailable, match="port 1071 within 0.3 s") as err:
            mirror.connect()
    finally:
        _BlockingController.release.set()
    assert time.perf_counter() - t < 5
    assert isinstance(err.value, TimeoutError)
    assert "start your TDW build first" in str(err.value)
    assert _BlockingController.calls[-1] == {"port": 1071, "launch_build": False,
                                             "check_version": False}
    assert mirror.controller is None


def test_connect_and_send_with_a_build(monkeypatch):
    import tdw.controller

    sent = []

    class Up:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

        def communicate(self, commands):
            sent.append(commands)
            return [b"resp"]

    monkeypatch.setattr(tdw.controller, "Controller", Up)
    mirror = TDWMirror(port=1234, timeout=2)
    with pytest.raises(RuntimeError, match="connect"):
        mirror.send([])
    ctl = mirror.connect()
    assert ctl.kwargs == {"port": 1234, "launch_build": False, "check_version": False}
    assert mirror.send([{"$type": "do_nothing"}]) == [b"resp"]
    assert sent == [[{"$type": "do_nothing"}]]
    mirror.close(terminate=True)
    assert sent[-1] == {"$type": "terminate"} and mirror.controller is None


def test_connect_reports_a_failing_controller(monkeypatch):
    import tdw.controller

    class Refused:
        def __init__(self, **kwargs):
            raise ConnectionRefusedError("nothing there")

    monkeypatch.setattr(tdw.controller, "Controller", Refused)
    with pytest.raises(SimulatorUnavailable, match="nothing there"):
        TDWMirror(timeout=2).connect()


def test_frame_decodes_the_img_pass(monkeypatch):
    import tdw.output_data
    from PIL import Image

    pixels = np.zeros((6, 8, 3), dtype=np.uint8)
    pixels[:, :4] = (200, 10, 30)
    pixels[2, 5] = (1, 2, 3)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    png = np.frombuffer(buf.getvalue(), dtype=np.uint8)

    class FakeImages:
        def __init__(self, raw):
            self.raw = raw

        def get_num_passes(self):
            return 2

        def get_pass_mask(self, i):
            return ["_id", "_img"][i]

        def get_image(self, i):
            assert i == 1
            return png

    monkeypatch.setattr(tdw.output_data, "Images", FakeImages)
    monkeypatch.setattr(tdw.output_data.OutputData, "get_data_type_id",
                        staticmethod(lambda raw: raw[:4].decode()))
    mirror = TDWMirror()
    frame = mirror.frame([b"tran....", b"imag...."])
    assert frame.dtype == np.uint8 and frame.shape == (6, 8, 3)
    assert np.array_equal(frame, pixels)
    assert mirror.frame([b"tran...."]) is None
    mirror.last_response = [b"imag...."]
    assert np.array_equal(mirror.frame(), pixels)


def test_module_loads_tdw_lazily():
    import subprocess
    import sys

    code = ("import sys, mindhelper_env.backends.tdw_build; "
            "assert 'tdw' not in sys.modules, 'tdw imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert tdw_build.TDWMirror is TDWMirror


def _fake_build(monkeypatch, pixels: np.ndarray, sent: list, *, fail_after: int | None = None):
    """A fake TDW build: records every command list, answers with one ``_img`` image."""
    import tdw.controller
    import tdw.output_data
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    png = np.frombuffer(buf.getvalue(), dtype=np.uint8)

    class Build:  # stands in for the connected build (never a Controller)

        def communicate(self, commands):
            if fail_after is not None and len(sent) >= fail_after:
                raise ConnectionResetError("build closed")
            sent.append(commands)
            return [b"imag...."]

    class FakeImages:
        def __init__(self, raw):
            pass

        def get_num_passes(self):
            return 1

        def get_pass_mask(self, i):
            return "_img"

        def get_image(self, i):
            return png

    def connect(self):
        self.controller = Build()
        return self.controller

    monkeypatch.setattr(TDWMirror, "connect", connect)
    monkeypatch.setattr(tdw.output_data, "Images", FakeImages)
    monkeypatch.setattr(tdw.output_data.OutputData, "get_data_type_id",
                        staticmethod(lambda raw: raw[:4].decode()))


def test_env_backend_tdw_mirrors_the_episode_with_frames(monkeypatch):
    """``MindHelper-TDW-v0`` with ``backend="tdw"``: the scene is built at reset, every tick
    sends its teleports, frames come from the build, and the symbolic run is unchanged."""
    import gymnasium as gym

    from tests.conftest import episode_steps

    pixels = np.full((64, 64, 3), (12, 200, 90), dtype=np.uint8)
    sent: list = []
    _fake_build(monkeypatch, pixels, sent)

    def play(env):
        return episode_steps(env, "tdw-dev-v2", 2)

    env = gym.make("MindHelper-TDW-v0", backend="tdw", backend_options={"timeout": 2},
                   obs_mode="text+rgb", frame_size=64)
    steps = play(env)
    assert all(np.array_equal(obs["rgb"], pixels) for obs, _ in steps)
    final = steps[-1][1]["tdw"]
    assert all(type(v) is int for v in final.values())
    assert final["episodes"] == 1 and final["missing_frames"] == 0
    assert final["frames"] >= len(steps)
    types = [c["$type"] for cmds in sent for c in cmds]
    assert "add_scene" in types and types.count("add_object") > 20
    assert "teleport_object" in types
    assert final["commands_sent"] == len(types)
    plain = gym.make("MindHelper-TDW-v0")
    assert play(plain)[-1][1]["episode_record_json"] == steps[-1][1]["episode_record_json"]


def test_env_backend_tdw_errors_are_clear(monkeypatch):
    import gymnasium as gym

    with pytest.raises(ValueError, match="unknown backend_options"):
        gym.make("MindHelper-TDW-v0", backend="tdw", backend_options={"url": "x"})
    with pytest.raises(ValueError, match="port"):
        gym.make("MindHelper-TDW-v0", backend="tdw", backend_options={"port": "1071"})
    sent: list = []
    _fake_build(monkeypatch, np.zeros((8, 8, 3), np.uint8), sent, fail_after=3)
    env = gym.make("MindHelper-TDW-v0", backend="tdw")
    env.reset(options={"suite": "tdw-dev-v2", "index": 0})
    with pytest.raises(SimulatorUnavailable, match="stopped answering"):
        for _ in range(60):
            env.step("none")
    # an episode in a generated house cannot be shown in TDW
    sent.clear()
    _fake_build(monkeypatch, np.zeros((8, 8, 3), np.uint8), sent)
    env = gym.make("MindHelper-VirtualHome-v0", backend="tdw")
    with pytest.raises(ValueError, match="not a TDW house"):
        env.reset(options={"suite": "vh-dev-v2", "index": 0})
