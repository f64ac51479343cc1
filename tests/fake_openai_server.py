"""A scripted OpenAI-compatible chat-completions server for tests (127.0.0.1 only).

``ScriptedServer(script)`` answers ``POST /v1/chat/completions``. ``script`` is a callable
``(request_json, n) -> Reply`` (``n`` counts requests from 0) or a list of replies used in
order (the last one repeats). The server keeps every request body and the peak number of
requests in flight. :func:`need` imports an optional dependency for a test module.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.loopback import LoopbackServer


def need(module: str) -> Any:
    """Import an ``llm``-extra module (``openai``: the ``api`` extra; the others: ``local``);
    skip without it, but fail when ``MINDHELPER_REQUIRE_LLM=1`` (set by ``.ci/run``, so CI
    never skips these tests)."""
    if os.environ.get("MINDHELPER_REQUIRE_LLM") == "1":
        return importlib.import_module(module)
    extra = "api" if module.split(".")[0] == "openai" else "local"
    return pytest.importorskip(module, reason=f"needs the {extra} extra: pip install -e "
                                              f"'.[{extra}]'")


@dataclass
class Reply:
    text: str = '{"intervene": false, "program": []}'
    status: int = 200
    usage: dict[str, int] | None = field(default_factory=lambda: {
        "prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18})
    delay: float = 0.0
    raw: bytes | None = None  # sent as-is (with status) instead of a completion
    headers: dict[str, str] = field(default_factory=dict)


class ScriptedServer(LoopbackServer):
    path = "/v1"

    def __init__(self, script: Any = None) -> None:
        self.script = script if script is not None else [Reply()]
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.peak = 0
        super().__init__()

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        if callable(self.script):
            return self.script(body, n)
        return self.script[min(n, len(self.script) - 1)]

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                reply = server._next(body)
                try:
                    if reply.delay:
                        time.sleep(reply.delay)
                    if reply.raw is not None:
                        self._send(reply.status, reply.raw)
                    elif reply.status != 200:
                        self._send(reply.status, json.dumps(
                            {"error": {"message": f"scripted {reply.status}"}}).encode(),
                            reply.headers)
                    else:
                        out: dict[str, Any] = {
                            "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                            "model": body.get("model", "m"),
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant",
                                                     "content": reply.text}}]}
                        if reply.usage is not None:
                            out["usage"] = reply.usage
                        self._send(200, json.dumps(out).encode())
                finally:
                    server._done()

            def _send(self, status: int, payload: bytes,
                      headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout test)
                    pass

        return Handler


def image_parts(body: dict[str, Any]) -> list[str]:
    """The image URLs of all image_url parts in a request body."""
    urls = []
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, list):
            urls += [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
    return urls
