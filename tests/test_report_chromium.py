"""The report in a real browser: headless Chromium (Debian's ``chromium``) opens a report
built from a real ``evaluate --report`` run, with and without the network.

Skipped without Chromium, except when ``MINDHELPER_REQUIRE_CHROMIUM=1`` (set by ``.ci/run``):
then a missing browser fails them. Screenshots are saved to a ``report-screenshots`` folder
under pytest's temporary path (printed with ``-s``)."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.chromium_cdp import Browser, chromium_path

pytest.importorskip("jinja2", reason='needs the report extra: pip install -e ".[report]"')

AGENTS = "silent,random,reactive,belief-tracker,mindclaw"


@pytest.fixture(scope="module", autouse=True)
def _needs_chromium():
    if chromium_path() is None:
        if os.environ.get("MINDHELPER_REQUIRE_CHROMIUM") == "1":
            pytest.fail("MINDHELPER_REQUIRE_CHROMIUM=1 but chromium is not installed "
                        "(apt-get install -y chromium)")
        pytest.skip("needs chromium (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from mindhelper_env.cli import main

    out = tmp_path_factory.mktemp("run")
    assert main(["evaluate", "--suite", "vh-dev-v2", "--agents", AGENTS, "--out", str(out),
                 "--limit", "6", "--report", "--no-progress", "--no-timing"]) == 0
    report = out / "report"
    assert (report / "index.html").is_file()
    return report


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report-screenshots")
    print(f"\nreport screenshots: {folder}")
    return folder


def _failed_help_page(report):
    """An episode page of a help episode the agent got wrong, and one it got right."""
    bad = good = None
    for page in sorted((report / "episodes").rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        if 'class="window"' not in html:
            continue
        if 'tag bad" id="outcome"' in html and "scored-intervention" in html and bad is None:
            bad = page
        if 'tag ok" id="outcome"' in html and good is None:
            good = page
    return bad, good


def test_report_renders_without_console_errors(site, shots):
    bad, good = _failed_help_page(site)
    assert bad is not None and good is not None
    with Browser() as b:
        b.open((site / "index.html").as_uri())
        assert b.problems() == []
        names = b.evaluate("Array.from(document.querySelectorAll('#board tbody tr td:first-child'))"
                           ".map(td => td.textContent.trim())")
        assert names == AGENTS.split(",")
        # the table renders with a real size, and sorting by PHA reorders it
        assert b.evaluate("document.getElementById('board').getBoundingClientRect().height") > 100
        b.evaluate("document.querySelectorAll('#board th')[1].click()")
        order = b.evaluate("Array.from(document.querySelectorAll('#board tbody tr'))"
                           ".map(tr => parseFloat(tr.cells[1].dataset.sort))")
        assert order == sorted(order, reverse=True) and order != sorted(order)
        b.evaluate("document.querySelectorAll('#board th')[1].click()")
        again = b.evaluate("Array.from(document.querySelectorAll('#board tbody tr'))"
                           ".map(tr => parseFloat(tr.cells[1].dataset.sort))")
        assert again == sorted(order)
        # the paired comparison script shows exactly one pair
        assert b.evaluate("document.querySelectorAll('div.pair:not([hidden])').length") == 1
        assert b.evaluate("document.querySelector('img[src=\"charts/intervals.svg\"]')"
                          ".naturalWidth") > 0
        b.screenshot(shots / "leaderboard.png")
        assert b.problems() == []

        b.open((site / "episodes.html").as_uri())
        assert b.problems() == []
        assert re.fullmatch(r"6 of 6 episodes",
                            b.evaluate("document.getElementById('f-count').textContent"))
        b.evaluate("document.getElementById('f-failed').click()")
        # every episode has some agent failing it (silent misses every help episode) ...
        assert b.evaluate("document.getElementById('f-count').textContent") == "6 of 6 episodes"
        # ... but not the belief tracker's failures only
        b.evaluate("const s = document.getElementById('f-agent'); s.value = '3';"
                   "s.dispatchEvent(new Event('change'))")
        shown = b.evaluate("document.getElementById('f-count').textContent")
        assert shown.endswith("of 6 episodes") and not shown.startswith("6 ")

        for page, name in ((bad, "failed-episode.png"), (good, "episode.png")):
            b.open(page.as_uri())
            assert b.problems() == [], page
            box = b.evaluate("(() => { const r = document.getElementById('timeline')"
                             ".getBoundingClientRect(); return [r.width, r.height]; })()")
            assert box[0] > 500 and box[1] > 50
            assert b.evaluate("document.querySelector('#timeline rect.window')"
                              ".getBBox().width") > 0
            # every window is in the table: a row each, or folded into a row of quiet ones
            assert b.evaluate("(() => { let n = 0; document.querySelectorAll('#windows tbody tr')"
                              ".forEach(r => { n += r.classList.contains('quiet') ? "
                              "Number(r.dataset.count) : 1; }); return n; })()") >= 20
            assert b.evaluate("document.querySelectorAll('#beliefs tbody tr').length") >= 1
            b.screenshot(shots / name)
        b.open(bad.as_uri())
        assert b.evaluate("document.querySelector('#timeline line.scored-intervention')"
                          " !== null")
        assert b.evaluate("document.querySelector('#windows tr.scored') !== null")
        # a folded run of quiet windows opens on a click
        if b.evaluate("document.querySelector('#windows tr.quiet summary') !== null"):
            b.evaluate("document.querySelector('#windows tr.quiet summary').click()")
            assert b.evaluate("document.querySelector('#windows tr.quiet details').open")
    for name in ("leaderboard.png", "failed-episode.png", "episode.png"):
        assert (shots / name).stat().st_size > 10_000


#: Text elements of the SVG open in the browser that reach outside the picture (clipped).
_TEXT_OUTSIDE = """(() => {
  const svg = document.querySelector('svg'), box = svg.getBoundingClientRect();
  return Array.from(svg.querySelectorAll('text')).map(t => {
    const r = t.getBoundingClientRect();
    return [t.textContent.trim().slice(0, 50), Math.round(r.left - box.left),
            Math.round(r.right - box.left)];
  }).filter(a => a[0] && (a[1] < -1 || a[2] > box.width + 1));
})()"""


def test_the_report_fits_a_1280_px_window_and_no_chart_text_is_clipped(site, shots, tmp_path):
    from mindhelper_env.plots import plot_family

    with Browser(width=1280, height=900) as b:
        b.open((site / "index.html").as_uri())
        width = b.evaluate("document.documentElement.clientWidth")
        assert b.evaluate("document.documentElement.scrollWidth") <= width
        assert b.evaluate("document.getElementById('board').getBoundingClientRect().right") \
            <= width
        b.screenshot(shots / "index-1280.png")
        # every chart's text lies inside its picture; also a narrow one (one agent, whose
        # long family labels push the heatmap right, under a long title)
        summary = json.loads((site.parent / "summary.json").read_text())
        first = next(iter(summary["metrics"]))
        narrow = plot_family({first: summary["metrics"][first]}, tmp_path / "one.svg",
                             subtitle="vh-dev-v2, 6 episodes")
        charts = [*sorted((site / "charts").glob("*.svg")), narrow]
        assert len(charts) >= 3
        for svg in charts:
            b.open(svg.as_uri())
            assert b.evaluate(_TEXT_OUTSIDE) == [], svg.name


def test_the_checks_catch_errors_and_remote_resources(tmp_path):
    """The detector itself: a page with a console error, an exception and a remote script
    fails every check the report passes."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><script>console.error("x"); nope();</script>'
                    '<script src="http://example.invalid/a.js"></script></body></html>')
    with Browser(offline=True) as b:
        b.open(page.as_uri())
        problems = " | ".join(b.problems())
        assert "console.error" in problems and "nope" in problems
        assert "ERR_" in problems
        assert any(u.startswith("http") for u in b.requests())


def test_report_works_with_the_network_disabled(site):
    remote = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//"""
                        r"""|@import""", re.IGNORECASE)
    files = [p for p in site.rglob("*") if p.suffix in (".html", ".svg", ".css", ".js")]
    for path in files:
        assert not remote.search(path.read_text(encoding="utf-8")), path
    pages = [site / "index.html", site / "episodes.html",
             *sorted((site / "episodes").rglob("*.html"))[:3]]
    with Browser(offline=True) as b:
        for page in pages:
            b.open(page.as_uri())
            assert b.problems() == [], page
            requests = b.requests()
            assert requests and all(u.startswith(("file:", "data:")) for u in requests), requests
            assert b.evaluate("document.querySelector('main').innerText.length") > 200
        # a link between pages works offline too
        b.open((site / "episodes.html").as_uri())
        href = b.evaluate("document.querySelector('#episodes td a').href")
        b.open(href)
        assert b.problems() == []
        assert json.loads(json.dumps(b.evaluate("document.title"))).startswith("vh-dev-v2-")
