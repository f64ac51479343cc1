"""Tests of mindhelper_env.render: top-down frames, timelines and videos."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import PIL  # noqa: F401  (the video extra is part of the test install)
import pytest

from mindhelper_env.render import (  # noqa: E402
    ROBOT_COLOR,
    TopDownRenderer,
    actor_labels,
    plot_timeline,
    write_video,
)
from mindhelper_env.world import World, generate_house  # noqa: E402
from mindhelper_env.world.house import add_object  # noqa: E402

ACTORS = {2: ("Alice", "adult"), 3: ("Ben", "child"), 4: ("Carmen", "wheelchair")}


def make_world(seed: int = 0, *, robot: bool = True) -> tuple[World, int, int]:
    """A generated house with the robot (1) and three people; an apple inside the fridge.

    Returns the world, the fridge id and the apple id.
    """
    g = generate_house(np.random.default_rng(seed))
    fridge = min(n.id for n in g.nodes.values() if n.key == "fridge")
    apple = add_object(g, max(g.nodes) + 1, "apple", fridge)
    world = World(g)
    rooms = world.rooms
    world.add_character(1, rooms[0], name="robot", robot=robot)
    world.add_character(2, rooms[0], name="Alice")
    world.add_character(3, rooms[1], name="Ben", reach=1.2)
    world.add_character(4, rooms[2], name="Carmen", reach=1.3)
    return world, fridge, apple


def red_mask(frame: np.ndarray) -> np.ndarray:
    r, g, b = (frame[..., i].astype(int) for i in range(3))
    return (r > 170) & (g < 80) & (b < 80)


def gold_mask(frame: np.ndarray) -> np.ndarray:
    """Pixels of the object dots."""
    return np.all(frame == np.array([236, 170, 0], dtype=np.uint8), axis=-1)


# ---------------------------------------------------------------------------- top-down frames
@pytest.mark.parametrize("size", [256, 512])
def test_shape_dtype_and_fresh_array(size: int) -> None:
    world, _, _ = make_world()
    renderer = TopDownRenderer(size)
    a = renderer.render(world, actors=ACTORS, captions=["t1 Alice walks"], title="tick 1")
    b = renderer.render(world, actors=ACTORS, captions=["t1 Alice walks"], title="tick 1")
    assert a.shape == (size, size, 3)
    assert a.dtype == np.uint8
    assert a.flags.writeable
    assert a is not b and not np.shares_memory(a, b)
    assert len(np.unique(a.reshape(-1, 3), axis=0)) > 10  # not a blank canvas


@pytest.mark.parametrize("size", [256, 512])
def test_deterministic(size: int) -> None:
    world, _, _ = make_world(3)
    kw = dict(actors=ACTORS, captions=["a", "b"], title="t")
    first = TopDownRenderer(size).render(world, **kw)
    renderer = TopDownRenderer(size)
    again = [renderer.render(world, **kw) for _ in range(3)]
    for frame in again:
        np.testing.assert_array_equal(frame, first)
    # a second, identically generated world draws the same picture
    twin, _, _ = make_world(3)
    np.testing.assert_array_equal(renderer.render(twin, **kw), first)


def test_frame_changes_when_a_character_moves() -> None:
    world, fridge, _ = make_world()
    renderer = TopDownRenderer(256)
    before = renderer.render(world, actors=ACTORS)
    assert world.execute(3, f"[walk] <fridge> ({fridge})").ok
    after = renderer.render(world, actors=ACTORS)
    assert not np.array_equal(before, after)


def test_opening_a_container_reveals_its_contents() -> None:
    world, fridge, apple = make_world()
    renderer = TopDownRenderer(256)
    assert world.execute(2, f"[walk] <fridge> ({fridge})").ok
    closed = renderer.render(world, actors=ACTORS)
    assert world.is_hidden(apple)
    assert world.execute(2, f"[open] <fridge> ({fridge})").ok
    opened = renderer.render(world, actors=ACTORS)
    assert not np.array_equal(closed, opened)
    # one more object dot (the apple) is drawn once the fridge is open
    assert gold_mask(opened).sum() > gold_mask(closed).sum()
    assert world.execute(2, f"[close] <fridge> ({fridge})").ok
    np.testing.assert_array_equal(renderer.render(world, actors=ACTORS), closed)


def test_robot_is_the_red_figure() -> None:
    world, _, _ = make_world()
    renderer = TopDownRenderer(256)
    frame = renderer.render(world, actors=ACTORS)
    assert red_mask(np.array([[ROBOT_COLOR]], dtype=np.uint8)).all()
    assert red_mask(frame).sum() >= 40
    # nothing else is red: the same house without a robot has (almost) no red pixels
    no_robot, _, _ = make_world(robot=False)
    plain = TopDownRenderer(256).render(no_robot, actors=ACTORS)
    assert red_mask(plain).sum() < 5
    # the red pixels move with the robot, in the direction its room lies
    rooms = world.rooms
    src = world.graph.nodes[rooms[0]].bounding_box["center"]
    target = next(r for r in rooms[1:]
                  if abs(world.graph.nodes[r].bounding_box["center"][0] - src[0]) > 1)
    dst = world.graph.nodes[target].bounding_box["center"]
    x_before = np.nonzero(red_mask(frame))[1].mean()
    assert world.execute(1, f"[walk] <{world.graph.nodes[target].class_name}> ({target})").ok
    moved = renderer.render(world, actors=ACTORS)
    x_after = np.nonzero(red_mask(moved))[1].mean()
    assert np.sign(x_after - x_before) == np.sign(dst[0] - src[0])


def test_kinds_are_drawn_differently() -> None:
    world, _, _ = make_world()
    renderer = TopDownRenderer(256)
    frames = {
        kind: renderer.render(world, actors={2: ("Alice", kind)})
        for kind in ("adult", "child", "wheelchair")
    }
    assert not np.array_equal(frames["adult"], frames["child"])
    assert not np.array_equal(frames["adult"], frames["wheelchair"])
    assert not np.array_equal(frames["child"], frames["wheelchair"])
    with pytest.raises(ValueError, match="unknown kind"):
        renderer.render(world, actors={2: ("Alice", "giant")})


def test_held_objects_are_shown() -> None:
    world, fridge, apple = make_world()
    renderer = TopDownRenderer(256)
    assert world.execute(2, f"[walk] <fridge> ({fridge})").ok
    assert world.execute(2, f"[open] <fridge> ({fridge})").ok
    on_shelf = renderer.render(world, actors=ACTORS)
    assert world.execute(2, f"[grab] <apple> ({apple})").ok
    held = renderer.render(world, actors=ACTORS)
    # the apple's dot is gone (it is listed under Alice instead) and the frame changed
    assert gold_mask(held).sum() < gold_mask(on_shelf).sum()
    assert not np.array_equal(on_shelf, held)


def test_captions_only_change_the_caption_strip() -> None:
    world, _, _ = make_world()
    renderer = TopDownRenderer(256)
    a = renderer.render(world, actors=ACTORS, captions=["t1 Alice walks to the fridge (112)"])
    b = renderer.render(world, actors=ACTORS, captions=["t1 Ben opens the cabinet (120)"])
    rows = np.nonzero(np.any(a != b, axis=(1, 2)))[0]
    assert rows.size > 0
    assert rows.min() > 256 * 0.6  # only the bottom strip differs
    many = renderer.render(world, actors=ACTORS, captions=[f"line {i}" for i in range(30)])
    assert many.shape == (256, 256, 3)
    with pytest.raises(TypeError):
        renderer.render(world, captions="a single string")  # type: ignore[arg-type]


def test_cache_serves_each_house_its_own_base() -> None:
    renderer = TopDownRenderer(256)
    w1, _, _ = make_world(1)
    w2, _, _ = make_world(2)
    f1 = renderer.render(w1, actors=ACTORS, cache_key="ep1")
    f2 = renderer.render(w2, actors=ACTORS, cache_key="ep2")
    assert not np.array_equal(f1, f2)
    np.testing.assert_array_equal(renderer.render(w1, actors=ACTORS, cache_key="ep1"), f1)
    renderer.clear_cache()
    np.testing.assert_array_equal(renderer.render(w2, actors=ACTORS, cache_key="ep2"), f2)


def test_graph_without_bounding_boxes() -> None:
    """VirtualHome-style graphs may lack boxes: rooms go on a grid, furniture along walls."""
    def node(i: int, cls: str, cat: str, props: Sequence[str] = (), states: Sequence[str] = (),
             **extra: str) -> dict:
        return {"id": i, "class_name": cls, "category": cat, "properties": list(props),
                "states": list(states), **extra}

    graph = {
        "nodes": [
            node(10, "kitchen", "Rooms"), node(11, "livingroom", "Rooms"),
            node(12, "fridge", "Furniture", ["CONTAINERS", "CAN_OPEN"], ["OPEN"]),
            node(13, "sofa", "Furniture", ["SURFACES", "SITTABLE"]),
            node(14, "apple", "Props", ["GRABBABLE"]),
            node(15, "door", "Doors", ["CAN_OPEN"], ["CLOSED"]),
            node(1, "character", "Characters"),
            node(2, "character", "Characters", name="Zoe", kind="child"),
        ],
        "edges": [
            {"from_id": f, "relation_type": r, "to_id": t}
            for f, r, t in [(12, "INSIDE", 10), (13, "INSIDE", 11), (14, "INSIDE", 12),
                            (15, "BETWEEN", 10), (15, "BETWEEN", 11), (1, "INSIDE", 10),
                            (2, "INSIDE", 11)]
        ],
    }
    world = World(graph, robot_ids=(1,))
    renderer = TopDownRenderer(256)
    frame = renderer.render(world, captions=["hello"])
    assert frame.shape == (256, 256, 3)
    assert red_mask(frame).sum() >= 40
    assert gold_mask(frame).sum() > 0  # the apple in the open fridge
    world.set_state(12, "CLOSED")
    assert gold_mask(renderer.render(world)).sum() == 0


def test_actor_labels_and_bad_arguments() -> None:
    class A:
        def __init__(self, i: int, name: str, kind: str) -> None:
            self.id, self.name, self.kind = i, name, kind

    assert actor_labels([A(2, "Alice", "child")]) == {2: ("Alice", "child")}
    with pytest.raises(ValueError):
        TopDownRenderer(10)
    with pytest.raises(TypeError):
        TopDownRenderer(256.0)  # type: ignore[arg-type]


def test_pickle_and_deepcopy_keep_settings_and_pictures() -> None:
    import copy
    import pickle

    world, _, _ = make_world()
    renderer = TopDownRenderer(256, caption_lines=5)
    frame = renderer.render(world, actors=ACTORS, captions=["a"])
    for clone in (pickle.loads(pickle.dumps(renderer)), copy.deepcopy(renderer)):
        assert clone.size == 256 and clone.caption_lines == 5
        np.testing.assert_array_equal(clone.render(world, actors=ACTORS, captions=["a"]), frame)


def test_import_does_not_load_heavy_dependencies() -> None:
    code = (
        "import sys, mindhelper_env.render as r; "
        "heavy = [m for m in ('PIL', 'matplotlib', 'imageio') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == ""


# ---------------------------------------------------------------------------- videos
def _episode_frames(n: int = 6, size: int = 128) -> list[np.ndarray]:
    world, _, _ = make_world()
    renderer = TopDownRenderer(size)
    furniture = sorted(i for i, node in world.graph.nodes.items() if node.category == "Furniture")
    frames = []
    for i in range(n):
        fid = furniture[(i * 5) % len(furniture)]
        world.execute(2, f"[walk] <{world.graph.nodes[fid].class_name}> ({fid})")
        frames.append(renderer.render(world, actors=ACTORS, title=f"tick {i}"))
    assert all(not np.array_equal(frames[i], frames[i + 1]) for i in range(n - 1))
    return frames


def test_gif_roundtrip(tmp_path: Path) -> None:
    import imageio.v3 as iio
    frames = _episode_frames()
    path = write_video(frames, tmp_path / "episode.gif", fps=5)
    assert path.exists()
    back = iio.imread(path, index=None)
    assert back.shape[0] == len(frames)
    assert back.shape[1:3] == frames[0].shape[:2]
    assert iio.immeta(path, index=0)["duration"] == pytest.approx(200, abs=1)
    assert [p.name for p in tmp_path.iterdir()] == ["episode.gif"]  # no temp file left


def test_mp4_roundtrip(tmp_path: Path) -> None:
    import imageio.v2 as imageio
    frames = _episode_frames()
    path = write_video(frames, tmp_path / "episode.mp4", fps=4)
    reader = imageio.get_reader(path)
    try:
        back = [f for f in reader]
        assert reader.get_meta_data()["fps"] == pytest.approx(4)
    finally:
        reader.close()
    assert len(back) == len(frames)
    assert back[0].shape == frames[0].shape
    # lossy, but close to the original
    assert np.abs(back[0].astype(int) - frames[0].astype(int)).mean() < 12


def test_mp4_odd_size_is_padded(tmp_path: Path) -> None:
    import imageio.v2 as imageio
    frames = [np.full((63, 95, 3), 40 * i, dtype=np.uint8) for i in range(3)]
    path = write_video(frames, tmp_path / "odd.mp4")
    reader = imageio.get_reader(path)
    try:
        assert next(iter(reader)).shape == (64, 96, 3)
    finally:
        reader.close()


def test_video_errors(tmp_path: Path) -> None:
    frame = np.zeros((32, 32, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match="unsupported video extension"):
        write_video([frame], tmp_path / "episode.avi")
    with pytest.raises(ValueError, match="unsupported video extension"):
        write_video([frame], tmp_path / "episode")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_video([frame], tmp_path / "missing" / "episode.gif")
    with pytest.raises(ValueError, match="no frames"):
        write_video([], tmp_path / "episode.gif")
    with pytest.raises(ValueError, match="uint8"):
        write_video([frame.astype(float)], tmp_path / "episode.gif")
    with pytest.raises(ValueError, match="shape"):
        write_video([frame, np.zeros((16, 32, 3), np.uint8)], tmp_path / "episode.gif")
    with pytest.raises(ValueError, match="fps"):
        write_video([frame], tmp_path / "episode.gif", fps=0)
    assert list(tmp_path.iterdir()) == []


def test_video_unwritable_folder_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    import mindhelper_env.render.video as video

    monkeypatch.setattr(video.os, "access", lambda path, mode: False)
    with pytest.raises(PermissionError, match="not writable"):
        write_video([np.zeros((8, 8, 3), np.uint8)], tmp_path / "episode.gif")


# ---------------------------------------------------------------------------- timelines
def timeline_record(outcome: str = "success", onset: int = 9) -> dict:
    return {
        "episode_id": "vh-dev-v2/0007",
        "ticks": 40,
        "lanes": {
            "Alice": [
                {"start": 0, "end": 6, "label": "kitchen: making tea"},
                {"start": 6, "end": 9, "label": "hallway: walking"},
                {"start": 9, "end": 18, "label": "kitchen: looking for something"},
            ],
            "Ben": [{"start": 0, "end": 40, "label": "bedroom: idle"}],
        },
        "robot_actions": [
            {"tick": 10, "label": "[walk] <fridge> (112)", "ok": True},
            {"tick": 11, "label": "[grab] <apple> (131)", "ok": True},
            {"tick": 12, "label": "[give] <apple> (131) <character> (2)", "ok": False},
        ],
        "window": {"onset_tick": onset, "deadline_tick": 17},
        "outcome": outcome,
        "agent": "mindclaw",
        "family": "false_belief_relocation",
    }


def _png(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def test_timeline_png(tmp_path: Path) -> None:
    a = plot_timeline(timeline_record(), tmp_path / "a.png")
    b = plot_timeline(timeline_record("failure", onset=3), tmp_path / "b.png")
    img_a, img_b = _png(a), _png(b)
    assert img_a.shape[0] > 100 and img_a.shape[1] > 400
    assert img_a.std() > 10  # not blank
    assert img_a.shape != img_b.shape or not np.array_equal(img_a, img_b)
    # same record, same picture
    again = plot_timeline(timeline_record(), tmp_path / "again.png")
    np.testing.assert_array_equal(_png(again), img_a)


def test_timeline_lanes_and_errors(tmp_path: Path) -> None:
    rec = timeline_record()
    only_ben = plot_timeline(rec, tmp_path / "ben.png", lanes=["Ben"])
    both = plot_timeline(rec, tmp_path / "both.png")
    assert _png(only_ben).shape != _png(both).shape
    with pytest.raises(ValueError, match="not in the record"):
        plot_timeline(rec, tmp_path / "x.png", lanes=["Zoe"])
    with pytest.raises(ValueError, match="unsupported file extension"):
        plot_timeline(rec, tmp_path / "x.jpg")
    with pytest.raises(FileNotFoundError):
        plot_timeline(rec, tmp_path / "missing" / "x.png")
    bad = timeline_record()
    bad["lanes"]["Alice"][0]["end"] = -1
    with pytest.raises(ValueError, match="before it starts"):
        plot_timeline(bad, tmp_path / "x.png")
    no_window = timeline_record()
    no_window["window"] = None
    assert plot_timeline(no_window, tmp_path / "nw.png").exists()


# ----------------------------------------------------------------------- readable labels
def test_short_names_are_words_or_marked_truncations() -> None:
    """What a 256 px frame writes for a class: a word of its class name or of its long name
    ("cabinet", "counter"), or its first letters ending in "." ("dishw."); never squeezed
    consonants ("bcab", "cntr", "kcab")."""
    from mindhelper_env.render import topdown_style as st

    for table in (st._ROOM_NAMES, st._FURN_NAMES, st._OBJ_NAMES):
        for key, (short, long) in table.items():
            stem = short.rstrip(".").replace(" ", "")
            assert stem and (stem in key or stem in long.replace(" ", "")), (key, short)
            assert short.endswith(".") or stem in key or stem in long.split(), (key, short)
    for key in ("kitchencounterdishwasher", "bathroomcabinet", "sofa"):
        short = st._display({}, key, small=True)
        assert short == key or (short.endswith(".") and key.startswith(short[:-1])), short


def test_labels_at_256_px_keep_apart_and_the_high_mark_is_explained() -> None:
    """Two labels on one line are at least the renderer's gap apart (they never read as one
    word, "cntrdshw"); a frame that marks furniture "^" says what "^" means in its header."""
    import gymnasium as gym

    from mindhelper_env.render import topdown_style as st

    renderer = TopDownRenderer(256)
    env = gym.make("MindHelper-VirtualHome-v3")
    explained = 0
    try:
        for index in range(4):
            env.reset(options={"suite": "vh-dev-v5", "index": index})
            sim = env.unwrapped.simulation
            labels: list = []
            renderer.render(sim.world, actors={a.id: (a.name, a.kind) for a in sim.actors},
                            title="tick 0  window 0", labels=labels)
            text = [lb for lb in labels if lb.kind in ("room", "furniture", "object")]
            for i, a in enumerate(text):
                for b in text[i + 1:]:
                    if a.box[1] < b.box[3] and b.box[1] < a.box[3]:  # share a line
                        apart = max(b.box[0] - a.box[2], a.box[0] - b.box[2])
                        assert apart >= 2, (a, b)  # the gap at 256 px
            high = any(lb.kind == "furniture" and lb.text.endswith("^") for lb in labels)
            legend = [lb for lb in labels if lb.kind == "legend"]
            assert bool(legend) == high
            if legend:
                explained += 1
                assert legend[0].text == st.HIGH_LEGEND and legend[0].box[2] <= 256
                title = next(lb for lb in labels if lb.kind == "title")
                assert title.box[2] < legend[0].box[0]
    finally:
        env.close()
    assert explained > 0
