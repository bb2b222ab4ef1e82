"""After the start: one failing process ends the whole job at once, and every process
says which one failed and why.

Each test runs a real loopback job (real processes, real jax.distributed on JAX's CPU
backend) with a hard timeout well under JAX's own 100 s heartbeat and 300 s shutdown
barrier, so a test that passes cannot be JAX's own timeouts at work. Those are marked
`multiprocess`; the two that check a single process's settings are not.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers.support import KDIST_SCRIPT, PROGRAMS, Finished, clean_env, run_cluster, run_python

# Far below JAX's 100 s heartbeat timeout and 300 s shutdown barrier.
JOB_TIMEOUT = 60.0
SIGABRT_STATUS = -6


def fault_job(fault: str, n: int = 2, faulty: int = 1, **env: str) -> list[Finished]:
    return run_cluster(
        "liveness_fault.py",
        n,
        timeout=JOB_TIMEOUT,
        args=(fault, str(faulty)),
        extra_env=env,
    )


def ended(results: list[Finished]) -> str:
    return "\n".join(r.describe() for r in results)


def assert_all_exited(results: list[Finished]) -> None:
    for r in results:
        assert r.returncode is not None, (
            f"a process was still running at the deadline:\n{ended(results)}"
        )
        assert r.returncode != SIGABRT_STATUS, f"a process ended by SIGABRT:\n{ended(results)}"


def events(result: Finished, name: str) -> list[dict[str, object]]:
    return [line for line in result.json_lines() if line.get("event") == name]


@pytest.mark.multiprocess
def test_an_uncaught_exception_ends_every_process_and_names_the_first_failure() -> None:
    results = fault_job("exception", n=3, faulty=1)
    assert_all_exited(results)
    failing = results[1]
    assert failing.returncode == 1, ended(results)
    assert "RuntimeError: injected failure" in failing.stderr  # Python's own traceback
    assert "Traceback" in failing.stderr
    assert re.search(
        r"kdist: process 1 \(host [^,]+, pid \d+\) failed: RuntimeError: injected failure; "
        r"told the other processes; stopping process 1",
        failing.stderr,
    ), ended(results)
    for me in (0, 2):
        assert results[me].returncode == 1, ended(results)
        assert re.search(
            r"kdist: process 1 \(host [^,]+, pid \d+\) failed first: RuntimeError: injected "
            rf"failure; stopping process {me}",
            results[me].stderr,
        ), ended(results)
        assert not events(results[me], "done"), ended(results)


@pytest.mark.multiprocess
def test_a_failure_in_another_thread_ends_the_job() -> None:
    results = fault_job("thread", n=2, faulty=1)
    assert_all_exited(results)
    assert results[1].returncode == 1, ended(results)
    assert "ValueError: injected in a thread" in results[1].stderr
    assert results[0].returncode == 1, ended(results)
    assert re.search(
        r"kdist: process 1 \(host [^,]+, pid \d+\) failed first: ValueError: injected in a "
        r"thread \(in thread 'loader'\); stopping process 0",
        results[0].stderr,
    ), ended(results)


@pytest.mark.multiprocess
@pytest.mark.parametrize("fault", ["sigkill", "segfault"])
def test_a_process_that_dies_is_named_by_every_other(fault: str) -> None:
    results = fault_job(fault, n=3, faulty=2)
    assert_all_exited(results)
    assert results[2].returncode in (-9, -11), ended(results)
    for me in (0, 1):
        assert results[me].returncode == 1, ended(results)
        assert re.search(
            r"kdist: process 2 \(host [^,]+, pid \d+\) died \(its connection closed without a "
            rf"finish message\) while the job was running; stopping process {me}",
            results[me].stderr,
        ), ended(results)


@pytest.mark.multiprocess
def test_process_0_dying_is_named_by_the_others() -> None:
    results = fault_job("sigkill", n=2, faulty=0)
    assert_all_exited(results)
    assert results[0].returncode == -9, ended(results)
    assert results[1].returncode == 1, ended(results)
    assert re.search(
        r"kdist: process 0 \(host [^,]+, pid \d+\) died \(its liveness connection closed "
        r"without a finish message\) while the job was running; stopping process 1",
        results[1].stderr,
    ), ended(results)


@pytest.mark.multiprocess
def test_process_0_failing_stops_the_others() -> None:
    results = fault_job("exception", n=2, faulty=0)
    assert_all_exited(results)
    assert results[0].returncode == 1, ended(results)
    assert results[1].returncode == 1, ended(results)
    assert "kdist: process 0 (host" in results[1].stderr
    assert "failed first: RuntimeError: injected failure; stopping process 1" in results[1].stderr


@pytest.mark.multiprocess
def test_a_process_that_leaves_with_os_exit_0_after_its_work_is_not_a_failure() -> None:
    results = fault_job("exit0", n=3, faulty=1)
    assert_all_exited(results)
    assert [r.returncode for r in results] == [0, 0, 0], ended(results)
    for me in (0, 2):
        assert events(results[me], "done"), ended(results)
        assert "failed first" not in results[me].stderr
        assert "died" not in results[me].stderr


@pytest.mark.multiprocess
def test_a_start_that_fails_after_go_ends_every_process_and_names_the_failure() -> None:
    # Process 1's JAX initialize raises after the roll call; the others are inside JAX's
    # initialize, waiting for it (until the 60 s timeout, without the channel).
    results = fault_job("start", n=3, faulty=1)
    assert_all_exited(results)
    assert results[1].returncode == 1, ended(results)
    assert "RuntimeError: injected start failure" in results[1].stderr  # its own traceback
    for me in (0, 2):
        assert results[me].returncode == 1, ended(results)
        assert re.search(
            r"kdist: process 1 \(host [^,]+, pid \d+\) failed first: kdist\.initialize\(\) "
            rf"failed: RuntimeError: injected start failure; stopping process {me}",
            results[me].stderr,
        ), ended(results)
        assert not events(results[me], "started"), ended(results)


@pytest.mark.multiprocess
def test_a_normal_end_still_goes_through_jax_and_process_0_says_whom_it_waits_for() -> None:
    results = fault_job("none", n=2)
    assert_all_exited(results)
    assert [r.returncode for r in results] == [0, 0], ended(results)
    for r in results:
        assert events(r, "done"), ended(results)
        assert "kdist: process" not in r.stderr, ended(results)
    assert re.search(
        r"kdist INFO: process 0 finished; waiting for process 1 on host \S+",
        results[0].stderr,
    ), ended(results)
    # Process 0 finished first, and waited for process 1 (whose end came later).
    assert events(results[0], "done")[0]["at"] < events(results[1], "done")[0]["at"]


@pytest.mark.multiprocess
def test_on_peer_failure_ignore_reports_and_goes_on() -> None:
    results = fault_job("ignore", n=2, faulty=1, KDIST_ON_PEER_FAILURE="ignore")
    assert_all_exited(results)
    assert results[1].returncode == 1, ended(results)
    assert results[0].returncode == 0, ended(results)
    done = events(results[0], "done")
    assert done, ended(results)
    (line,) = done[0]["reported"]  # type: ignore[misc]
    assert "process 1" in str(line) and "failed first: RuntimeError: injected failure" in str(line)
    assert "goes on (KDIST_ON_PEER_FAILURE=ignore)" in results[0].stderr


def test_the_timeouts_reach_jax_and_cluster_spec_names_their_sources() -> None:
    code = """
