"""A threaded HTTP server on 127.0.0.1 (a free port) for the fake simulators and model
servers the tests talk to; a subclass supplies the request handler class."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackServer:
    """Serve ``self._handler()`` on 127.0.0.1; a context manager (starts and stops it).

    ``url`` is ``http://127.0.0.1:<port>`` plus :attr:`path`."""

    path = ""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.path}"

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
