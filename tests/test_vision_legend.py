"""The vision track's legend (issue 57): drawn by the sprites themselves, every glyph, pose,
cell and icon with its name; the docs' legend figure matches the installed sprites; model
agents send it with ``legend=true`` and count it like a frame."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from mindhelper_env.render import sprites as sp

pytest.importorskip("PIL", reason="the legend's words need Pillow")

from mindhelper_env.render.legend import (  # noqa: E402
    ACTION_WORDS,
    POSE_WORDS,
    STATE_WORDS,
    build_legend,
    legend_png,
    render_legend,
    write_legend,
)

ROOT = Path(__file__).resolve().parents[1]
FIGURE = ROOT / "docs" / "vision_legend.png"
FRAME = 64


def _shown(legend, key):
    """The legend's pixels of entry ``key`` and what the sprites say they must be."""
    y, x, h, w = legend.cells[key]
    tile = legend.tiles[key]
    zoom = h // tile.shape[0]
    want = np.repeat(np.repeat(sp.PALETTE[tile], zoom, 0), zoom, 1)
    return legend.image[y:y + h, x:x + w], want


@pytest.fixture(scope="module")
def legend():
    return build_legend(2)


def test_every_glyph_pose_cell_and_icon_of_the_sprites_is_in_the_legend(legend):
    keys = set(legend.cells)
    assert {f"action:{v}" for v in sp.ACTION_GLYPHS} <= keys
    assert {f"state:{n}" for n in sp.STATE_GLYPHS} <= keys
    assert {f"digit:{d}" for d in sp.DIGITS} <= keys
    assert {f"object:{c}" for c in sp.OBJECT_CLASSES} <= keys
    assert {f"furniture:{c}" for c in sp.FURNITURE_CLASSES} <= keys
    assert {f"room:{c}" for c in sp.ROOM_CLASSES} <= keys
    for kind in sp.KIND_COLORS:
        assert f"person:{kind}:standing" in keys
        assert {f"person:{kind}:{p}" for p in sp.POSES} <= keys
    assert {f"balloon:{b}" for b in ("walk-to", "give", "tell", "move")} <= keys
    assert {"row:furniture", "row:door_open", "row:door_closed", "row:spill", "door"} <= keys
    # every known name has words (a new key would be shown under its own name)
    assert set(ACTION_WORDS) >= set(sp.ACTION_GLYPHS)
    assert set(POSE_WORDS) >= set(sp.POSES) and set(STATE_WORDS) >= set(sp.STATE_GLYPHS)


def test_the_legend_is_drawn_with_the_renderers_own_sprites(legend):
    for key in legend.cells:
        got, want = _shown(legend, key)
        assert np.array_equal(got, want), key
    # the tiles are the sprites: a pose tile holds person_sprite(kind, pose=True) exactly
    def on_row(icon):  # a sprite's transparent pixels show the row background
        return np.where(icon != 0, icon, sp.ROW_BG)

    tile = legend.tiles["person:child:phone"]
    assert np.array_equal(tile[1:-1, 1:-1], on_row(sp.person_sprite("child", phone=True)))
    assert not np.array_equal(tile, legend.tiles["person:child:standing"])
    assert np.array_equal(legend.tiles["action:grab"][1:6, 1:6],
                          on_row(sp.ACTION_GLYPHS["grab"]))
    # glyph pixels are palette colours; the words are pure black on white
    colours = {tuple(c) for c in legend.image.reshape(-1, 3)}
    assert colours <= {tuple(c) for c in sp.PALETTE} | {(255, 255, 255)}


def test_a_new_glyph_or_pose_appears_without_a_change_to_the_legend(monkeypatch):
    glyph = np.where(np.eye(5, dtype=bool), sp.ACTION, 0).astype(np.uint8)
    monkeypatch.setitem(sp.ACTION_GLYPHS, "wave", glyph)
    lg = build_legend(1)
    assert "action:wave" in lg.cells
    got, want = _shown(lg, "action:wave")
    assert np.array_equal(got, want)


