"""The job stops together: stop signals agreed on one step, requests from code, the
handlers that were there before, stalls named with their stacks, barriers with deadlines.

A process that stopped at the agreed step leaves with 128 + the stop signal (143 for
SIGTERM and for a request from code, 138 for SIGUSR1), so that schedulers can requeue it.

Every test runs a real loopback job (real processes, real jax.distributed on JAX's CPU
backend, steps of a few milliseconds with a collective each: tests/programs/stop_steps.py),
sends real signals to real pids, and bounds every wait.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from helpers.support import PROGRAMS, Finished, Running, Spawned, clean_env, free_port

pytestmark = pytest.mark.multiprocess

SCRIPT = str(PROGRAMS / "stop_steps.py")
JOB_SECONDS = 120  # bounds every wait; nothing is timed against it


def start_job(
    spawned: Spawned,
    num_processes: int,
    mode: str,
    *,
    who: int = 1,
    extra: Mapping[str, str] | None = None,
) -> list[Running]:
    port = free_port()
    running = []
    for pid in range(num_processes):
        env = clean_env(
            1,
            KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
            KERAS_DISTRIBUTION_NUM_PROCESSES=str(num_processes),
            KERAS_DISTRIBUTION_PROCESS_ID=str(pid),
            KDIST_INIT_TIMEOUT="60",
            STOP_TEST_MODE=mode,
            STOP_TEST_WHO=str(who),
            **(extra or {}),
        )
        running.append(spawned.start([sys.executable, SCRIPT], env))
    return running


def wait_running(processes: list[Running]) -> None:
    """Until every process has taken its first steps (each prints "running")."""
    deadline = time.monotonic() + JOB_SECONDS
    for process in processes:
        while "running" not in process.stdout():
            assert process.proc.poll() is None, process.stderr()
            assert time.monotonic() < deadline, process.stderr()
            time.sleep(0.02)


def finish(processes: list[Running]) -> list[Finished]:
    return [p.finish(JOB_SECONDS) for p in processes]


def report(result: Finished) -> dict[str, object]:
    return result.report()


# --- agreed stop ------------------------------------------------------------------------


@pytest.mark.parametrize("num_processes", [2, 4])
def test_a_stop_signal_to_one_process_stops_every_process_at_the_same_step(
    tmp_path: Path, num_processes: int
) -> None:
    with Spawned(tmp_path) as spawned:
        job = start_job(spawned, num_processes, "agreed")
        wait_running(job)
        time.sleep(random.uniform(0.0, 0.3))  # a random moment
        victim = random.randrange(num_processes)
        os.kill(job[victim].pid, signal.SIGTERM)
        results = finish(job)
    for result in results:
        assert result.returncode == 143, result.describe()
    steps = {report(r)["stopped_at"] for r in results}
    assert len(steps) == 1 and None not in steps, [r.describe() for r in results]
    line = (
        f"kdist: process {victim} (host {os.uname().nodename}, pid {job[victim].pid}) asked to "
        f"stop (SIGTERM); every process stops at step {steps.pop()}"
    )
    for result in results:
        assert line in result.stderr, result.describe()


def test_a_process_a_step_behind_stops_at_the_same_step(tmp_path: Path) -> None:
    with Spawned(tmp_path) as spawned:
        job = start_job(spawned, 3, "drift", who=2)
        wait_running(job)
        time.sleep(random.uniform(0.0, 0.3))
        os.kill(job[0].pid, signal.SIGTERM)
        results = finish(job)
    for result in results:
        assert result.returncode == 143, result.describe()
    assert len({report(r)["stopped_at"] for r in results}) == 1, [r.stdout for r in results]


def test_a_configured_signal_stops_the_job_and_another_kind_is_left_alone(
    tmp_path: Path,
) -> None:
    with Spawned(tmp_path) as spawned:
        job = start_job(spawned, 2, "agreed", extra={"KDIST_STOP_SIGNALS": "SIGTERM,SIGUSR1"})
        wait_running(job)
        os.kill(job[1].pid, signal.SIGUSR1)
        results = finish(job)
    for result in results:
        assert result.returncode == 138, result.describe()
        assert "asked to stop (SIGUSR1); every process stops at step" in result.stderr
    assert len({report(r)["stopped_at"] for r in results}) == 1

    # SIGTERM is not a stop signal of this job: kdist does not act on it (XLA's
    # preemption notifier, JAX's own handler, takes it), and the job goes on until SIGUSR1.
    (tmp_path / "second").mkdir()
    with Spawned(tmp_path / "second") as spawned:
        job = start_job(spawned, 2, "agreed", extra={"KDIST_STOP_SIGNALS": "SIGUSR1"})
        wait_running(job)
        os.kill(job[1].pid, signal.SIGTERM)
        assert not job[0].wait_for_stderr("asked to stop", 2.0), job[0].stderr()
        assert job[0].proc.poll() is None and job[1].proc.poll() is None
        os.kill(job[1].pid, signal.SIGUSR1)
        results = finish(job)
    for result in results:
        assert result.returncode == 138, result.describe()
        assert "asked to stop (SIGUSR1); every process stops at step" in result.stderr
        assert "(SIGTERM)" not in result.stderr


def test_a_stop_signal_repeated_at_once_is_one_stop_not_a_second(tmp_path: Path) -> None:
    # Slurm's time limit sends every task SIGTERM, SIGCONT and SIGTERM again within a
    # few milliseconds (tests/clusters/test_slurm.py measures it): one stop, not the user's "now".
    with Spawned(tmp_path) as spawned:
        job = start_job(spawned, 2, "agreed")
        wait_running(job)
        for number in (signal.SIGTERM, signal.SIGCONT, signal.SIGTERM):
            for process in job:
                os.kill(process.pid, number)
        results = finish(job)
    for result in results:
        # 0, or 143 where an agreed stop leaves with 128 + its signal: not what tells.
        assert result.returncode in (0, 128 + signal.SIGTERM), result.describe()
        assert "a second time" not in result.stderr, result.describe()
    # Every process went on to its agreed step and reported it (a job ended "now" would
    # have left without a report).
    steps = {report(r)["stopped_at"] for r in results}
    assert len(steps) == 1 and None not in steps, [r.describe() for r in results]


def test_a_request_from_code_is_named_with_its_reason(tmp_path: Path) -> None:
    with Spawned(tmp_path) as spawned:
        job = start_job(spawned, 2, "request", who=1)
        results = finish(job)
    for result in results:
        assert result.returncode == 143, result.describe()
    assert report(results[0])["stopped_at"] == report(results[1])["stopped_at"]
    assert (
        f"kdist: process 1 (host {os.uname().nodename}, pid {job[1].pid}) asked to stop "
        '(request_stop("time limit")); every process stops at step' in results[0].stderr
    ), results[0].describe()


REQUEST_REPEATS = 10


@pytest.mark.parametrize("who", [0, 1])
def test_a_request_right_after_the_first_should_stop_is_always_an_agreed_stop(
    tmp_path: Path, who: int
) -> None:
    """request_stop at step 1, before that step's should_stop: the request reaches process
    0 before the requester's channel has told it "armed" at its first board tick (100 ms),
    and process 0's own board has not been ticked either. The request carries its
    sender's armed state and process 0 reads its own board first, so every run stops at
    one agreed step, never "no process calls kdist.should_stop(step)"."""
    for attempt in range(REQUEST_REPEATS):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        with Spawned(folder) as spawned:
            job = start_job(spawned, 2, "request", who=who, extra={"STOP_TEST_REQUEST_AT": "1"})
            results = finish(job)
        described = [r.describe() for r in results]
        for result in results:
            assert result.returncode == 143, described
            assert "no process calls kdist.should_stop" not in result.stderr, described
        steps = {report(r)["stopped_at"] for r in results}
        assert len(steps) == 1 and None not in steps, described
        assert "every process stops at step" in results[0].stderr, described


ALONE_REPEATS = 3


def test_a_request_from_the_only_process_that_asks_should_stop_is_an_agreed_stop(
    tmp_path: Path,
) -> None:
    """Process 1 asks should_stop(0) and calls request_stop right away; process 0 has not
    reached its first should_stop (it waits until process 1 has stopped). Only the
    request itself can tell process 0 that the job asks should_stop (process 1's "armed"
    comes at its channel's next board tick, 100 ms later, and process 0's own board is
    not armed), so every run stops at one agreed step, in both processes, never "no
    process calls kdist.should_stop(step)"."""
    for attempt in range(ALONE_REPEATS):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        with Spawned(folder) as spawned:
            job = start_job(
                spawned, 2, "request_alone", extra={"STOP_TEST_FLAG": str(folder / "stopped")}
            )
            results = finish(job)
        described = [r.describe() for r in results]
        for result in results:
            assert "no process calls kdist.should_stop" not in result.stderr, described
            assert result.returncode == 143, described
        steps = [report(r)["stopped_at"] for r in results]
        assert steps[0] == steps[1] and steps[0] is not None, described
        assert (
            f'asked to stop (request_stop("time limit")); every process stops at step '
            f"{steps[0]}" in results[0].stderr
        ), described


