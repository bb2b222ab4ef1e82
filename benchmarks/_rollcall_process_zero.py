"""Process 0 of the roll-call benchmark, alone in its own process so that its memory is its own.

Usage: python -m benchmarks._rollcall_process_zero NUM_PROCESSES PORT TIMEOUT

Binds the coordinator port, prints {"listening": true}, runs the real C++ roll call
(kdist._core.run_coordinator) and prints one JSON line: the members counted, the roll
call's seconds, and the resident memory before it and at its peak (VmRSS and VmHWM, with
the peak reset just before the roll call through /proc/self/clear_refs).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from kdist import _core


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def main() -> None:
    n, port, timeout = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    request = _core.Request()
    request.job_addresses, request.num_processes = f"127.0.0.1:{port}", str(n)
    request.process_id, request.timeout = "0", repr(timeout)
    spec = _core.resolve(request, {})
    listener = _core.bind_coordinator_port(spec)
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts from here
    before = _kib("VmRSS")
    print(json.dumps({"listening": True}), flush=True)
    start = time.perf_counter()
    summary = _core.run_coordinator(
        spec,
        "bench",
        "node-0",
        os.getpid(),
        shared=_core.JobShared(),
        listener=listener,
        deadline=_core.Deadline(timeout),
    )
    elapsed = time.perf_counter() - start
    print(
        json.dumps(
            {
                "members": len(summary.members),
                "seconds": elapsed,
                "rss_before_kib": before,
                "peak_kib": _kib("VmHWM"),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
