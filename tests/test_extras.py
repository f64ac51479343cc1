"""The extras split (pyproject.toml): hosted models need only the light ``api`` extra.

``openai:`` (and ``inspect:``) runs must never import ``transformers`` or ``torch`` (the
``local`` extra, gigabytes), nor Pillow when no frame is sent: an evaluation runs in a
subprocess whose import system refuses those packages, against the stdlib
OpenAI-compatible server. The extras themselves are checked in pyproject.toml: ``llm`` is
``api`` plus ``local``, and the hints name the extra they need.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fake_openai_server import need
from slot_server import SlotServer

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "transformers", "tokenizers", "accelerate", "gguf", "safetensors")

# runs `mindhelper evaluate` with the heavy packages made unimportable
_BLOCKED_RUN = textwrap.dedent("""
    import importlib.abc, json, sys
    BLOCKED = set(json.loads(sys.argv[1]))

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked: not part of the api extra")
            return None

    sys.meta_path.insert(0, Refuse())
    from mindhelper_env.cli.main import main
    code = main(sys.argv[2:])
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print(json.dumps({"code": code, "leaked": leaked}))
""")


def _run_blocked(blocked, args, env=None):
    proc = subprocess.run([sys.executable, "-c", _BLOCKED_RUN, json.dumps(sorted(blocked)),
                           *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11 (CI runs 3.11)
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _names(reqs):
    return {r.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
            for r in reqs}


def test_the_api_extra_is_light_and_llm_is_api_plus_local():
    extras = _pyproject()["project"]["optional-dependencies"]
    assert _names(extras["api"]) == {"openai", "pillow"}  # frames go out as PNG
    assert not _names(extras["api"]) & {"torch", "transformers"}
    assert {"torch", "transformers"} <= _names(extras["local"])
    assert extras["llm"] == ["mindhelper-env[api,local]"]
    assert "mindhelper-env[api]" in extras["inspect"]


def test_the_hints_name_the_extra_they_need():
    from mindhelper_env.models import hf_client, inspect_client, openai_client

    assert "mindhelper-env[api]" in openai_client._INSTALL_HINT
    assert "mindhelper-env[local]" in hf_client._INSTALL_HINT
    assert "mindhelper-env[local,gguf]" in hf_client._GGUF_HINT
    assert "mindhelper-env[inspect]" in inspect_client.INSTALL_HINT
    extras = set(_pyproject()["project"]["optional-dependencies"])
    for hint in (openai_client._INSTALL_HINT, hf_client._INSTALL_HINT, hf_client._GGUF_HINT,
                 inspect_client.INSTALL_HINT):
        named = hint.split("mindhelper-env[")[1].split("]")[0].split(",")
        assert set(named) <= extras, hint


def test_an_openai_run_imports_neither_torch_nor_transformers_nor_pillow(tmp_path):
    need("openai")
    with SlotServer(latency=0.0, slots=8) as srv:
        out, err = _run_blocked(
            (*HEAVY, "PIL"),
            ["evaluate", "--suite", "vh-dev-v5", "--agents", "direct-vlm", "--model",
             f"openai:m@{srv.url}", "--limit", "2", "--out", str(tmp_path / "run"),
             "--no-progress", "--no-plots", "--json"],
            env={"OPENAI_API_KEY": "k"})
        answered = srv.answered
    assert out == {"code": 0, "leaked": []}, err[-3000:]
    recs = [json.loads(line) for line in
            (tmp_path / "run" / "direct-vlm.jsonl").read_text().splitlines()]
    assert len(recs) == 2 and answered > 0
    assert sum(r["usage"]["model_calls"] for r in recs) == answered


def test_the_blocker_does_block(tmp_path):
    """The same run with ``openai`` blocked fails, naming the api extra: the hook works."""
    need("openai")
    out, err = _run_blocked(
        ("openai",),
        ["evaluate", "--suite", "vh-dev-v5", "--agents", "direct-vlm", "--model",
         "openai:m@http://127.0.0.1:9/v1", "--limit", "1", "--out", str(tmp_path / "run"),
         "--no-progress", "--no-plots"])
    assert out["code"] == 2 and "mindhelper-env[api]" in err, err[-2000:]


def test_an_inspect_run_imports_neither_torch_nor_transformers(tmp_path):
    if os.environ.get("MINDHELPER_REQUIRE_INSPECT") != "1":
        pytest.importorskip("inspect_ai", reason="needs the inspect extra")
    with SlotServer(latency=0.0, slots=8) as srv:
        out, err = _run_blocked(
            HEAVY,
            ["evaluate", "--suite", "vh-dev-v5", "--agents", "direct-vlm", "--model",
             "inspect:openai-api/local/m", "--limit", "1", "--out", str(tmp_path / "run"),
             "--no-progress", "--no-plots"],
            env={"LOCAL_BASE_URL": srv.url, "LOCAL_API_KEY": "k"})
        answered = srv.answered
    assert out == {"code": 0, "leaked": []}, err[-3000:]
    assert answered > 0
