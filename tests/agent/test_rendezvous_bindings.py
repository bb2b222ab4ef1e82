"""The nodes' rendezvous's Python bindings: what the etcd holder does with a server that it
builds and drops (issue 53)."""

from __future__ import annotations

import subprocess
import sys

_DROPPED = """
import socket
from kdist import _core

request = _core.NodeRequest()
request.rendezvous = f"127.0.0.1:{_core.free_port()}"
request.serve_only = True
request.host_name = socket.gethostname()
request.job_id = "bindings"
request.min_nodes, request.max_nodes = 1, 2
request.token = "bindings-test-token-0123456789"
request.token_source = "the test"
settings = _core.resolve_node_settings(request, {})
lines = []
for persisted in (False, True):
    server = _core.RendezvousServer(settings, log=lines.append, log_progress=False)
    server.listen_at("127.0.0.1", 0)
    if persisted:
        server.persist_with(lambda sealed: None)
    server.stop()
    del server  # the server is destroyed with the GIL let go; its log callable with it
print("dropped")
"""


def test_a_server_with_a_python_log_is_dropped_without_a_crash() -> None:
    # The last reference to the log callable went with the server, on a thread without the
    # GIL: every etcd agent that lost an election (or ended) died of SIGSEGV.
    done = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", _DROPPED],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "dropped", done.stdout
