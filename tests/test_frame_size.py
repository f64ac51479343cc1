"""The vision track's frame size and picture: lossless by default, the canvas at the
largest integer scale, pose marks that show, 0.8.0's picture kept byte for byte, pixel
readers refused at a lossy size (docs/vision.md, "Frame size")."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

import mindhelper_env  # noqa: F401  (registers the envs)
from mindhelper_env.envs import frame_size as fs
from mindhelper_env.evaluation import frame_sizes as efs
from mindhelper_env.render import sprites as sp
from tests.conftest import require_tdw

VH = "MindHelper-VirtualHome-v3"


@pytest.fixture(autouse=True)
def _fresh_warning(monkeypatch):
    """Each test sees the lossy-size warning as a fresh run would."""
    monkeypatch.delenv(fs._WARNED_ENV, raising=False)


def _digest(suite: str, index: int, **kw) -> str:
    env = gym.make(VH, obs_mode="rgb", **kw)
    h = hashlib.sha256()
    obs, _ = env.reset(options={"suite": suite, "index": index})
    h.update(obs.tobytes())
    done = False
    while not done:
        obs, _, term, trunc, _ = env.step("none")
        h.update(obs.tobytes())
        done = term or trunc
    env.close()
    return h.hexdigest()


# ------------------------------------------------------------------ the default size
def test_generated_bound_is_pinned_and_holds_over_pool_draws():
    assert fs.generated_frame_size() == fs.GENERATED_FRAME_SIZE
    env = gym.make(VH, obs_mode="rgb")
    assert env.observation_space.shape == (3, fs.GENERATED_FRAME_SIZE,
                                           fs.GENERATED_FRAME_SIZE, 3)
    u = env.unwrapped
    worst = extra = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", fs.LossyFrameWarning)  # no draw may be lossy
        for seed in range(150):
            _, info = env.reset(seed=seed)
            c = info["candidates"]
            worst = max(worst, u.vision.renderer.layout.lossless_size)
            extra = max(extra, len(c["objects"]) - 4 * len(c["rooms"]))
    assert worst <= fs.GENERATED_FRAME_SIZE
    assert extra <= fs.EXTRA_OBJECTS


def test_text_modes_keep_128_and_explicit_sizes_work():
    assert gym.make(VH).unwrapped.frame_size == 128
    env = gym.make(VH, obs_mode="rgb", frame_size=600)
    assert env.observation_space.shape == (3, 600, 600, 3)
    with pytest.raises(ValueError, match="frame_size"):
        gym.make(VH, obs_mode="rgb", frame_size=32)
    with pytest.raises(ValueError, match="picture"):
        gym.make(VH, obs_mode="rgb", picture=4)


def test_named_houses_default_to_their_own_canvas():
    require_tdw()
    from mindhelper_env.world.houses import resolve_houses

    env = gym.make("MindHelper-TDW-v3", obs_mode="rgb")
    size = fs.house_frame_size(resolve_houses("tdw"))
    assert env.observation_space.shape[1] == size == 716
    assert size >= efs.SUITE_FRAME_SIZES["tdw-test-v5"]


@pytest.mark.parametrize("suite", ["vh-dev-v5", "vh-scene1-dev-v5"])
def test_pinned_suite_sizes_are_the_measured_ones(suite):
    assert efs.measure_suite_frame_size(suite) == efs.SUITE_FRAME_SIZES[suite]
    assert efs.SUITE_FRAME_SIZES[suite] <= fs.GENERATED_FRAME_SIZE


def test_canvas_fills_the_frame_at_the_largest_integer_scale():
    env = gym.make(VH, obs_mode="rgb", frame_size=1100)
    frames, _ = env.reset(options={"suite": "vh-dev-v5", "index": 0})
    lay = env.unwrapped.vision.renderer.layout
    k, y0, x0 = sp.frame_scale(lay, 1100)
    assert k == 1100 // lay.lossless_size >= 2
    assert y0 == (1100 - lay.height * k) // 2 and x0 == (1100 - lay.width * k) // 2
    canvas = sp.canvas_of(frames[0], lay)
    assert (canvas >= 0).all()
    up = np.repeat(np.repeat(sp.PALETTE[canvas], k, 0), k, 1)
    assert (frames[0][y0:y0 + lay.height * k, x0:x0 + lay.width * k] == up).all()
    margin = np.ones((1100, 1100), bool)
    margin[y0:y0 + lay.height * k, x0:x0 + lay.width * k] = False
    assert (frames[0][margin] == sp.PALETTE[sp.VOID]).all()


def test_lossy_warning_once_per_run_in_plain_text():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        for index in range(2):
            env = gym.make(VH, obs_mode="rgb", frame_size=128)
            env.reset(options={"suite": "vh-dev-v5", "index": index})
    lossy = [w for w in got if issubclass(w.category, fs.LossyFrameWarning)]
    assert len(lossy) == 1
    assert "\x1b" not in str(lossy[0].message) and "128" in str(lossy[0].message)


# ------------------------------------------------------------------ pictures
#: sha256 of every frame of three silent episodes: 0.8.0's frames (picture 5; computed
#: with 0.8.0's code) and picture 6's.
PICTURE5 = {("vh-dev-v5", 0, 128): "cabad177fa2f0cad23015bd0411585727ede5fea7ed3e996c8076501909ae5c7",
            ("vh-dev-v5", 3, 512): "56adbeca40cff60335b02e32f31f5bf4ada939c262fbdc7fc6bdc501a95779f3"}
PICTURE6 = {("vh-dev-v5", 3, 512): "c0520f4602784ef7c8df0a193a21fc2690a96b151c4183db3b96243a56960c07",
            ("vh-dev-v5", 0, None): "caf1baff784cb165c3c7bb366387fd38b255a963b1c27ad35e4a9850aed7f206"}


@pytest.mark.parametrize("key", list(PICTURE5))
def test_picture5_draws_080_frames_byte_for_byte(key):
    suite, index, size = key
    assert _digest(suite, index, frame_size=size, picture=5) == PICTURE5[key]


@pytest.mark.parametrize("key", list(PICTURE6))
def test_picture6_frames_pinned(key):
    suite, index, size = key  # size None: the default, lossless 528 px
    assert _digest(suite, index, **({} if size is None else {"frame_size": size})) \
        == PICTURE6[key]


def test_every_pose_has_a_mark_of_its_own_colour():
    pose_colours = set(sp.POSE_COLORS.values())
    assert len(pose_colours) == len(sp.POSES)
    for kind in sp.KIND_COLORS:
        plain = sp.person_sprite(kind)
        assert not set(np.unique(plain)) & pose_colours
        for pose, colour in sp.POSE_COLORS.items():
            s = sp.person_sprite(kind, **{pose: True})
            assert int((s == colour).sum()) >= 4, (kind, pose)
            # the mark stays whole whatever other pose goes with it (back hides look)
            for other in sp.POSES:
                if other == pose or {pose, other} == {"back", "look"}:
                    continue
                both = sp.person_sprite(kind, **{pose: True, other: True})
                assert int((both == colour).sum()) == int((s == colour).sum()), \
                    (kind, pose, other)
    # no icon, glyph or state cell uses a pose colour
    drawn = [sp.object_icon(c) for c in sp.OBJECT_CLASSES] \
        + [sp.furniture_icon(c) for c in sp.FURNITURE_CLASSES] \
        + [sp.room_icon(c) for c in sp.ROOM_CLASSES] \
        + list(sp.ACTION_GLYPHS.values()) + list(sp.STATE_GLYPHS.values()) \
        + [sp.ARROW, sp.DOOR_ICON]
    for a in drawn:
        assert not set(np.unique(a)) & pose_colours


def test_sprites_of_the_two_pictures_never_collide():
    seen: dict[bytes, tuple] = {}
    n = len(sp.POSES)
    for picture in sp.PICTURES:
        for kind in sp.KIND_COLORS:
            for bits in range(1 << n):
                flags = tuple(bool(bits >> i & 1) for i in range(n))
                pose = dict(zip(sp.POSES, flags, strict=True))
                if pose["back"]:
                    pose["look"] = False  # back hides look in both pictures
                if picture == 5 and kind == "wheelchair":
                    pose["sit"] = False  # 0.8.0: a wheelchair user is drawn seated
                key = sp.person_sprite(kind, picture=picture, **pose).tobytes()
                meaning = (kind, tuple(sorted(k for k, v in pose.items() if v)))
                assert seen.setdefault(key, meaning) == meaning, (picture, kind, pose)


# ------------------------------------------------------------------ evaluate
def test_evaluate_defaults_to_the_suite_size_and_records_it(tmp_path):
    from mindhelper_env.evaluation import EvalSettings

    s = EvalSettings("vh-dev-v5", "silent", tmp_path / "run", env_kwargs={"obs_mode": "rgb"})
    assert s.env_kwargs["frame_size"] == 512
    assert s.run_record()["env_kwargs"]["frame_size"] == 512
    text = EvalSettings("vh-dev-v5", "silent", tmp_path / "run")
    assert "frame_size" not in text.env_kwargs
    from mindhelper_env.evaluation.provenance import run_provenance

    prov = run_provenance(suite="vh-dev-v5", env_id=VH, env_kwargs=s.env_kwargs, seed=0,
                          trials=1, agents={})
    assert prov["picture"] == sp.PICTURE and prov["frame_size"] == 512


def test_pixel_readers_refused_at_a_lossy_size_before_any_file(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "mindhelper_env.cli", "evaluate", "--suite", "vh-dev-v5",
           "--obs", "rgb", "--frame-size", "256", "--agents", "belief-tracker",
           "--agent", "belief-tracker:observe=pixels", "--out", str(out), "--limit", "1"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "512" in lines[0] and "belief-tracker" in lines[0]
    assert not out.exists()
    assert efs.pixel_agents(["mindclaw-pixels", "silent", "mindclaw-pixels+wait3"], {}) \
        == ["mindclaw-pixels", "mindclaw-pixels+wait3"]
    assert efs.pixel_agents(["mindclaw"], {"mindclaw": {"observe": "pixels"}}) == ["mindclaw"]
    # a text agent at that size is warned about, not refused
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        efs.check_frame_size("vh-dev-v5", {"obs_mode": "rgb", "frame_size": 256}, ["silent"],
                             {})
    assert any(issubclass(w.category, fs.LossyFrameWarning) for w in got)


def test_inspect_task_defaults_to_the_suite_size_and_refuses_pixel_readers():
    pytest.importorskip("inspect_ai")
    from mindhelper_env.inspect_task import mindhelper

    task = mindhelper(suite="vh-dev-v5", agent="belief-tracker", obs="rgb", limit=1,
                      agent_options={"observe": "pixels"})
    assert task.metadata["env_kwargs"] == {"obs_mode": "rgb", "frame_size": 512}
    with pytest.raises(ValueError, match="512"):
        mindhelper(suite="vh-dev-v5", agent="belief-tracker", obs="rgb", limit=1,
                   agent_options={"observe": "pixels"}, frame_size=256)
