"""The speed-ups keep results: fast paths against the plain definitions they replace."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import numpy as np
import pytest

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.render.text import Labels, event_dict, events_json, narrate_event, window_events
from mindhelper_env.world import World
from mindhelper_env.world.graph import _BOX_SLOT, Node, SceneGraph


def _grab_some(rng, info, p: float) -> str:
    """With probability ``p`` (when anything is in view), a program that walks to a random
    object in view and grabs it; else ``"none"``."""
    objs = info["candidates"]["objects"]
    if objs and rng.random() < p:
        o = objs[int(rng.integers(len(objs)))]
        return f"[walk] <{o['class']}> ({o['id']}); [grab] <{o['class']}> ({o['id']})"
    return "none"


def _plain_objects_in(w, ids, rooms):
    return [(i, w.location(i), w.room_of(i)) for i in ids
            if w.room_of(i) in rooms and not w.is_hidden(i)]


def test_objects_in_matches_room_of_is_hidden_and_location() -> None:
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    rng = np.random.default_rng(0)
    checked = 0
    for i in range(12):
        obs, info = env.reset(options={"suite": "vh-dev-v2", "index": i})
        w = env.unwrapped.simulation.world
        ids = sorted(w.graph.nodes)  # every kind of node, characters and rooms too
        while True:
            for rooms in (set(w.rooms), {w.rooms[0]}, set()):
                assert w.objects_in(ids, rooms) == _plain_objects_in(w, ids, rooms)
                checked += 1
            action = _grab_some(rng, info, 0.5)
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
    env.reset(options={"suite": "vh-dev-v2", "index": 3})
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


def _plain_candidates(env):
    """The info candidates computed from the world's plain accessors, with no caching."""
    u = env.unwrapped
    w = u.simulation.world
    rooms = set(u._visible_rooms())
    nodes = w.graph.nodes
    objects = [{"id": i, "class": nodes[i].class_name, "location": w.location(i),
                "room": w.room_of(i)} for i in sorted(nodes)
               if "GRABBABLE" in nodes[i].properties and w.room_of(i) in rooms
               and not w.is_hidden(i)]
    locations = [{"id": i, "class": nodes[i].class_name, "room": w.room_of(i),
                  "open": "OPEN" in nodes[i].states if "CAN_OPEN" in nodes[i].properties
                  else None}
                 for i in sorted(nodes) if "GRABBABLE" not in nodes[i].properties
                 and nodes[i].category == "Furniture" and w.room_of(i) in rooms]
    return objects, locations


def test_candidates_follow_every_change_of_the_world() -> None:
    """Candidates reused while the world's version stays the same are what a fresh
    computation gives, step after step, whatever the robot and the people do."""
    rng = np.random.default_rng(1)
    verbs = ("walk", "open", "close", "grab", "putin", "putback", "drop")
    steps = 0
    for observability in ("home", "room"):
        env = gym.make("MindHelper-VirtualHome-v0", pool_size=0, observability=observability)
        for i in range(10):
            obs, info = env.reset(options={"suite": "vh-dev-v2", "index": i})
            while True:
                objects, locations = _plain_candidates(env)
                assert info["candidates"]["objects"] == objects
                assert info["candidates"]["locations"] == locations
                info["candidates"]["objects"].clear()  # what the agent does with info is its own
                cands = objects + locations
                action = "none"
                if cands and rng.random() < 0.6:
                    a, b = (cands[int(rng.integers(len(cands)))] for _ in range(2))
                    verb = verbs[int(rng.integers(len(verbs)))]
                    second = f" <{b['class']}> ({b['id']})" if verb in ("putin", "putback") else ""
                    action = (f"[walk] <{a['class']}> ({a['id']}); "
                              f"[{verb}] <{a['class']}> ({a['id']}){second}")
                obs, _, term, trunc, info = env.step(action)
                steps += 1
                if term or trunc:
                    break
    assert steps > 100


def test_events_json_is_json_dumps() -> None:
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    n = 0
    for i in range(6):
        env.reset(options={"suite": "vh-dev-v2", "index": i})
        while True:
            obs, _, term, trunc, info = env.step("none")
            assert obs["events"] == json.dumps(info["events"])
            n += len(info["events"])
            if term or trunc:
                break
    assert n > 20
    u = env.unwrapped
    odd = [
        {"tick": 1, "actor": 2, "actor_name": "Zo\u00eb \"Z\"", "verb": "open",
         "args": [{"id": 3, "class": "fridge"}], "room": None,
         "contents": [{"id": 4, "class": "apple"}, {"id": 5, "class": "caf\u00e9"}]},
        {"tick": 3, "actor": True, "actor_name": "A", "verb": "walk", "args": [], "room": 1},
        {"actor": 2, "tick": 3, "actor_name": "A", "verb": "walk", "args": [], "room": 1},
        {"tick": 3, "actor": 2, "actor_name": "A", "verb": "walk",
         "args": [{"class": "x", "id": 1}], "room": 1},
    ]
    for k in range(len(odd)):
        evs = odd[: k + 1]
        assert events_json(evs, u._labels) == json.dumps(evs) == events_json(evs)
    numpy_tick = [{"tick": np.int64(2), "actor": 2, "actor_name": "A", "verb": "walk",
                   "args": [], "room": 1}]
    with pytest.raises(TypeError):  # as json.dumps does
        events_json(numpy_tick)


