"""The symbolic world: VirtualHome graph I/O, script parsing and execution semantics."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from mindhelper_env.world import SceneGraph, World, generate_house, parse_line, parse_program
from mindhelper_env.world.script import ScriptParseError, is_silence

DATA = Path(__file__).parent / "data" / "vh_graph_small.json"


@pytest.fixture()
def vh() -> dict:
    return json.loads(DATA.read_text())


def _meaning(d: dict) -> tuple:
    nodes = {
        n["id"]: (n["class_name"], n.get("category"), frozenset(p.upper() for p in n["properties"]),
                  frozenset(s.upper() for s in n["states"]), json.dumps(n.get("bounding_box"), sort_keys=True),
                  n.get("prefab_name"))
        for n in d["nodes"]
    }
    edges = frozenset((e["from_id"], e["relation_type"], e["to_id"]) for e in d["edges"])
    return nodes, edges


def test_virtualhome_round_trip_keeps_meaning(vh):
    g = SceneGraph.from_virtualhome(vh)
    out = g.to_virtualhome()
    assert _meaning(out) == _meaning(vh)
    # and again through a World (indices must not alter the graph)
    assert _meaning(World(out).graph.to_virtualhome()) == _meaning(vh)


def test_generated_house_round_trip():
    g = generate_house(np.random.default_rng(3))
    d = g.to_virtualhome()
    assert _meaning(SceneGraph.from_virtualhome(d).to_virtualhome()) == _meaning(d)


def test_real_graph_quirks_load(vh):
    w = World(vh)
    # both spellings of the kitchen counter match by normalized class
    assert {n.id for n in w.graph.by_class("kitchen_counter")} == {104, 105}
    # apple is INSIDE both the fridge and the kitchen: placed in the fridge, room is kitchen
    assert w.placement(120) == ("INSIDE", 103)
    assert w.room_of(120) == 11
    # furniture ON the floor is anchored to itself, not the floor
    assert w.anchor(104) == 104
    assert w.anchor(121) == 104
    # unknown classes, states and properties are kept
    toaster = w.node(108)
    assert "SPARKLY" in toaster.states and "FROBNICATES" in toaster.properties
    # doors connect rooms
    assert w.distance(56, 73) == 2


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.pop("nodes"), "no 'nodes'"),
        (lambda d: d["nodes"][0].pop("id"), "integer 'id'"),
        (lambda d: d["nodes"][1].update(class_name=""), "class_name"),
        (lambda d: d["nodes"].append(copy.deepcopy(d["nodes"][0])), "duplicate node id"),
        (lambda d: d["edges"].append({"from_id": 120, "relation_type": "ON", "to_id": 9999}),
         "dangling: node 9999"),
        (lambda d: d["edges"].append({"from_id": 120, "to_id": 103}), "relation_type"),
    ],
)
def test_malformed_graph_raises_value_error(vh, mutate, message):
    mutate(vh)
    with pytest.raises(ValueError, match=message):
        SceneGraph.from_virtualhome(vh)


def test_realistic_script_on_loaded_graph(vh):
    w = World(vh, robot_ids=[1])
    script = [
        "[walk] <fridge> (103)",
        "[open] <fridge> (103)",
        "[grab] <apple> (120)",
        "[walk] <kitchen_counter> (104)",
        "[putback] <apple> (120) <kitchen_counter> (104)",
        "[grab] <cupcake> (121)",
        "[walk] <bedroom> (56)",
        "[walk] <bed> (160)",
        "[grab] <remote_control> (123)",
        "[walk] <tv> (162)",
        "[switchon] <tv> (162)",
        "[walk] <bed> (160)",
        "[putback] <remote_control> (123) <bed> (160)",
        "[sit] <bed> (160)",
        "[standup]",
    ]
    for line in script:
        res = w.execute(1, line)
        assert res.ok, (line, res.reason)
    assert w.placement(120) == ("ON", 104)
    assert w.holder(121) == 1 and w.room_of(121) == 56
    assert "ON" in w.node(162).states
    # the exported graph reflects the new state
    edges = {(e["from_id"], e["relation_type"], e["to_id"]) for e in w.graph.to_virtualhome()["edges"]}
    assert (120, "ON", 104) in edges and (120, "INSIDE", 103) not in edges
    assert (1, "HOLDS_RH", 121) in edges or (1, "HOLDS_LH", 121) in edges


@pytest.mark.parametrize(
    "line, reason",
    [
        ("[grab] <apple> (120)", "closed container"),
        ("[walk] <apple> (120)", "closed container"),
        ("[open] <kitchencabinet> (106)", "not close"),
        ("[grab] <kitchen_counter> (104)", "cannot be grabbed"),
        ("[putin] <apple> (120) <fridge> (103)", "not holding"),
        ("[grab] <banana> (120)", "not a banana"),
        ("[grab] <apple> (4242)", "unknown node id 4242"),
        ("[tell] <character> (1) <apple> (120) <fridge> (103)", "only the robot"),
        ("[standup]", "not sitting"),
        ("[fly] <apple> (120)", "unknown verb"),
        ("[walk] <fridge>", "argument"),
    ],
)
def test_failed_preconditions_give_reasons(vh, line, reason):
    w = World(vh)
    res = w.execute(1, line)
    assert not res.ok
    assert reason in res.reason


def test_reach_height_and_hands(vh):
    w = World(vh)
    w.execute(1, "[walk] <kitchencabinet> (106)")
    w.set_reach(1, 1.2)
    res = w.execute(1, "[open] <kitchencabinet> (106)")
    assert not res.ok and "out of reach" in res.reason
    w.set_reach(1, 2.0)
    assert w.execute(1, "[open] <kitchencabinet> (106)").ok
    assert w.execute(1, "[grab] <mug> (122)").ok
    w.execute(1, "[walk] <kitchen_counter> (104)")
    assert w.execute(1, "[grab] <cupcake> (121)").ok
    w.execute(1, "[walk] <fridge> (103)")
    res = w.execute(1, "[open] <fridge> (103)")
    assert not res.ok and "hands are full" in res.reason


def test_walking_crosses_one_door_per_call(vh):
    w = World(vh)
    res = w.execute(1, "[walk] <towel> (181)", max_hops=1)
    assert not res.ok  # towel hidden in a closed cabinet
    res = w.execute(1, "[walk] <tv> (162)", max_hops=1)
    assert res.ok and res.done and w.chars[1].room == 56
    res = w.execute(1, "[walk] <bathroom_cabinet> (180)", max_hops=1)
    assert res.ok and not res.done and w.chars[1].room == 11
    res = w.execute(1, "[walk] <bathroom_cabinet> (180)", max_hops=1)
    assert res.ok and res.done and w.chars[1].room == 73


def test_perception_scope(vh):
    w = World(vh)
    visible = set(w.visible_nodes(1))
    assert 121 in visible  # on the counter, in the kitchen
    assert 120 not in visible  # inside the closed fridge
    assert 123 not in visible  # another room
    w.execute(1, "[walk] <fridge> (103)")
    w.execute(1, "[open] <fridge> (103)")
    assert 120 in set(w.visible_nodes(1))


def test_parser_accepts_virtualhome_spellings():
    assert parse_line("<char0> [Walk] <kitchen_counter> (104)").args == (("kitchen_counter", 104),)
    assert str(parse_line("[PUTIN]   <apple> (31)  <fridge> (12)")) == "[putin] <apple> (31) <fridge> (12)"
    assert parse_line("[run] <bed> (1)").verb == "walk"
    lines, errors = parse_program("[walk] <a> (1); nonsense\n[standup]")
    assert [ln.verb for ln in lines] == ["walk", "standup"]
    assert errors and errors[0][0] == "nonsense"
    assert is_silence("  NONE ") and not is_silence("none please")
    with pytest.raises(ScriptParseError, match="takes 2"):
        parse_line("[putin] <apple> (31)")