def test_balloons_are_drawn_as_the_frames_draw_them(legend):
    """The give balloon against a real frame: the env's talk row after a give holds the same
    cells (verb glyph, arrow) at the offsets of ``Layout.balloon_parts``."""
    tile = legend.tiles["balloon:give"]
    lay = sp.Layout(width=1, height=1, mark_w=sp.mark_width(2), panels=())
    parts = lay.balloon_parts()
    assert np.array_equal(tile[1:6, 1 + parts["verb"]:1 + parts["verb"] + 5],
                          np.where(sp.ACTION_GLYPHS["give"] != 0, sp.ACTION_GLYPHS["give"],
                                   sp.BALLOON))
    assert np.array_equal(tile[1:6, 1 + parts["arrow"]:1 + parts["arrow"] + 5],
                          np.where(sp.ARROW != 0, sp.ARROW, sp.BALLOON))
    assert (tile[0, 1:1 + lay.balloon_w] == sp.BORDER).all()


def test_scale_kinds_and_bad_arguments():
    small = render_legend(1)
    big = render_legend(3)
    assert big.shape[1] > small.shape[1] and not big.flags.writeable
    only = build_legend(1, kinds=["robot"])
    assert not any(k.startswith("person:adult") for k in only.cells)
    assert "person:robot:phone" in only.cells
    for bad in (0, 17, 2.5, True):
        with pytest.raises(ValueError, match="scale"):
            render_legend(bad)
    with pytest.raises(ValueError, match="kinds"):
        render_legend(2, kinds=["dog"])


def test_the_png_records_the_sprites_version(tmp_path):
    from PIL import Image

    path = write_legend(tmp_path / "sub" / "legend.png", 1)
    img = Image.open(path)
    assert img.info["sprites_version"] == str(sp.SPRITES_VERSION)
    assert json.loads(img.info["cells"]) == {k: list(v) for k, v in build_legend(1).cells.items()}
    assert np.array_equal(np.asarray(img.convert("RGB")), render_legend(1))
    assert legend_png(1) == path.read_bytes()


def test_the_docs_legend_figure_shows_the_installed_sprites():
    """docs/vision_legend.png is ``make_figures.py --only legend``: every entry the installed
    sprites give must be in it and show them (a sprite change without a rerun fails here).
    Entries are found by the ``cells`` the PNG records, so another Pillow (other word
    widths, so other positions) does not matter."""
    from PIL import Image

    entry = json.loads((ROOT / "docs" / "figures.json").read_text())["figures"][
        "vision_legend.png"]
    assert entry["group"] == "legend"
    img = Image.open(FIGURE)
    rerun = "rerun docs/tools/make_figures.py --only legend"
    assert img.info.get("sprites_version") == str(sp.SPRITES_VERSION), rerun
    cells = json.loads(img.info["cells"])
    pixels = np.asarray(img.convert("RGB"))
    lg = build_legend()
    missing = set(lg.tiles) - set(cells)
    assert not missing, f"entries missing from the figure: {sorted(missing)}; {rerun}"
    for key, tile in lg.tiles.items():
        y, x, h, w = cells[key]
        zoom = h // tile.shape[0]
        want = np.repeat(np.repeat(sp.PALETTE[tile], zoom, 0), zoom, 1)
        assert want.shape[:2] == (h, w), f"{key}: another size; {rerun}"
        assert np.array_equal(pixels[y:y + h, x:x + w], want), f"{key} differs; {rerun}"


# ------------------------------------------------------------------- agents that send it


@pytest.fixture(scope="module")
def rgb_env():
    env = gym.make("MindHelper-VirtualHome-v3", obs_mode="rgb", frame_size=FRAME)
    yield env
    env.close()


def _dry(agent_name, env, **kw):
    from mindhelper_env.agents import make_agent
    from mindhelper_env.evaluation.episode import run_episode

    agent = make_agent(agent_name, model="dry:openai:test-vlm", max_calls=3, **kw)
    record = run_episode(env, agent, seed=5, agent_name=agent_name, timing=False)
    return agent, record


