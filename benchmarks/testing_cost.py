"""Figure: the cost of one kdist.testing.run_job with a trivial function, next to a bare
`kdist launch` of the same job.

Both start N processes x 1 CPU device on loopback, each calling kdist.initialize() and
leaving; the clock runs from the call until every process has exited:

- run_job: `run_job(os.getpid, num_processes=N)` called in this (warm) process, as a
  test calls it: its processes, the pickled function and results, the record files;
- kdist launch: `python -m kdist launch -n N --devices-per-process 1 -- python -c
  "import kdist; kdist.initialize()"`, from a fresh launcher process.

Run alone: python -m benchmarks.testing_cost [--runs 7] (prints the table).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks import harness
from benchmarks.environment import child_env
from benchmarks.harness import Figure, Series, interleave

SIZES = (2, 4)
LIMIT_S = 120.0


def one_run_job(n: int) -> dict[str, float]:
    from kdist.testing import run_job

    started = time.perf_counter()
    pids = run_job(os.getpid, num_processes=n, timeout=LIMIT_S)
    wall = time.perf_counter() - started
    assert len(set(pids)) == n, pids
    return {"wall_s": wall}


def one_launch(n: int) -> dict[str, float]:
    command = [
        *(sys.executable, "-m", "kdist", "launch", "-n", str(n), "--devices-per-process", "1"),
        *("--", sys.executable, "-c", "import kdist; kdist.initialize()"),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, env=child_env(1), capture_output=True, timeout=LIMIT_S)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"kdist launch -n {n} failed:\n{done.stderr.decode()[-3000:]}")
    return {"wall_s": wall}


def measure(runs: int) -> list[Figure]:
    # run_job's processes get this process's environment (less any job variables).
    os.environ.update({k: v for k, v in child_env(1).items() if k not in os.environ})
    figures = []
    for n in SIZES:
        samples = interleave(
            {
                "run_job": lambda n=n: one_run_job(n),
                "kdist launch": lambda n=n: one_launch(n),
            },
            runs=runs,
        )
        figures.append(
            Figure(
                f"testing_cost_n{n}",
                f"One run_job with a trivial function vs a bare kdist launch, N = {n} x 1 "
                "CPU device (call -> every process exited)",
                [Series(name, "s", samples[name]["wall_s"]) for name in samples],
                baseline="kdist launch",
                notes=[
                    "run_job is called in a warm process (as in a test); kdist launch "
                    "includes its own interpreter's start"
                ],
            )
        )
    return figures


def main(argv: list[str] | None = None) -> int:
    return harness.print_figures_main(__doc__ or "", measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