def test_packed_boxes_read_back_the_same() -> None:
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    env.reset(seed=3)
    data = env.unwrapped.episode_spec["graph"]
    g = SceneGraph.from_virtualhome(data)
    g.pack_boxes()
    packed = [n for n in g.nodes.values() if type(_BOX_SLOT.__get__(n, Node)) is bytes]
    assert packed
    back = pickle.loads(pickle.dumps(g))
    copied = g.copy()
    assert type(_BOX_SLOT.__get__(next(iter(back.nodes.values())), Node)) in (bytes, type(None))
    for graph in (g, back, copied):
        assert graph.to_virtualhome() == data
    w = World(data)
    g2 = w.graph
    g2.pack_boxes()
    n = next(n for n in g2.nodes.values() if n.bounding_box is not None)
    n.bounding_box["center"][0] = 123.0  # once read, the box is the node's own dict
    assert n.bounding_box["center"][0] == 123.0
    n.bounding_box = None
    assert n.bounding_box is None and n.height is None


def test_sources_match_the_edges_before_and_after_the_index_is_built() -> None:
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    env.reset(seed=4)
    g = SceneGraph.from_virtualhome(env.unwrapped.episode_spec["graph"])
    rng = np.random.default_rng(0)
    ids = sorted(g.nodes)

    def plain_sources(graph, t, rel):
        return {f for f, r, x in graph.edges() if x == t and r == rel}

    for built in (False, True):
        h = g.copy()
        if built:
            h.sources(ids[0], "INSIDE")  # builds the index; later changes must keep it
        for _ in range(300):
            a, b = (ids[int(rng.integers(len(ids)))] for _ in range(2))
            rel = ("INSIDE", "ON", "CLOSE")[int(rng.integers(3))]
            if rng.random() < 0.5:
                h.add_edge(a, rel, b)
            else:
                h.remove_edge(a, rel, b)
        for t in ids:
            for rel in ("INSIDE", "ON", "CLOSE", "BETWEEN"):
                assert set(h.sources(t, rel)) == plain_sources(h, t, rel)
        assert h.n_edges == sum(1 for _ in h.edges())
        victim = ids[-1]
        h.remove_node(victim)
        assert all(victim not in (f, x) for f, _, x in h.edges())
    with pytest.raises(KeyError):
        g.add_edge(ids[0], "ON", max(ids) + 1000)


def test_window_events_are_narrate_event_event_dict_and_json() -> None:
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    rng = np.random.default_rng(2)
    n = 0
    for i in range(8):
        obs, info = env.reset(options={"suite": "vh-dev-v2", "index": i})
        u = env.unwrapped
        while True:
            action = _grab_some(rng, info, 0.4)
            obs, _, term, trunc, info = env.step(action)
            w, names, evs = u.simulation.world, u.character_names, u._last_events
            lines, dicts, text = window_events(w, evs, names, u._style, Labels(w, names))
            assert lines == [f"[t={ev.tick}] " + narrate_event(w, ev, names, u._style)
                             for ev in evs]
            assert dicts == [event_dict(w, ev, names) for ev in evs] == info["events"]
            assert text == json.dumps(dicts)
            n += len(evs)
            if term or trunc:
                break
    assert n > 50


def test_clean_text_maps_what_the_plain_substitution_maps() -> None:
    import random
    import string

    from mindhelper_env.render.text import _NON_PRINTABLE, clean_text, cut_text

    rng = random.Random(0)
    odd = [chr(i) for i in range(260)] + ["\u00e9", "\u2028", "\ufeff", "\U0001f600"]
    for _ in range(5000):
        text = "".join(rng.choice(odd) if rng.random() < 0.1 else rng.choice(string.printable)
                       for _ in range(rng.randint(0, 40)))
        assert clean_text(text, 1000) == _NON_PRINTABLE.sub("?", text)
        assert clean_text(text, 12) == cut_text(_NON_PRINTABLE.sub("?", text), 12)


