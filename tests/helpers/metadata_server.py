"""A GCE metadata server made, not mocked: a real HTTP server on loopback.

Each "worker" of a test's Cloud TPU gets its own, reached through
`GCE_METADATA_IP=127.0.0.1:PORT`, as JAX and kdist reach the real one. It answers
`/computeMetadata/v1/instance/attributes/<key>` only with the `Metadata-Flavor: Google`
header (403 without, as the real server), 404 for a key it does not hold, and records
every request. `silent=True` makes a server that accepts connections and never answers.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

_PREFIX = "/computeMetadata/v1/instance/attributes/"


class MetadataServer:
    """A loopback metadata server holding `attributes` (key -> text)."""

    def __init__(self, attributes: Mapping[str, str] | None = None, *, silent: bool = False):
        self.attributes = dict(attributes or {})
        self.requests: list[tuple[str, str | None]] = []  # (path, Metadata-Flavor header)
        self._silent = silent
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        if silent:
            self._listener = socket.create_server(("127.0.0.1", 0))
            self._listener.settimeout(0.05)
            self.port = self._listener.getsockname()[1]
            self._thread = threading.Thread(target=self._hold, daemon=True)
        else:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
            self._server.daemon_threads = True
            self.port = self._server.server_address[1]
            self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        """What GCE_METADATA_IP is set to."""
        return f"127.0.0.1:{self.port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                flavor = self.headers.get("Metadata-Flavor")
                outer.requests.append((self.path, flavor))
                key = self.path.removeprefix(_PREFIX)
                if flavor != "Google":
                    self._reply(403, "Missing Metadata-Flavor:Google header.")
                elif self.path.startswith(_PREFIX) and key in outer.attributes:
                    self._reply(200, outer.attributes[key])
                else:
                    self._reply(404, "not found")

            def _reply(self, status: int, body: str) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Metadata-Flavor", "Google")
                self.send_header("Content-Type", "application/text")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def _hold(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.requests.append(("(connection)", None))
            self._held.append(connection)

    def close(self) -> None:
        self._stop.set()
        if self._silent:
            self._listener.close()
            self._thread.join(timeout=10)
            for connection in self._held:
                connection.close()
        else:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=10)

    def __enter__(self) -> MetadataServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
