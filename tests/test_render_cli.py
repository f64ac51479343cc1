"""``mindhelper render`` and ``evaluate --videos``: files written, sizes and contents checked."""

from __future__ import annotations

import imageio.v2 as imageio
import numpy as np
import pytest
from PIL import Image

from mindhelper_env.cli import main


def _render(tmp_path, index, ext):
    out = tmp_path / f"ep{index}{ext}"
    assert main(["render", "--suite", "vh-dev-v2", "--index", str(index), "--agent", "oracle",
                 "--out", str(out)]) == 0
    return out, tmp_path / f"ep{index}-timeline.png"


def test_render_gif_mp4_and_timeline(tmp_path):
    gif, timeline = _render(tmp_path, 3, ".gif")
    frames = imageio.mimread(gif)
    assert len(frames) > 5
    assert frames[0].shape[:2] == (256, 256)
    assert any(not np.array_equal(frames[0], f) for f in frames[1:])
    mp4, _ = _render(tmp_path, 3, ".mp4")
    reader = imageio.get_reader(mp4)
    n = sum(1 for _ in reader)
    assert n == len(frames)
    img = np.asarray(Image.open(timeline).convert("RGB"))
    assert img.shape[0] > 200 and img.shape[1] > 400
    assert img.std() > 10  # not blank
    _, other = _render(tmp_path, 4, ".gif")
    a = np.asarray(Image.open(other).convert("RGB"))
    assert a.shape != img.shape or not np.array_equal(a, img)


@pytest.mark.parametrize("args, message", [
    (["--index", "100"], "out of range"),
    (["--index", "-1"], "out of range"),
    (["--suite", "vh-nope"], "unknown suite"),
    (["--agent", "telepath"], "unknown agent"),
    (["--out", "/definitely/missing/ep.gif"], "does not exist"),
    (["--out", "ep.avi"], "unsupported video extension"),
])
def test_render_bad_input(tmp_path, capsys, args, message):
    base = {"--suite": "vh-dev-v2", "--index": "3", "--agent": "oracle",
            "--out": str(tmp_path / "ep.gif")}
    for k, v in zip(args[::2], args[1::2], strict=True):
        base[k] = v if k != "--out" or v.startswith("/") else str(tmp_path / v)
    argv = ["render"] + [x for kv in base.items() for x in kv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_render_read_only_folder(tmp_path, capsys, monkeypatch):
    import os

    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access
    # root ignores permission bits, so simulate a read-only folder at the access check
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(ro)
                        else real_access(p, mode))
    assert main(["render", "--suite", "vh-dev-v2", "--index", "3", "--agent", "oracle",
                 "--out", str(ro / "ep.gif")]) == 2
    assert "not writable" in capsys.readouterr().err


def test_evaluate_videos(tmp_path):
    out = tmp_path / "run"
    assert main(["evaluate", "--suite", "vh-dev-v2", "--agents", "oracle,silent", "--out",
                 str(out), "--limit", "2", "--videos", "1", "--no-progress", "--no-plots"]) == 0
    vids = sorted(p.name for p in (out / "videos").iterdir())
    assert vids == ["oracle-vh-dev-v2-0000-timeline.png", "oracle-vh-dev-v2-0000.gif",
                    "silent-vh-dev-v2-0000-timeline.png", "silent-vh-dev-v2-0000.gif"]


def test_render_writes_the_mindclaw_trace(tmp_path):
    out = tmp_path / "claw.gif"
    rc = main(["render", "--suite", "vh-dev-v2", "--index", "2", "--agent", "mindclaw",
               "--out", str(out), "--size", "128"])
    assert rc == 0
    text = (tmp_path / "claw-trace.txt").read_text()
    assert text.startswith("window 0 (tick 0): ")
    assert "belief_create_visual_fact" in text and "robot sees" in text
    # agents without a trace write none
    rc = main(["render", "--suite", "vh-dev-v2", "--index", "2", "--agent", "silent",
               "--out", str(tmp_path / "quiet.gif"), "--size", "128"])
    assert rc == 0 and not (tmp_path / "quiet-trace.txt").exists()
