"""The vision track's observation (``obs_mode="rgb"``): frames only, an event-free ``info``,
word-free frames (every glyph drawn is an id mark of a candidate), the same frames for a seed
wherever the env runs, every event kind visible, nothing hidden drawn."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.envs import make_vec_env
from mindhelper_env.envs.observation import RgbObservation
from mindhelper_env.render import sprites as sp
from mindhelper_env.render.frames import FrameRenderer
from tests.conftest import episode_steps, require_tdw

VH = "MindHelper-VirtualHome-v3"
TDW = "MindHelper-TDW-v3"
SUITE = "vh-dev-v5"
#: the only keys of info in rgb mode (plus the episode record at the end)
INFO_KEYS = {"tick", "window", "pending_program", "action_error", "robot", "candidates",
             "perception"}
END_KEYS = {"episode_record", "episode_record_json"}


def _oracle_actions(index: int, suite: str = SUITE, env_id: str = VH) -> list[str]:
    """The oracle's actions in suite episode ``index``, recorded in text mode (the oracle's
    trajectory is the same in rgb mode: the actions decide it)."""
    from mindhelper_env.agents import make_agent

    env = gym.make(env_id)
    agent = make_agent("oracle", env=env)
    obs, info = env.reset(options={"suite": suite, "index": index})
    agent.reset()
    actions = []
    while True:
        a = agent.act(obs, info)
        actions.append(a)
        obs, _, term, trunc, info = env.step(a)
        if term or trunc:
            return actions


def _play(env, index: int, actions: list[str], suite: str = SUITE):
    obs, info = env.reset(options={"suite": suite, "index": index})
    out = [(obs, info)]
    for a in actions:
        obs, _, term, trunc, info = env.step(a)
        out.append((obs, info))
        if term or trunc:
            break
    return out


@pytest.mark.parametrize("env_id", [VH, TDW])
def test_check_env_rgb(env_id):
    if env_id == TDW:
        require_tdw()
    env = gym.make(env_id, obs_mode="rgb", frame_size=64)
    check_env(env.unwrapped, skip_render_check=True)
    space = env.observation_space
    assert isinstance(space, gym.spaces.Box)
    assert space.shape == (3, 64, 64, 3) and space.dtype == np.uint8


def test_obs_holds_frames_only_and_info_no_events():
    env = gym.make(VH, obs_mode="rgb", frame_size=96, window_ticks=4)
    steps = _play(env, 2, _oracle_actions(2))
    assert len(steps) > 5
    for k, (obs, info) in enumerate(steps):
        assert isinstance(obs, np.ndarray) and obs.dtype == np.uint8
        assert obs.shape == (4, 96, 96, 3)
        keys = set(info)
        last = k == len(steps) - 1
        assert keys - END_KEYS <= INFO_KEYS and INFO_KEYS - {"perception"} <= keys
        assert last or not keys & END_KEYS
        assert set(info["robot"]) == {"id"}
        cand = info["candidates"]
        assert set(cand) == {"actors", "objects", "locations", "rooms", "doors"}
        assert all(set(a) == {"id", "name", "kind"} for a in cand["actors"])
        assert all(set(o) == {"id", "class"} for o in cand["objects"])
        assert all(set(loc) == {"id", "class", "room"} for loc in cand["locations"])
        assert all(set(d) == {"id", "rooms"} for d in cand["doors"])
        assert cand == steps[0][1]["candidates"]  # constant for the episode
    # the reset frame is repeated; the frames of a window change as people move
    assert all((steps[0][0][k] == steps[0][0][0]).all() for k in range(4))
    assert any(not (obs[0] == obs[-1]).all() for obs, _ in steps[1:])
    # every pixel is a palette colour
    pal = {tuple(c) for c in sp.PALETTE}
    frame = steps[-1][0]
    assert {tuple(c) for c in np.unique(frame.reshape(-1, 3), axis=0)} <= pal


def test_only_id_marks_are_drawn(monkeypatch):
    """Hooks every text-drawing path (PIL's ImageDraw.text, ImageFont rendering, the top-down
    renderer's text rasteriser) and the mark blitter: in rgb mode no text is drawn and every
    mark is the id of a candidate (or the robot)."""
    pil_draw = pytest.importorskip("PIL.ImageDraw")
    pil_font = pytest.importorskip("PIL.ImageFont")
    from mindhelper_env.render import topdown

    texts: list[str] = []

    def no_text(*args, **kwargs):
        texts.append(repr(args[1:2]))
        raise AssertionError("text drawn in rgb mode")

    monkeypatch.setattr(pil_draw.ImageDraw, "text", no_text)
    monkeypatch.setattr(pil_draw.ImageDraw, "multiline_text", no_text)
    monkeypatch.setattr(pil_font.FreeTypeFont, "getmask2", no_text)
    monkeypatch.setattr(pil_font.ImageFont, "getmask", no_text)
    monkeypatch.setattr(topdown.TopDownRenderer, "_text", no_text)
    monkeypatch.setattr(topdown.TopDownRenderer, "_glyph", no_text)
    marks: list[int] = []
    real = FrameRenderer.draw_mark

    def hooked(self, canvas, y, x, node):
        marks.append(node)
        return real(self, canvas, y, x, node)

    monkeypatch.setattr(FrameRenderer, "draw_mark", hooked)
    for index in (0, 5):
        marks.clear()
        env = gym.make(VH, obs_mode="rgb", frame_size=128)
        steps = _play(env, index, _oracle_actions(index))
        cand = steps[0][1]["candidates"]
        ids = {d["id"] for k in cand for d in cand[k]} | {steps[0][1]["robot"]["id"]}
        assert marks and set(marks) <= ids
        # people, objects, furniture, rooms and doors all carry marks
        for k in cand:
            assert {d["id"] for d in cand[k]} & set(marks), k
    assert texts == []


def _frames(env, index, actions):
    return np.stack([obs for obs, _ in _play(env, index, actions)])


def test_frames_identical_across_envs_and_vector_workers():
    actions = ["none"] * 40
    a = _frames(gym.make(VH, obs_mode="rgb"), 3, actions)
    b = _frames(gym.make(VH, obs_mode="rgb"), 3, actions)
    assert a.tobytes() == b.tobytes()
    c = _frames(gym.make(VH, obs_mode="rgb"), 4, actions)
    assert a.tobytes() != c.tobytes()
    for mode, n in (("sync", 2), ("async", 2), ("sync", 3)):
        venv = make_vec_env(n, vectorization_mode=mode, obs_mode="rgb")
        obs, _ = venv.reset(options={"suite": SUITE, "indices": [3, 4, 5][:n]})
        got = [obs[0]]
        for _ in range(10):
            obs, *_ = venv.step(["none"] * n)
            got.append(obs[0])
        venv.close()
        assert np.stack(got).tobytes() == a[:11].tobytes(), (mode, n)


def test_incremental_frames_equal_full_redraws(monkeypatch):
    """The renderer redraws only rows whose content changed: every frame equals a frame
    drawn from scratch (caches dropped)."""
    checked = []
    real = RgbObservation.tick

    def tick(self, env, sim, events, seen):
        fresh = copy.deepcopy(self.renderer)
        real(self, env, sim, events, seen)
        fresh._sig = None
        fresh._keys = {}
        fresh._canvas = fresh._static.copy()
        full = fresh.frame(sim.world, events, seen, None)
        assert (full == self._buf[self._n - 1]).all()
        checked.append(1)

    monkeypatch.setattr(RgbObservation, "tick", tick)
    env = gym.make(VH, obs_mode="rgb", frame_size=200)
    _play(env, 7, _oracle_actions(7))
    assert len(checked) > 30


def test_every_event_changes_the_frame(monkeypatch):
    """For every event the robot sees, the frame drawn with it differs from the frame drawn
    without it (the same world): the event is in the pixels, not only in the state."""
    verbs: dict[str, int] = {}
    real = RgbObservation.tick

    def tick(self, env, sim, events, seen):
        assert self.renderer.layout.lossless_size <= self.renderer.size
        for ev in seen:
            r = copy.deepcopy(self.renderer)
            without = r.frame(sim.world, [e for e in events if e is not ev],
                              [e for e in seen if e is not ev], None)
            r = copy.deepcopy(self.renderer)
            with_ = r.frame(sim.world, events, seen, None)
            assert not (with_ == without).all(), ev
            verbs[ev.verb] = verbs.get(ev.verb, 0) + 1
        real(self, env, sim, events, seen)

    monkeypatch.setattr(RgbObservation, "tick", tick)
    for index in range(0, 40, 4):  # the default size: the whole canvas, no pixel lost
        env = gym.make(VH, obs_mode="rgb")
        _play(env, index, _oracle_actions(index))
    for verb in ("walk", "open", "close", "grab", "putin", "putback", "phone", "hangup",
                 "chore", "chore_done", "tell"):
        assert verbs.get(verb), (verb, verbs)


def test_phone_pose_differs_from_standing():
    for pose in sp.POSES:
        for kind in ("adult", "child", "wheelchair", "robot"):
            if pose == "sit" and kind == "wheelchair":
                continue  # a wheelchair user is always seated
            assert not (sp.person_sprite(kind) == sp.person_sprite(kind, **{pose: True})).all()
    sprites = {sp.person_sprite(k).tobytes() for k in ("adult", "child", "wheelchair", "robot")}
    assert len(sprites) == 4


def test_nothing_hidden_is_drawn(monkeypatch):
    """Objects inside closed containers, and (observability="room") everything movable in
    rooms the robot does not see, get no mark in a frame drawn from scratch."""
    marks: list[int] = []
    real_mark = FrameRenderer.draw_mark
    monkeypatch.setattr(FrameRenderer, "draw_mark",
                        lambda self, c, y, x, n: (marks.append(n), real_mark(self, c, y, x, n)))
    real = RgbObservation.tick
    checked = []

    def tick(self, env, sim, events, seen):
        real(self, env, sim, events, seen)
        w = sim.world
        fresh = copy.deepcopy(self.renderer)
        fresh._sig, fresh._keys, fresh._canvas = None, {}, fresh._static.copy()
        marks.clear()
        rooms = env.unwrapped._visible_rooms()
        fresh.frame(w, [], [], None if env.observability == "home" else rooms)
        drawn = set(marks)
        for o in fresh._objects:
            visible = w.room_of(o) in rooms and not w.is_hidden(o)
            assert (o in drawn) == visible, (o, visible)
        checked.append(1)

    monkeypatch.setattr(RgbObservation, "tick", tick)
    for obs_rule in ("home", "room"):
        env = gym.make(VH, obs_mode="rgb", observability=obs_rule)
        _play(env, 1, _oracle_actions(1))
    assert len(checked) > 30


def test_text_modes_unchanged_by_rgb_mode():
    """A text env and an rgb env on the same episode and actions: the same rewards and
    record (the observation mode changes what is seen, never what happens)."""
    actions = _oracle_actions(6)
    t = _play(gym.make(VH), 6, actions)
    r = _play(gym.make(VH, obs_mode="rgb"), 6, actions)
    assert t[-1][1]["episode_record_json"] == r[-1][1]["episode_record_json"]
    assert [i["tick"] for _, i in t] == [i["tick"] for _, i in r]


def test_window_image_wrapper_with_gymnasium_image_wrappers():
    import importlib.util
    import os

    if os.environ.get("MINDHELPER_REQUIRE_RL") != "1" and importlib.util.find_spec("cv2") is None:
        pytest.skip("gymnasium's ResizeObservation needs opencv: the rl extra "
                    "(CI sets MINDHELPER_REQUIRE_RL=1)")
    from gymnasium.wrappers import FrameStackObservation, GrayscaleObservation, ResizeObservation

    from mindhelper_env.wrappers import WindowImage

    base = gym.make(VH, obs_mode="rgb", frame_size=64)
    env = FrameStackObservation(GrayscaleObservation(ResizeObservation(
        WindowImage(base, "last"), (32, 32))), 4)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 32, 32) and env.observation_space.contains(obs)
    obs, *_ = env.step("none")
    assert env.observation_space.contains(obs)
    chan = WindowImage(gym.make(VH, obs_mode="rgb", frame_size=64), "channels")
    obs, _ = chan.reset(seed=0)
    assert obs.shape == (64, 64, 9) and chan.observation_space.contains(obs)
    frames, _ = chan.env.reset(seed=0)
    assert (obs[..., 3:6] == frames[1]).all() and (obs[..., 6:9] == frames[2]).all()
    last = WindowImage(gym.make(VH, obs_mode="rgb", frame_size=64))
    first, _ = last.reset(seed=0)
    nxt, *_ = last.step("none")
    assert first.shape == nxt.shape == (64, 64, 3)
    with pytest.raises(ValueError, match="obs_mode='rgb'"):
        WindowImage(gym.make(VH))
    with pytest.raises(ValueError, match="mode"):
        WindowImage(base, "stack")


def test_layout_from_candidates_matches_the_renderer():
    """A parser rebuilds the renderer's layout from info["candidates"] alone."""
    env = gym.make(VH, obs_mode="rgb", frame_size=256)
    _, info = env.reset(seed=11)
    cand = info["candidates"]
    ids = [a["id"] for a in cand["actors"]] + [o["id"] for o in cand["objects"]] \
        + [info["robot"]["id"]]
    lay = sp.build_layout(cand["rooms"], cand["locations"], cand["doors"], ids,
                          n_objects=len(cand["objects"]))
    mine = env.unwrapped.vision.renderer.layout
    assert lay.panels == mine.panels and lay.mark_w == mine.mark_w
    assert lay.lossless_size == mine.lossless_size


def test_bad_obs_mode():
    with pytest.raises(ValueError, match="obs_mode"):
        gym.make(VH, obs_mode="pixels")
    with pytest.raises(ValueError, match="frame_stack"):
        gym.make(VH, obs_mode="rgb", frame_stack=2)


def test_episode_steps_helper_still_text():
    """The text mode is untouched: obs is the dict of narration, events and tick."""
    steps = episode_steps(gym.make(VH), SUITE, 0)
    assert set(steps[1][0]) == {"narration", "events", "tick"}


def test_sb3_cnn_policy_learns_on_window_image():
    """stable-baselines3's CnnPolicy takes the window as one image (the rl extra)."""
    import importlib.util
    import os

    if os.environ.get("MINDHELPER_REQUIRE_RL") != "1" \
            and importlib.util.find_spec("stable_baselines3") is None:
        pytest.skip("needs the rl extra (CI sets MINDHELPER_REQUIRE_RL=1)")
    from stable_baselines3 import PPO

    from mindhelper_env.wrappers import CandidateActions, WindowImage

    env = CandidateActions(WindowImage(gym.make(VH, obs_mode="rgb", frame_size=64,
                                                max_ticks=12), "channels"))
    model = PPO("CnnPolicy", env, n_steps=16, batch_size=8, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=32)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs)
    assert env.action_space.contains(int(action))


