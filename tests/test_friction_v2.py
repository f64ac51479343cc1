"""The rest of the friction list (issue 46, item 8): play, examples, report, renderer, errors.

Each test fails on the code before the fix it guards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mindhelper_env.agents.human import HumanAgent, describe_view
from mindhelper_env.cli.play_session import describe_outcome, play
from mindhelper_env.scenarios import suites as S

ROOT = Path(__file__).resolve().parents[1]
DEV = "vh-dev-v2"


def _first(help_needed: bool) -> int:
    return next(i for i in range(100) if S.suite_episode(DEV, i)["reference"][
        "needs_intervention"] == help_needed)


# ------------------------------------------------------------------------------------ play
def test_play_intro_states_the_task(tmp_path: Path) -> None:
    said: list[str] = []

    def no_more(prompt: str) -> str:
        raise EOFError

    play(suite=DEV, index=_first(False), input_fn=no_more, output_fn=said.append)
    intro = said[0].lower()
    assert "blocked" in intro  # only when someone is blocked
    assert "window" in intro and "too late" in intro and "false alarm" in intro
    assert "first intervention" in intro and "scored" in intro  # one act counts
    assert "silent" in intro


def test_play_unknown_id_is_refused_and_never_sent(tmp_path: Path) -> None:
    lines = ["[grab] <apple> (99999)"]
    said: list[str] = []

    def person(prompt: str) -> str:
        if lines:
            return lines.pop(0)
        raise EOFError

    result = play(suite=DEV, index=_first(True), input_fn=person, output_fn=said.append)
    assert any("99999" in s and "not sent" in s for s in said), said[:5]
    assert result["outcome"]["t_I"] is None
    assert all(not a.get("acts") for a in result["record"]["actions"])
    assert "you never intervened" in result["verdict"]


def test_play_known_ids_still_go_through() -> None:
    info = {"tick": 0, "robot": {"id": 1, "room": 4, "holding": []},
            "candidates": {"actors": [], "objects": [], "rooms": [{"id": 4, "class": "kitchen"}],
                           "locations": [{"id": 12, "class": "fridge", "room": 4,
                                          "open": False}]}}
    answers = ["[open] <fridge> (12)"]
    agent = HumanAgent(input_fn=lambda p: answers.pop(0), output_fn=lambda s: None)
    agent.reset()
    # the mug (40) was narrated, not listed: it was seen, so it is known
    assert agent.act({"narration": "[t=0] Emma took the mug (40)."}, info) == "[open] <fridge> (12)"
    answers.append("[grab] <mug> (40)")
    assert agent.act({"narration": ""}, info) == "[grab] <mug> (40)"


def test_question_mark_names_the_places() -> None:
    info = {"robot": {"id": 1, "room": 4, "holding": [31]},
            "candidates": {
                "actors": [{"id": 5, "name": "Emma", "kind": "child", "room": 4,
                            "holding": [40]}],
                "objects": [{"id": 31, "class": "apple", "location": 12, "room": 4},
                            {"id": 40, "class": "mug", "location": 9, "room": 4}],
                "locations": [{"id": 12, "class": "fridge", "room": 4, "open": False},
                              {"id": 9, "class": "table", "room": 4, "open": None}],
                "rooms": [{"id": 4, "class": "kitchen"}]}}
    text = describe_view(info)
    assert "the apple (31) in the fridge (12) in the kitchen (4)" in text
    assert "Emma (5, child) in the kitchen (4), holding the mug (40)" in text
    assert "fridge (12, closed)" in text and "table (9)" in text
    assert "in the kitchen (4), holding the apple (31)" in text
    shown: list[str] = []
    answers = ["?", ""]
    agent = HumanAgent(input_fn=lambda p: answers.pop(0), output_fn=shown.append)
    agent.reset()
    agent.act({"narration": ""}, info)
    assert any("the fridge (12)" in s for s in shown)


@pytest.mark.parametrize("t_i,expect", [(None, "you never intervened"),
                                        (3, "you intervened too early (tick 3)"),
                                        (7, "you intervened in time (tick 7)"),
                                        (12, "you intervened too late (tick 12)")])
def test_play_verdict_wording(t_i: int | None, expect: str) -> None:
    ref: dict[str, Any] = {"needs_intervention": True, "focus_name": "Emma",
                           "family": "false_belief_relocation",
                           "window": {"onset_tick": 5, "deadline_tick": 9}}
    outcome = {"t_I": t_i, "precise": t_i == 7, "premature": t_i == 3, "late": t_i == 12,
               "success": t_i == 7, "harm": False, "silent": t_i is None}
    verdict = describe_outcome(outcome, ref)
    assert expect in verdict, verdict
    assert "intervened never" not in verdict


# ------------------------------------------------------------------------------------ errors
def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from mindhelper_env.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv,command", [
    (("evaluate", "--agents", "silent", "--out", "x"), "evaluate"),  # argparse found it
    (("play", "--index", "100000"), "play"),  # the command found it
    (("score", "no-such-file.jsonl", "--suite", DEV), "score"),
    (("suite", "export", "no-such-suite", "somewhere"), "suite export"),
    (("evaluate", "--suite", "no-such-suite", "--agents", "silent", "--out", "x"), "evaluate"),
])
def test_every_error_has_one_prefix_style(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          argv: tuple[str, ...], command: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli(capsys, *argv)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"mindhelper: error: {command}: "), err
    assert f"{command}: {command}:" not in err


def test_resume_hint_speaks_flags_at_the_command_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("evaluate", "--suite", DEV, "--agents", "silent", "--out", str(out), "--limit", "1",
            "--no-progress", "--no-plots", "--no-timing")
    assert _cli(capsys, *args)[0] == 0
    code, _, err = _cli(capsys, *args)
    assert code == 2 and "--resume" in err and "--overwrite" in err, err
    assert "=True" not in err, err
    code, _, err = _cli(capsys, "evaluate", "--suite", DEV, "--agents", "silent", "--out",
                        str(tmp_path / "none"), "--resume", "--no-progress")
    assert code == 2 and "drop --resume to start one" in err and "=True" not in err, err


def test_evaluate_help_mentions_module_class(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "evaluate", "--help")
    assert code == 0
    assert "module:Class" in out and "current folder" in out


# ------------------------------------------------------------------------------------ examples
EXAMPLES = ROOT / "examples"
_EXTRAS = {"train_ppo.py": "rl", "rllib_trigger.py": "rllib", "pettingzoo_people.py": "pettingzoo"}


def _scripts() -> list[str]:
    return sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def test_examples_readme_lists_every_example_with_its_command_and_extra() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip().strip("`"): line for line in readme.splitlines()
            if line.startswith("| `")}
    assert sorted(rows) == _scripts()
    for name, row in rows.items():
        assert f"python examples/{name}" in row, row
        extra = row.rstrip(" |").rsplit("|", 1)[1].strip().strip("`")
        assert extra == _EXTRAS.get(name, "—"), (name, extra)


@pytest.mark.parametrize("script,argv", [
    ("play_oracle.py", []),
    ("twin_pairs.py", ["false_belief_told_away", "false_belief_told", "--windows", "60",
                       "--width", "20"]),
])
def test_examples_stop_quietly_when_the_pipe_closes(script: str, argv: list[str]) -> None:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, str(EXAMPLES / script), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # as `| head -1` does
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert first, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert proc.returncode == 0


def test_pettingzoo_example_without_its_extra_ends_in_one_line(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pettingzoo':\n"
        "            raise ModuleNotFoundError(f\"No module named '{name}'\", name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Hide())\n")
    env = {**os.environ, "PYTHONPATH": str(hide)}
    proc = subprocess.run([sys.executable, str(EXAMPLES / "pettingzoo_people.py"),
                           "--episodes", "1"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "pettingzoo" in proc.stderr and "pip install" in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------------ report
def _need_report() -> None:
    pytest.importorskip("jinja2", reason='needs the report extra: pip install -e ".[report]"')
    pytest.importorskip("matplotlib", reason='needs the report extra: pip install -e ".[report]"')


@pytest.fixture(scope="module")
def report_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run of silent and oracle on 6 episodes and its report."""
    _need_report()
    from mindhelper_env.evaluation import evaluate
    from mindhelper_env.report import write_report

    run = tmp_path_factory.mktemp("run")
    evaluate(DEV, ["silent", "oracle"], run, limit=6, progress=False, plots=False, timing=False)
    out = tmp_path_factory.mktemp("rep") / "report"
    write_report(out, [run], resamples=200, workers=1)
    return run, out


