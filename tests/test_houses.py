"""Episodes set in real houses: VirtualHome environment graphs (mindhelper_env.world.houses).

The TrimmedTestScene1 tests need ``virtualhome-eval``; they are skipped without it, except
when ``MINDHELPER_REQUIRE_VH=1`` (set by ``.ci/run``): then a missing package fails them.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os

import gymnasium as gym
import numpy as np
import pytest

from mindhelper_env.scenarios.generator import generate_episode
from mindhelper_env.scenarios.spec import FAMILIES, GENERATOR_V2, GENERATOR_V3, V3_FAMILIES
from mindhelper_env.world.house import FURNITURE, ROOM_TYPES, generate_house
from mindhelper_env.world.houses import (
    House,
    HouseSet,
    resolve_houses,
    virtualhome_house,
    virtualhome_scene_graphs,
)
from mindhelper_env.world.world import World


def _require_vh() -> None:
    if os.environ.get("MINDHELPER_REQUIRE_VH") == "1":
        importlib.import_module("virtualhome_eval")
    else:
        pytest.importorskip("virtualhome_eval",
                            reason="needs virtualhome-eval: pip install --no-deps "
                                   "virtualhome-eval==0.1.1")


@pytest.fixture(scope="module")
def scene1() -> dict:
    _require_vh()
    return virtualhome_scene_graphs(limit=1)[0][1]


def _boxed_graph() -> dict:
    """A VirtualHome-format graph with real bounding boxes (VirtualHome class spellings)."""
    g = generate_house(np.random.default_rng(7)).to_virtualhome()
    rename = {"sofa": "couch", "fridge": "freezer", "kitchencabinet": "cupboard"}
    for n in g["nodes"]:
        n["class_name"] = rename.get(n["class_name"], n["class_name"])
        n["id"] = n["id"] - 90  # source ids below ours: the converter renumbers
    for e in g["edges"]:
        e["from_id"] -= 90
        e["to_id"] -= 90
    return g


def test_trimmed_scene_converts_to_a_furnished_shell(scene1):
    h = virtualhome_house(scene1, "scene1")
    nodes = h.graph["nodes"]
    rooms = [n for n in nodes if n["category"] == "Rooms"]
    assert sorted(n["class_name"] for n in rooms) == ["bathroom", "bedroom", "diningroom",
                                                       "homeoffice"]
    assert all(n["class_name"] in ROOM_TYPES for n in rooms)
    furn = [n for n in nodes if n["category"] == "Furniture"]
    assert all(n["class_name"] in FURNITURE for n in furn)
    assert {n["source_class"] for n in furn if n["class_name"] == "fridge"} == {"freezer"}
    assert {n["source_class"] for n in furn if n["class_name"] == "sofa"} == {"couch"}
    source_ids = {n["id"] for n in scene1["nodes"]}
    assert all(n["source_id"] in source_ids for n in nodes)
    assert min(n["id"] for n in nodes) >= 100
    assert not any("GRABBABLE" in n["properties"] for n in nodes)
    assert h.notes["synthetic_plan"] is True  # these graphs carry no boxes
    w = World(h.scene_graph())
    assert len(w.doors) == 3
    # every room reachable from every other through doors
    start = w.rooms[0]
    seen, todo = {start}, [start]
    while todo:
        r = todo.pop()
        for a, b in w.doors.values():
            for x, y in ((a, b), (b, a)):
                if x == r and y not in seen:
                    seen.add(y)
                    todo.append(y)
    assert seen == set(w.rooms)
    shelves = [n for n in furn if n["class_name"] == "wallshelf"]
    assert shelves and all(n["bounding_box"]["center"][1] > 1.6 for n in shelves)


def test_boxes_of_the_source_are_kept():
    g = _boxed_graph()
    h = virtualhome_house(g, "boxed")
    assert h.notes["synthetic_plan"] is False
    src = {n["id"]: n for n in g["nodes"]}
    for n in h.graph["nodes"]:
        if n["category"] in ("Rooms", "Furniture"):
            assert n["bounding_box"] == src[n["source_id"]]["bounding_box"]
    roles = {n["source_class"]: n["class_name"] for n in h.graph["nodes"]
             if n["category"] == "Furniture"}
    assert roles["couch"] == "sofa" and roles["freezer"] == "fridge"
    assert roles["cupboard"] == "kitchencabinet"
    # loose objects of the source are left out
    assert not [n for n in h.graph["nodes"] if n["category"] == "Props"]
    assert any(n["category"] == "Props" for n in g["nodes"])


@pytest.mark.parametrize(("generator", "family"), [(GENERATOR_V2, f) for f in FAMILIES]
                         + [(GENERATOR_V3, f) for f in V3_FAMILIES])
def test_every_family_in_the_vh_apartment(scene1, generator, family):
    for seed in range(3):
        spec = generate_episode(family, seed, house="virtualhome:scene1", generator=generator)
        assert spec["house"] == "virtualhome:scene1" and spec["generator"] == generator
        rooms = {n["class_name"] for n in spec["graph"]["nodes"] if n["category"] == "Rooms"}
        assert rooms == {"bathroom", "bedroom", "diningroom", "homeoffice"}
        again = generate_episode(family, seed, house="virtualhome:scene1", generator=generator)
        assert json.dumps(again, sort_keys=True) == json.dumps(spec, sort_keys=True)


def test_env_from_a_graph_file(tmp_path):
    path = tmp_path / "apartment.json"
    path.write_text(json.dumps({"init_graph": _boxed_graph()}))
    env = gym.make("MindHelper-VirtualHome-v0", house=str(path), pool_size=0)
    classes = set()
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        spec = env.unwrapped.episode_spec
        assert spec["house"] == str(path)
        classes |= {n["source_class"] for n in spec["graph"]["nodes"]
                    if n["category"] == "Furniture"}
        done = False
        while not done:
            obs, _, term, trunc, info = env.step("none")
            done = term or trunc
        assert info["episode_record"]["reference"]["focus_actor"] > 1
    assert "couch" in classes or "freezer" in classes
    env.close()


def test_env_with_several_houses_and_a_pool(tmp_path, scene1):
    g2 = _boxed_graph()
    env = gym.make("MindHelper-VirtualHome-v0", house=[scene1, g2], pool_size=16,
                   pool_dir=str(tmp_path))
    default = gym.make("MindHelper-VirtualHome-v0", pool_size=16, pool_dir=str(tmp_path))
    pool = env.unwrapped.episode_pool
    assert pool.key != default.unwrapped.episode_pool.key
    seen = set()
    for seed in range(12):
        env.reset(seed=seed)
        spec = env.unwrapped.episode_spec
        # TestScene1's rooms come from ids 1, 67, ...; the boxed graph's from 10, 11, ...
        seen.add(min(n["source_id"] for n in spec["graph"]["nodes"] if n["category"] == "Rooms"))
    assert seen == {1, 10}
    a, _ = env.reset(seed=3)
    b, _ = env.reset(seed=3)
    assert a == b
    env.close()
    default.close()


def test_house_set_build_is_deterministic_and_fresh():
    hs = HouseSet([virtualhome_house(_boxed_graph(), "a")], "a")
    g1 = hs.build(np.random.default_rng(5))
    g2 = hs.build(np.random.default_rng(5))
    assert g1.to_virtualhome() == g2.to_virtualhome()
    assert len(g1.nodes) > len(hs.houses[0].graph["nodes"])  # objects were scattered
    g1.remove_node(max(g1.nodes))
    assert hs.build(np.random.default_rng(5)).to_virtualhome() == g2.to_virtualhome()


@pytest.mark.parametrize("bad, message", [
    ("no/such/file.json", "cannot read house graph"),
    ("virtualhome:nowhere", "unknown house"),
    ({"nodes": [], "edges": []}, "no rooms"),
    ({"nodes": "x"}, "'nodes' and 'edges'"),
    (42, "house must be"),
    ([], "empty list"),
    ([3], "house\\[0\\]"),
])
def test_bad_house_arguments_are_clear(bad, message):
    with pytest.raises(ValueError, match=message):
        resolve_houses(bad)


def test_a_file_that_is_not_json(tmp_path):
    p = tmp_path / "g.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="is not JSON"):
        gym.make("MindHelper-VirtualHome-v0", house=str(p))


def test_generated_is_the_default():
    assert resolve_houses(None) is None and resolve_houses("generated") is None
    h = House("x", _boxed_graph())
    assert resolve_houses(h).houses == (h,)
    spec = generate_episode("routine", 3)
    assert "house" not in spec


@pytest.mark.parametrize("suite", ["vh-scene1-dev-v2", "tdw-dev-v2"])
def test_house_suites_are_solvable_and_shortcuts_stay_bounded(suite):
    from mindhelper_env.validity import BOUNDS, SHORTCUTS, agent_scores

    if suite.startswith("tdw"):
        from tests.conftest import require_tdw

        require_tdw()
    else:
        _require_vh()
    scores = agent_scores(suite, ["oracle", "belief-tracker", *SHORTCUTS], limit=60)
    for metric in ("PHA", "PHR", "PIR", "PSR", "PIA", "TA", "SR"):
        assert scores["oracle"][metric] == 100.0, metric
    assert scores["belief-tracker"]["PHA"] >= 85.0
    for name in SHORTCUTS:
        assert scores[name]["PIA"] <= BOUNDS["shortcut_PIA_max"] + 7, name
        assert scores[name]["PHA"] <= BOUNDS["shortcut_PHA_max"] + 7, name


def test_trigger_env_trains_in_real_houses():
    from tests.conftest import require_tdw

    require_tdw()
    env = gym.make("MindHelper-Trigger-v0", house="tdw", pool_size=0)
    env.reset(seed=0)
    assert env.unwrapped.household.episode_spec["house"] == "tdw"
    for _ in range(20):
        mask = env.unwrapped.action_masks()
        _, _, term, trunc, _ = env.step(int(np.flatnonzero(mask)[0]))
        if term or trunc:
            env.reset()
            assert env.unwrapped.household.episode_spec["house"] == "tdw"


def _without(classes: set[str]) -> dict:
    g = _boxed_graph()
    drop = {n["id"] for n in g["nodes"] if n["class_name"] in classes}
    g["nodes"] = [n for n in g["nodes"] if n["id"] not in drop]
    g["edges"] = [e for e in g["edges"] if e["from_id"] not in drop and e["to_id"] not in drop]
    return g


def test_a_house_that_cannot_hold_a_family_says_why():
    g = _without({"wallshelf"})
    with pytest.raises(ValueError, match="cannot hold 'implicit_goal_reach'.*high wall shelf"):
        gym.make("MindHelper-VirtualHome-v0", house=g)
    with pytest.raises(ValueError, match="cannot hold 'reach_helped'"):
        generate_episode("reach_helped", 0, house=g)
    env = gym.make("MindHelper-VirtualHome-v0", house=g, pool_size=0,
                   families={"implicit_goal_search": 1, "search_self_found": 1})
    env.reset(seed=0)
    assert env.unwrapped.episode_spec["family"] in ("implicit_goal_search", "search_self_found")
    boxes = {"fridge", "freezer", "kitchencabinet", "cupboard", "cabinet", "nightstand",
             "closet", "dishwasher", "microwave", "bathroomcabinet"}
    with pytest.raises(ValueError, match="cannot hold 'false_belief_relocation'.*container"):
        generate_episode("false_belief_relocation", 0, house=_without(boxes))
    for name in ("tdw", "virtualhome:scene1"):
        if name == "tdw" and importlib.util.find_spec("tdw") is None:
            continue
        if name.startswith("virtualhome") and importlib.util.find_spec("virtualhome_eval") is None:
            continue
        resolve_houses(name).check_families(FAMILIES)  # the shipped houses hold every family
