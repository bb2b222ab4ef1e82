"""The roll call of process 0 against many simulated processes on loopback.

Process 0 is the real C++ coordinator (kdist._core.run_coordinator, on its
own thread with the GIL released); the other processes are simulated by
plain Python sockets that send the hello a real process would send
(kdist._core_bench.encode_hello) and read the verdict. A run's figure is the time
from starting process 0's loop on a bound port until every simulated process
has its "go" and process 0 has returned (it waits for them to close first).
The Python clients' own cost (connect, send, read) is part of the figure.

Usage:
    python -m benchmarks.rollcall [--workers 1 10 100 1000] [--runs 7]
    python -m benchmarks.run --only rollcall      (as a figure of the harness)
"""

from __future__ import annotations

import argparse
import json
import resource
import selectors
import socket
import statistics
import threading
import time
from collections.abc import Sequence

from benchmarks.harness import MIN_COUNTED_RUNS, Figure, Series, interleave
from kdist import _core, _core_bench
from kdist._core import free_port

WORKER_COUNTS = (1, 10, 100, 1000)


def _spec(port: int, n: int, process_id: int, timeout: float) -> _core.ClusterSpec:
    return _core.resolve(
        f"127.0.0.1:{port}", str(n), str(process_id), repr(timeout), None, None, {}
    )


def _raise_open_file_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def roll_call_seconds(workers: int, timeout: float = 60.0) -> float:
    """One roll call of process 0 and `workers` simulated processes; seconds."""
    n = workers + 1
    port = free_port()
    coordinator = _spec(port, n, 0, timeout)
    hellos = [
        _core_bench.encode_hello(_spec(port, n, i, timeout), "bench", "sim", 100000 + i)
        for i in range(1, n)
    ]
    listener = _core.bind_coordinator_port(coordinator)
    outcome: dict[str, _core.RollCallSummary | BaseException] = {}

    def run_process_zero() -> None:
        try:
            outcome["summary"] = _core.run_coordinator(
                coordinator,
                "bench",
                "sim",
                1,
                shared=_core.JobShared(),
                listener=listener,
                timeout=timeout,
            )
        except BaseException as error:  # reported by the caller
            outcome["error"] = error

    thread = threading.Thread(target=run_process_zero, name="rollcall-bench")
    clients: list[socket.socket] = []
    selector = selectors.DefaultSelector()
    start = time.perf_counter()
    thread.start()
    try:
        for hello in hellos:
            client = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            client.sendall(hello)
            client.setblocking(False)
            selector.register(client, selectors.EVENT_READ, bytearray())
            clients.append(client)
        waiting = len(clients)
        deadline = time.monotonic() + timeout
        while waiting and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1.0):
                buffer: bytearray = key.data
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                chunk = sock.recv(4096)
                if not chunk:
                    raise RuntimeError("process 0 closed a connection before its verdict")
                buffer += chunk
                while len(buffer) >= _core_bench.FRAME_HEADER_SIZE:
                    header = bytes(buffer[: _core_bench.FRAME_HEADER_SIZE])
                    size = _core_bench.frame_size(header)
                    if len(buffer) < size:
                        break
                    if int.from_bytes(header[6:8], "big") == _core.FrameType.challenge.value:
                        del buffer[:size]  # tokenless: the hello needs no nonce
                        continue
                    reply = _core_bench.decode_reply(bytes(buffer[:size]))
                    del buffer[:size]
                    if reply.type == _core.FrameType.status:
                        continue  # process 0's acknowledgement or progress line
                    if reply.type != _core.FrameType.go:
                        raise RuntimeError(
                            f"process 0 answered {reply.type.name} ({reply.code.name}): "
                            f"{reply.message}"
                        )
                    selector.unregister(sock)
                    sock.close()  # the simulated process closes first, as a real one does
                    waiting -= 1
                    break
        if waiting:
            raise RuntimeError(f"{waiting} simulated processes got no verdict")
        thread.join(timeout)
        elapsed = time.perf_counter() - start
    finally:
        for client in clients:
            client.close()
        selector.close()
        thread.join(timeout)
    if "error" in outcome:
        raise RuntimeError(f"process 0 failed: {outcome['error']}")
    summary = outcome["summary"]
    assert isinstance(summary, _core.RollCallSummary) and len(summary.members) == workers
    return elapsed


def samples(
    workers: Sequence[int] = WORKER_COUNTS, runs: int = MIN_COUNTED_RUNS
) -> dict[int, list[float]]:
    """Seconds per roll call for each worker count: `runs` counted runs (at least
    MIN_COUNTED_RUNS), interleaved across counts, after one discarded warm-up round."""
    _raise_open_file_limit(2 * max(workers) + 256)
    by_name = interleave(
        {str(w): (lambda w=w: {"seconds": roll_call_seconds(w)}) for w in workers}, runs=runs
    )
    return {w: by_name[str(w)]["seconds"] for w in workers}


def measure(runs: int = MIN_COUNTED_RUNS) -> list[Figure]:
    """The harness's figure: one series per worker count, in milliseconds."""
    by_count = samples(WORKER_COUNTS, runs)
    return [
        Figure(
            "rollcall",
            "Roll call of process 0 (C++) with simulated processes on loopback",
            [Series(f"{w} workers", "ms", [1000 * x for x in xs]) for w, xs in by_count.items()],
            baseline=f"{WORKER_COUNTS[-1]} workers",
            notes=[
                "Target: the 1,000-worker roll call under 1 s. The simulated processes are "
                "Python sockets in one process; their own cost is part of the figure."
            ],
        )
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=list(WORKER_COUNTS))
    parser.add_argument("--runs", type=int, default=MIN_COUNTED_RUNS)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    by_count = samples(args.workers, args.runs)
    if args.json:
        figures = {
            str(w): {
                "min": min(xs),
                "median": statistics.median(xs),
                "max": max(xs),
                "runs": [round(x, 5) for x in xs],
            }
            for w, xs in by_count.items()
        }
        print(json.dumps(figures, indent=2))
        return
    print(f"roll call against the C++ coordinator on loopback, {args.runs} runs (ms)")
    print(f"{'workers':>8} {'min':>9} {'median':>9} {'max':>9}")
    for w, xs in by_count.items():
        print(
            f"{w:>8} {1000 * min(xs):9.2f} {1000 * statistics.median(xs):9.2f} "
            f"{1000 * max(xs):9.2f}"
        )


if __name__ == "__main__":
    main()