def test_the_programs_handler_and_jax_s_preemption_sync_point_still_work(
    tmp_path: Path,
) -> None:
    with Spawned(tmp_path) as spawned:
        job = start_job(spawned, 2, "python_handler")
        wait_running(job)
        os.kill(job[1].pid, signal.SIGTERM)
        results = finish(job)
    for result in results:
        assert result.returncode == 143, result.describe()
    reports = [report(r) for r in results]
    assert reports[1]["handler_calls"] == [signal.SIGTERM], reports  # the program's own
    assert reports[0]["handler_calls"] == []
    assert len({r["stopped_at"] for r in reports}) == 1
    # XLA's preemption notifier was called too: JAX agreed on its own sync point.
    points = {r["preemption_step"] for r in reports}
    assert len(points) == 1 and None not in points, reports


# --- no protocol ------------------------------------------------------------------------


@pytest.mark.parametrize("num_processes", [2, 3])
def test_without_should_stop_a_stop_signal_ends_every_process_with_143(
    tmp_path: Path, num_processes: int
) -> None:
    with Spawned(tmp_path) as spawned:
        job = start_job(spawned, num_processes, "no_protocol")
        wait_running(job)
        signalled = time.monotonic()
        os.kill(job[1].pid, signal.SIGTERM)
        results = finish(job)
        ended = time.monotonic() - signalled
    line = (
        f"kdist: process 1 (host {os.uname().nodename}, pid {job[1].pid}) asked to stop "
        "(SIGTERM) and no process calls kdist.should_stop(step), so the job stops now"
    )
    for result in results:
        assert result.returncode == 143, result.describe()
        assert line in result.stderr.strip().splitlines()[-1], result.describe()
        assert "Traceback" not in result.stderr, result.describe()  # no consequence error
        assert "Terminating process" not in result.stderr, result.describe()  # no JAX abort
    assert ended < JOB_SECONDS  # bounded; the figure is in docs/benchmarks.md


