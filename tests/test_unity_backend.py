"""The virtualhome-unity backend against a loopback fake of the Unity executable."""

from __future__ import annotations

import json
import os
import time

import gymnasium as gym
import numpy as np
import pytest

from mindhelper_env.backends.virtualhome_unity import (
    SimulatorUnavailable,
    UnityClient,
    UnityError,
    UnityMirror,
)
from mindhelper_env.scenarios.suites import suite_episode
from mindhelper_env.world.world import Event, World
from tests.conftest import episode_steps
from tests.fake_unity_server import (
    CHARACTER_CAMERAS,
    SHIFT,
    STATIC_CAMERAS,
    FakeUnity,
    camera_color,
    closed_port,
    scene_from_world,
    silent_port,
)

SUITE = "vh-dev-v2"
REQUEST_KEYS = {"id", "action", "intParams", "stringParams"}


def fake_for(index: int, mode: str = "ok") -> FakeUnity:
    return FakeUnity(scene_from_world(World(suite_episode(SUITE, index)["graph"])), mode)


def run_episode(env, index: int, agent_name: str = "oracle", suite: str = SUITE):
    return episode_steps(env, suite, index, agent_name)


def test_client_requests_follow_the_protocol():
    with fake_for(5) as fake:
        client = UnityClient(fake.url, timeout=5)
        assert client.check_connection()
        client.reset(2)
        graph = client.environment_graph()
        assert {n["class_name"] for n in graph["nodes"]} >= {"fridge", "plant"}
        graph["nodes"].append({"id": 77, "class_name": "apple", "category": "Food",
                               "properties": ["GRABBABLE"], "states": []})
        kitchen = next(n["id"] for n in graph["nodes"] if n["class_name"] == "kitchen")
        graph["edges"].append({"from_id": 77, "relation_type": "INSIDE", "to_id": kitchen})
        client.expand_scene(graph)
        client.add_character("Chars/Female1", "kitchen")
        ok, message = client.render_script(["<char0> [walk] <apple> (77)"], recording=True)
        assert ok and message == {"failed": []}
        assert client.camera_count() == STATIC_CAMERAS + len(CHARACTER_CAMERAS)
        assert client.character_cameras() == CHARACTER_CAMERAS
        images = client.camera_image([0, 4], image_width=32, image_height=24)
        reqs = fake.requests
    assert [r["action"] for r in reqs] == [
        "idle", "clear", "environment", "environment_graph", "expand_scene", "add_character",
        "render_script", "camera_count", "character_cameras", "camera_image"]
    for r in reqs:
        assert set(r) == REQUEST_KEYS and isinstance(r["id"], str)
        assert all(isinstance(x, int) for x in r["intParams"])
        assert all(isinstance(x, str) for x in r["stringParams"])
    assert reqs[1]["intParams"] == [2] and reqs[2]["intParams"] == [2]
    assert json.loads(reqs[4]["stringParams"][1])["nodes"][-1]["id"] == 77
    char = json.loads(reqs[5]["stringParams"][0])
    assert char == {"character_resource": "Chars/Female1", "mode": "fix_room",
                    "character_position": {"x": 0.0, "y": 0.0, "z": 0.0},
                    "initial_room": "kitchen"}
    params = json.loads(reqs[6]["stringParams"][0])
    assert params["recording"] is True and params["skip_animation"] is True
    assert params["image_synthesis"] == ["normal"] and params["camera_mode"] == ["AUTO"]
    assert reqs[6]["stringParams"][1:] == ["<char0> [walk] <apple> (77)"]
    assert reqs[9]["intParams"] == [0, 4]
    assert json.loads(reqs[9]["stringParams"][0]) == {"mode": "normal", "image_width": 32,
                                                      "image_height": 24}
    assert [im.shape for im in images] == [(24, 32, 3)] * 2
    assert all(im.dtype == np.uint8 for im in images)
    assert tuple(images[0][5, 5]) == camera_color(0) and tuple(images[1][0, 0]) == camera_color(4)


def test_a_failed_request_raises_unity_error():
    with fake_for(5) as fake:
        client = UnityClient(fake.url, timeout=5)
        with pytest.raises(UnityError, match="no_such_action"):
            client._ok("no_such_action")
        ok, _ = client.render_script(["<char0> [walk] <apple> (123456)"])
        assert not ok


