"""Regenerate every figure of the README and the docs from the current generator.

    python docs/tools/make_figures.py                    # all figures (about 5-10 minutes)
    python docs/tools/make_figures.py --only frames      # some of them: frames, legend, report, curve

Each figure is made by the package itself, as a user would make it, and written to
``docs/``; ``docs/figures.json`` records beside each the generator version
(``GENERATOR_VERSION``) and package version it was made with, the command or recipe that
made it, what it shows and the file's sha256. ``tests/test_figures.py`` fails when a figure's
recorded generator differs from the package's (rerun this script) or when a file no longer
matches its recorded digest (a figure changed by hand).

* ``frames``: ``frame_vh_scene1.png`` (``vh-scene1-dev-v5`` episode 0, VirtualHome's
  TestScene1; needs ``virtualhome-eval``) and ``frame_tdw_floorplan.png`` (``tdw-dev-v5``
  episode 3; the ``tdw`` extra): the ``rgb_array`` render at 512 px, played by the oracle, at
  the end of the window holding the episode's onset (the first struggle).
* ``vision``: ``vision_window_vh.png``: one false-belief window of ``vh-dev-v5`` episode 0
  (the window in which someone other than the focus person moves the target object)
  in both tracks side by side: the text track's narration on the left, the vision track's
  three frames (``obs_mode="rgb"``, 512 px) on the right. Fast (seconds); run
  ``--only vision``.
* ``legend``: ``vision_legend.png``: the vision track's legend
  (:func:`mindhelper_env.render.legend.write_legend` at its default scale): every glyph,
  pose, cell and icon of the ``rgb`` frames drawn by the sprites, with its name. Fast
  (a second); ``tests/test_vision_legend.py`` checks it shows the installed sprites, so a
  sprite change needs ``--only legend``.
* ``report``: ``report_leaderboard.png``, ``report_paired.png`` and ``report_episode.png``:
  ``mindhelper evaluate --report`` of the main job's agents and MindClaw on ``vh-dev-v5``,
  opened in headless Chromium (the ``report`` extra and Debian's ``chromium``). The episode
  is the first help episode MindClaw fails (any agent's when MindClaw fails none).
* ``curve``: ``trigger_learning_curve.png``, the ``learning_curve.png`` of ``mindhelper
  train-trigger --timesteps 60000 --envs 2 --bc-episodes 500 --reasoning-cost 0.1`` (the
  ``rl`` extra).
* ``tables``: result tables written into the pages between ``<!-- figure: NAME -->`` and
  ``<!-- /figure -->`` (the entry is ``PAGE#NAME``; its sha256 is the block's text):
  ``evaluation.md#dev-suite-table``, ``mindhelper score --format markdown`` of the main
  job's agents and MindClaw on ``vh-dev-v5``; ``hosted-models.md#table2-cassette``, the
  shipped real-model cassette replayed on ``vh-dev-v5`` (``--format markdown``).

Measured tables (speed, validity figures on the 1,000-episode suites) come from the scripts
in ``benchmarks/``, each with its command and date beside it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MANIFEST = DOCS / "figures.json"
sys.path.insert(0, str(ROOT))   # tests.chromium_cdp, the report tests' browser driver

REPORT_AGENTS = "silent,random,reactive,belief-tracker,oracle,mindclaw"
CURVE_ARGS = ["--algo", "maskable-ppo", "--timesteps", "60000", "--envs", "2",
              "--bc-episodes", "500", "--reasoning-cost", "0.1", "--seed", "0"]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _versions() -> dict[str, str]:
    import mindhelper_env
    from mindhelper_env.scenarios.spec import GENERATOR_VERSION

    return {"generator": GENERATOR_VERSION, "package": mindhelper_env.__version__}


def _mindhelper(*args: str, cwd: Path | None = None) -> str:
    """Run the CLI as a user would (``python -m mindhelper_env.cli``); stop on failure.
    Returns what it printed on stdout."""
    cmd = [sys.executable, "-m", "mindhelper_env.cli", *args]
    print("$ mindhelper " + " ".join(args), flush=True)
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"make_figures: mindhelper {args[0]} failed (exit {proc.returncode}):\n"
                 + proc.stderr[-3000:])
    return proc.stdout


# ------------------------------------------------------------------ frames
def _frame(suite: str, index: int, out: Path) -> dict[str, Any]:
    import gymnasium as gym
    from PIL import Image

    import mindhelper_env  # noqa: F401  (registers the envs)
    from mindhelper_env.agents import make_agent

    env = gym.make("MindHelper-VirtualHome-v3", render_mode="rgb_array", render_size=512)
    obs, info = env.reset(seed=0, options={"suite": suite, "index": index})
    truth = env.unwrapped.ground_truth
    agent = make_agent("oracle", env=env)
    agent.reset(seed=0)
    onset = truth.onset_tick if truth.onset_tick is not None else 6
    done = False
    while not done and obs["tick"] < onset:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        done = terminated or truncated
    Image.fromarray(env.render()).save(out, optimize=True)
    tick = int(obs["tick"])
    env.close()
    return {"shows": f"{suite} episode {index} ({truth.family}), tick {tick}, 512 px, "
                     "played by the oracle",
            "recipe": f"rgb_array render of reset(options={{'suite': '{suite}', "
                      f"'index': {index}}}) after the window holding the onset (tick 6 "
                      "in an episode without one)"}


def make_frames(work: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for name, suite, index in (("frame_vh_scene1.png", "vh-scene1-dev-v5", 0),
                               ("frame_tdw_floorplan.png", "tdw-dev-v5", 3)):
        print(f"frame: {name}", flush=True)
        out[name] = _frame(suite, index, DOCS / name)
    return out


VISION_SUITE, VISION_INDEX = "vh-dev-v5", 0


def make_vision(work: Path) -> dict[str, dict[str, Any]]:
    """The false-belief window of ``VISION_SUITE`` episode ``VISION_INDEX`` in both tracks."""
    import json as _json
    import textwrap

    import gymnasium as gym
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    import mindhelper_env  # noqa: F401  (registers the envs)

    opts = {"suite": VISION_SUITE, "index": VISION_INDEX}
    text_env = gym.make("MindHelper-VirtualHome-v3")
    rgb_env = gym.make("MindHelper-VirtualHome-v3", obs_mode="rgb", frame_size=512)
    obs, _ = text_env.reset(options=opts)
    frames, _ = rgb_env.reset(options=opts)
    truth = text_env.unwrapped.ground_truth
    target = truth.target_object
    window = 0
    while True:  # silent robot: the first window in which another moves the target object
        obs, _, term, trunc, _ = text_env.step("none")
        frames, *_ = rgb_env.step("none")
        window += 1
        events = _json.loads(obs["events"])
        if any(e["verb"] in ("putin", "putback", "move") and e["actor"] != truth.focus_actor
               and any(a["id"] == target for a in e["args"]) for e in events):
            break
        if term or trunc:
            raise SystemExit("make_figures: no window moves the target object")
    font = ImageFont.load_default(size=18)
    small = ImageFont.load_default(size=16)
    text_w, gap, pad = 560, 16, 24
    n, size = frames.shape[0], frames.shape[1]
    width = text_w + n * (size + gap) + pad
    height = size + 2 * pad + 40
    img = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    draw.text((pad, pad), "text track: obs['narration']", fill=(0, 0, 0), font=font)
    y = pad + 40
    for line in obs["narration"].splitlines():
        for part in textwrap.wrap(line, 52):
            draw.text((pad, y), part, fill=(30, 30, 30), font=small)
            y += 22
    x0 = text_w
    draw.text((x0, pad), "vision track: obs (obs_mode='rgb'), one frame per tick",
              fill=(0, 0, 0), font=font)
    for k in range(n):
        img.paste(Image.fromarray(np.asarray(frames[k])), (x0 + k * (size + gap), pad + 40))
    out = DOCS / "vision_window_vh.png"
    img.save(out, optimize=True)
    ticks = f"{int(obs['tick']) - n + 1}-{int(obs['tick'])}"
    return {"vision_window_vh.png": {
        "shows": f"{VISION_SUITE} episode {VISION_INDEX} ({truth.family}), window {window} "
                 f"(ticks {ticks}), the robot silent: narration beside the rgb frames (512 px)",
        "recipe": f"reset(options={{'suite': '{VISION_SUITE}', 'index': {VISION_INDEX}}}) in "
                  "obs_mode='text' and 'rgb', step('none') until the window in which someone "
                  "other than the focus person moves the target object"}}


def make_legend(work: Path) -> dict[str, dict[str, Any]]:
    """The vision track's legend, as ``write_legend`` draws it."""
    from mindhelper_env.render.legend import DEFAULT_SCALE, write_legend
    from mindhelper_env.render.sprites import SPRITES_VERSION

    write_legend(DOCS / "vision_legend.png")
    return {"vision_legend.png": {
        "shows": f"the vision track's legend: every action glyph, pose, state cell, balloon, "
                 f"door, id-mark digit and icon of sprites version {SPRITES_VERSION}, with "
                 "its name",
        "recipe": "mindhelper_env.render.legend.write_legend('docs/vision_legend.png') "
                  f"(scale {DEFAULT_SCALE}); python docs/tools/make_figures.py --only legend"}}


