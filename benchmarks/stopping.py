"""Figures of the stop protocol (`python -m benchmarks.run --only stopping`):

- should_stop(step) per call, next to a Python function that returns False;
- signal -> True in every process, in milliseconds and in steps, at N = 2 / 4 / 8;
- stall detected -> every process gone, in seconds (stall timeout 1 s);
- one kdist.barrier across N = 2 / 4 / 8, next to multihost_utils.sync_global_devices.
"""

from __future__ import annotations

import json
import sys
import timeit
from pathlib import Path

from benchmarks.environment import child_env
from benchmarks.harness import Figure, Member, Series, run_group
from kdist._core import free_port

MEMBER = Path(__file__).with_name("_stop_member.py")
SIZES = (2, 4, 8)
LIMIT_S = 120.0
_CALLS = 200_000


def run_case(case: str, n: int, extra: dict[str, str] | None = None) -> list[Member]:
    port = free_port()
    commands, envs = [], []
    for pid in range(n):
        env = child_env(1)
        env.update(
            KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
            KERAS_DISTRIBUTION_NUM_PROCESSES=str(n),
            KERAS_DISTRIBUTION_PROCESS_ID=str(pid),
            KDIST_INIT_TIMEOUT="60",
            **(extra or {}),
        )
        commands.append([sys.executable, str(MEMBER), case])
        envs.append(env)
    return run_group(commands, envs, delays=[0.0] * n, limit=LIMIT_S)


def should_stop_call(runs: int) -> Figure:
    """ns per call: kdist.should_stop (a process outside any job) and `def f(step): return
    False`, each the median of `runs` timeit samples of 200,000 calls."""
    import kdist

    def returns_false(step: int) -> bool:
        return False

    kdist.should_stop(0)  # the first call sets up this process's board
    series = []
    for name, function in (("should_stop", kdist.should_stop), ("def f: False", returns_false)):
        samples = [
            timeit.timeit("f(7)", globals={"f": function}, number=_CALLS) / _CALLS * 1e9
            for _ in range(runs)
        ]
        series.append(Series(name, "ns/call", samples))
    return Figure("stop_should_stop_call", "should_stop(step) per call", series, "def f: False")


def signal_to_true(n: int, runs: int) -> Figure:
    ms, steps = Series("signal -> True everywhere", "ms"), Series("steps", "steps")
    notes = []
    for _ in range(runs):
        members = run_case("signal", n)
        reports = [m.report() for m in members]
        if not all(r and "true_at" in r for r in reports):
            notes.append(f"a run did not stop everywhere: {[m.returncode for m in members]}")
            continue
        signalled = reports[1]["signalled"]  # type: ignore[index]
        assert isinstance(signalled, dict)
        ms.samples.append(
            (max(float(r["true_at"]) for r in reports) - float(signalled["time"])) * 1e3  # type: ignore[index]
        )
        steps.samples.append(float(reports[0]["step"]) - float(signalled["step"]))  # type: ignore[index]
    return Figure(
        f"stop_signal_to_true_n{n}",
        f"SIGTERM to process 1 -> should_stop True in all {n} processes",
        [ms, steps],
        notes=notes,
    )


def stall_to_gone(runs: int) -> Figure:
    seconds = Series("timeout passed -> every process gone", "s")
    for _ in range(runs):
        members = run_case("stall", 3, {"KDIST_STALL_TIMEOUT": "1"})
        last = next(
            (
                float(json.loads(line)["last_progress"])
                for line in members[1].stdout.splitlines()
                if line.startswith('{"last_progress"')
            ),
            None,
        )
        if last is not None:
            seconds.samples.append(max(m.ended for m in members) - (last + 1.0))
    return Figure(
        "stop_stall_to_gone",
        "stall (timeout 1 s, 3 processes) -> every process gone, after the timeout",
        [seconds],
    )


def barrier(n: int, runs: int) -> Figure:
    ours, theirs = Series("kdist.barrier", "us"), Series("sync_global_devices", "us")
    for _ in range(runs):
        reports = [m.report() for m in run_case("barrier", n)]
        if all(reports):
            ours.samples.append(max(float(r["barrier_us"]) for r in reports))  # type: ignore[index]
            theirs.samples.append(
                max(float(r["sync_global_devices_us"]) for r in reports)  # type: ignore[index]
            )
    return Figure(
        f"stop_barrier_n{n}",
        f"one barrier across {n} processes (median per call, the slowest process)",
        [ours, theirs],
        "sync_global_devices",
    )


def measure(runs: int) -> list[Figure]:
    figures = [should_stop_call(runs)]
    figures += [signal_to_true(n, runs) for n in SIZES]
    figures.append(stall_to_gone(runs))
    figures += [barrier(n, runs) for n in SIZES]
    return figures