import json, kdist
from jax._src import distributed
from kdist._core import free_port
KEYS = ("heartbeat_timeout_seconds", "shutdown_timeout_seconds")
calls = []
original = distributed.global_state.initialize
def spy(*args, **kwargs):
    calls.append({k: kwargs.get(k) for k in KEYS})
    return original(*args, **kwargs)
distributed.global_state.initialize = spy
port = free_port()
kdist.initialize(f"127.0.0.1:{port}", 1, 0, heartbeat_timeout=7)
spec = kdist.cluster_spec()
names = ("heartbeat_timeout", "shutdown_timeout", "on_peer_failure")
print(json.dumps({"calls": calls, "heartbeat": spec.heartbeat_timeout,
                  "shutdown": spec.shutdown_timeout,
                  "sources": {k: spec.sources[k] for k in names}}))
kdist.shutdown()
"""
    env = clean_env(KDIST_SHUTDOWN_TIMEOUT="9")
    result = run_python(code, env=env)
    assert result.returncode == 0, result.describe()
    report = result.report()
    assert report["calls"] == [{"heartbeat_timeout_seconds": 7, "shutdown_timeout_seconds": 9}]
    assert report["heartbeat"] == 7 and report["shutdown"] == 9
    assert report["sources"] == {
        "heartbeat_timeout": "argument",
        "shutdown_timeout": "KDIST_SHUTDOWN_TIMEOUT",
        "on_peer_failure": "default",
    }


@pytest.mark.multiprocess
def test_processes_that_disagree_on_a_jax_timeout_fail_the_roll_call() -> None:
    results = run_cluster(
        "liveness_fault.py",
        2,
        timeout=JOB_TIMEOUT,
        args=("none",),
        per_process_env=[{"KDIST_HEARTBEAT_TIMEOUT": "5"}, {"KDIST_HEARTBEAT_TIMEOUT": "7"}],
    )
    for r in results:
        assert r.returncode == 1, ended(results)
        assert "RendezvousError" in r.stderr and "configured differently" in r.stderr, ended(
            results
        )
        assert "KDIST_HEARTBEAT_TIMEOUT" in r.stderr


def test_a_jax_without_the_keyword_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import jax

    from kdist import ConfigError, _jax_backend

    def old_initialize(coordinator_address=None, num_processes=None, process_id=None):  # type: ignore[no-untyped-def]
        raise AssertionError("must not be called")

    monkeypatch.setattr(jax.distributed, "initialize", old_initialize)
    with pytest.raises(
        ConfigError, match=r"heartbeat_timeout=5 was set, but jax.distributed.initialize"
    ):
        _jax_backend.check_lifetime_keywords({"heartbeat_timeout_seconds": 5})
    _jax_backend.check_lifetime_keywords({})  # nothing asked: nothing to check


def launch(fault: str, n: int, faulty: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(KDIST_SCRIPT),
            "launch",
            "-n",
            str(n),
            "--devices-per-process",
            "1",
            "--timeout",
            str(int(JOB_TIMEOUT)),
            "--",
            sys.executable,
            str(PROGRAMS / "liveness_fault.py"),
            fault,
            str(faulty),
        ],
        env=clean_env(1),
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT + 30,
        check=False,
    )


def summary_rows(stderr: str) -> dict[int, str]:
    rows = {}
    for line in stderr.splitlines()[stderr.splitlines().index("kdist launch: summary:") + 2 :]:
        if m := re.match(r"^(\*?)\s*(\d+)\s", line):
            rows[int(m.group(2))] = line
    return rows


@pytest.mark.multiprocess
@pytest.mark.parametrize("n", [2, 3])
def test_launch_blames_the_exception_not_the_first_exit_and_prints_a_summary(n: int) -> None:
    result = launch("exception", n, faulty=1)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "kdist launch: timed out" not in result.stderr, out
    assert re.search(
        r"kdist launch: process 1 failed first \(exit 1\): kdist: process 1 \(host [^,]+, "
        r"pid \d+\) failed: RuntimeError: injected failure",
        result.stderr,
    ), out
    rows = summary_rows(result.stderr)
    assert sorted(rows) == list(range(n)), out
    assert rows[1].startswith("*") and "exit 1" in rows[1], out
    for me in set(range(n)) - {1}:
        assert not rows[me].startswith("*"), out
        assert "exit 1" in rows[me] and "stopped by the launcher" not in rows[me], out
        assert "failed first: RuntimeError: injected failure" in rows[me], out


@pytest.mark.multiprocess
def test_launch_names_the_signal_of_a_killed_process() -> None:
    result = launch("sigkill", 2, faulty=1)
    out = result.stdout + result.stderr
    assert result.returncode == 128 + 9, out
    assert "kdist launch: process 1 failed first (killed by SIGKILL)" in result.stderr, out
    rows = summary_rows(result.stderr)
    assert rows[1].startswith("*") and "killed by SIGKILL" in rows[1], out
    # Process 0's row shows kdist's verdict, not a traceback line printed around it: the
    # death it was told of, or (when the news took longer than the 0.5 s it waits on a
    # loaded machine) its own collective's error, which it reported itself.
    assert "exit 1" in rows[0], out
    assert (
        "died (its connection closed without a finish message)" in rows[0]
        or "told the other processes" in rows[0]
    ), out


@pytest.mark.multiprocess
def test_launch_of_a_job_whose_process_leaves_with_os_exit_0_succeeds() -> None:
    result = launch("exit0", 2, faulty=1)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "summary" not in result.stderr