def test_direct_vlm_sends_the_legend_first_and_counts_it(rgb_env):
    from mindhelper_env.models.images import image_tokens

    legend = render_legend(3)
    plain, plain_rec = _dry("direct-vlm", rgb_env)
    agent, rec = _dry("direct-vlm", rgb_env, legend=True)
    calls = rec["usage"]["model_calls"]
    assert calls == plain_rec["usage"]["model_calls"] == 3
    content = agent.last_prompt[-1]["content"]
    images = [p for p in content if isinstance(p, np.ndarray)]
    assert np.array_equal(images[0], legend) and len(images) == 1 + 3  # legend, 3 frames
    text = content[0]
    assert "The first picture is the legend" in text
    assert "first picture is the legend" not in plain.last_prompt[-1]["content"][0]
    extra = image_tokens(*legend.shape[:2])
    # the legend is one more image a call, counted by the client's rule, and the dry pass
    # (what a budgeted run estimates and reserves) pays for it
    assert rec["usage"]["images"] == plain_rec["usage"]["images"] + calls
    assert rec["usage"]["image_tokens"] == plain_rec["usage"]["image_tokens"] + calls * extra
    assert rec["usage"]["prompt_tokens"] >= plain_rec["usage"]["prompt_tokens"] + calls * extra


def test_direct_vlm_legend_scale_and_a_bad_value(rgb_env):
    from mindhelper_env.agents import make_agent

    agent = make_agent("direct-vlm", model="dry:openai:m", legend=True, legend_scale=1)
    assert agent.legend.shape == render_legend(1).shape
    assert make_agent("direct-vlm", model="dry:openai:m").legend is None
    with pytest.raises(ValueError, match="legend must be true or false"):
        make_agent("direct-vlm", model="dry:openai:m", legend="yes")
    with pytest.raises(ValueError, match="scale"):
        make_agent("direct-vlm", model="dry:openai:m", legend=True, legend_scale=0)


def test_mindclaw_vlm_sends_the_legend_with_its_frames(rgb_env):
    agent, rec = _dry("mindclaw-vlm", rgb_env, legend=True)
    _, plain = _dry("mindclaw-vlm", rgb_env)
    calls = rec["usage"]["model_calls"]
    assert calls == plain["usage"]["model_calls"] > 0
    assert rec["usage"]["images"] == plain["usage"]["images"] + calls
    from mindhelper_env.agents import make_agent

    with pytest.raises(ValueError, match="needs observe='vlm'"):
        make_agent("mindclaw-pixels", model="symbolic", legend=True)


def test_evaluate_takes_legend_true_from_the_command_line(tmp_path, capsys):
    """``--agent direct-vlm:legend=true``: every request to the server carries the legend as
    its first image, before the window's frames, and the records count it."""
    from fake_openai_server import Reply, ScriptedServer, image_parts, need

    from mindhelper_env.cli.main import main

    need("openai")
    out = tmp_path / "run"
    with ScriptedServer([Reply(text='{"intervene": false, "program": []}')]) as srv:
        code = main(["evaluate", "--suite", "vh-dev-v5", "--agents", "direct-vlm",
                     "--limit", "1", "--obs", "rgb", "--frame-size", str(FRAME),
                     "--model", f"openai:test-vlm@{srv.url}",
                     "--agent", "direct-vlm:legend=true,max_calls=2,api_key=k",
                     "--no-timing", "--no-plots", "--no-progress", "--out", str(out),
                     "--format", "json"])
        assert code == 0, capsys.readouterr().err
        assert len(srv.requests) == 2
        first = {image_parts(body)[0] for body in srv.requests}
        assert len(first) == 1  # the same legend bytes in every request
        import base64
        import io

        from PIL import Image

        sent = Image.open(io.BytesIO(base64.b64decode(first.pop().split(",", 1)[1])))
        assert np.array_equal(np.asarray(sent.convert("RGB")), render_legend(3))
        assert all(len(image_parts(body)) == 1 + 3 for body in srv.requests)
    rec = json.loads((out / "direct-vlm.jsonl").read_text().splitlines()[0])
    assert rec["usage"]["images"] == rec["usage"]["model_calls"] * (3 + 1) == 8