def test_parse_line_gives_the_same_lines_and_reasons_again() -> None:
    from mindhelper_env.world.script import ScriptParseError, parse_line

    texts = ["[walk] <fridge> (12)", "  [Walk]<Fridge>(12.0)  ", "[putin] <apple> (31) <fridge> (12)",
             "[bogus] <x> (1)", "[walk]", "x" * 600, "<char0> [open] <fridge> (1)", "[grab] <a> (b)"]

    def outcome(text):
        try:
            return "ok", parse_line(text)
        except ScriptParseError as err:
            return "error", str(err)

    first = [outcome(t) for t in texts]
    assert [k for k, _ in first] == ["ok", "ok", "ok", "error", "error", "error", "ok", "error"]
    assert first[1][1] == first[0][1]
    for _ in range(2):
        assert [outcome(t) for t in texts] == first


@pytest.mark.parametrize("observability", ["home", "room"])
def test_pool_entry_memo_gives_the_same_reset_as_a_fresh_episode(tmp_path, observability):
    """A pool entry's reset narration and node lists are kept for its next reset; a reset
    that reuses them equals one of the same spec built from scratch."""
    pooled = gym.make("MindHelper-VirtualHome-v0", pool_size=4, pool_dir=str(tmp_path),
                      observability=observability)
    fresh = gym.make("MindHelper-VirtualHome-v0", observability=observability)
    seen = []
    for seed in range(12):
        obs, info = pooled.reset(seed=seed)
        seen.append(pooled.unwrapped._pool_entry.index)
        spec = pooled.unwrapped.episode_spec
        obs2, info2 = fresh.reset(options={"episode": spec})
        assert obs["narration"] == obs2["narration"]
        assert info == info2
        for _ in range(3):  # and the episode goes on alike
            a = pooled.step("none")
            b = fresh.step("none")
            assert a[0]["narration"] == b[0]["narration"] and a[4] == b[4]
            if a[2] or a[3]:
                break
    assert len(set(seen)) < len(seen)  # entries were reset again, from their memo
    memos = [pooled.unwrapped.episode_pool.get(k).memo for k in set(seen)]
    assert all("node_lists" in m for m in memos)
    if observability == "home":
        assert all("reset_narration" in m for m in memos)
    else:
        assert not any("reset_narration" in m for m in memos)


def test_objects_in_agrees_with_is_hidden_and_location():
    """Only a closed container hides what is inside it (a closed curtain does not)."""
    from mindhelper_env.world.house import add_object, generate_house

    g = generate_house(np.random.default_rng(3))
    room = next(n.id for n in g.nodes.values() if n.category == "Rooms")
    curtain = max(g.nodes) + 1
    g.add_node(Node(curtain, "curtain", "Furniture", frozenset({"CAN_OPEN"}), {"CLOSED"}))
    g.add_edge(curtain, "INSIDE", room)
    behind = add_object(g, curtain + 1, "book", curtain)
    g.remove_edges_from(behind, "ON")
    g.add_edge(behind, "INSIDE", curtain)
    w = World(g)
    ids = [n.id for n in w.graph.nodes.values() if "GRABBABLE" in n.properties]
    rooms = set(w.rooms)
    want = _plain_objects_in(w, ids, rooms)
    assert w.objects_in(ids, rooms) == want
    assert (behind, curtain, room) in want
    assert any(w.is_hidden(i) for i in ids)  # something is inside a closed container


# ---------------------------------------------------------------------- the Engine's perception
def _plain_tick(self, tick, events):
    """``BeliefTracker._tick`` as it was before ticks without a cue verb skipped the views."""
    from mindhelper_env.agents.tracker import Cue
    from mindhelper_env.scenarios.observer import SceneView, judge_tick

    before = self._views()
    scene = SceneView(dict(self.where), self.classes, self.room_of, before)
    self._before_tick(tick, before, scene)
    norm = []
    for ev in events:
        args = [int(a["id"]) for a in ev.get("args", []) if isinstance(a, dict) and "id" in a]
        for a in ev.get("args", []):
            if isinstance(a, dict) and "id" in a and "class" in a:
                self.classes.setdefault(int(a["id"]), str(a["class"]))
        norm.append((int(ev.get("actor", -1)), str(ev.get("verb")), tuple(args)))
    cues = [Cue(t, who, kind, place, need) for t, who, kind, place, need in
            judge_tick(tick, norm, before, scene, self._opened, self._anchor, self.notices)]
    for ev in events:
        self._apply(ev)
    for p in self.people.values():
        self._perceive(p, tick, events)
    return cues


def _plain_memory():
    """MindClaw's memory with every fast path of its perception turned off: the views built
    at every tick, the tracker synced every window, the belief tables diffed every window."""
    from mindhelper_env.agents.mindclaw.memory import MindMemory, _Tracker

    class PlainTracker(_Tracker):
        _tick = _plain_tick

        def _unchanged(self, cands):
            return False

    class PlainMemory(MindMemory):
        def __init__(self) -> None:
            super().__init__()
            self.tracker = PlainTracker(1)
            self.reset()

        def perceive(self, obs, info):
            self._revision = None
            return super().perceive(obs, info)

    return PlainMemory()


