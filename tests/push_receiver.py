"""A local HTTP receiver standing in for a push service (ntfy, a webhook): Apprise's ``json://``
URL posts each push to it as one JSON object, kept in order."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class PushReceiver:
    """``with PushReceiver() as pushes:`` then ``pushes.url`` in ``notify_urls``."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer._lock:
                    outer.received.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"json://127.0.0.1:{self.port}/"
        self._thread = threading.Thread(target=self._server.serve_forever, name="push-receiver", daemon=True)

    def pushes(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.received)

    def __enter__(self) -> PushReceiver:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