@pytest.mark.parametrize("index", [1, 5])
def test_episode_mirrors_in_unity_with_frames_and_no_mismatch(index):
    with fake_for(index) as fake:
        env = gym.make("MindHelper-VirtualHome-v0", backend="virtualhome-unity",
                       backend_options={"url": fake.url, "timeout": 5}, obs_mode="text+rgb",
                       frame_size=64)
        steps = run_episode(env, index)
        mirror = env.unwrapped._mirror
        record = steps[-1][1]["episode_record_json"]
        scripts = list(fake.scripts)
    robot_camera = STATIC_CAMERAS + CHARACTER_CAMERAS.index("PERSON_FROM_BACK")
    for obs, info in steps:
        assert obs["rgb"].shape == (64, 64, 3)
        assert (obs["rgb"] == np.array(camera_color(robot_camera), np.uint8)).all()
        assert set(info["unity"]) >= {"lines_sent", "lines_skipped", "mismatches", "frames"}
        assert all(type(v) is int for v in info["unity"].values())
    stats = steps[-1][1]["unity"]
    assert stats["mismatches"] == 0 and stats["unplaced"] == 0
    assert stats["script_failures"] == 0
    assert stats["lines_sent"] >= 10 and stats["graph_checks"] >= len(steps)
    assert stats["frames"] >= len(steps)
    sent = [row for rows in scripts for row in rows]
    assert any("[grab]" in row or "[putin]" in row for row in sent)
    assert all(row.startswith("<char") for row in sent)
    # furniture was matched to the apartment's own nodes (ids shifted by the fake)
    world = env.unwrapped.simulation.world
    furniture = [n for n in world.graph.nodes.values() if n.category == "Furniture"]
    assert furniture and all(mirror.id_map[n.id] == n.id + SHIFT for n in furniture)
    # the symbolic run is the source of truth: the same episode without Unity scores the same
    plain = gym.make("MindHelper-VirtualHome-v0")
    assert run_episode(plain, index)[-1][1]["episode_record_json"] == record


def test_given_objects_are_resynced_with_expand_scene():
    with fake_for(0) as fake:
        env = gym.make("MindHelper-VirtualHome-v0", backend="virtualhome-unity",
                       backend_options={"url": fake.url, "timeout": 5, "camera": None})
        steps = run_episode(env, 0)
        actions = fake.actions()
    gives = [ev for ev in env.unwrapped.simulation.log if ev.verb == "give"]
    assert gives
    stats = steps[-1][1]["unity"]
    assert stats["resyncs"] >= len(gives) and stats["mismatches"] == 0
    assert actions.count("expand_scene") == 1 + stats["resyncs"]
    assert stats["frames"] == 0 and "rgb" not in steps[-1][0]


def test_a_diverging_simulator_shows_as_mismatches():
    with fake_for(5, mode="lazy") as fake:
        env = gym.make("MindHelper-VirtualHome-v0", backend="virtualhome-unity",
                       backend_options={"url": fake.url, "timeout": 5, "camera": None})
        steps = run_episode(env, 5)
    stats = steps[-1][1]["unity"]
    assert stats["mismatches"] > 0 and stats["mismatched_now"] >= 0
    mirror = env.unwrapped._mirror
    assert mirror.mismatch_log and mirror.mismatch_log[0][2].startswith("held by")


def test_script_rows_join_characters_and_substitute_verbs():
    m = UnityMirror(url="http://127.0.0.1:9", timeout=1)
    m.char_index = {1: 0, 2: 1}
    m.id_map = {1: 501, 2: 502, 10: 610, 20: 620, 30: 630}
    m._classes = {501: "character", 502: "character", 610: "fridge", 620: "apple",
                  630: "kitchen"}
    ev = [Event(3, 2, "look", (10,), True, 30), Event(3, 1, "walk", (10,), True, 30),
          Event(3, 2, "stretch", (20, 10), True, 30), Event(3, 1, "give", (20, 2), True, 30),
          Event(3, 1, "tell", (2, 20, 10), True, 30), Event(3, 0, "move", (20, 10), True, 30)]
    m._resync_objects = []
    rows = m.script_for(ev)
    assert rows == ["<char0> [walk] <fridge> (610)|<char1> [lookat] <fridge> (610)",
                    "<char1> [pointat] <apple> (620)"]
    assert m.stats["lines_sent"] == 3 and m.stats["lines_substituted"] == 2
    assert m.stats["lines_skipped"] == 1  # tell
    assert m._resync_objects == [20, 20]  # give and move: put in place with expand_scene
    # a walk is sent once, when it starts, not at every door on the way
    walk = [Event(4, 1, "walk", (30,), True, 31, done=False)]
    assert m.script_for(walk) == ["<char0> [walk] <kitchen> (630)"]
    walk[0].tick, walk[0].done = 5, True
    assert m.script_for(walk) == []


def test_garbage_answers_raise_unity_error():
    with fake_for(5, mode="garbage") as fake:
        with pytest.raises(UnityError, match="not JSON"):
            UnityClient(fake.url, timeout=5).check_connection()
        env = gym.make("MindHelper-VirtualHome-v0", backend="virtualhome-unity",
                       backend_options={"url": fake.url, "timeout": 5})
        with pytest.raises(UnityError):
            env.reset(options={"suite": SUITE, "index": 5})


def test_no_server_raises_simulator_unavailable_quickly():
    url = f"http://127.0.0.1:{closed_port()}"
    env = gym.make("MindHelper-VirtualHome-v0", backend="virtualhome-unity",
                   backend_options={"url": url, "timeout": 2.0})
    t0 = time.perf_counter()
    with pytest.raises(SimulatorUnavailable, match="symbolic backend") as err:
        env.reset(options={"suite": SUITE, "index": 5})
    assert time.perf_counter() - t0 < 2.0 + 1.0
    assert url in str(err.value) and isinstance(err.value, ConnectionError)