def test_canvas_recovered_exactly_from_a_lossless_frame():
    """``sprites.canvas_of`` inverts the drawing: the palette-index canvas the renderer drew
    comes back from the RGB frame at any lossless size (scale 1 and 2)."""
    for size in (512, 1024):
        env = gym.make(VH, obs_mode="rgb", frame_size=size)
        frames, _ = env.reset(options={"suite": SUITE, "index": 0})
        frames, *_ = env.step("none")
        r = env.unwrapped.vision.renderer
        canvas = sp.canvas_of(frames[-1], r.layout)
        assert (canvas == r._canvas[:-1, :-1]).all()
    with pytest.raises(ValueError, match="samples"):
        sp.frame_scale(r.layout, 128)
    assert (sp.palette_index(np.array([[1, 2, 3]], dtype=np.uint8)) == -1).all()


def test_sprites_are_pairwise_distinct():
    """Every known object class, furniture class, action glyph and digit has its own bitmap,
    and every palette colour is a distinct RGB triple."""
    for table in ([sp.object_icon(c) for c in sp.OBJECT_CLASSES],
                  [sp.furniture_icon(c) for c in sp.FURNITURE_CLASSES],
                  [sp.room_icon(c) for c in sp.ROOM_CLASSES],
                  list(sp.ACTION_GLYPHS.values()), list(sp.STATE_GLYPHS.values()),
                  list(sp.DIGITS.values())):
        assert len({a.tobytes() for a in table}) == len(table)
    assert len({tuple(c) for c in sp.PALETTE}) == len(sp.PALETTE)
    assert sp.mark_bitmap(372).shape == (5, sp.mark_width(3))
    with pytest.raises(ValueError):
        sp.mark_bitmap(-1)


def test_window_cut_short_repeats_its_last_frame():
    env = gym.make(VH, obs_mode="rgb", frame_size=64, max_ticks=10, window_ticks=3)
    env.reset(seed=3)
    windows = []
    while True:
        frames, _, term, trunc, info = env.step("none")
        windows.append(frames)
        if term or trunc:
            break
    assert trunc and info["tick"] == 10 and len(windows) == 4
    last = windows[-1]  # tick 9 only
    assert (last[1] == last[0]).all() and (last[2] == last[0]).all()
    assert len({id(w) for w in windows}) == 4  # every window is a new array