def _tracker_state(t) -> dict:
    # (the snapshots before each tick: compared on the ticks of cues, the only ones read)
    skip = {"revision", "_synced", "parsed", "stance", "where_before", "views_before"}
    return {k: v for k, v in vars(t).items() if k not in skip}


def _rows(p) -> tuple:
    return ({op: [c.to_dict() for c in rows] for op, rows in p.pending.items()},
            [(c.cue, c.signature, c.prior_beliefs) for c in p.cues], p.tick)


@pytest.mark.parametrize("quiet", [False, True])
def test_engine_perception_fast_paths_change_nothing(quiet) -> None:
    """Windows that saw nothing (the tracker not synced again, the last pending rows reused)
    and ticks without a cue verb (no views built) leave the tracker and every perception as
    the plain definitions do, with commits in between as a Trigger makes them; also on the
    household's unread-text mode (event dicts instead of JSON, shared candidates)."""
    from mindhelper_env.agents.mindclaw.memory import BELIEF_OPS, MindMemory
    from mindhelper_env.agents.tracker import parse_events

    # (the env checker would flag the decoded events of the unread-text mode)
    env = gym.make("MindHelper-VirtualHome-v0", pool_size=0, disable_env_checker=True)
    hh = env.unwrapped
    hh._quiet = quiet
    rng = np.random.default_rng(3)
    fast_windows = views_skipped = cues = 0
    for index in range(0, 40, 3):
        obs, info = env.reset(options={"suite": "vh-dev-v2", "index": index})
        fast, plain = MindMemory(), _plain_memory()
        done = False
        while not done:
            rev = fast.tracker.revision
            p, q = fast.perceive(obs, info), plain.perceive(obs, info)
            fast_windows += fast.tracker.revision == rev
            assert _rows(p) == _rows(q)
            assert _tracker_state(fast.tracker) == _tracker_state(plain.tracker)
            cues += len(p.cues)
            # every tick that yields a cue had its views built (the cue's features read them)
            for tick in {c.cue.tick for c in p.cues}:
                for snap in ("stance", "where_before", "views_before"):
                    assert getattr(fast.tracker, snap)[tick] == getattr(plain.tracker, snap)[tick]
            views_skipped += len({e["tick"] for e in parse_events(obs)}
                                 - set(fast.tracker.views_before))
            for op in BELIEF_OPS:  # commit some operations, the same in both
                if rng.random() < 0.3:
                    assert [c.to_dict() for c in fast.commit(op)] == \
                        [c.to_dict() for c in plain.commit(op)]
            assert fast.belief_snapshot() == plain.belief_snapshot()
            action = _grab_some(rng, info, 0.1)
            obs, _, term, trunc, info = env.step(action)
            done = term or trunc
    assert fast_windows > 100 and views_skipped > 100 and cues > 10


def test_household_unread_text_mode_gives_the_same_events_and_info() -> None:
    """In the quiet mode (the Trigger env's household) ``obs["events"]`` is the list the JSON
    text decodes to, ``info`` is equal and the reset narration is empty."""
    from mindhelper_env.agents.tracker import parse_events

    plain = gym.make("MindHelper-VirtualHome-v0", pool_size=0)
    quiet = gym.make("MindHelper-VirtualHome-v0", pool_size=0, disable_env_checker=True)
    q = quiet.unwrapped
    q._quiet = True
    rng = np.random.default_rng(1)
    seen = 0
    for index in range(0, 30, 5):
        a, ia = plain.reset(options={"suite": "vh-dev-v2", "index": index})
        b, ib = quiet.reset(options={"suite": "vh-dev-v2", "index": index})
        assert a["narration"] and b["narration"] == "" and ia == ib
        done = False
        while not done:
            action = _grab_some(rng, ia, 0.1)
            a, _ra, ta, ua, ia = plain.step(action)
            b, _rb, tb, ub, ib = quiet.step(action)
            assert (_ra, ta, ua) == (_rb, tb, ub) and ia == ib
            if a["events"] != "[]":
                assert b["events"] == json.loads(a["events"]) and b["events"] is ib["events"]
                seen += 1
            assert parse_events(a) == parse_events(b)
            done = ta or ua
    assert seen > 20


@pytest.mark.parametrize("raw, n", [("[]", 0), ("5", 0), ('{"tick": 1}', 0), ("[1, {}]", 0),
                                    ('[{"tick": 2, "verb": "walk"}]', 1), ("[{", 0),
                                    ([{"tick": 3}, {"tick": "x"}, 7], 1), (None, 0)])
def test_parse_events_takes_text_or_the_decoded_list(raw, n) -> None:
    from mindhelper_env.agents.tracker import parse_events

    assert len(parse_events({"events": raw})) == n