def test_a_server_that_never_answers_times_out():
    sock = silent_port()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        client = UnityClient(url, timeout=0.5)
        t0 = time.perf_counter()
        with pytest.raises(SimulatorUnavailable, match=r"within 0\.5 s"):
            client.environment_graph()
        elapsed = time.perf_counter() - t0
    finally:
        sock.close()
    assert 0.4 <= elapsed < 0.5 + 1.0


def test_simulator_lost_mid_episode_raises():
    fake = fake_for(5)
    with fake:
        env = gym.make("MindHelper-VirtualHome-v0", backend="virtualhome-unity",
                       backend_options={"url": fake.url, "timeout": 1})
        env.reset(options={"suite": SUITE, "index": 5})
    with pytest.raises(SimulatorUnavailable):
        for _ in range(20):
            env.step("none")
    # a reset that cannot reach the simulator leaves no half-mirrored episode to step
    with pytest.raises(SimulatorUnavailable):
        env.reset(options={"suite": SUITE, "index": 1})
    with pytest.raises(gym.error.ResetNeeded):
        env.step("none")


@pytest.mark.parametrize("kwargs", [
    {"backend": "unity"},
    {"backend": "symbolic", "backend_options": {"url": "http://127.0.0.1:1"}},
    {"backend": "virtualhome-unity", "backend_options": ["url"]},
    {"backend": "virtualhome-unity", "backend_options": {"port": 8080}},
    {"backend": "virtualhome-unity", "backend_options": {"url": "127.0.0.1:8080"}},
    {"backend": "virtualhome-unity", "backend_options": {"timeout": 0}},
    {"backend": "virtualhome-unity", "backend_options": {"camera": -1}},
    {"backend": "virtualhome-unity", "backend_options": {"check_graph": "yes"}},
    {"backend": "virtualhome-unity", "backend_options": {"camera": None},
     "obs_mode": "text+rgb"},
])
def test_backend_arguments_are_checked(kwargs):
    with pytest.raises(ValueError):
        gym.make("MindHelper-VirtualHome-v0", **kwargs)


def test_symbolic_default_has_no_unity_info():
    env = gym.make("MindHelper-VirtualHome-v0")
    _, info = env.reset(options={"suite": SUITE, "index": 5})
    assert "unity" not in info and env.unwrapped._mirror is None
    # constructing the Unity backend does not connect (nothing listens on port 9)
    gym.make("MindHelper-VirtualHome-v0", backend="virtualhome-unity",
             backend_options={"url": "http://127.0.0.1:9"})


@pytest.mark.parametrize("index", [1, 5])
def test_characters_start_in_their_rooms(index):
    with fake_for(index) as fake:
        env = gym.make("MindHelper-VirtualHome-v0", backend="virtualhome-unity",
                       backend_options={"url": fake.url, "timeout": 5, "camera": None})
        env.reset(options={"suite": SUITE, "index": index})
        graph = fake.graph
    sim, mirror = env.unwrapped.simulation, env.unwrapped._mirror
    rooms_of = {e["from_id"]: e["to_id"] for e in graph["edges"]
                if e["relation_type"] == "INSIDE" and e["to_id"] in mirror._unity_rooms}
    assert len(mirror.char_index) == 1 + len(sim.actors)
    for cid in mirror.char_index:
        assert rooms_of[mirror.id_map[cid]] == mirror.id_map[sim.world.chars[cid].room]


def test_a_real_apartment_maps_to_its_own_unity_nodes():
    """An episode set in TestScene1 (house="virtualhome:scene1") mirrored in a Unity scene
    that is TestScene1's graph: every room and piece of furniture maps to the node it was
    converted from, whatever its class is called in Unity (freezer, couch, ...)."""
    if os.environ.get("MINDHELPER_REQUIRE_VH") != "1":
        pytest.importorskip("virtualhome_eval", reason="needs virtualhome-eval")
    from mindhelper_env.world.houses import virtualhome_scene_graphs

    raw = virtualhome_scene_graphs(limit=1)[0][1]
    chars = {n["id"] for n in raw["nodes"] if n["category"] == "Characters"}
    scene = {"nodes": [n for n in raw["nodes"] if n["id"] not in chars],
             "edges": [e for e in raw["edges"]
                       if e["from_id"] not in chars and e["to_id"] not in chars]}
    with FakeUnity(scene) as fake:
        env = gym.make("MindHelper-VirtualHome-v0", backend="virtualhome-unity",
                       backend_options={"url": fake.url, "timeout": 5})
        steps = run_episode(env, 0, suite="vh-scene1-dev-v2")
        mirror = env.unwrapped._mirror
        world = env.unwrapped.simulation.world
    mapped = [n for n in world.graph.nodes.values() if n.category in ("Furniture", "Rooms")]
    assert mapped
    for n in mapped:
        assert mirror.id_map[n.id] == n.extra["source_id"], n.class_name
    assert steps[-1][1]["unity"]["mismatches"] == 0
