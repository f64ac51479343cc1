"""The speed-ups keep results: fast paths against the plain definitions they replace."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.render.text import Labels, narrate_event
from mindhelper_env.world.graph import SceneGraph


def _plain_objects_in(w, ids, rooms):
    return [(i, w.location(i), w.room_of(i)) for i in ids
            if w.room_of(i) in rooms and not w.is_hidden(i)]


def test_objects_in_matches_room_of_is_hidden_and_location() -> None:
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    rng = np.random.default_rng(0)
    checked = 0
    for i in range(12):
        obs, info = env.reset(options={"suite": "vh-dev-v1", "index": i})
        w = env.unwrapped.simulation.world
        ids = sorted(w.graph.nodes)  # every kind of node, characters and rooms too
        while True:
            for rooms in (set(w.rooms), {w.rooms[0]}, set()):
                assert w.objects_in(ids, rooms) == _plain_objects_in(w, ids, rooms)
                checked += 1
            objs = info["candidates"]["objects"]
            action = "none"
            if objs and rng.random() < 0.5:
                o = objs[int(rng.integers(len(objs)))]
                action = f"[walk] <{o['class']}> ({o['id']}); [grab] <{o['class']}> ({o['id']})"
            obs, _, term, trunc, info = env.step(action)
            if term or trunc:
                break
    assert checked > 100


def test_share_values_keeps_the_graph_and_its_pickle() -> None:
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    env.reset(seed=5)
    data = env.unwrapped.episode_spec["graph"]
    g = SceneGraph.from_virtualhome(data)
    before = g.to_virtualhome()
    size = len(pickle.dumps(g))
    g.share_values()
    assert g.to_virtualhome() == before == data
    blob = pickle.dumps(g)
    assert len(blob) < size
    back = pickle.loads(blob)
    assert back.to_virtualhome() == before
    assert {n: (x.key, x.states) for n, x in back.nodes.items()} == \
        {n: (x.key, x.states) for n, x in g.nodes.items()}


def test_labels_give_the_same_sentences() -> None:
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    env.reset(options={"suite": "vh-dev-v1", "index": 3})
    u = env.unwrapped
    labels = Labels(u.simulation.world, u.character_names)
    n = 0
    for _ in range(40):
        _, _, term, trunc, _ = env.step("none")
        for ev in u._last_events:
            w, names = u.simulation.world, u.character_names
            assert narrate_event(w, ev, names, 7, labels) == narrate_event(w, ev, names, 7)
            n += 1
        if term or trunc:
            break
    assert n > 0
