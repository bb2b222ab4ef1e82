"""The roll call at scale: process 0 against up to 16,384 simulated processes on loopback.

Process 0 is the real C++ coordinator (kdist._core.run_coordinator) in a process of its
own (benchmarks/_rollcall_process_zero.py), so its memory is measured alone. The other
processes come from the load generator (cpp/load/, through kdist._core_bench): one epoll
loop in this process, each simulated process a real TCP connection that sends the hello a
real process would send, reads process 0's replies and closes after "go"; they connect
from 250 loopback source addresses, as a real job's come from many hosts.

A run's figures:
  - time: from the first connect until every simulated process has its verdict ("go"
    broadcast and the comparison of every hello included), process 0 already listening;
  - after the last hello: from the last hello written until the last "go" read;
  - memory: process 0's peak resident memory during the roll call above its start.

Usage:
    python -m benchmarks.rollcall [--processes 1024 4096 16384] [--runs 7] [--json]
    python -m benchmarks.run --only rollcall      (as figures of the harness)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import MIN_COUNTED_RUNS, Figure, Series, interleave
from kdist import _core
from kdist._core import free_port


def _load_generator() -> Any:
    """kdist._core_bench, imported when the roll call is measured (not by the other
    groups, which run with a user's wheel)."""
    try:
        from kdist import _core_bench
    except ImportError as error:
        raise ImportError(
            "benchmarks/rollcall.py: expected kdist._core_bench, the roll call's load "
            f"generator, received {error}; users' wheels leave it out: install kdist built "
            "with -C cmake.define.KDIST_BENCH_MODULE=ON (scripts/bench.sh does)"
        ) from error
    return _core_bench


PROCESS_COUNTS = (1024, 4096, 16384)
_LIMIT_S = 120.0


@dataclass
class RollCallRun:
    seconds: float  # first connect to last verdict
    after_last_hello: float  # last hello written to last verdict
    memory_mib: float  # process 0's peak above its start
    refused_connects: int


def _spec(port: int, n: int, process_id: int, timeout: float) -> _core.ClusterSpec:
    request = _core.Request()
    request.job_addresses, request.num_processes = f"127.0.0.1:{port}", str(n)
    request.process_id, request.timeout = str(process_id), repr(timeout)
    return _core.resolve(request, {})


def roll_call(num_processes: int, timeout: float = 60.0) -> RollCallRun:
    """One roll call of `num_processes` (process 0 and num_processes - 1 simulated)."""
    port = free_port()
    zero = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks._rollcall_process_zero",
            str(num_processes),
            str(port),
            repr(timeout),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert zero.stdout is not None
        ready = zero.stdout.readline()
        if not ready:
            raise RuntimeError(f"process 0 exited before listening (status {zero.wait(10)})")
        report = _load_generator().run_roll_call_load(
            _spec(port, num_processes, 1, timeout),
            "127.0.0.1",
            port,
            count=num_processes - 1,
            timeout=timeout,
        )
        line = zero.stdout.readline()
        zero.wait(timeout)
    finally:
        if zero.poll() is None:
            zero.kill()
            zero.wait(10)
        if zero.stdout is not None:
            zero.stdout.close()
    if report.went != num_processes - 1:
        raise RuntimeError(
            f"{report.went} of {num_processes - 1} simulated processes got go; "
            f"first rejection: {report.first_rejection!r}; first failure: {report.first_failure!r}"
        )
    result = json.loads(line)
    if result["members"] != num_processes - 1:
        raise RuntimeError(f"process 0 counted {result['members']} members")
    return RollCallRun(
        seconds=report.last_verdict,
        after_last_hello=report.last_verdict - report.all_hellos_sent,
        memory_mib=(result["peak_kib"] - result["rss_before_kib"]) / 1024,
        refused_connects=report.refused_connects,
    )


def samples(
    counts: Sequence[int] = PROCESS_COUNTS, runs: int = MIN_COUNTED_RUNS
) -> dict[int, dict[str, list[float]]]:
    """Per process count: seconds, seconds after the last hello and MiB, for `runs`
    counted runs interleaved across counts, after one discarded warm-up round."""

    def one(n: int) -> dict[str, float]:
        run = roll_call(n)
        return {"seconds": run.seconds, "after": run.after_last_hello, "mib": run.memory_mib}

    by_name = interleave({str(n): (lambda n=n: one(n)) for n in counts}, runs=runs)
    return {n: by_name[str(n)] for n in counts}


def measure(runs: int = MIN_COUNTED_RUNS) -> list[Figure]:
    """The harness's figures: time and process 0's memory, one series per process count."""
    by_count = samples(PROCESS_COUNTS, runs)
    largest = f"{PROCESS_COUNTS[-1]} processes"
    return [
        Figure(
            "rollcall",
            'Roll call: first connect to the last "go", process 0 (C++) and simulated processes',
            [
                Series(f"{n} processes", "ms", [1000 * x for x in xs["seconds"]])
                for n, xs in by_count.items()
            ]
            + [
                Series(
                    f"{n} processes, after the last hello", "ms", [1000 * x for x in xs["after"]]
                )
                for n, xs in by_count.items()
            ],
            baseline=largest,
            notes=[
                "Target: 16,384 processes in under 1 s. The simulated processes run in one "
                "epoll loop of the C++ load generator on the same 2 cores as process 0.",
            ],
        ),
        Figure(
            "rollcall_memory",
            "Roll call: process 0's peak resident memory above its start",
            [Series(f"{n} processes", "MiB", xs["mib"]) for n, xs in by_count.items()],
            baseline=largest,
            notes=["Target: under 64 MiB at 16,384 processes."],
        ),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=list(PROCESS_COUNTS))
    parser.add_argument("--runs", type=int, default=MIN_COUNTED_RUNS)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    by_count = samples(args.processes, args.runs)
    if args.json:
        print(json.dumps({str(n): xs for n, xs in by_count.items()}, indent=2))
        return
    print(f"roll call against the C++ coordinator on loopback, {args.runs} runs (medians)")
    print(f"{'processes':>10} {'time ms':>9} {'after last hello ms':>20} {'process 0 MiB':>14}")
    for n, xs in by_count.items():
        print(
            f"{n:>10} {1000 * statistics.median(xs['seconds']):9.1f} "
            f"{1000 * statistics.median(xs['after']):20.1f} {statistics.median(xs['mib']):14.1f}"
        )


if __name__ == "__main__":
    main()
