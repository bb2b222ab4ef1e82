"""A stranger on another host, at the ports of a running job (tests/hosts/test_netns_tls.py):
prints one JSON object saying how each port answered.

argv[1]: a JSON object: "coordinator" (host:port: JAX's coordination service), "hub" (the
liveness hub's port on the coordinator's host), "job_id", "num_processes", and "token" (the
job's token: used only for the control and the other attempt, below).

- "plain_grpc": a plain (insecure) gRPC call to the coordination service, as a stranger's
  JAX client would make it: the status code ("UNAVAILABLE": no gRPC answer; a service
  without TLS answers, for example INTERNAL for a stale incarnation);
- "tls_without_certificate", "tls_stranger_certificate" (a self-signed one),
  "tls_other_attempt" (the right token, attempt 1's certificate, made as kdist makes one):
  what a TLS client got (helpers.certs.tls_answer: "http2" is an answer);
- "tls_this_attempt": the control: attempt 0's certificate, made from the token as every
  process of the job makes its own: "http2" shows the probe works and the refusals above
  are the certificates';
- "hub": sent bytes that are not a join to the liveness hub: "closed" when the hub ended
  the connection (within 30 s).
"""

import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc

from helpers import certs
from kdist import _core
from kdist._start import certificates, config

given = json.loads(sys.argv[1])
host, port = given["coordinator"].rsplit(":", 1)
found: dict[str, str] = {}

channel = grpc.insecure_channel(given["coordinator"])
call = channel.unary_unary("/xla.coordination.CoordinationService/TryGetKeyValue")
try:
    call(b"", timeout=5)
    found["plain_grpc"] = "OK"
except grpc.RpcError as error:
    found["plain_grpc"] = f"{error.code().name}: {error.details()}"
channel.close()

folder = Path(tempfile.mkdtemp(prefix="stranger-"))


def attempt_token(attempt: int) -> str:
    """The roll call's token of `attempt`'s processes, as the agents give it to them."""
    request = _core.NodeRequest()
    request.rendezvous = "127.0.0.1:1"
    request.job_id = given["job_id"]
    request.token = given["token"]
    return str(_core.resolve_node_settings(request, {}).attempt_token(attempt))


def kdist_certificate(attempt: int) -> tuple[Path, Path]:
    """A certificate of process 1 of `attempt`, made as kdist makes one."""
    os.environ["KDIST_ROLL_CALL_TOKEN"] = attempt_token(attempt)
    os.environ["KDIST_JOB_ID"] = given["job_id"]
    os.environ["KDIST_RESTART_COUNT"] = str(attempt)
    spec = config.resolve(given["coordinator"], given["num_processes"], 1)
    binding = _core.tls_binding(spec)
    made = certificates.make_process_credentials(
        binding.ca_seed, binding.peer_uri_prefix, binding.process_uri, 1
    )
    cert, key = folder / f"attempt-{attempt}.pem", folder / f"attempt-{attempt}.key"
    cert.write_bytes(made.certificate)
    key.write_bytes(made.key)
    return cert, key


found["tls_without_certificate"] = certs.tls_answer(host, int(port))
stranger = certs.leaf(certs.authority("a stranger"), uri="kdist://job-0/attempt-0/process-1")
found["tls_stranger_certificate"] = certs.tls_answer(host, int(port), *stranger.write(folder, "s"))
found["tls_other_attempt"] = certs.tls_answer(host, int(port), *kdist_certificate(1))
found["tls_this_attempt"] = certs.tls_answer(host, int(port), *kdist_certificate(0))

with socket.create_connection((host, given["hub"]), timeout=30) as hub:
    hub.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(range(64)))
    began = time.monotonic()
    try:
        data = hub.recv(64)
        found["hub"] = "closed" if not data else f"answered {data[:16]!r}"
    except ConnectionResetError:
        found["hub"] = "closed"
    except TimeoutError:
        found["hub"] = "open after 30 s"
    found["hub_seconds"] = f"{time.monotonic() - began:.1f}"
print(json.dumps(found), flush=True)