# --- stalls -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "function"),
    [("stall_sleep", "stuck"), ("stall_lock", "stuck"), ("stall_read", "stuck")],
)
def test_a_stuck_process_is_named_with_its_step_and_its_stack(
    tmp_path: Path, mode: str, function: str
) -> None:
    with Spawned(tmp_path) as spawned:
        job = start_job(spawned, 3, mode, who=1, extra={"KDIST_STALL_TIMEOUT": "2"})
        results = finish(job)
    for result in results:
        assert result.returncode not in (0, None), result.describe()
    host, pid = os.uname().nodename, job[1].pid
    expected = f"kdist: the job stalled: process 1 (host {host}, pid {pid}) made no progress for "
    for result in results:
        assert expected in result.stderr, result.describe()
        # Stuck before its should_stop(20): its last step is 19; the others reached 20.
        assert "at step 19; processes [0, 2] reached step 20" in result.stderr, result.describe()
    assert "the Python stacks of process 1 (every thread) are on its stderr" in results[0].stderr
    # The stuck process's own stderr holds its stack, naming the stuck function.
    stuck_stderr = results[1].stderr
    assert "Current thread" in stuck_stderr or "Thread 0x" in stuck_stderr, stuck_stderr
    assert "stop_steps.py" in stuck_stderr and f"in {function}" in stuck_stderr, stuck_stderr


