"""The report's vision-track frames at full size (issue 57): the episode page's contact
sheets are scaled down to fit, and clicking one opens the window's frames at their native
pixel size; the legend sits above the windows.

The browser part runs in headless Chromium when it is installed (required with
``MINDHELPER_REQUIRE_CHROMIUM=1``, as in ``tests/test_report_chromium.py``)."""

from __future__ import annotations

import json
import os
import re
import time

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("jinja2", reason='needs the report extra: pip install -e ".[report]"')
pytest.importorskip("matplotlib", reason='needs the report extra: pip install -e ".[report]"')
from PIL import Image  # noqa: E402

SUITE = "vh-dev-v5"
SIZE = 512  # px: wider than the page's sheets (3 frames of 512 px are scaled down)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from mindhelper_env.cli.main import main
    from mindhelper_env.report import write_report

    root = tmp_path_factory.mktemp("fullsize")
    run = root / "run"
    assert main(["evaluate", "--suite", SUITE, "--agents", "silent,oracle", "--limit", "2",
                 "--obs", "rgb", "--frame-size", str(SIZE), "--no-timing", "--no-plots",
                 "--no-progress", "--out", str(run), "--format", "json"]) == 0
    write_report(root / "report", [run], workers=1, resamples=50)
    return root


def _page(report, agent_slug="a0"):
    pages = sorted((report / "report" / "episodes" / agent_slug).glob("*.html"))
    return pages[0]


def test_each_window_links_its_frames_at_native_size(report):
    page = _page(report)
    html = page.read_text()
    sheets = re.findall(r'<img class="frames"[^>]* src="([^"]+)"', html)
    fulls = re.findall(r'<img class="full" src="([^"]+)" width="(\d+)" height="(\d+)"', html)
    assert sheets and len(fulls) >= 3 * (len(sheets) - 1)
    # the sheet is scaled down to fit the page; the full-size frames are not
    sheet = Image.open(page.parent / sheets[1])
    assert sheet.size[0] < 3 * SIZE
    rec = json.loads((report / "run" / "silent.jsonl").read_text().splitlines()[0])
    env = gym.make("MindHelper-VirtualHome-v3", obs_mode="rgb", frame_size=SIZE)
    try:
        obs, _ = env.reset(seed=rec["index"], options={"suite": SUITE, "index": rec["index"]})
        first_window, *_ = env.step("none")
    finally:
        env.close()
    for src, w, h in fulls:
        img = Image.open(page.parent / src)
        assert img.size == (int(w), int(h)) == (SIZE, SIZE)  # the frame's native size
    # the files are the frames the agent saw, pixel for pixel (reset, then window 0)
    window0 = [src for src, _, _ in fulls if "/w0-" in src]
    assert len(window0) == 3
    for k, src in enumerate(window0):
        got = np.asarray(Image.open(page.parent / src).convert("RGB"))
        assert np.array_equal(got, first_window[k])
    reset = next(src for src, _, _ in fulls if "/reset-" in src)
    assert np.array_equal(np.asarray(Image.open(page.parent / reset).convert("RGB")), obs[0])
    # agents that played an episode alike share the frames' folder
    other = _page(report, "a1").read_text()
    folders = lambda text: {m.split("/")[3] for m in re.findall(r'src="(\.\./\.\./frames/[^"]+)"', text)}  # noqa: E731
    assert folders(html) and folders(html) <= {p.name for p in (report / "report" / "frames").iterdir()}
    assert len(folders(other)) == 1


def test_the_episode_page_has_the_legend(report):
    html = _page(report).read_text()
    m = re.search(r'<details id="legend">.*?<img src="([^"]+)"', html, re.S)
    assert m and m.group(1) == "../../legend.png"
    from mindhelper_env.render.legend import render_legend

    legend = np.asarray(Image.open(report / "report" / "legend.png").convert("RGB"))
    assert np.array_equal(legend, render_legend())


def test_a_text_report_has_no_frames_folder_or_legend(tmp_path):
    from mindhelper_env.cli.main import main
    from mindhelper_env.report import write_report

    run = tmp_path / "run"
    assert main(["evaluate", "--suite", SUITE, "--agents", "silent", "--limit", "1",
                 "--no-timing", "--no-plots", "--no-progress", "--out", str(run),
                 "--format", "json"]) == 0
    write_report(tmp_path / "report", [run], workers=1, resamples=50)
    assert not (tmp_path / "report" / "frames").exists()
    assert not (tmp_path / "report" / "legend.png").exists()
    assert 'id="legend"' not in _page(tmp_path).read_text()
    assert not list(tmp_path.glob(".mh-report-frames-*"))


def test_a_report_replaced_with_overwrite_keeps_its_frames(report, tmp_path):
    from mindhelper_env.report import write_report

    out = tmp_path / "again"
    write_report(out, [report / "run"], workers=1, resamples=50)
    write_report(out, [report / "run"], workers=1, resamples=50, overwrite=True)
    assert any((out / "frames").iterdir()) and (out / "legend.png").is_file()
    assert not list(tmp_path.glob(".mh-report-frames-*"))  # the temporary folder is gone


def _chromium():
    from tests.chromium_cdp import chromium_path

    if chromium_path() is None:
        if os.environ.get("MINDHELPER_REQUIRE_CHROMIUM") == "1":
            pytest.fail("MINDHELPER_REQUIRE_CHROMIUM=1 but chromium is not installed "
                        "(apt-get install -y chromium)")
        pytest.skip("needs chromium (apt-get install -y chromium)")


def test_clicking_a_window_shows_its_frames_at_native_size_in_a_browser(report):
    _chromium()
    from tests.chromium_cdp import Browser

    page = _page(report)
    with Browser(width=1200, height=900) as b:
        b.open(page.as_uri())
        assert b.problems() == []
        shown = b.evaluate("(() => { const s = document.querySelectorAll('img.frames')[1];"
                           " return s.getBoundingClientRect().width; })()")
        assert 0 < shown < 3 * SIZE  # the sheet fits the page
        assert b.evaluate("document.querySelectorAll('details.full')[1].open") is False
        b.evaluate("document.querySelectorAll('details.full')[1].querySelector('summary')"
                   ".click()")
        assert b.evaluate("document.querySelectorAll('details.full')[1].open") is True
        b.evaluate("document.querySelectorAll('details.full')[1].querySelectorAll('img.full')"
                   ".forEach(i => { i.loading = 'eager'; })")
        loaded = "Array.from(document.querySelectorAll('details.full')[1]" \
                 ".querySelectorAll('img.full')).every(i => i.complete && i.naturalWidth > 0)"
        deadline = time.monotonic() + 20
        while not b.evaluate(loaded) and time.monotonic() < deadline:
            time.sleep(0.1)
        sizes = b.evaluate("Array.from(document.querySelectorAll('details.full')[1]"
                           ".querySelectorAll('img.full')).map(i => [i.naturalWidth,"
                           " i.naturalHeight, Math.round(i.getBoundingClientRect().width)])")
        assert sizes and all(s == [SIZE, SIZE, SIZE] for s in sizes)
        assert b.problems() == []
