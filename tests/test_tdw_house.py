"""TDW floorplans converted into household scene graphs (``mindhelper_env.world.tdw_house``).

Skipped without the tdw extra, except when ``MINDHELPER_REQUIRE_TDW=1`` (set by ``.ci/run``):
then a missing package fails the tests instead. No test starts a TDW build.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import deque

import pytest

from mindhelper_env.world import SceneGraph, World
from mindhelper_env.world import tdw_house as th
from mindhelper_env.world.house import FIRST_HOUSE_ID, FURNITURE, OBJECT_CATALOG, ROOM_TYPES
from tests.conftest import require_tdw


@pytest.fixture(scope="module")
def data():
    require_tdw()
    return th.tdw_data()


@pytest.fixture(scope="module")
def houses(data):
    return th.convert_tdw_houses(data)


@pytest.fixture(scope="module")
def info(data, tmp_path_factory):
    return th.tdw_house_info(tmp_path_factory.mktemp("tdw-info"))


def _top(node: dict) -> float:
    bb = node["bounding_box"]
    return bb["center"][1] + bb["size"][1] / 2


def _within(box: dict, room, margin: float) -> bool:
    rb = room.bounding_box
    return all(abs(box["center"][k] - rb["center"][k]) <= rb["size"][k] / 2 + margin
               for k in (0, 2))


def _furniture(g: dict) -> list[dict]:
    return [n for n in g["nodes"] if n["category"] == "Furniture"]


def test_import_does_not_load_tdw():
    code = ("import sys, mindhelper_env, mindhelper_env.world.tdw_house; "
            "assert 'tdw' not in sys.modules, 'tdw imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_tdw_says_how_to_install(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "tdw" else real(name, *a, **k))
    with pytest.raises(ImportError, match=r'pip install "mindhelper-env\[tdw\]"'):
        th.tdw_house_graphs(tmp_path)
    with pytest.raises(ImportError, match=r'pip install "mindhelper-env\[tdw\]"'):
        th.tdw_data()


def test_mirror_without_tdw_says_how_to_install(monkeypatch):
    from mindhelper_env.backends.tdw_build import TDWMirror

    monkeypatch.setitem(sys.modules, "tdw.controller", None)  # as if tdw were not installed
    with pytest.raises(ImportError, match=r'pip install "mindhelper-env\[tdw\]"'):
        TDWMirror().commands_for_reset({"graph": {"nodes": [], "edges": []}})
    with pytest.raises(ImportError, match=r'pip install "mindhelper-env\[tdw\]"'):
        TDWMirror(timeout=0.1).connect()


def test_every_house_converts(houses, data, info):
    assert sorted(houses) == sorted(th.house_names()) == sorted(info)
    assert len(houses) == 12
    for name, g in houses.items():
        assert set(g) == {"nodes", "edges"}  # nothing a strict graph schema would refuse
        assert info[name]["scene"] == name
        assert info[name]["dropped"] > 0 and info[name]["outside"] == 0
        assert name in data["scenes"], f"{name} is not a TDW scene"
        world = World(SceneGraph.from_virtualhome(g))
        assert len(world.rooms) >= 4, name
        ids = [n["id"] for n in g["nodes"]]
        assert ids == sorted(ids) and min(ids) >= FIRST_HOUSE_ID and len(set(ids)) == len(ids)
        cats = {n["category"] for n in g["nodes"]}
        assert cats == {"Rooms", "Doors", "Furniture"}, (name, cats)  # no objects, no people
        assert 20 <= len(_furniture(g)) <= 60, (name, len(_furniture(g)))


def test_every_room_reachable_through_doors(houses):
    for name, g in houses.items():
        world = World(SceneGraph.from_virtualhome(g))
        links: dict[int, set[int]] = {r: set() for r in world.rooms}
        for a, b in world.doors.values():
            links[a].add(b)
            links[b].add(a)
        # every room has a door of its own (World's "no door: adjacent to all" fallback unused)
        assert all(links.values()), name
        seen = {world.rooms[0]}
        todo = deque(seen)
        while todo:
            for nxt in links[todo.popleft()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        assert seen == set(world.rooms), name
        for door, (a, b) in world.doors.items():
            node = world.graph.nodes[door]
            assert node.key == "door" and "OPEN" in node.states and "CAN_OPEN" in node.properties
            # the door stands between its rooms: within 1 m of both rooms' boxes (floorplan
            # 2: of one; the other room's part beside it is a hallway without furniture)
            near = [r for r in (a, b) if _within(node.bounding_box, world.graph.nodes[r], 1.0)]
            assert len(near) == 2 or (name.startswith("floorplan_2") and len(near) == 1), \
                (name, door)
            inside = world.graph.targets(door, "INSIDE")
            assert len(inside) == 1 and inside <= {a, b}


def test_vocabulary_and_prefabs(houses, data):
    models = data["models"]
    for name, g in houses.items():
        for n in g["nodes"]:
            if n["category"] == "Rooms":
                assert n["class_name"] in ROOM_TYPES
            elif n["category"] == "Furniture":
                assert n["class_name"] in FURNITURE, (name, n["class_name"])
                fdef = FURNITURE[n["class_name"]]
                assert set(n["properties"]) == set(fdef.props)
                assert set(n["states"]) == set(fdef.states)
                assert n["prefab_name"] in models, (name, n["prefab_name"])
                assert n["tdw"]["model"] == n["prefab_name"]


def test_furniture_boxes_follow_the_layout(houses, data, info):
    """Each converted furniture node keeps its layout entry; its box stands on the layout
    position and is as tall as the model."""
    for name, g in houses.items():
        f, layout = info[name]["floorplan"], info[name]["layout"]
        assert name == f"floorplan_{f}{'abc'[layout]}"
        entries = {(o["name"], o["position"]["x"], o["position"]["z"])
                   for o in data["layouts"][f][str(layout)]}
        for n in _furniture(g):
            t = n["tdw"]
            rec = data["models"][t["model"]]
            height = abs(rec["bounds"]["top"]["y"] - rec["bounds"]["bottom"]["y"])
            if n.get("added"):
                continue
            assert (t["model"], t["position"]["x"], t["position"]["z"]) in entries
            bb = n["bounding_box"]
            for k, axis in ((0, "x"), (2, "z")):
                assert abs(t["position"][axis] - bb["center"][k]) <= bb["size"][k] / 2 + 1e-3
            assert bb["size"][1] == pytest.approx(height, abs=1e-3)
            bottom = bb["center"][1] - bb["size"][1] / 2
            assert bottom == pytest.approx(t["position"]["y"] + min(
                rec["bounds"]["bottom"]["y"], rec["bounds"]["top"]["y"]), abs=1e-3)


def test_room_types_follow_their_furniture(houses):
    for name, g in houses.items():
        world = World(SceneGraph.from_virtualhome(g))
        for r in world.rooms:
            kind = world.graph.nodes[r].class_name
            inside = {world.graph.nodes[i].key for i in world.room_nodes(r)}
            if kind == "kitchen":
                assert inside & {"fridge", "kitchencounter", "kitchencabinet", "dishwasher",
                                 "microwave"}, name
            elif kind == "bedroom":
                assert "bed" in inside, name
        kinds = {world.graph.nodes[r].class_name for r in world.rooms}
        assert {"kitchen", "livingroom", "bedroom"} <= kinds, (name, kinds)


def test_scenario_needs_are_met(houses, info):
    for name, g in houses.items():
        world = World(SceneGraph.from_virtualhome(g))
        furn = _furniture(g)
        shelves = [n for n in furn if n["class_name"] == "wallshelf"]
        assert any(n["bounding_box"]["center"][1] > 1.6 for n in shelves), name
        assert all(_top(s) <= 2.0 for s in shelves), name  # an adult still reaches the top
        added = [n for n in shelves if n.get("added")]
        assert len(added) == info[name]["added_shelves"] == 1
        assert added[0]["prefab_name"] == th.HIGH_SHELF_MODEL
        shelf_room = world.graph.nodes[world.room_of(added[0]["id"])].class_name
        assert shelf_room in ("kitchen", "livingroom")
        containers = [n for n in furn if {"CONTAINERS", "CAN_OPEN"} <= set(n["properties"])
                      and _top(n) <= 1.9]
        assert len(containers) >= 2, name
        assert any(_top(n) <= 1.1 for n in containers), name
        surfaces = [n for n in furn if "SURFACES" in n["properties"] and _top(n) <= 1.1]
        rooms_with = {world.room_of(n["id"]) for n in surfaces}
        assert len(rooms_with) >= len(world.rooms) - 1, name


def test_object_models_exist(data):
    assert set(th.TDW_OBJECT_MODELS) == set(OBJECT_CATALOG)
    for cls, model in th.TDW_OBJECT_MODELS.items():
        assert model in data["models"], (cls, model)
        assert not data["models"][model]["do_not_use"], (cls, model)
    assert th.HIGH_SHELF_MODEL in data["models"]


def test_conversion_is_deterministic(data, houses):
    again = th.convert_tdw_houses(data)
    assert json.dumps(again, sort_keys=True) == json.dumps(houses, sort_keys=True)


def test_cache_round_trip(houses, tmp_path):
    fresh = json.loads(json.dumps(houses))
    first = th.tdw_house_graphs(tmp_path)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and str(th.CONVERTER_VERSION) in files[0].name
    second = th.tdw_house_graphs(tmp_path)
    assert first == fresh
    assert second == fresh
    second["floorplan_1a"]["nodes"].clear()  # callers get their own copies
    assert th.tdw_house_graphs(tmp_path) == fresh
    assert th.tdw_house_graph("floorplan_4b", tmp_path) == fresh["floorplan_4b"]
    with pytest.raises(KeyError, match="floorplan_1a"):
        th.tdw_house_graph("floorplan_3a", tmp_path)


def test_cache_file_holds_houses_and_info(houses, tmp_path):
    th.tdw_house_graphs(tmp_path)
    (path,) = tmp_path.glob("*.json")
    doc = json.loads(path.read_text())
    assert doc["converter_version"] == th.CONVERTER_VERSION
    assert doc["houses"] == json.loads(json.dumps(houses))
    assert doc["info"] == th.tdw_house_info(tmp_path)


def test_default_cache_location(houses, tmp_path, monkeypatch):
    monkeypatch.setenv("MINDHELPER_CACHE_DIR", str(tmp_path))
    assert th.tdw_house_graphs() == json.loads(json.dumps(houses))
    assert len(list((tmp_path / "tdw-houses").glob("*.json"))) == 1


@pytest.mark.parametrize("junk", [b"{not json", b"\xff\xfe", b'{"houses": {}}', b"[]", b"",
                                  b'{"converter_version": 1, "houses": {"floorplan_1a": 3}}'])
def test_corrupt_cache_is_rebuilt(houses, tmp_path, junk):
    th.tdw_house_graphs(tmp_path)
    (path,) = tmp_path.glob("*.json")
    path.write_bytes(junk)
    assert th.tdw_house_graphs(tmp_path) == json.loads(json.dumps(houses))
    assert json.loads(path.read_text())["houses"] == json.loads(json.dumps(houses))
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


def test_conversion_is_fast(data):
    import time

    t = time.perf_counter()
    th.convert_tdw_houses(data)
    assert time.perf_counter() - t < 2.0


def test_scenario_builders_use_tdw_houses(houses):
    """Every scenario family builds and validates its episodes in every TDW house."""
    from mindhelper_env.scenarios.generator import generate_episode
    from mindhelper_env.scenarios.spec import FAMILIES, GENERATOR_V2, GENERATOR_V3, V3_FAMILIES
    from mindhelper_env.world.houses import House, resolve_houses

    tdw = resolve_houses("tdw")
    assert sorted(h.name for h in tdw.houses) == sorted(houses)
    names = sorted(houses)
    both = [(GENERATOR_V2, f) for f in FAMILIES] + [(GENERATOR_V3, f) for f in V3_FAMILIES]
    for k, (gen, fam) in enumerate(both):
        for seed in range(3):
            name = names[(3 * k + seed) % len(names)]
            spec = generate_episode(fam, seed, house=House(name, houses[name], "tdw"),
                                    generator=gen)
            assert spec["family"] == fam and spec["house"] == name
            prefabs = {n.get("prefab_name") for n in spec["graph"]["nodes"]
                       if n.get("category") == "Furniture"}
            assert prefabs and None not in prefabs, fam  # the TDW house, not a generated one
        spec = generate_episode(fam, 0, house="tdw", generator=gen)
        assert spec["house"] == "tdw"
