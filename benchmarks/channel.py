"""The liveness channel at scale: process 0's hub against up to 16,384 simulated processes.

Process 0 is kdist's own liveness hub (kdist._core.start_liveness_hub, as kdist starts it)
in a process of its own (benchmarks/_channel_process_zero.py), so its memory is measured
alone. The other processes come from the channel's load generator (cpp/load/
channel_load.h, through kdist._core_bench): one epoll loop in this process, each
simulated process a real TCP connection that joins with the nonce and plays its part
in real frames (cpp/core/liveness/liveness_wire.h); they connect from 250 loopback addresses.

A run is three hubs, since a failure and a stall each end the job:
  1. join, then 2 s of no events (the bytes the hub sent meanwhile), a stop request
     from process 1, a barrier, the finish;
  2. join, then the failure of the middle process (its connection closed);
  3. join, then a stall reported by the last process (the stuck one).
Its figures (seconds, each the time until the last simulated process was told):
  - join_s: from the first connect until every simulated process was admitted;
  - stop_s: from the stop request to the last process told the agreed step;
  - barrier_s: from the last arrival written to the last release;
  - stall_s: from the stall report to the last verdict;
  - failure_s: from the closed connection to the last process told;
  - finish_s: from the last finish written to the last "every process finished";
  - mib: process 0's peak resident memory above its start (the largest of the three);
  - idle_bytes: frame bytes the hub sent while nothing happened (TCP keepalive sends
    none).
Every run checks what each simulated process was told (the same agreed step, one
release, the stuck process named, the dead one named), and raises when it is wrong.

Usage:
    python -m benchmarks.channel [--processes 1024 4096 16384] [--runs 7] [--json]
    python -m benchmarks.run --only channel      (as figures of the harness)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.harness import MIN_COUNTED_RUNS, Figure, Series

PROCESS_COUNTS = (1024, 4096, 16384)
FIGURES = ("join_s", "stop_s", "barrier_s", "stall_s", "failure_s", "finish_s")
_LIMIT_S = 120.0
_BASE_STEP = 1000
_IDLE_S = 2.0
_REPO = Path(__file__).resolve().parent.parent


def _load_generator() -> Any:
    """kdist._core_bench, imported when the channel is measured."""
    try:
        from kdist import _core_bench
    except ImportError as error:
        raise ImportError(
            "benchmarks/channel.py: expected kdist._core_bench, the load generator, "
            f"received {error}; users' wheels leave it out: install kdist built with "
            "-C cmake.define.KDIST_BENCH_MODULE=ON (scripts/bench.sh does)"
        ) from error
    return _core_bench


def check(report: Any, what: str, value: int | None = None, *, same: bool = True) -> None:
    """Raises unless every simulated process was told `what`'s outcome once, all the same
    value (`value` when given), and nothing else."""
    problems = []
    if report.told != report.expected:
        problems.append(f"{report.told} of {report.expected} simulated processes were told")
    if report.told_twice:
        problems.append(f"{report.told_twice} were told twice")
    if report.other:
        problems.append(f"{report.other} unexpected frames (first: {report.first_other})")
    if same and report.lowest != report.highest:
        problems.append(f"they were told different values ({report.lowest} to {report.highest})")
    if value is not None and report.lowest != value:
        problems.append(f"expected {value}, received {report.lowest}")
    if problems:
        raise RuntimeError(f"the channel's {what}: " + "; ".join(problems))


class ProcessZero:
    """benchmarks/_channel_process_zero.py: process 0's hub in a process of its own."""

    def __init__(self, num_processes: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks._channel_process_zero", str(num_processes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=_REPO,
        )
        ready = self.read()
        self.port, self.nonce = int(ready["port"]), str(ready["nonce"])
        self.rss_before_kib = int(ready["rss_before_kib"])

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(
                "benchmarks/_channel_process_zero.py: expected a JSON line, received the end "
                f"of its output (status {self.process.wait(30)})"
            )
        answer: dict[str, Any] = json.loads(line)
        return answer

    def tell(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def peak_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return (int(line.split()[1]) - self.rss_before_kib) / 1024
        raise RuntimeError(f"/proc/{self.process.pid}/status has no VmHWM")

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.tell("exit")
                self.process.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(10)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


def _joined(zero: ProcessZero, n: int) -> tuple[Any, Any]:
    load = _load_generator().ChannelLoad(
        "127.0.0.1", zero.port, zero.nonce, count=n - 1, timeout=_LIMIT_S
    )
    joined = load.join()
    check(joined, "join", same=False)  # each is told its own admission
    return load, joined


def run_once(n: int, idle_s: float = _IDLE_S) -> dict[str, float]:
    """One run at `n` processes (process 0 and n - 1 simulated): every figure, checked."""
    out: dict[str, float] = {}
    mib = 0.0
    zero = ProcessZero(n)
    try:
        load, joined = _joined(zero, n)
        out["join_s"] = joined.seconds
        out["idle_bytes"] = float(load.bytes_while_idle(idle_s))
        stop = load.stop(1, _BASE_STEP)
        # Every process stops after the highest step any answered.
        check(stop, "stop agreement", _BASE_STEP + max(i % 7 for i in range(1, n)) + 1)
        out["stop_s"] = stop.seconds
        zero.tell("barrier")
        zero.read()  # arriving
        time.sleep(0.2)  # process 0 is waiting in its barrier before the others arrive
        barrier = load.barrier(0, "bench")
        check(barrier, "barrier", 0)
        zero.read()  # released
        out["barrier_s"] = barrier.seconds
        zero.tell("finish")
        zero.read()  # finished
        finish = load.finish()
        check(finish, "finish", 1)
        if zero.read().get("done") is not True:
            raise RuntimeError("process 0's wait for the finish did not say every process finished")
        out["finish_s"] = finish.seconds
        mib = max(mib, zero.peak_mib())
        del load  # closes its connections before the next hub's
    finally:
        zero.close()
    zero = ProcessZero(n)
    try:
        load, _ = _joined(zero, n)
        victim = n // 2
        failure = load.failure(victim)
        check(failure, "failure", victim)
        out["failure_s"] = failure.seconds
        mib = max(mib, zero.peak_mib())
        del load
    finally:
        zero.close()
    zero = ProcessZero(n)
    try:
        load, _ = _joined(zero, n)
        stuck = n - 1
        stall = load.stall(stuck, _BASE_STEP)
        check(stall, "stall round", stuck)
        out["stall_s"] = stall.seconds
        mib = max(mib, zero.peak_mib())
        del load  # closes every connection: process 0 leaves on the stall at once
    finally:
        zero.close()
    out["mib"] = mib
    return out


def samples(
    counts: Sequence[int] = PROCESS_COUNTS, runs: int = MIN_COUNTED_RUNS
) -> dict[int, dict[str, list[float]]]:
    """Per count: each figure's values, for `runs` counted runs interleaved across counts
    after one discarded warm-up round (fewer than interleave()'s minimum allowed: a run
    is three hubs of up to 16,384 connections)."""
    return harness.samples_by_count(counts, runs, run_once)


def plot(by_count: dict[int, dict[str, list[float]]], path: Path) -> bool:
    """Each figure's median against the count (harness.plot_scaling); False without
    matplotlib."""
    return harness.plot_scaling(
        by_count,
        FIGURES,
        path,
        "processes",
        "Liveness channel: each event to the last process told",
    )


def measure(runs: int = MIN_COUNTED_RUNS) -> list[Figure]:
    """The harness's figures: each scenario's time and process 0's memory (and
    benchmarks/results/channel_scaling.png, each figure against the process count)."""
    by_count = samples(PROCESS_COUNTS, runs)
    plot(by_count, _REPO / "benchmarks" / "results" / "channel_scaling.png")
    largest = f"{PROCESS_COUNTS[-1]} processes"
    figures = [
        Figure(
            f"channel_{name.removesuffix('_s')}",
            f"Liveness channel: {name.removesuffix('_s')}, to the last simulated process told",
            [
                Series(f"{n} processes", "ms", [1000 * x for x in xs[name]])
                for n, xs in by_count.items()
            ],
            baseline=largest,
        )
        for name in FIGURES
    ]
    figures.append(
        Figure(
            "channel_memory",
            "Liveness channel: process 0's peak resident memory above its start",
            [Series(f"{n} processes", "MiB", xs["mib"]) for n, xs in by_count.items()],
            baseline=largest,
            notes=["Target: under 64 MiB at 16,384 processes."],
        )
    )
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=list(PROCESS_COUNTS))
    parser.add_argument("--runs", type=int, default=MIN_COUNTED_RUNS)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--plot", type=Path, help="also draw each figure against the process count (PNG)"
    )
    args = parser.parse_args(argv)
    by_count = samples(args.processes, args.runs)
    if args.plot is not None and not plot(by_count, args.plot):
        print("benchmarks/channel.py: matplotlib is not installed: no plot", file=sys.stderr)
    if args.json:
        print(json.dumps({str(n): xs for n, xs in by_count.items()}, indent=2))
        return
    print(f"the liveness channel, process 0's hub on loopback, {args.runs} runs (medians)")
    names = [*FIGURES, "mib", "idle_bytes"]
    print(f"{'processes':>10} " + " ".join(f"{name:>10}" for name in names))
    for n, xs in by_count.items():
        print(f"{n:>10} " + " ".join(f"{statistics.median(xs[name]):10.3f}" for name in names))


if __name__ == "__main__":
    main()