def test_a_program_that_never_reports_progress_is_not_ended(tmp_path: Path) -> None:
    with Spawned(tmp_path) as spawned:
        job = start_job(
            spawned,
            2,
            "never_reports",
            extra={"KDIST_STALL_TIMEOUT": "0.5", "STOP_TEST_WAIT_SECONDS": "3"},
        )
        results = finish(job)
    for result in results:
        assert result.returncode == 0, result.describe()
        assert "stalled" not in result.stderr


# --- barriers ---------------------------------------------------------------------------


def test_barriers_that_every_process_reaches_return(tmp_path: Path) -> None:
    with Spawned(tmp_path) as spawned:
        results = finish(start_job(spawned, 3, "barrier_ok"))
    for result in results:
        assert result.returncode == 0, result.describe()
        assert report(result)["ok"] is True


def test_a_barrier_that_times_out_names_who_did_not_arrive_in_every_waiting_process(
    tmp_path: Path,
) -> None:
    with Spawned(tmp_path) as spawned:
        results = finish(start_job(spawned, 3, "barrier_timeout", who=2))
    for pid in (0, 1):
        r = report(results[pid])
        assert r["ok"] is False and r["error"] == "BarrierTimeoutError", r
        assert r["is_timeout"] is True
        message = str(r["message"])
        assert message.startswith('barrier "save" timed out after 2'), message
        assert "process 2 on host" in message and "did not arrive" in message, message
        assert "processes [0-1] waited" in message, message


def test_barriers_of_different_names_are_an_error_naming_both(tmp_path: Path) -> None:
    with Spawned(tmp_path) as spawned:
        results = finish(start_job(spawned, 3, "barrier_mismatch", who=1))
    for result in results:
        r = report(result)
        assert r["ok"] is False and r["error"] == "BarrierError", r
        # Named as soon as two names meet: process 2 is in the list when it arrived first.
        assert re.search(
            r'process 1 at "eval"; (process 0|process 2|processes \[0, 2\]) at "save"',
            str(r["message"]),
        ), r


# --- a process outside any job ------------------------------------------------------------


def test_a_lone_process_answers_for_its_own_signals(tmp_path: Path) -> None:
    code = (
        "import json, os, signal, time, kdist\n"
        "stopped = None\n"
        "for step in range(100000):\n"
        "    if step == 10:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "    if kdist.should_stop(step):\n"
        "        stopped = step\n"
        "        break\n"
        "    time.sleep(0.001)\n"
        "kdist.barrier('alone', timeout=5)\n"
        "print(json.dumps({'stopped_at': stopped}))\n"
    )
    with Spawned(tmp_path) as spawned:
        result = spawned.start([sys.executable, "-c", code], clean_env(1)).finish(JOB_SECONDS)
    assert result.returncode == 143, result.describe()
    # The step after the last one it reported before the signal: 10 at the earliest (the
    # signal came before should_stop(10)), later when its poll thread was slow to see it.
    assert 10 <= json.loads(result.stdout.strip().splitlines()[-1])["stopped_at"] < 10_000
    assert "asked to stop (SIGTERM); every process stops at step" in result.stderr


def test_should_stop_refuses_a_step_that_is_not_an_int(tmp_path: Path) -> None:
    code = (
        "import kdist\n"
        "try:\n"
        "    kdist.should_stop('7')\n"
        "except kdist.ArgumentTypeError as e:\n"
        "    print(e)\n"
    )
    with Spawned(tmp_path) as spawned:
        result = spawned.start([sys.executable, "-c", code], clean_env(1)).finish(JOB_SECONDS)
    assert "should_stop: step must be an int" in result.stdout, result.describe()
    assert "Received: '7' of type str" in result.stdout
