"""The HTML report (mindhelper_env.report), belief accuracy and the plot fixes (issue 17).

The Chromium tests are in test_report_chromium.py; these need only the report extra
(Jinja2, matplotlib)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from mindhelper_env.metrics import belief_accuracy
from mindhelper_env.report.stats import bootstrap, correct, paired_bootstrap

pytest.importorskip("jinja2", reason='needs the report extra: pip install -e ".[report]"')
pytest.importorskip("matplotlib", reason='needs the report extra: pip install -e ".[report]"')

SUITE = "vh-dev-v2"
AGENTS = ["silent", "random", "reactive", "oracle", "belief-tracker", "mindclaw"]


def _outcome(eid, help_, ok, *, harm=False, sr=None):
    """A synthetic episode outcome (the keys the bootstrap reads)."""
    return {"episode_id": eid, "needs_help": help_, "helpful_precise": help_ and ok,
            "precise": help_ and ok, "silent": (not help_) and ok or (help_ and not ok),
            "success": help_ and ok, "harm": harm, "sr": sr, "ac": sr}


def _outcomes(n_help_ok, n_help, n_sil_ok, n_sil, prefix="e"):
    out = []
    for k in range(n_help):
        out.append(_outcome(f"{prefix}{k}", True, k < n_help_ok, sr=1.0 if k < n_help_ok else 0.0))
    for k in range(n_sil):
        out.append(_outcome(f"{prefix}{n_help + k}", False, k < n_sil_ok))
    return out


# ------------------------------------------------------------------------- bootstrap


def test_bootstrap_same_seed_same_bounds_and_seed_matters():
    outcomes = _outcomes(14, 25, 20, 25)
    a = bootstrap(outcomes, seed=3)
    b = bootstrap(list(outcomes), seed=3)
    c = bootstrap(outcomes, seed=4)
    assert a == b
    assert a != c
    lo, hi = a["PHA"]
    assert lo < (14 / 25 + 20 / 25) / 2 * 100 < hi
    assert 0 < hi - lo < 40


def test_bootstrap_stratified_keeps_certain_sides_exact():
    # every help episode helped, every silent one silent: no resample can differ
    ci = bootstrap(_outcomes(10, 10, 7, 7), seed=0)
    assert ci["PHA"] == [100.0, 100.0]
    assert ci["PHR"] == [100.0, 100.0]
    assert ci["harm_rate"] == [0.0, 0.0]
    # no help episode: the help-side rates are not measured
    ci = bootstrap(_outcomes(0, 0, 3, 7), seed=0)
    assert ci["PHR"] is None and ci["SR"] is None
    assert ci["PSR"] is not None and ci["PHA"] == ci["PSR"]


def test_paired_bootstrap_difference_and_disagreements():
    a = _outcomes(20, 20, 20, 20)
    b = _outcomes(10, 20, 20, 20)
    p = paired_bootstrap(a, b, seed=0)
    assert p["episodes"] == 40
    assert p["disagree"] == 10 and p["a_only"] == 10 and p["b_only"] == 0
    m = p["metrics"]["PHR"]
    assert (m["a"], m["b"], m["diff"]) == (100.0, 50.0, 50.0)
    assert m["ci"][0] > 0  # a real difference: the interval excludes 0
    same = paired_bootstrap(a, a, seed=0)
    assert same["metrics"]["PHA"]["ci"] == [0.0, 0.0] and same["disagree"] == 0
    # only the common episodes count
    part = paired_bootstrap(a[:5], b, seed=0)
    assert part["episodes"] == 5
    assert paired_bootstrap(a, b, seed=0) == p
    # the report's B − A is the mirror of A − B, as if computed the other way round
    from mindhelper_env.report.build import _reversed

    b2 = _outcomes(13, 20, 15, 20)
    assert _reversed(paired_bootstrap(a, b2, seed=5)) == paired_bootstrap(b2, a, seed=5)


def test_correct_is_the_episode_going_right():
    assert correct(_outcome("x", True, True))
    assert not correct(_outcome("x", True, False))
    assert correct(_outcome("x", False, True))
    assert not correct(_outcome("x", False, False))


# ------------------------------------------------------------------------- belief accuracy


def test_belief_accuracy_counts_pairs_and_the_task_object():
    recs = [
        {"episode_id": "a", "belief": {"tick": 3, "agent": {"2": {"5": 9, "6": 7}},
                                       "truth": {"2": {"5": 9, "6": 8}, "3": {"5": 9}}}},
        {"episode_id": "b"},  # no belief table: not counted
    ]
    refs = {"a": {"target_object": 5}, "b": {"target_object": None}}
    out = belief_accuracy(recs, refs)
    # pairs: (2,5) match, (2,6) differ, (3,5) missing on the agent's side
    assert out == {"episodes": 1, "pairs": 3, "task_pairs": 2, "accuracy": 1 / 3,
                   "task_accuracy": 0.5}
    assert belief_accuracy([{"episode_id": "b"}], refs) is None
    with pytest.raises(ValueError, match="'belief'"):
        belief_accuracy([{"episode_id": "c", "belief": {"agent": 1}}], refs)


# Digests of the first 8 vh-dev-v2 records (evaluate, timing off) as written without the
# belief snapshot (re-pinned for the mh-gen-2.1 content): agents without a belief table must still write exactly these
# bytes; the belief agents these bytes once their new "belief" key is removed.
_GOLDEN = {
    "silent": "8c80f1dc34cdbb42c8f92c6385be3087634bd601e83bf0c08fd7f89d627b48ba",
    "random": "fc5abb9a3a86cdf2ac56302c894b5b55604b51f2dd36f70c30dd86697220beb1",
    "reactive": "4e7ded59df1677a934fdbea4ac313ccc43152193e4d7d5c17f419d486d32aa33",
    "oracle": "d5e7c185c21d729dfa856e3302c679a96264ad6143e06337f32adab03c378108",
    "belief-tracker": "c431e11df4cf3ecb295f9617a7603bc72a1ac9c558a1e26d89f059ab6a5812cd",
    "mindclaw": "b2ae89a44bbe3617a044b7c057841d5b66fe879c7c0f9766ad32f488c844121d",  # 0.6.0 skills
}


def _resign(rec):
    """Recompute a record's checksum (the report refuses edited records)."""
    from mindhelper_env.evaluation.provenance import record_checksum

    rec["provenance"]["checksum"] = record_checksum(rec)
    return rec


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from mindhelper_env.evaluation import evaluate

    out = tmp_path_factory.mktemp("run")
    evaluate(SUITE, AGENTS, out, limit=8, timing=False, plots=False, progress=False)
    return out


