"""The nodes' rendezvous of the nodes_scale benchmark, alone in its own process so that its
memory is its own.

Usage: python -m benchmarks._nodes_rendezvous MIN MAX TOKEN_FILE

Serves the nodes' rendezvous as `kdist rendezvous serve` does (kdist._core.
resolve_node_settings with serve_only, then kdist._core.RendezvousServer on 127.0.0.1, a
free port), with --last-call 30, --scale-up-after 0 (a machine added is taken at once) and
the token read from TOKEN_FILE. Prints one JSON line once it listens: its port and its
resident memory before (the peak, VmHWM, reset there through /proc/self/clear_refs); then,
when the job ends, another: its exit status, the number of attempts, its peak memory and
the CPU time it spent serving (user and system, every thread).
The server's own lines go to stderr.
"""

from __future__ import annotations

import json
import resource
import socket
import sys
from pathlib import Path

from kdist import _core


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def main() -> None:
    min_nodes, max_nodes, token_file = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    request = _core.NodeRequest()
    request.rendezvous = f"127.0.0.1:{_core.free_port()}"
    request.serve_only = True
    request.host_name = socket.gethostname()
    request.job_id = "bench"
    request.min_nodes, request.max_nodes = min_nodes, max_nodes
    request.last_call = 30.0
    request.join_timeout = 300.0
    request.scale_up_after = "0"
    request.token = token_file.read_text().strip()
    request.token_source = f"--token-file {token_file}"
    settings = _core.resolve_node_settings(request, {})
    server = _core.RendezvousServer(settings)
    server.listen(settings)
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts from here
    before = _kib("VmRSS")
    cpu_before = _cpu_s()
    server.start()
    _say(port=server.port, rss_before_kib=before)
    while not server.wait(1.0):
        pass
    _say(
        exit_status=int(server.exit_status),
        attempts=len(server.attempts),
        peak_kib=_kib("VmHWM"),
        cpu_s=_cpu_s() - cpu_before,
    )


if __name__ == "__main__":
    main()