# ------------------------------------------------------------------ the report
def _failed_episode(report: Path) -> tuple[Path, str]:
    """MindClaw's first failed help episode page (any agent's if it fails none)."""
    pages = sorted((report / "episodes").rglob("*.html"))

    def agent(page: Path) -> str:
        html = page.read_text(encoding="utf-8")
        return html.split("<title>", 1)[1].split(" · ")[1]

    def failed_help(page: Path) -> bool:
        html = page.read_text(encoding="utf-8")
        return 'class="window"' in html and 'tag bad" id="outcome"' in html

    for want in ("mindclaw", None):
        for page in pages:
            if (want is None or agent(page) == want) and failed_help(page):
                return page, agent(page)
    raise SystemExit("make_figures: no failed help episode in the report")


def _clip_shot(browser: Any, out: Path, expression: str, width: int) -> None:
    """Screenshot the page region the expression returns as [x, y, w, h] (CSS pixels)."""
    x, y, w, h = browser.evaluate(expression)
    data = browser.call("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": x, "y": y, "width": min(w, width), "height": h, "scale": 1}})["data"]
    import base64

    out.write_bytes(base64.b64decode(data))


def make_report(work: Path) -> dict[str, dict[str, Any]]:
    from tests.chromium_cdp import Browser

    run = work / "report-run"
    _mindhelper("evaluate", "--suite", "vh-dev-v5", "--agents", REPORT_AGENTS, "--out",
                str(run), "--workers", "2", "--report", "--no-progress", "--no-timing")
    report = run / "report"
    page, agent = _failed_episode(report)
    episode = page.stem
    command = (f"mindhelper evaluate --suite vh-dev-v5 --agents {REPORT_AGENTS} "
               "--out runs/dev --workers 2 --report")
    with Browser(offline=True, width=1400, height=900) as b:
        b.open((report / "index.html").as_uri())
        _clip_shot(b, DOCS / "report_leaderboard.png",
                   "(() => { const t = document.querySelector('#floors + table'); const end = (t || document.getElementById('board'))"
                   ".getBoundingClientRect().bottom + window.scrollY + 12;"
                   " return [0, 0, document.documentElement.scrollWidth, end]; })()", 1400)
        b.evaluate("(() => { const a = document.getElementById('pair-a'),"
                   " c = document.getElementById('pair-b');"
                   " const pick = (s, name) => { for (const o of s.options)"
                   " if (o.textContent.trim() === name) s.value = o.value;"
                   " s.dispatchEvent(new Event('change')); };"
                   " pick(a, 'mindclaw'); pick(c, 'reactive'); })()")
        _clip_shot(b, DOCS / "report_paired.png",
                   "(() => { const h = document.getElementById('paired');"
                   " const p = document.querySelector('div.pair:not([hidden])');"
                   " const top = h.getBoundingClientRect().top + window.scrollY - 8;"
                   " const end = p.getBoundingClientRect().bottom + window.scrollY + 8;"
                   " return [0, top, 1100, end - top]; })()", 1100)
        b.open(page.as_uri())
        _clip_shot(b, DOCS / "report_episode.png",
                   "[0, 0, document.documentElement.scrollWidth,"
                   " Math.min(document.documentElement.scrollHeight, 1400)]", 1400)
        problems = b.problems()
    if problems:
        raise SystemExit(f"make_figures: the report had console problems: {problems}")
    family = json.loads(next(
        line for line in (run / f"{agent}.jsonl").read_text().splitlines()
        if json.loads(line)["episode_id"] == episode))["family"]
    return {
        "report_leaderboard.png": {"shows": "the report's leaderboard and trivial floors",
                                   "recipe": command + "; Chromium, 1400 px wide"},
        "report_paired.png": {"shows": "the paired comparison, mindclaw against reactive",
                              "recipe": command + "; Chromium, 1100 px wide"},
        "report_episode.png": {"shows": f"a failed episode: {agent} on {episode} ({family})",
                               "recipe": command + "; Chromium, the first failed help "
                                                   "episode of mindclaw, 1400 px wide"},
    }


