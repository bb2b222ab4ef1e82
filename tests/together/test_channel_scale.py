"""The liveness channel at 256 simulated processes: process 0's real hub against the
channel's load generator (cpp/load/channel_load.h, through kdist._core_bench).

Process 0's hub runs as kdist starts it (benchmarks/_channel_process_zero.py, in a process
of its own: a stall ends it); the simulated processes are real TCP connections in one
epoll loop, speaking cpp/core's frames. Each scenario asserts what every simulated process
was told, so a wrong answer at scale is caught, not only a slow one. No timing is
asserted; the waits are bounded generously.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from helpers import bench_module

# Only in wheels built with KDIST_BENCH_MODULE=ON: without it this module skips, saying why.
_core_bench = bench_module.load()

N = 257  # process 0 and 256 simulated
TIMEOUT_S = 120.0
REPO = Path(__file__).resolve().parents[2]


class ProcessZero:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks._channel_process_zero", str(N)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        ready = self.read()
        self.load = _core_bench.ChannelLoad(
            "127.0.0.1", int(ready["port"]), ready["nonce"], count=N - 1, timeout=TIMEOUT_S
        )
        joined = self.load.join()
        assert (joined.told, joined.other, joined.told_twice) == (N - 1, 0, 0), joined.first_other
        assert (joined.lowest, joined.highest) == (1, N - 1)

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"process 0 ended (status {self.process.wait(30)})"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def tell(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def close(self) -> int:
        del self.load
        if self.process.poll() is None:
            with contextlib.suppress(OSError):  # it may be leaving on its own (a stall)
                self.tell("exit")
        status = self.process.wait(TIMEOUT_S)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        return status


def told_all_once(report: Any, expected: int) -> None:
    assert report.told == report.expected == expected, report.first_other
    assert report.told_twice == 0
    assert report.other == 0, report.first_other


def test_stop_barrier_and_finish_reach_every_process_with_one_answer() -> None:
    zero = ProcessZero()
    try:
        assert zero.load.bytes_while_idle(0.5) == 0  # no periodic traffic
        stop = zero.load.stop(1, 1000)
        told_all_once(stop, N - 1)
        # Steps 1000 + id % 7 were answered: every process stops after the highest.
        assert (stop.lowest, stop.highest) == (1007, 1007)

        zero.tell("barrier")
        assert zero.read() == {"arriving": True}
        time.sleep(0.2)  # process 0 waits in its barrier first (either order is correct)
        barrier = zero.load.barrier(0, "bench")
        told_all_once(barrier, N - 1)
        assert (barrier.lowest, barrier.highest) == (0, 0)  # released, not failed
        assert zero.read() == {"released": True}

        zero.tell("finish")
        assert zero.read() == {"finished": True}
        finish = zero.load.finish()
        told_all_once(finish, N - 1)
        assert (finish.lowest, finish.highest) == (1, 1)  # all through JAX's barrier
        assert zero.read() == {"done": True}
    finally:
        assert zero.close() == 0


def test_a_closed_connection_is_told_to_every_other_process_naming_it() -> None:
    zero = ProcessZero()
    try:
        failure = zero.load.failure(100)
        told_all_once(failure, N - 2)
        assert (failure.lowest, failure.highest) == (100, 100)
    finally:
        assert zero.close() == 0  # policy "ignore": process 0 reports it and goes on


def test_a_stall_round_names_the_stuck_process_to_every_process() -> None:
    zero = ProcessZero()
    try:
        stall = zero.load.stall(N - 1, 1000)
        told_all_once(stall, N - 1)
        assert (stall.lowest, stall.highest) == (N - 1, N - 1)
    finally:
        zero.close()  # the stall may end process 0 before it reads "exit"
