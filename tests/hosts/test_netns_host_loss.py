"""A host lost in the middle of a job, across three network namespaces ("hosts" on one
bridge): a 3-process job of kdist.should_stop(step) steps, each process on its own host,
and host 3's link taken down after about ten steps.

The link goes down inside the host's namespace (`ip link set <dev> down`): nothing leaves
or arrives, and no FIN or RST is sent by anyone, as when a host loses power or its
network, while its process keeps running. (nftables could drop the same traffic, but it
is not installed everywhere these tests run, and a link that is down also stands for the
cable pulled.) The kernel then gives the connections up with ETIMEDOUT once nothing was
heard for the unreachable timeout; a process that dies closes its connection instead.

The tests assert what each process printed, not tight times: a busy machine may be slow,
so every wait is bounded generously (LOST_BOUND_SECONDS).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import netns
from helpers.support import PROGRAMS, Finished, Running, Spawned, clean_env

pytestmark = pytest.mark.multiprocess

_reason = netns.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

PORT = 8477
# How long every process may take, from the cut, to be gone: the window (20 s by
# default) plus a generous bound for a busy machine; a hang stops here, not at 300 s.
LOST_BOUND_SECONDS = 90
# The shorter window's test sets this window and bounds the loss by it: the window plus a
# margin for a busy machine, below the soonest a window three times as long could end
# the job (the kernel gives up after 3W - 3W/10 of silence, and a quiet connection's last
# answer, a keepalive probe's, came at most an idle period, 3W/4, before the cut: 36 s of
# window end it 24 s after the cut at the soonest; JAX's 100 s heartbeat, 65 s).
SHORT_WINDOW_SECONDS = 12
SHORT_WINDOW_BOUND_SECONDS = SHORT_WINDOW_SECONDS + 6
BLACKOUT_SECONDS = 3
HOST = os.uname().nodename  # every namespace shares this machine's host name


@contextmanager
def job_on_hosts(tmp_path: Path, **env: str) -> Iterator[tuple[list[netns.Host], list[Running]]]:
    """Process i of a 3-process job of should_stop steps on host i (the coordinator on host
    1's address), each with `env`; yields once every process has taken ten steps. Every
    process still running when the block ends is killed, and the hosts removed."""
    with netns.hosts(3) as hosts, Spawned(tmp_path) as spawned:
        coordinator = f"{hosts[0].address}:{PORT}"
        processes = [
            spawned.start(
                host.command([sys.executable, str(PROGRAMS / "host_loss_steps.py")]),
                clean_env(
                    2,
                    KERAS_DISTRIBUTION_JOB_ADDRESSES=coordinator,
                    KERAS_DISTRIBUTION_NUM_PROCESSES="3",
                    KERAS_DISTRIBUTION_PROCESS_ID=str(process_id),
                    KDIST_INIT_TIMEOUT="60",
                    **env,
                ),
            )
            for process_id, host in enumerate(hosts)
        ]
        deadline = time.monotonic() + 90
        while not all("running" in p.stdout() for p in processes):
            ended = [p for p in processes if p.proc.poll() is not None]
            if ended or time.monotonic() > deadline:
                finished = [p.finish(1).describe() for p in processes]
                pytest.fail("the job did not start:\n" + "\n".join(finished))
            time.sleep(0.05)
        yield hosts, processes


def finish_all(processes: list[Running], bound: float) -> list[Finished]:
    """Waits until every process is gone, at most `bound` seconds from now in all."""
    deadline = time.monotonic() + bound
    return [p.finish(deadline - time.monotonic()) for p in processes]


def verdict_lines(result: Finished) -> list[str]:
    """The lines the core printed about the job's end (a failure, a death, a loss)."""
    return [
        line
        for line in result.stderr.splitlines()
        if line.startswith("kdist: ") and ("stopping process" in line or " goes on " in line)
    ]


def seconds_of_day(clock: str) -> int:
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return hours * 3600 + minutes * 60 + seconds


def assert_since_near(clock: str, cut: float) -> None:
    """`clock` (HH:MM:SS, local time) lies within a minute of the cut's wall-clock time."""
    cut_parts = time.localtime(cut)
    cut_clock = cut_parts.tm_hour * 3600 + cut_parts.tm_min * 60 + cut_parts.tm_sec
    apart = abs(seconds_of_day(clock) - cut_clock)
    assert min(apart, 86400 - apart) <= 60, (clock, time.strftime("%H:%M:%S", cut_parts))


def assert_named_unreachable(
    results: list[Finished], hosts: list[netns.Host], pids: Mapping[int, int], cut: float
) -> None:
    """Processes 0 and 1 name process 2 unreachable (its host, its address, since when);
    process 2 says it lost the coordinator; each says it once, and nobody says died."""
    for result in results:
        assert result.returncode == 1, result.describe()
        lines = verdict_lines(result)
        assert len(lines) == 1, result.describe()  # one verdict line per process, every run
        assert "died" not in result.stderr, result.describe()
    lost = re.escape(f"process 2 (host {HOST}, pid {pids[2]}, address {hosts[2].address})")
    for process_id in (0, 1):
        (line,) = verdict_lines(results[process_id])
        match = re.fullmatch(
            rf"kdist: {lost} is unreachable since (\d\d:\d\d:\d\d) \(no answer from its host "
            rf"for \d+(\.\d+)? s; KDIST_UNREACHABLE_TIMEOUT\): its host lost power or its "
            rf"network, or a firewall drops its traffic; the process was not seen to die "
            rf"\(unreachable, not dead\) and may still be running there; stopping process "
            rf"{process_id}",
            line,
        )
        assert match, line
        assert_since_near(match.group(1), cut)
    coordinator = re.escape(f"process 0 (host {HOST}, pid {pids[0]}, address {hosts[0].address})")
    (line,) = verdict_lines(results[2])
    match = re.fullmatch(
        rf"kdist: process 2 lost the coordinator: {coordinator} is unreachable since "
        rf"(\d\d:\d\d:\d\d) \(no answer from its host for \d+(\.\d+)? s; "
        rf"KDIST_UNREACHABLE_TIMEOUT\): this host or the coordinator's lost power or its "
        rf"network, or a firewall drops the traffic between them; process 0 was not seen to "
        rf"die; stopping process 2",
        line,
    )
    assert match, line
    assert_since_near(match.group(1), cut)


def lose_host_three(
    tmp_path: Path, bound: float = LOST_BOUND_SECONDS, **env: str
) -> tuple[list[Finished], float]:
    """Runs the job, takes host 3's link down, and waits until every process is gone, at
    most `bound` seconds (those still running then are killed, and the test fails);
    returns what they left and the seconds from the cut to the last one gone."""
    with job_on_hosts(tmp_path, **env) as (hosts, processes):
        pids = {process_id: p.pid for process_id, p in enumerate(processes)}
        cut = time.time()
        hosts[2].set_link(up=False)
        cut_monotonic = time.monotonic()
        results = finish_all(processes, bound)
        gone = time.monotonic() - cut_monotonic
        running = [process_id for process_id, r in enumerate(results) if r.returncode is None]
        assert not running, (
            f"processes {running} were still running {bound:g} s after the cut (killed then); "
            f"expected every process gone within {bound:g} s\n"
            + "\n".join(r.describe() for r in results)
        )
        assert_named_unreachable(results, hosts, pids, cut)
    return results, gone


def test_a_lost_host_ends_the_job_within_the_default_window(tmp_path: Path) -> None:
    """The default window (20 s): every process is gone well before JAX's 100 s heartbeat."""
    results, gone = lose_host_three(tmp_path)
    # Not a tight time: the bound says "not JAX's heartbeat, not a hang".
    assert gone < LOST_BOUND_SECONDS, [r.describe() for r in results]


def test_a_shorter_unreachable_timeout_ends_the_job_sooner(tmp_path: Path) -> None:
    """KDIST_UNREACHABLE_TIMEOUT=12: every process is gone within the window it sets plus a
    margin (SHORT_WINDOW_BOUND_SECONDS), which a window sized from another setting, or
    three times as long, overruns."""
    results, gone = lose_host_three(
        tmp_path, SHORT_WINDOW_BOUND_SECONDS, KDIST_UNREACHABLE_TIMEOUT=str(SHORT_WINDOW_SECONDS)
    )
    for result in results:
        assert f"for {SHORT_WINDOW_SECONDS} s; KDIST_UNREACHABLE_TIMEOUT" in result.stderr, (
            result.describe()
        )
    assert gone < SHORT_WINDOW_BOUND_SECONDS, (
        f"the last process was gone {gone:.1f} s after the cut; expected within "
        f"{SHORT_WINDOW_BOUND_SECONDS} s (a window of {SHORT_WINDOW_SECONDS} s, "
        f"KDIST_UNREACHABLE_TIMEOUT, and a margin)"
    )


def test_a_three_second_blackout_heals(tmp_path: Path) -> None:
    """Host 3's link goes down for 3 s while every process meets at a barrier (the channel
    carries the arrivals then, retransmitted after the blackout), then comes back: the job
    goes on and every process ends with status 0, none of them with a verdict line."""
    env = {
        "HOST_LOSS_STEPS": "600",
        "HOST_LOSS_BARRIER_STEP": "40",
    }
    with job_on_hosts(tmp_path, **env) as (hosts, processes):
        hosts[2].set_link(up=False)
        time.sleep(BLACKOUT_SECONDS)
        hosts[2].set_link(up=True)
        results = finish_all(processes, LOST_BOUND_SECONDS)
    for result in results:
        assert result.returncode == 0, result.describe()
        assert verdict_lines(result) == [], result.describe()
        report = result.report()
        assert report["stopped_at"] is None, report
        # The barrier waited for host 3's arrival across the blackout.
        assert isinstance(report["barrier"], float), report
    assert max(float(r.report()["barrier"]) for r in results) > 1, [r.report() for r in results]