# ------------------------------------------------------------------ the learning curve
def make_curve(work: Path) -> dict[str, dict[str, Any]]:
    out = work / "trigger"
    _mindhelper("train-trigger", *CURVE_ARGS, "--out", str(out))
    shutil.copyfile(out / "learning_curve.png", DOCS / "trigger_learning_curve.png")
    return {"trigger_learning_curve.png": {
        "shows": "held-out PHA and reasoning_run calls per episode against env steps, next "
                 "to the rule Trigger",
        "recipe": "mindhelper train-trigger " + " ".join(CURVE_ARGS) + " --out runs/trigger"}}


# ------------------------------------------------------------------ tables in the pages
#: ``<!-- figure: NAME -->`` ... ``<!-- /figure -->``: a block the script writes.
BLOCK = re.compile(r"(<!-- figure: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /figure -->)", re.S)


def block_text(page: Path, name: str) -> str | None:
    """The text of block ``name`` in ``page`` (None: no such block)."""
    for m in BLOCK.finditer(page.read_text(encoding="utf-8")):
        if m.group("name") == name:
            return m.group("body")
    return None


def _write_block(page: Path, name: str, body: str) -> None:
    text = page.read_text(encoding="utf-8")
    found = [m for m in BLOCK.finditer(text) if m.group("name") == name]
    if len(found) != 1:
        raise SystemExit(f"make_figures: {page.name} needs one '<!-- figure: {name} -->' "
                         f"block (found {len(found)})")
    m = found[0]
    page.write_text(text[:m.start("body")] + body + text[m.end("body"):], encoding="utf-8")


