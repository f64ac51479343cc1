"""Your own agent is first-class: its ``name`` names its row and file, clashes and bad
agents are refused before ``--out`` exists, two folders compare, every command imports
``module:Class`` from the current folder, exceptions are counted and fail loudly, a resume
that adds agents keeps the earlier ones, ``mindhelper list`` groups the agents."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from mindhelper_env.cli.main import main
from mindhelper_env.evaluation.safety import agent_file_stem

SUITE = "vh-dev-v2"

MYAGENT = '''
class MyAgent:
    name = "my-agent"

    def __init__(self, eager=False):
        self.eager = eager

    def reset(self, seed=None):
        pass

    def act(self, obs, info):
        return "none"


class Twin(MyAgent):
    pass


class Broken:
    name = "broken"

    def reset(self, seed=None):
        pass

    def act(self, obs, info):
        raise RuntimeError("boom")


class Flaky:
    name = "flaky"

    def reset(self, seed=None):
        self.n = 0

    def act(self, obs, info):
        self.n += 1
        if self.n == 3:
            raise RuntimeError("once an episode")
        return "none"


class Lookup:
    name = "lookup"

    def reset(self, seed=None):
        pass

    def act(self, obs, info):
        return info["no-such-key"]


class Nameless:
    def reset(self, seed=None):
        pass

    def act(self, obs, info):
        return "none"


def policy(obs, info):
    return "none"
'''


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A researcher's folder holding myagent.py (not on sys.path), as the current folder."""
    (tmp_path / "myagent.py").write_text(textwrap.dedent(MYAGENT))
    (tmp_path / "badsyntax.py").write_text("class X:\n    def act(self\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    for mod in ("myagent", "badsyntax"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    return tmp_path


def _evaluate(out: str, agents: str, *extra: str, limit: int = 2) -> int:
    return main(["evaluate", "--suite", SUITE, "--agents", agents, "--out", out, "--limit",
                 str(limit), "--no-progress", "--no-plots", "--no-timing", *extra])


def test_the_agents_name_names_its_row_and_file(home: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert _evaluate("a", "myagent:MyAgent", "--format", "csv") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("my-agent,")
    assert sorted(p.name for p in (home / "a").glob("*.jsonl")) == ["my-agent.jsonl"]
    rec = json.loads((home / "a" / "my-agent.jsonl").read_text().splitlines()[0])
    assert rec["agent"] == "my-agent"
    prov = json.loads((home / "a" / "run.json").read_text())["provenance"]["agents"]
    assert prov["my-agent"]["spec"] == "myagent:MyAgent"


def test_two_folders_of_one_agent_compare_labelled_by_folder(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _evaluate("a", "myagent:MyAgent") == 0
    assert _evaluate("b", "myagent:MyAgent", "--agent", "myagent:MyAgent:eager=true") == 0
    capsys.readouterr()
    assert main(["score", "a", "b", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"my-agent (a)", "my-agent (b)"}
    pytest.importorskip("jinja2")
    assert main(["report", "a", "b", "--out", "rep"]) == 0
    index = (home / "rep" / "index.html").read_text()
    assert "my-agent (a)" in index and "my-agent (b)" in index
    # within one folder, the same episode twice is still a duplicate
    (home / "a" / "copy.jsonl").write_bytes((home / "a" / "my-agent.jsonl").read_bytes())
    capsys.readouterr()
    assert main(["score", str(home / "a" / "my-agent.jsonl"),
                 str(home / "a" / "copy.jsonl")]) == 2
    assert "duplicate" in capsys.readouterr().err


def test_a_name_clash_is_refused_before_anything_runs(home: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert _evaluate("a", "myagent:MyAgent,myagent:Twin") == 2
    err = capsys.readouterr().err
    assert "'my-agent'" in err and "myagent:Twin" in err and len(err.splitlines()) == 1
    assert not (home / "a").exists()


@pytest.mark.parametrize("agents,extra,expect", [
    ("random", ["--agent", "random:p=2"], "p must be in [0, 1], got 2"),
    ("silent", ["--agent", "silent:foo=1"], "agent 'silent' has no option 'foo'"),
    ("myagent:MyAgent", ["--agent", "myagent:MyAgent:colour=1"], "has no option 'colour' "
     "(its options: eager)"),
    ("myagent:policy", [], "myagent:policy"),
    ("badsyntax:X", [], "SyntaxError at {home}/badsyntax.py:2"),
    ("silnet", [], "did you mean 'silent'?"),
    ("myagent.py:MyAgent", [], "drop the .py (e.g. myagent:MyAgent;"),
    ("./sub/myagent.py:MyAgent", [], "drop the .py (e.g. sub.myagent:MyAgent;"),
])
def test_a_bad_agent_is_one_line_exit_2_and_no_folder(
        home: Path, agents: str, extra: list[str], expect: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _evaluate("out", agents, *extra) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert expect.format(home=home) in err, err
    assert not (home / "out").exists()


def test_an_agent_that_raises_every_step_ends_non_zero_with_a_count(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _evaluate("a", "myagent:Broken,silent", "--format", "csv") == 4
    captured = capsys.readouterr()
    header, broken = captured.out.splitlines()[:2]
    assert header.endswith(",agent_errors") and broken.startswith("broken,")
    summary = json.loads((home / "a" / "summary.json").read_text())
    counts = summary["agent_errors"]["broken"]
    assert counts["errors"] == counts["decisions"] > 0 and counts["episodes"] == 2
    assert summary["agent_errors"]["silent"]["errors"] == 0
    assert "most of its decisions raised, so its row measures a silent agent" in captured.err
    recs = [json.loads(x) for x in (home / "a" / "broken.jsonl").read_text().splitlines()]
    assert all(r["usage"]["agent_errors"] == r["usage"]["decisions"] for r in recs)


def test_strict_fails_on_any_agent_error(home: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    assert _evaluate("a", "myagent:Flaky") == 0  # one error an episode: a warning
    assert "warning: flaky: its act/reset raised in 2 of " in capsys.readouterr().err
    assert _evaluate("b", "myagent:Flaky", "--strict") == 4


@pytest.mark.parametrize("workers", [1, 2])
def test_an_agent_error_shows_its_first_traceback_once_then_counts(
        home: Path, workers: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert _evaluate("a", "myagent:Lookup", "--workers", str(workers), "--force-workers",
                     limit=3) == 4
    err = capsys.readouterr().err
    # the first exception in full (its file and line), once, whatever the workers
    assert err.count("Traceback (most recent call last)") == 1, err
    assert f'File "{home / "myagent.py"}", line ' in err and "in act" in err
    assert err.count("KeyError: 'no-such-key'") == 2, err  # the headline and the traceback
    # then one line of counts; no second line saying the same (an ERROR and an error)
    summary = json.loads((home / "a" / "summary.json").read_text())
    counts = summary["agent_errors"]["lookup"]
    tail = [ln for ln in err.splitlines() if "lookup:" in ln and "decisions" in ln]
    assert len(tail) == 1 and f"raised in {counts['errors']} of {counts['decisions']}" in tail[0]
    assert "ERROR" not in err
    # the traceback reached the log, not the records
    assert "_agent_error" not in (home / "a" / "lookup.jsonl").read_text()


def test_an_agent_without_a_name_is_named_after_its_class_with_a_warning(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _evaluate("a", "myagent:Nameless", "--format", "csv") == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1].startswith("Nameless,")
    warned = [ln for ln in captured.err.splitlines() if "no `name` attribute" in ln]
    assert len(warned) == 1 and "'Nameless'" in warned[0], captured.err
    assert (home / "a" / "Nameless.jsonl").is_file()


def test_render_imports_the_agent_from_the_current_folder(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("imageio")
    assert main(["render", "--suite", SUITE, "--index", "0", "--agent", "myagent:MyAgent",
                 "--out", str(home / "ep.gif")]) == 0
    assert "with my-agent" in capsys.readouterr().out
    assert (home / "ep.gif").is_file()


def test_resume_adding_an_agent_keeps_the_earlier_ones(home: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    assert _evaluate("a", "myagent:MyAgent") == 0
    capsys.readouterr()
    assert _evaluate("a", "silent", "--resume", "--format", "csv") == 0
    rows = [line.split(",")[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert rows == ["my-agent", "silent"]
    summary = json.loads((home / "a" / "summary.json").read_text())
    assert summary["files"] == {"my-agent": "my-agent.jsonl", "silent": "silent.jsonl"}
    assert set(summary["table"]) == set(summary["metrics"]) == {"my-agent", "silent"}
    prov = json.loads((home / "a" / "run.json").read_text())["provenance"]
    assert set(prov["agents"]) == {"my-agent", "silent"}


def test_file_names_are_safe_in_links_for_any_name() -> None:
    for name in ("myagent:MyAgent", "org/model", "a b", "ünï", "%41", ".hidden", "x" * 300):
        stem = agent_file_stem(name)
        assert "%" not in stem and "/" not in stem and ":" not in stem
        assert not stem.startswith(".")
    assert agent_file_stem("myagent:MyAgent") != agent_file_stem("myagent~3AMyAgent")


def test_list_groups_the_agents(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)["agent_groups"]
    assert list(groups)[:6] == ["reference", "shortcut baselines", "ablations",
                                "model-backed", "learned", "privileged (oracle)"]
    assert groups["privileged (oracle)"] == ["oracle"]
    from mindhelper_env.agents import AGENTS

    assert sorted(n for names in groups.values() for n in names) == sorted(AGENTS)
    assert main(["list"]) == 0
    assert "privileged (oracle): oracle" in capsys.readouterr().out