def test_records_byte_identical_and_belief_only_for_belief_agents(run_dir):
    for agent in AGENTS:
        lines = (run_dir / f"{agent}.jsonl").read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        for r in records:  # the two keys 0.4 added (tests/test_golden_records.py)
            assert r.pop("provenance")["checksum"]
            assert r["usage"].pop("agent_errors") == 0
        lines = [json.dumps(r, ensure_ascii=False) for r in records]
        has = [("belief" in r) for r in records]
        if agent in ("belief-tracker", "mindclaw"):
            assert any(has), agent
            for r in records:
                if "belief" in r:  # taken at the intervention tick
                    assert r["belief"]["tick"] == r["intervention_tick"]
                    assert r["belief"]["agent"] and r["belief"]["truth"]
                else:
                    assert r["intervention_tick"] == -1
            stripped = []
            for r in records:
                r.pop("belief", None)
                stripped.append(json.dumps(r))
            digest = hashlib.sha256("\n".join(stripped).encode()).hexdigest()
        else:
            assert not any(has), agent
            digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
        assert digest == _GOLDEN[agent], agent


def test_summary_and_score_report_belief_accuracy(run_dir, capsys):
    from mindhelper_env.cli import main

    files = [str(run_dir / f"{a}.jsonl") for a in ("belief-tracker", "oracle")]
    assert main(["score", *files, "--suite", SUITE, "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["belief-tracker"]["belief_accuracy"] is not None
    assert 0 <= table["belief-tracker"]["belief_accuracy"] <= 100
    assert table["oracle"]["belief_accuracy"] is None
    assert main(["score", *files, "--suite", SUITE]) == 0
    assert "belief accuracy at the intervention, belief-tracker" in capsys.readouterr().out


# ------------------------------------------------------------------------- the report


@pytest.fixture(scope="module")
def report(run_dir, tmp_path_factory):
    from mindhelper_env.report import write_report

    out = tmp_path_factory.mktemp("report")
    result = write_report(out, run_dir, seed=0, resamples=500, workers=1)
    return out, result


def test_report_pages_leaderboard_and_episode_viewer(report):
    out, result = report
    assert result["pages"] == len(AGENTS) * 8
    index = (out / "index.html").read_text(encoding="utf-8")
    for agent in AGENTS:
        assert f">{agent}</a>" in index
    for word in ("Leaderboard", "Trivial floors", "from the run (silent)", "By family",
                 "By task type", "By ability", "Paired comparison", "charts/intervals.svg"):
        assert word in index
    assert (out / "charts" / "intervals.svg").is_file()
    episodes = (out / "episodes.html").read_text(encoding="utf-8")
    assert episodes.count("<tr data-family=") == 8
    pages = sorted((out / "episodes").rglob("*.html"))
    assert len(pages) == result["pages"]
    # the oracle intervenes in the help episodes: its page marks the scored intervention
    oracle = AGENTS.index("oracle")
    marked = 0
    for page in sorted((out / "episodes" / f"a{oracle}").glob("*.html")):
        html = page.read_text(encoding="utf-8")
        assert 'id="timeline"' in html and 'id="windows"' in html
        assert "The replay differs" not in html  # the replay is the recorded episode
        if "scored-intervention" in html:
            marked += 1
            assert "scored intervention" in html
    assert marked >= 1
    # MindClaw: the agent's belief beside the truth
    mc = AGENTS.index("mindclaw")
    assert any("agent's view" in p.read_text(encoding="utf-8")
               for p in (out / "episodes" / f"a{mc}").glob("*.html"))


def test_report_is_offline(report):
    out, _ = report
    remote = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import""",
                        re.IGNORECASE)
    files = [p for p in out.rglob("*") if p.suffix in (".html", ".svg", ".css", ".js")]
    assert files
    for path in files:
        assert not remote.search(path.read_text(encoding="utf-8")), path


def test_report_same_seed_same_bytes(run_dir, report, tmp_path):
    from mindhelper_env.report import write_report

    out, _ = report
    again = tmp_path / "again"
    write_report(again, [run_dir], seed=0, resamples=500, workers=1)
    for name in ("index.html", "episodes.html", "charts/intervals.svg"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name
    other = tmp_path / "other"
    write_report(other, [run_dir], seed=1, resamples=500, workers=1)
    assert (other / "index.html").read_bytes() != (out / "index.html").read_bytes()


def test_report_escapes_agent_text(run_dir, tmp_path):
    """A record's text is data, never markup."""
    from mindhelper_env.report import write_report

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text((run_dir / "run.json").read_text())
    lines = (run_dir / "oracle.jsonl").read_text().splitlines()[:2]
    recs = [json.loads(x) for x in lines]
    for r in recs:
        r["agent"] = "<script>alert(1)</script>"
        _resign(r)  # a record written so, not an edited one
    (run / "x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    write_report(tmp_path / "rep", [run], resamples=200, workers=1)
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_report_cli_errors_and_extra(run_dir, tmp_path, capsys, monkeypatch):
    from mindhelper_env.cli import main

    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "no run.json" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    # without the extra: one line naming it, before any file is written
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jinja2" else real(name, *a))
    out = tmp_path / "ev"
    code = main(["evaluate", "--suite", SUITE, "--agents", "silent", "--out", str(out),
                 "--limit", "1", "--report", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert "report extra" in err and "mindhelper-env[report]" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_evaluate_report_writes_the_report(tmp_path, capsys):
    from mindhelper_env.cli import main

    pytest.importorskip("imageio", reason='--videos needs the video extra')
    out = tmp_path / "run"
    assert main(["evaluate", "--suite", SUITE, "--agents", "silent,oracle", "--out", str(out),
                 "--limit", "2", "--report", "--no-progress", "--no-timing",
                 "--videos", "1"]) == 0
    assert "report:" in capsys.readouterr().err
    assert (out / "report" / "index.html").is_file()
    pages = sorted((out / "report" / "episodes").rglob("*.html"))
    assert len(pages) == 4
    # the frames --videos saved are copied in and shown on the first episode's pages
    first = [p for p in pages if p.name == "vh-dev-v2-0000.html"]
    assert len(first) == 2
    for page in first:
        srcs = re.findall(r'<img src="([^"]+)"', page.read_text(encoding="utf-8"))
        assert any(s.endswith(".gif") for s in srcs)
        for src in srcs:
            assert (page.parent / src).resolve().is_file(), src
    assert "<img" not in next(p for p in pages if p.name == "vh-dev-v2-0001.html").read_text()


def test_report_shows_model_calls(run_dir, tmp_path):
    """A record whose trace holds model calls (direct-vlm's entries, MindClaw's calls)."""
    from mindhelper_env.report import write_report

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text((run_dir / "run.json").read_text())
    rec = json.loads((run_dir / "silent.jsonl").read_text().splitlines()[0])
    rec["agent"] = "direct-vlm"
    rec["trace"] = [{"window": 0, "tick": 0, "prompt_tokens": 812, "completion_tokens": 9,
                     "outcome": "ok", "prompt": "direct-vlm/v3", "answer": "no & <none>"},
                    {"window": 1, "tick": 3, "calls": [
                        {"module": "reasoning", "prompt": "mindclaw-reasoning/v2",
                         "prompt_tokens": 300, "completion_tokens": 4, "answer": "yes",
                         "outcome": "ok"}]}]
    _resign(rec)  # a record written so, not an edited one
    (run / "direct-vlm.jsonl").write_text(json.dumps(rec) + "\n")
    write_report(tmp_path / "rep", [run], resamples=200, workers=1)
    page = next((tmp_path / "rep" / "episodes").rglob("*.html")).read_text(encoding="utf-8")
    assert "Model calls" in page
    assert "812" in page and "direct-vlm/v3" in page and "no &amp; &lt;none&gt;" in page
    assert "reasoning" in page and "mindclaw-reasoning/v2" in page


def test_the_leaderboard_marks_a_model_that_gave_nothing(run_dir, tmp_path):
    """A model-backed row most of whose calls did not parse is marked and explained, as in
    evaluate's table; a working row is not."""
    from mindhelper_env.report import write_report

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text((run_dir / "run.json").read_text())
    for name, unparsed in (("direct-vlm", 4), ("mindclaw", 1)):
        lines = []
        for line in (run_dir / "silent.jsonl").read_text().splitlines():
            rec = json.loads(line)
            rec["agent"] = name
            rec["usage"].update(model_calls=4, parse_failures=unparsed)
            lines.append(json.dumps(_resign(rec)))
        (run / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    write_report(tmp_path / "rep", [run], resamples=200, workers=1)
    index = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(
        r'<tr><td><a href="[^"]*">([^<]+)</a>(.*?)</td>', index)}
    assert 'class="tag bad"' in rows["direct-vlm"] and "tag bad" not in rows["mindclaw"]
    assert "direct-vlm: most of its model calls gave nothing" in index
    assert "mindclaw: most of its model calls" not in index


# ------------------------------------------------------------------------- plots


def _svg_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_plots_name_suite_and_episodes_and_mark_the_ideal(run_dir, tmp_path):
    from mindhelper_env.evaluation import suite_reference, summarize
    from mindhelper_env.plots import plot_family, plot_metrics, plot_silent_all

    records = {a: [json.loads(x) for x in (run_dir / f"{a}.jsonl").read_text().splitlines()]
               for a in AGENTS}
    refs = {r["episode_id"]: suite_reference(SUITE, r["index"]) for r in records["oracle"]}
    metrics = summarize(records, refs)["metrics"]
    sub = f"{SUITE}, 8 episodes"
    for fn, name in ((plot_metrics, "m.svg"), (plot_silent_all, "s.svg"),
                     (plot_family, "f.svg")):
        path = fn(metrics, tmp_path / name, subtitle=sub)
        assert sub in _svg_text(path), name
    assert "ideal" in _svg_text(tmp_path / "s.svg")
    family = _svg_text(tmp_path / "f.svg")
    n_help = metrics["oracle"]["n_help"]
    assert "n=" in family and n_help > 0
    # metrics.png with six agents: no longer a 6:1 strip
    from PIL import Image

    from mindhelper_env.plots import write_plots

    paths = write_plots(metrics, tmp_path / "png", suite=SUITE)
    with Image.open(next(p for p in paths if p.name == "metrics.png")) as im:
        w, h = im.size
    assert w / h <= 2.6


def test_report_parallel_equals_serial(run_dir, report, tmp_path):
    """Replays and pages in worker processes write the same site, byte for byte."""
    from mindhelper_env.report import write_report

    out, _ = report
    par = tmp_path / "par"
    result = write_report(par, [run_dir], seed=0, resamples=500, workers=2)
    assert result["pages"] == len(AGENTS) * 8
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(par) for p in par.rglob("*") if p.is_file())
    for rel in files:
        assert (par / rel).read_bytes() == (out / rel).read_bytes(), rel


def test_the_report_shows_what_each_agent_spent(run_dir, tmp_path):
    """summary.json's spend (written by a priced run, evaluation/budget.py) reaches the
    report's index; a run without one shows no spend line."""
    import shutil

    from mindhelper_env.report import write_report

    priced = tmp_path / "priced"
    shutil.copytree(run_dir, priced)
    summary = json.loads((priced / "summary.json").read_text())
    summary["spend"] = {"usd": 0.0123, "by_agent": {AGENTS[0]: {
        "episodes": 8, "model_calls": 40, "prompt_tokens": 9000, "completion_tokens": 1000,
        "usd": 0.0123, "tokens_estimated": False}}}
    (priced / "summary.json").write_text(json.dumps(summary))
    write_report(tmp_path / "r1", priced, seed=0, resamples=50, workers=1)
    index = (tmp_path / "r1" / "index.html").read_text(encoding="utf-8")
    assert 'id="spend"' in index and f"{AGENTS[0]} $0.0123 (40 calls, 10000 tokens)" in index
    write_report(tmp_path / "r2", run_dir, seed=0, resamples=50, workers=1)
    assert 'id="spend"' not in (tmp_path / "r2" / "index.html").read_text(encoding="utf-8")
