"""The roll call at 2,048 processes: the real C++ coordinator against simulated processes.

Process 0 is kdist's own coordinator (`_core.run_coordinator`, on a thread: it releases
the GIL); the other 2,047 processes come from the load generator in `kdist._core_bench`
(one epoll loop, real TCP connections from many loopback addresses, real hellos with
the challenge's MAC). A correctness test: no timing is asserted; the waits are bounded.
"""

from __future__ import annotations

import os
import threading

import kdist
from helpers import bench_module
from kdist import _core

# Only in wheels built with KDIST_BENCH_MODULE=ON: without it this module skips, saying why.
_core_bench = bench_module.load()

N = 2048
# Generous bounds: they only keep a broken run from hanging.
JOB_TIMEOUT_S = 120.0
# How long process 0 waits for processes that will never come (the whole test's length).
MISSING_TIMEOUT_S = 10.0


class ProcessZero:
    """kdist's coordinator on a thread, bound before the simulated processes start."""

    def __init__(self, spec: _core.ClusterSpec, timeout: float) -> None:
        self.summary: _core.RollCallSummary | None = None
        self.error: BaseException | None = None
        listener = _core.bind_coordinator_port(spec)
        self._thread = threading.Thread(
            target=self._run, args=(spec, listener, timeout), name="process-0", daemon=True
        )
        self._thread.start()

    def _run(
        self, spec: _core.ClusterSpec, listener: _core.CoordinatorListener, timeout: float
    ) -> None:
        try:
            self.summary = _core.run_coordinator(
                spec,
                "test",
                "node-0000",
                os.getpid(),
                shared=_core.JobShared(),
                listener=listener,
                deadline=_core.Deadline(timeout),
            )
        except BaseException as error:  # handed to the test's thread
            self.error = error

    def wait(self) -> None:
        self._thread.join(JOB_TIMEOUT_S + 30)
        assert not self._thread.is_alive(), "process 0's roll call did not end"


def spec_of(addresses: str, process_id: int, timeout: float) -> _core.ClusterSpec:
    request = _core.Request()
    request.job_addresses, request.num_processes = addresses, str(N)
    request.process_id, request.timeout = str(process_id), repr(timeout)
    return _core.resolve(request, {})


def test_a_2048_process_roll_call_gives_every_process_go() -> None:
    addresses = f"127.0.0.1:{_core.free_port()}"
    port = int(addresses.rsplit(":", 1)[1])
    zero = ProcessZero(spec_of(addresses, 0, JOB_TIMEOUT_S), JOB_TIMEOUT_S)
    report = _core_bench.run_roll_call_load(
        spec_of(addresses, 1, JOB_TIMEOUT_S), "127.0.0.1", port, count=N - 1, timeout=JOB_TIMEOUT_S
    )
    zero.wait()
    assert zero.error is None, zero.error
    assert (report.went, report.rejected, report.failed) == (N - 1, 0, 0), (
        report.first_rejection,
        report.first_failure,
    )
    assert zero.summary is not None
    members = zero.summary.members
    assert sorted(hello.process_id for hello in members) == list(range(1, N))
    # 8 simulated processes per host: 256 hosts, each process's own pid.
    assert len({hello.host for hello in members}) == 256
    assert len({hello.pid for hello in members}) == N - 1


def test_at_2048_processes_the_missing_are_named_with_their_hosts_in_one_short_line() -> None:
    # The job's addresses name every process's host (node-0000 .. node-2047), so process 0
    # can say where the missing processes were expected: the last 20 never start.
    port = _core.free_port()
    addresses = ",".join([f"127.0.0.1:{port}"] + [f"node-{i:04d}:{port}" for i in range(1, N)])
    zero = ProcessZero(spec_of(addresses, 0, MISSING_TIMEOUT_S), MISSING_TIMEOUT_S)
    report = _core_bench.run_roll_call_load(
        spec_of(addresses, 1, JOB_TIMEOUT_S),
        "127.0.0.1",
        port,
        count=N - 1 - 20,
        timeout=JOB_TIMEOUT_S,
    )
    zero.wait()
    assert isinstance(zero.error, kdist.RendezvousTimeoutError), zero.error
    message = str(zero.error)
    assert f"with {N - 20} of {N} joined" in message, message
    assert "missing process ids [2028-2047] on hosts node-[2028-2047]" in message, message
    assert len(message) < 1000, message
    # Every simulated process that arrived was told the same, not left to its own timeout.
    assert (report.went, report.rejected, report.failed) == (0, N - 1 - 20, 0)
    assert "missing process ids [2028-2047]" in report.first_rejection


def test_all_2047_connecting_at_once_are_each_counted_once() -> None:
    # Every simulated process connects at the same moment (no cap on connections in
    # flight) from hundreds of source addresses: none is lost or counted twice.
    count = N - 1
    addresses = f"127.0.0.1:{_core.free_port()}"
    port = int(addresses.rsplit(":", 1)[1])
    zero = ProcessZero(spec_of(addresses, 0, JOB_TIMEOUT_S), JOB_TIMEOUT_S)
    report = _core_bench.run_roll_call_load(
        spec_of(addresses, 1, JOB_TIMEOUT_S),
        "127.0.0.1",
        port,
        count=count,
        max_connecting=2048,
        timeout=JOB_TIMEOUT_S,
    )
    zero.wait()
    assert zero.error is None, zero.error
    assert zero.summary is not None and len(zero.summary.members) == count
    assert zero.summary.dropped == 0
    assert report.went == count
