"""A small headless-Chromium driver for the report tests: the DevTools protocol over
``--remote-debugging-pipe`` (JSON messages ended by NUL on file descriptors 3 and 4), so no
websocket client or other package is needed.

:class:`Browser` opens a page, waits for its ``load`` event and collects what the report tests
check: console messages (``Runtime.consoleAPICalled``), uncaught exceptions
(``Runtime.exceptionThrown``), log entries (``Log.entryAdded``: failed loads, blocked
requests) and every request URL (``Network.requestWillBeSent``). ``evaluate`` runs an
expression in the page, ``screenshot`` saves a PNG.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

#: The flags of the issue (plus the pipe): nothing is fetched, synced or updated.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe")
#: Network off: every host resolves to nothing and any proxy use goes to a dead port.
OFFLINE_FLAGS = ("--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9")


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium with a fresh profile; use as a context manager."""

    def __init__(self, *, offline: bool = False, width: int = 1280, height: int = 900,
                 timeout: float = 60.0) -> None:
        exe = chromium_path()
        if exe is None:
            raise FileNotFoundError("chromium is not installed (apt-get install -y chromium)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="mh-chromium-")
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()

        def fds() -> None:  # the child reads commands on 3, writes answers on 4
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        args = [exe, *FLAGS, f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", *(OFFLINE_FLAGS if offline else ()),
                "about:blank"]
        # preexec_fn runs before close_fds; fds 3 and 4 are then kept (pass_fds)
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds, pass_fds=(3, 4))
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    # ------------------------------------------------------------------ protocol
    def _send(self, method: str, params: dict[str, Any] | None = None,
              session: str | None = None) -> int:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child_w, json.dumps(msg).encode() + b"\0")
        return self._id

    def _read(self, deadline: float) -> dict[str, Any] | None:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._from_child_r], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._from_child_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             session: str | None = None) -> dict[str, Any]:
        """Send a command and return its result (events met meanwhile are kept)."""
        mid = self._send(method, params, session if session is not None else self.session)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read(deadline)
            if msg is None:
                raise TimeoutError(f"no answer to {method}")
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + (timeout or self.timeout)
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        while True:
            msg = self._read(deadline)
            if msg is None:
                raise TimeoutError(f"no {method} event")
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    def drain(self, seconds: float) -> None:
        """Collect events for a while (late console messages, timers)."""
        deadline = time.monotonic() + seconds
        while True:
            msg = self._read(deadline)
            if msg is None:
                return
            if "method" in msg:
                self.events.append(msg)

    # ------------------------------------------------------------------ pages
    def open(self, url: str) -> None:
        """Attach to the page target, enable the domains, navigate and wait for ``load``."""
        if self.session is None:
            targets = self.call("Target.getTargets", session="")["targetInfos"]
            page = next(t for t in targets if t["type"] == "page")
            self.session = self.call("Target.attachToTarget",
                                     {"targetId": page["targetId"], "flatten": True},
                                     session="")["sessionId"]
            for domain in ("Runtime", "Log", "Network", "Page"):
                self.call(f"{domain}.enable")
        self.events = []  # what the checks see is this page's
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")
        self.drain(0.3)

    def evaluate(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"],
                              "height": min(size["height"], 4000), "scale": 1}
        data = self.call("Page.captureScreenshot", params)["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    # ------------------------------------------------------------------ findings
    def problems(self) -> list[str]:
        """Console messages of level error or warning, uncaught exceptions and error log
        entries seen so far."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning",
                                                                     "assert"):
                out.append(f"console.{p['type']}: "
                           + " ".join(str(a.get("value", a.get("description")))
                                      for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"exception: {d.get('text')} "
                           f"{(d.get('exception') or {}).get('description', '')}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out.append(f"log: {e.get('text')} {e.get('url', '')}")
            elif m == "Network.loadingFailed":
                out.append(f"load failed: {p.get('errorText')}")
        return out

    def requests(self) -> list[str]:
        return [ev["params"]["request"]["url"] for ev in self.events
                if ev.get("method") == "Network.requestWillBeSent"]

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        try:
            self._send("Browser.close", session=None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            for fd in (self._to_child_w, self._from_child_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