def _header(html: str) -> str:
    return html[html.index("<header>"):html.index("</header>")]


def test_report_top_bar_links_the_paired_comparison(report_pair: tuple[Path, Path]) -> None:
    _, out = report_pair
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="paired"' in index
    assert 'href="./index.html#paired"' in _header(index)
    pages = sorted((out / "episodes").rglob("*.html"))
    assert pages
    for page in [out / "episodes.html", *pages]:
        html = page.read_text(encoding="utf-8")
        root = "." if page.parent == out else "../.."
        assert f'href="{root}/index.html#paired">Paired comparison</a>' in _header(html), page


def test_report_refuses_a_non_empty_out_unless_overwrite(
        report_pair: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    run, built = report_pair
    out = tmp_path / "report"
    shutil.copytree(built, out)
    stale = out / "episodes" / "a9" / "old.html"
    stale.parent.mkdir()
    stale.write_text("an earlier report's page")
    before = (out / "index.html").read_bytes()
    code, _, err = _cli(capsys, "report", str(run), "--out", str(out), "--workers", "1")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "--overwrite" in err and str(out) in err and "=True" not in err, err
    assert stale.exists() and (out / "index.html").read_bytes() == before
    code, _, err = _cli(capsys, "report", str(run), "--out", str(out), "--workers", "1",
                        "--overwrite")
    assert code == 0, err
    assert not stale.exists() and (out / "index.html").is_file()
    # a folder holding anything but a report is never cleared, even with --overwrite
    kept = sorted(p.name for p in run.iterdir())
    code, _, err = _cli(capsys, "report", str(run), "--out", str(run), "--overwrite")
    assert code == 2 and "not a report's" in err and len(err.splitlines()) == 1, err
    assert sorted(p.name for p in run.iterdir()) == kept


def test_report_counts_one_agent_in_the_singular(tmp_path: Path) -> None:
    _need_report()
    from mindhelper_env.evaluation import evaluate
    from mindhelper_env.report import write_report
    from mindhelper_env.report.explain import plural

    assert plural(1, "agent") == "1 agent" and plural(2, "agent") == "2 agents"
    assert plural(0, "episode") == "0 episodes"
    run = tmp_path / "run"
    evaluate(DEV, ["silent"], run, limit=1, progress=False, plots=False, timing=False)
    write_report(tmp_path / "rep", [run], resamples=200, workers=1)
    header = _header((tmp_path / "rep" / "index.html").read_text(encoding="utf-8"))
    assert "· 1 agent<" in header and "1 agents" not in header, header
    assert "1 episode (" in header and "1 episodes" not in header, header


def test_family_heatmap_reads_without_red_and_green() -> None:
    pytest.importorskip("matplotlib", reason='needs the report extra: pip install -e ".[report]"')
    import matplotlib

    from mindhelper_env.plots import HEATMAP_CMAP, heatmap_text_color, relative_luminance

    cmap = matplotlib.colormaps[HEATMAP_CMAP]
    light = [relative_luminance(cmap(v / 100)) for v in range(101)]
    # lightness alone orders the values (a red-green map peaks in its yellow middle)
    assert all(b > a for a, b in zip(light, light[1:], strict=False))
    assert light[-1] - light[0] > 0.5
    for v in range(101):  # the printed number stays legible on its cell (WCAG AA, 4.5:1)
        text = 0.0 if heatmap_text_color(float(v)) == "black" else 1.0
        hi, lo = max(light[v], text), min(light[v], text)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, v


def test_silent_twin_page_says_why_no_help_was_needed(report_pair: tuple[Path, Path]) -> None:
    from mindhelper_env.report.explain import WHY_NO_HELP, why_no_help
    from mindhelper_env.scenarios.spec import SILENT_FAMILIES

    assert set(SILENT_FAMILIES) <= set(WHY_NO_HELP)
    assert why_no_help({"needs_intervention": True, "family": "implicit_goal_reach"}) is None
    assert why_no_help({"needs_intervention": False, "family": "false_belief_witnessed",
                        "focus_name": "Jonas"}, "mug (4)").startswith("Jonas saw the move")
    _, out = report_pair
    seen = 0
    for i in range(6):
        ref = S.suite_episode(DEV, i)["reference"]
        html = (out / "episodes" / "a0" / f"{ref['episode_id']}.html").read_text(
            encoding="utf-8")
        if ref["needs_intervention"]:
            assert 'id="why-no-help"' not in html
            continue
        seen += 1
        start = html.index('id="why-no-help"')
        line = html[start:html.index("</p>", start)]
        assert ref["focus_name"] in line, line
    assert seen >= 1


def test_long_runs_of_quiet_windows_are_folded(report_pair: tuple[Path, Path]) -> None:
    from mindhelper_env.report.explain import fold_quiet_windows

    def w(k: int, text: str = "Nothing happened that you could see.", **kw: Any) -> dict:
        return {"window": k, "tick": 3 * k, "end": 3 * k + 3, "narration": text,
                "program": None, "executed": [], "scored": False, **kw}

    windows = [w(0, "[t=0] Emma went to the sofa (3).")] + [w(k) for k in range(1, 7)] \
        + [w(7, program="[open] <fridge> (9)")] + [w(8), w(9)] + [w(k) for k in range(10, 16)]
    rows = fold_quiet_windows(windows, {"onset_tick": 36, "deadline_tick": 41})
    kinds = [(r["fold"], r.get("count"), r["window"] if not r["fold"] else r["first"])
             for r in rows]
    # 8-11 quiet: folded; 12-13 overlap the help window (ticks 36-41): kept; 14-15: too short
    assert kinds == [(False, None, 0), (True, 6, 1), (False, None, 7), (True, 4, 8),
                     (False, None, 12), (False, None, 13), (False, None, 14),
                     (False, None, 15)], kinds
    _, out = report_pair
    folded = 0
    for page in sorted((out / "episodes").rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        folded += html.count("<tr class=\"quiet\" data-count=")
        assert "quiet windows: nothing the robot could see" in html or \
            'class="quiet"' not in html
    assert folded >= 1


# ------------------------------------------------------------------------------------ renderer
def _require_vh() -> None:
    import importlib
    import os

    if os.environ.get("MINDHELPER_REQUIRE_VH") == "1":
        importlib.import_module("virtualhome_eval")
    else:
        pytest.importorskip("virtualhome_eval", reason="needs virtualhome-eval: pip install "
                                                       "--no-deps virtualhome-eval==0.1.1")


def _require_tdw() -> None:
    from tests.conftest import require_tdw

    require_tdw()


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


#: The house sets: generated houses, the TDW floorplan houses, VirtualHome's TestScene1.
HOUSE_SUITES = [("vh-dev-v2", None), ("tdw-dev-v2", _require_tdw),
                ("vh-scene1-dev-v2", _require_vh)]


@pytest.mark.parametrize("suite,require", HOUSE_SUITES, ids=[s for s, _ in HOUSE_SUITES])
def test_labels_at_256_px_never_overlap_and_stay_in_the_frame(suite: str, require: Any) -> None:
    """Every frame of a sample of episodes of each house set, drawn at 256 px as
    ``render()`` and ``mindhelper render`` draw them: no label covers another (rooms,
    furniture, objects, people) and every label, title and caption lies inside the image."""
    pytest.importorskip("PIL", reason='needs the video extra: pip install -e ".[video]"')
    if require is not None:
        require()
    import gymnasium as gym

    from mindhelper_env.render.text import narrate_event
    from mindhelper_env.render.topdown import TopDownRenderer

    size = 256
    renderer = TopDownRenderer(size)
    env = gym.make("MindHelper-VirtualHome-v0")
    frames, bad = 0, []
    for index in (0, 9, 17):
        env.reset(options={"suite": suite, "index": index})
        base = env.unwrapped

        def frame(sim: Any, events: list[Any], index: int = index, base: Any = base) -> None:
            nonlocal frames
            labels: list[Any] = []
            captions = [narrate_event(sim.world, ev, base.character_names) for ev in events]
            renderer.render(sim.world, actors={a.id: (a.name, a.kind) for a in sim.actors},
                            captions=captions, title=f"tick {sim.tick}  window 3",
                            cache_key=(suite, index), labels=labels)
            frames += 1
            on_map = [lb for lb in labels if lb.kind not in ("title", "caption")]
            assert {lb.kind for lb in on_map} >= {"room", "person"}
            for lb in labels:
                x0, y0, x1, y1 = lb.box
                if not (0 <= x0 < x1 <= size and 0 <= y0 < y1 <= size):
                    bad.append((index, sim.tick, "outside", lb))
            for i, a in enumerate(on_map):
                bad.extend((index, sim.tick, "overlap", a, b) for b in on_map[i + 1:]
                           if _overlap(a.box, b.box))

        frame(base.simulation, [])
        base.on_tick = frame
        try:
            done = False
            while not done:
                _, _, term, trunc, _ = env.step("none")
                done = term or trunc
        finally:
            base.on_tick = None
    env.close()
    assert frames > 100
    assert bad == [], bad[:5]


def test_recorded_frames_caption_only_the_current_window(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    pytest.importorskip("PIL", reason='needs the video extra: pip install -e ".[video]"')
    import re

    import gymnasium as gym

    from mindhelper_env.agents import make_agent
    from mindhelper_env.render.episode import record_episode
    from mindhelper_env.render.topdown import TopDownRenderer

    shown: list[tuple[int, list[str]]] = []
    real = TopDownRenderer.render

    def spy(self: Any, world: Any, **kw: Any) -> Any:
        shown.append((int(re.search(r"tick (\d+)", kw["title"]).group(1)), list(kw["captions"])))
        return real(self, world, **kw)

    monkeypatch.setattr(TopDownRenderer, "render", spy)
    env = gym.make("MindHelper-VirtualHome-v0", window_ticks=3)
    record_episode(env, make_agent("silent"), options={"suite": DEV, "index": 1})
    env.close()
    assert sum(len(c) for _, c in shown) > 10
    for tick, captions in shown:
        window = (tick - 1) // 3  # the frame after tick t-1 of that window
        for line in captions:
            t = int(re.match(r"\[t=(\d+)\]", line).group(1))
            assert t // 3 == window, (tick, captions)
