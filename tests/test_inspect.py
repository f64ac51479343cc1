"""Inspect AI: the ``inspect:`` model spec, the ``mindhelper`` Inspect task run for real with
``inspect eval`` against a stdlib OpenAI-compatible server (Inspect's ``openai-api``
provider), ``import-inspect`` and the metrics against ``mindhelper score``; bad input."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from slot_server import SlotServer

from mindhelper_env.cli.main import main
from mindhelper_env.evaluation import evaluate
from mindhelper_env.metrics import compute_metrics


def _need_inspect():
    """``inspect_ai``; skipped without the inspect extra, but a failure when
    ``MINDHELPER_REQUIRE_INSPECT=1`` (CI)."""
    if os.environ.get("MINDHELPER_REQUIRE_INSPECT") == "1":
        return importlib.import_module("inspect_ai")
    return pytest.importorskip("inspect_ai", reason="needs the inspect extra: pip install "
                                                    "-e '.[inspect]'")


_need_inspect()
pytest.importorskip("openai") if os.environ.get("MINDHELPER_REQUIRE_INSPECT") != "1" \
    else importlib.import_module("openai")

# Inspect's own retry set-up (tenacity) warns about a renamed parameter: not ours
pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning")

SUITE = "vh-dev-v2"
ROOT = Path(__file__).resolve().parent.parent
LIMIT = 4


def records(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


@pytest.fixture
def server(monkeypatch):
    with SlotServer(latency=0.0, slots=64) as srv:
        monkeypatch.setenv("LOCAL_BASE_URL", srv.url)
        monkeypatch.setenv("LOCAL_API_KEY", "k")
        yield srv


def inspect_eval(logs: Path, *extra: str, task: str | None = None,
                 cwd: Path | None = None) -> Path:
    """``inspect eval`` of the task on SUITE with direct-vlm against the stdlib server (the
    ``server`` fixture's environment), ``extra`` arguments added; the log's path. ``task``:
    the task as Inspect is told it (default: the task file of this checkout, found through
    ``PYTHONPATH``); ``cwd``: the folder it runs in."""
    if task is None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        task = str(ROOT / "mindhelper_env" / "inspect_task.py") + "@mindhelper"
    else:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", task,
         "--model", "openai-api/local/m", "-T", f"suite={SUITE}", "-T", "agent=direct-vlm",
         *extra, "--log-dir", str(logs), "--display", "none", "--log-format", "json"],
        env=env, capture_output=True, text=True, timeout=600, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [log_path] = list(logs.glob("*.json"))
    return log_path


def native(tmp_path, srv, limit=LIMIT):
    evaluate(SUITE, ["direct-vlm"], tmp_path / "native", limit=limit, progress=False,
             plots=False, timing=False,
             agent_kwargs={"direct-vlm": {"model": f"openai:m@{srv.url}", "api_key": "k"}})
    return tmp_path / "native" / "direct-vlm.jsonl"


def test_inspect_eval_of_the_task_scores_like_mindhelper_score(tmp_path, server, capsys):
    from inspect_ai.log import read_eval_log

    log_path = inspect_eval(tmp_path / "logs", "-T", f"limit={LIMIT}")
    log = read_eval_log(str(log_path))
    assert log.status == "success" and len(log.samples) == LIMIT
    # the transcript: a window event per window, the model's calls, the executed lines
    sample = log.samples[0]
    infos = [e for e in sample.events if getattr(e, "event", "") == "info"]
    windows = [e.data for e in infos if e.source == "mindhelper window"]
    assert windows and windows[0]["window"] == 0 and "narration" in windows[0]
    assert any("model_answer" in w for w in windows)
    assert any(e.source == "mindhelper episode" for e in infos)
    assert any(getattr(e, "event", "") == "model" for e in sample.events)
    # usage read from Inspect: the server's counts
    usage = log.stats.model_usage["openai-api/local/m"]

    code = main(["import-inspect", str(log_path), "--out", str(tmp_path / "converted")])
    assert code == 0
    converted = records(tmp_path / "converted" / "direct-vlm.jsonl")
    assert usage.input_tokens == sum(r["usage"]["prompt_tokens"] for r in converted)
    # the same answers through evaluate: the same records, byte for byte
    assert (tmp_path / "converted" / "direct-vlm.jsonl").read_bytes() == \
        native(tmp_path, server).read_bytes()
    # the task's metrics are mindhelper score's
    from mindhelper_env.scenarios.suites import suite_references

    expected = compute_metrics(converted, suite_references(SUITE))
    [scores] = log.results.scores
    for key in ("PHA", "PHR", "PSR", "PIR", "PIA", "TA"):
        assert scores.metrics[key].value == pytest.approx(expected[key])
    capsys.readouterr()
    assert main(["score", str(tmp_path / "converted" / "direct-vlm.jsonl"), "--suite", SUITE,
                 "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)["direct-vlm"]
    for key in ("PHA", "PHR", "PSR", "PIR", "PIA", "TA"):
        assert scored[key] == pytest.approx(round(scores.metrics[key].value * 100, 2))
    assert expected["PSR"] is not None and expected["episodes"] == LIMIT
    summary = json.loads((tmp_path / "converted" / "summary.json").read_text())
    assert summary["table"]["direct-vlm"]["PHA"] == scored["PHA"]


def test_the_installed_task_runs_from_any_folder(tmp_path, server):
    """The package registers the task as an Inspect extension (the ``inspect_ai`` entry
    point), so ``inspect eval mindhelper_env/mindhelper`` works from a folder outside the
    checkout, with nothing on ``PYTHONPATH``, and writes only into ``--log-dir``."""
    from importlib.metadata import entry_points

    from inspect_ai.log import read_eval_log

    eps = {ep.name: ep.value for ep in entry_points(group="inspect_ai")}
    assert eps.get("mindhelper_env") == "mindhelper_env.inspect_task", (
        "the installed metadata lacks the inspect_ai entry point: reinstall (pip install -e .)")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert ROOT not in elsewhere.parents
    log_path = inspect_eval(tmp_path / "logs", "-T", "limit=2",
                            task="mindhelper_env/mindhelper", cwd=elsewhere)
    log = read_eval_log(str(log_path))
    assert log.status == "success" and len(log.samples) == 2
    assert log.eval.task == "mindhelper_env/mindhelper"
    assert [s.id for s in log.samples] == [f"{SUITE}-0000", f"{SUITE}-0001"]
    assert list(elsewhere.iterdir()) == []  # no logs/ where it ran


def test_epochs_import_as_trials(tmp_path, server):
    """``--epochs 2`` is ``evaluate --trials 2``: every record carries its trial (the first
    epoch's 0 too), byte for byte as the native run writes them, and run.json says so."""
    log_path = inspect_eval(tmp_path / "logs", "-T", "limit=2", "--epochs", "2")
    assert main(["import-inspect", str(log_path), "--out", str(tmp_path / "converted")]) == 0
    converted = records(tmp_path / "converted" / "direct-vlm.jsonl")
    assert [(r["index"], r["trial"]) for r in converted] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    evaluate(SUITE, ["direct-vlm"], tmp_path / "native", limit=2, trials=2, progress=False,
             plots=False, timing=False,
             agent_kwargs={"direct-vlm": {"model": f"openai:m@{server.url}", "api_key": "k"}})
    assert (tmp_path / "converted" / "direct-vlm.jsonl").read_bytes() == \
        (tmp_path / "native" / "direct-vlm.jsonl").read_bytes()
    run = json.loads((tmp_path / "converted" / "run.json").read_text())
    assert run["trials"] == 2 and run["provenance"]["trials"] == 2
    summary = json.loads((tmp_path / "converted" / "summary.json").read_text())
    assert summary["trials"]


def test_the_inspect_spec_gives_the_records_of_the_openai_spec(tmp_path, server):
    evaluate(SUITE, ["direct-vlm"], tmp_path / "insp", limit=3, concurrency=3,
             progress=False, plots=False, timing=False,
             agent_kwargs={"direct-vlm": {"model": "inspect:openai-api/local/m"}})
    assert (tmp_path / "insp" / "direct-vlm.jsonl").read_bytes() == \
        native(tmp_path, server, limit=3).read_bytes()


@pytest.mark.parametrize("spec, words", [
    ("inspect:nosuchprovider/x", "not recognized"),
    ("inspect:openai-api/nokey/m", "NOKEY_API_KEY"),
    ("inspect:noslash", "PROVIDER/MODEL"),
])
def test_bad_inspect_specs_are_one_line_exit_2(tmp_path, capsys, spec, words, monkeypatch):
    monkeypatch.delenv("NOKEY_API_KEY", raising=False)
    out = tmp_path / "o"
    code = main(["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--out", str(out),
                 "--model", spec, "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


#: Inspect providers whose SDK no extra of ours installs: (provider, its module, a model).
_OPTIONAL_PROVIDERS = (("google", "google.genai", "gemini-x"), ("mistral", "mistralai", "m-x"),
                       ("groq", "groq", "g-x"))


def _absent_provider() -> tuple[str, str] | None:
    for provider, module, model in _OPTIONAL_PROVIDERS:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # its parent package is missing too
            found = False
        if not found:
            return provider, model
    return None


def test_a_provider_that_is_not_installed_is_named(tmp_path, capsys, monkeypatch):
    absent = _absent_provider()
    if absent is None:  # every SDK is installed here: hide one (its import then fails)
        provider, module, model = _OPTIONAL_PROVIDERS[-1]
        monkeypatch.setitem(sys.modules, module, None)
        absent = provider, model
    provider, model = absent
    out = tmp_path / "o"
    code = main(["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--out", str(out),
                 "--model", f"inspect:{provider}/{model}", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and provider in err.lower() and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_import_inspect_refuses_what_is_not_a_log(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a log"}')
    for path in (tmp_path / "missing.eval", bad):
        code = main(["import-inspect", str(path), "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert code == 2 and str(path) in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_importing_the_package_does_not_import_inspect():
    code = ("import sys, mindhelper_env, mindhelper_env.models, mindhelper_env.evaluation, "
            "mindhelper_env.cli.main; print('inspect_ai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_the_vision_track_sends_inspect_images_and_imports_as_rgb(tmp_path, monkeypatch):
    """``-T obs=rgb``: direct-vlm sends every frame as Inspect image content (the provider
    posts them as image parts), the transcript holds no narration, and the imported records
    are those of ``evaluate --obs rgb`` byte for byte, stamped ``rgb``."""
    from inspect_ai.log import read_eval_log
    from slot_server import deterministic_answer

    images: list[int] = []

    def answer(body):
        images.append(sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
                          for p in m["content"] if p.get("type") == "image_url"))
        return deterministic_answer(body)

    with SlotServer(latency=0.0, slots=64, answer=answer) as srv:
        monkeypatch.setenv("LOCAL_BASE_URL", srv.url)
        monkeypatch.setenv("LOCAL_API_KEY", "k")
        log_path = inspect_eval(tmp_path / "logs", "-T", "limit=2", "-T", "obs=rgb",
                               "-T", "frame_size=64")
        sent = list(images)
        images.clear()
        assert main(["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--limit", "2",
                     "--obs", "rgb", "--frame-size", "64", "--no-timing", "--no-plots",
                     "--no-progress", "--model", f"openai:m@{srv.url}",
                     "--out", str(tmp_path / "native"), "--format", "json"]) == 0
    assert sent and set(sent) == {3}  # every window: its 3 frames, as images
    log = read_eval_log(str(log_path))
    assert log.status == "success" and log.eval.metadata["env_kwargs"] == {
        "obs_mode": "rgb", "frame_size": 64}
    windows = [e.data for e in log.samples[0].events if getattr(e, "event", "") == "info"
               and e.source == "mindhelper window"]
    assert windows and all(w["frames"] == 3 and "narration" not in w for w in windows)
    assert main(["import-inspect", str(log_path), "--out", str(tmp_path / "converted")]) == 0
    converted = records(tmp_path / "converted" / "direct-vlm.jsonl")
    assert all(r["provenance"]["obs"] == "rgb" for r in converted)
    assert all(r["usage"]["images"] == 3 * r["usage"]["model_calls"] > 0 for r in converted)
    assert (tmp_path / "converted" / "direct-vlm.jsonl").read_bytes() == \
        (tmp_path / "native" / "direct-vlm.jsonl").read_bytes()
