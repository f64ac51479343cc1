"""A stand-in for a hosted OpenAI-compatible API on 127.0.0.1 (tests and benchmarks).

:class:`SlotServer` answers ``POST /v1/chat/completions`` after ``latency`` seconds and
serves at most ``slots`` requests at once; a request past them is refused at once with
``overflow_status`` (429 by default, or 503) and, if ``retry_after`` is set, a
``Retry-After`` header. ``fail`` may return a status (500, 503, ...) for a request to fail
instead of being answered (by request body and number). Answers are a function of the
request alone (never of the order requests arrive in), so records do not depend on how
many are in flight: :func:`deterministic_answer` plays ``direct-vlm`` (JSON format) and
intervenes in a window with probability about 1/16, chosen by a hash of the prompt. Usage:
``ceil(characters / 4)`` prompt and completion tokens, plus, with ``image_tokens``, that
function of each image's ``(height, width)`` (read from its PNG header) for every image of
the prompt (without it images are not billed): a server that bills images above what the
package estimates.

Counters: ``answered``, ``refused`` (past the slots), ``failed`` (``fail``), ``peak`` (most
requests served at once), ``answered_times`` (monotonic time of each answer), and
``billed_prompt`` / ``billed_completion`` (the tokens of every answer's ``usage``: what a
paid API would bill).

Run as a script it serves until killed and prints its URL on the first line::

    python tests/slot_server.py --latency 1.0 --slots 64
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def message_images(msg: dict[str, Any]) -> list[tuple[int, int]]:
    """``(height, width)`` of every PNG data URL image part of an OpenAI-format message."""
    import base64
    import struct

    out = []
    content = msg.get("content")
    for part in content if isinstance(content, list) else []:
        url = (part.get("image_url") or {}).get("url", "") if isinstance(part, dict) else ""
        if url.startswith("data:image/png;base64,"):
            head = base64.b64decode(url.split(",", 1)[1][:32])
            width, height = struct.unpack(">II", head[16:24])  # the IHDR chunk
            out.append((height, width))
    return out


def message_text(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def deterministic_answer(body: dict[str, Any]) -> str:
    """A direct-vlm JSON answer that depends on the prompt only (see the module docstring)."""
    user = message_text(body["messages"][-1])
    digest = hashlib.sha256(user.encode("utf-8")).digest()
    person = re.search(r"^- \w+ \((\d+)\), ", user, re.M)
    if digest[0] < 16 and person:
        return json.dumps({"intervene": True,
                           "program": [f"[walk] <character> ({person.group(1)})"]})
    return '{"intervene": false, "program": []}'


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


class SlotServer:
    """See the module docstring; a context manager (starts and stops the server)."""

    def __init__(self, *, latency: float = 0.0, slots: int = 64, overflow_status: int = 429,
                 retry_after: float | None = None,
                 answer: Callable[[dict[str, Any]], str] = deterministic_answer,
                 fail: Callable[[dict[str, Any], int], int | None] | None = None,
                 image_tokens: Callable[[int, int], int] | None = None,
                 port: int = 0) -> None:
        self.latency = float(latency)
        self.slots = int(slots)
        self.overflow_status = int(overflow_status)
        self.retry_after = retry_after
        self.answer = answer
        self.fail = fail
        self.image_tokens = image_tokens
        self.answered = self.refused = self.failed = self.requests = 0
        self.in_flight = self.peak = 0
        self.billed_prompt = self.billed_completion = 0
        self.answered_times: list[float] = []
        self._lock = threading.Lock()
        self._httpd = _HTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> SlotServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _admit(self) -> tuple[bool, int]:
        with self._lock:
            n = self.requests
            self.requests += 1
            if self.in_flight >= self.slots:
                self.refused += 1
                return False, n
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return True, n

    def _leave(self, answered: bool) -> None:
        with self._lock:
            self.in_flight -= 1
            if answered:
                self.answered += 1
                self.answered_times.append(time.monotonic())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                admitted, n = server._admit()
                if not admitted:
                    headers = ({"Retry-After": f"{server.retry_after:g}"}
                               if server.retry_after is not None else {})
                    self._send(server.overflow_status, {"error": {
                        "message": "too many requests in flight", "type": "rate_limit"}},
                        headers)
                    return
                # the slot is given back before the answer is sent: a client that sends its
                # next request on receipt never finds its own previous request counted
                try:
                    if server.latency:
                        time.sleep(server.latency)
                    status = server.fail(body, n) if server.fail is not None else None
                    if not status:
                        text = server.answer(body)
                except BaseException:
                    server._leave(False)
                    raise
                if status:
                    with server._lock:
                        server.failed += 1
                    server._leave(False)
                    self._send(status, {"error": {"message": f"scripted {status}"}})
                    return
                chars = sum(len(message_text(m)) for m in body.get("messages", []))
                prompt = math.ceil(chars / 4)
                if server.image_tokens is not None:
                    prompt += sum(server.image_tokens(h, w) for m in body.get("messages", [])
                                  for h, w in message_images(m))
                with server._lock:
                    server.billed_prompt += prompt
                    server.billed_completion += math.ceil(len(text) / 4)
                server._leave(True)
                self._send(200, {
                    "id": "chatcmpl-slot", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "m"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": prompt,
                              "completion_tokens": math.ceil(len(text) / 4),
                              "total_tokens": prompt + math.ceil(len(text) / 4)}})

            def _send(self, status: int, payload: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up
                    pass

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--slots", type=int, default=64)
    parser.add_argument("--overflow-status", type=int, default=429)
    parser.add_argument("--retry-after", type=float, default=None)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = SlotServer(latency=args.latency, slots=args.slots,
                        overflow_status=args.overflow_status, retry_after=args.retry_after,
                        port=args.port)
    with server:
        print(server.url, flush=True)
        try:
            for line in sys.stdin:  # "stats" prints the counters
                if line.strip() == "stats":
                    with server._lock:
                        print(json.dumps({"answered": server.answered,
                                          "refused": server.refused, "peak": server.peak,
                                          "requests": server.requests}), flush=True)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