def _markdown_table(args: list[str]) -> str:
    """The table rows (``|`` lines) a ``--format markdown`` command prints."""
    rows = [line for line in _mindhelper(*args, cwd=ROOT).splitlines() if line.startswith("|")]
    if not rows:
        sys.exit(f"make_figures: mindhelper {args[0]} printed no table")
    return "\n" + "\n".join(rows) + "\n\n"  # blank lines: Markdown ends the comment's block


def make_tables(work: Path) -> dict[str, dict[str, Any]]:
    run = work / "dev-table"
    _mindhelper("evaluate", "--suite", "vh-dev-v5", "--agents", REPORT_AGENTS, "--out",
                str(run), "--workers", "2", "--no-progress", "--no-timing", "--no-plots")
    dev = _markdown_table(["score", str(run), "--format", "markdown"])
    _write_block(DOCS / "evaluation.md", "dev-suite-table", dev)
    cassette = ROOT / "tests" / "data" / "smollm2-vh-dev.jsonl"
    meta = json.loads(cassette.with_suffix(".meta.json").read_text())
    options = next(iter(meta["agent_options"].values()))
    replay = ["evaluate", "--suite", meta["suite"], "--agents", ",".join(meta["agents"]),
              "--limit", str(meta["limit"]), "--replay", str(cassette), "--no-timing",
              "--no-plots", "--no-progress", "--out", str(work / "table2"),
              "--format", "markdown"]
    for agent, opts in options.items():
        replay += ["--agent", f"{agent}:" + ",".join(f"{k}={v}" for k, v in opts.items())]
    _write_block(DOCS / "hosted-models.md", "table2-cassette", _markdown_table(replay))
    return {
        "evaluation.md#dev-suite-table": {
            "shows": f"mindhelper score of {REPORT_AGENTS} on vh-dev-v5",
            "recipe": f"mindhelper evaluate --suite vh-dev-v5 --agents {REPORT_AGENTS} "
                      "--out runs/dev --workers 2; mindhelper score runs/dev --format markdown"},
        "hosted-models.md#table2-cassette": {
            "shows": f"the shipped cassette ({meta['model']}) replayed on {meta['suite']}",
            "recipe": "mindhelper " + " ".join(replay[:replay.index("--out")]).replace(
                str(ROOT) + "/", "") + " --format markdown"},
    }


MAKERS: dict[str, Callable[[Path], dict[str, dict[str, Any]]]] = {
    "frames": make_frames, "vision": make_vision, "legend": make_legend, "report": make_report,
    "curve": make_curve, "tables": make_tables}


def _digest(name: str) -> str:
    """A figure's sha256: the file's, or for ``PAGE#NAME`` the block's text."""
    if "#" in name:
        page, block = name.split("#", 1)
        text = block_text(DOCS / page, block)
        if text is None:
            raise SystemExit(f"make_figures: no block {block!r} in {page}")
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    return _sha256(DOCS / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(MAKERS), default=sorted(MAKERS),
                        help="which groups of figures to make (default: all)")
    args = parser.parse_args(argv)
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"figures": {}}
    versions = _versions()
    with tempfile.TemporaryDirectory(prefix="mh-figures-") as tmp:
        for group in args.only:
            for name, entry in MAKERS[group](Path(tmp)).items():
                manifest["figures"][name] = {**versions, "group": group, **entry,
                                             "sha256": _digest(name)}
    manifest["figures"] = dict(sorted(manifest["figures"].items()))
    manifest["about"] = ("Figures of the README and docs, made by docs/tools/make_figures.py; "
                         "tests/test_figures.py checks each against the package's generator.")
    MANIFEST.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {MANIFEST.relative_to(ROOT)}: " + ", ".join(
        f"{n} ({e['generator']})" for n, e in manifest["figures"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
