"""Figure: a lost host -> every process gone. A 3-process job of should_stop steps, one
process per network-namespace host; host 3's link goes down (no FIN, no RST); the time
from the cut until every process has exited, with the default settings (or with
KDIST_UNREACHABLE_TIMEOUT from the environment), as a median of --runs runs; then a 3 s
blackout, which must heal. Prints each process's verdict line.

Needs root and iproute2 (the hosts are tests/helpers/netns.py's). Not part of benchmarks/run.py:

    sudo .venv/bin/python benchmarks/host_loss.py --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "hosts"))

from test_netns_host_loss import (
    BLACKOUT_SECONDS,
    LOST_BOUND_SECONDS,
    finish_all,
    job_on_hosts,
    verdict_lines,
)

from helpers import netns


def lost_host_run() -> tuple[float, list[tuple[int | None, list[str]]]]:
    """Seconds from the cut to the last process gone; each process's status and lines."""
    with (
        tempfile.TemporaryDirectory() as directory,
        job_on_hosts(Path(directory)) as (hosts, processes),
    ):
        hosts[2].set_link(up=False)
        cut = time.monotonic()
        results = finish_all(processes, LOST_BOUND_SECONDS)
        gone = time.monotonic() - cut
    return gone, [(r.returncode, verdict_lines(r)) for r in results]


def blackout_run() -> list[tuple[int | None, list[str]]]:
    env = {"HOST_LOSS_STEPS": "600", "HOST_LOSS_BARRIER_STEP": "40"}
    with (
        tempfile.TemporaryDirectory() as directory,
        job_on_hosts(Path(directory), **env) as (hosts, processes),
    ):
        hosts[2].set_link(up=False)
        time.sleep(BLACKOUT_SECONDS)
        hosts[2].set_link(up=True)
        results = finish_all(processes, LOST_BOUND_SECONDS)
    return [(r.returncode, verdict_lines(r)) for r in results]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    reason = netns.unavailable_reason()
    if reason is not None:
        print(f"cannot measure: {reason}")
        return 2
    times = []
    for run in range(args.runs):
        gone, ends = lost_host_run()
        times.append(gone)
        print(f"run {run + 1}: every process gone {gone:.1f} s after the cut")
        for process_id, (status, lines) in enumerate(ends):
            print(f"  process {process_id}: status {status}, {len(lines)} verdict line(s)")
            for line in lines:
                print(f"    {line}")
    print(
        f"cut -> every process gone: median {statistics.median(times):.1f} s of {args.runs} "
        f"(min {min(times):.1f}, max {max(times):.1f})"
    )
    ends = blackout_run()
    print(f"{BLACKOUT_SECONDS} s blackout:")
    for process_id, (status, lines) in enumerate(ends):
        print(f"  process {process_id}: status {status}, {len(lines)} verdict line(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
