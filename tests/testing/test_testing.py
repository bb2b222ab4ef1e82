"""kdist.testing.run_job: a function in every process of a real loopback job.

Every job here (the tests marked `multiprocess`) is real: N Python processes,
kdist.initialize() over the roll call, jax.distributed on JAX's CPU backend. Every wait
is bounded by run_job's own timeout, and each test checks that no process the job
started is still alive afterwards.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import kdist
import kdist.testing
from helpers.support import TESTS, alive, clean_env, wait_until_gone
from kdist.testing import JobFailed, JobTimeout, run_job

# Seconds for a job whose function does little: the processes' start on two busy cores.
JOB_TIMEOUT = 90


# --- Functions the jobs run (module level: each process imports them from here) ------------


def describe_me(*args: object, **kwargs: object) -> dict[str, Any]:
    spec = kdist.cluster_spec()
    assert spec is not None
    return {
        "process_id": spec.process_id,
        "num_processes": spec.num_processes,
        "coordinator": spec.coordinator_address,
        "devices": kdist.get_device_count(),
        "local_devices": int(os.environ["JAX_NUM_CPU_DEVICES"]),
        "pid": os.getpid(),
        "args": args,
        "kwargs": kwargs,
        "extra": os.environ.get("RUN_JOB_TEST_EXTRA"),
    }


def fail_in_process_1() -> int:
    if kdist.cluster_spec().process_id == 1:  # type: ignore[union-attr]
        raise ValueError("process 1 could not go on")
    time.sleep(60)  # ended by kdist's liveness channel
    return os.getpid()


def hang_in_process_1() -> int:
    if kdist.cluster_spec().process_id == 1:  # type: ignore[union-attr]
        time.sleep(600)
    return os.getpid()


def sigkill_in_process_1() -> int:
    if kdist.cluster_spec().process_id == 1:  # type: ignore[union-attr]
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)
    return os.getpid()


def return_what_cannot_be_pickled() -> object:
    return threading.Lock()


def is_initialized() -> bool:
    return kdist.is_initialized()


# --- Helpers -----------------------------------------------------------------------------


def port_of(coordinator: str) -> int:
    return int(coordinator.rsplit(":", 1)[1])


def assert_port_is_free(port: int) -> None:
    """Nothing listens on 127.0.0.1:`port` (a TIME_WAIT left by the job is not a listener)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))


def assert_gone(pids: list[int]) -> None:
    """run_job reaps every process before it returns: none is left, not even a zombie."""
    assert pids and [pid for pid in pids if alive(pid)] == []


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder run_job makes its temporary files in, for this test."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# --- Results -------------------------------------------------------------------------------


@pytest.mark.multiprocess
def test_every_process_returns_its_value_in_process_id_order(temporary: Path) -> None:
    reports = run_job(
        describe_me,
        1,
        "two",
        num_processes=3,
        devices_per_process=2,
        timeout=JOB_TIMEOUT,
        env={"RUN_JOB_TEST_EXTRA": "yes"},
        keyword=[3.5],
    )
    assert [r["process_id"] for r in reports] == [0, 1, 2]
    for report in reports:
        assert report["num_processes"] == 3
        assert report["devices"] == 6 and report["local_devices"] == 2
        assert report["args"] == (1, "two") and report["kwargs"] == {"keyword": [3.5]}
        assert report["extra"] == "yes"
        assert report["coordinator"] == reports[0]["coordinator"]
        assert report["coordinator"].startswith("127.0.0.1:")
    assert len({r["pid"] for r in reports}) == 3
    assert_gone([r["pid"] for r in reports])
    assert_port_is_free(port_of(reports[0]["coordinator"]))
    assert list(temporary.iterdir()) == []


@pytest.mark.multiprocess
def test_without_initialize_fn_starts_the_job_itself() -> None:
    assert run_job(is_initialized, initialize=False, timeout=JOB_TIMEOUT) == [False, False]


# --- Failures ------------------------------------------------------------------------------


@pytest.mark.multiprocess
def test_an_exception_in_process_1_raises_job_failed_with_its_traceback(temporary: Path) -> None:
    started = time.monotonic()
    with pytest.raises(JobFailed) as caught:
        run_job(fail_in_process_1, timeout=JOB_TIMEOUT)
    error = caught.value
    assert isinstance(error, kdist.KdistError) and isinstance(error, RuntimeError)
    assert not isinstance(error, JobTimeout)
    assert error.process_id == 1
    assert error.error == "ValueError: process 1 could not go on"
    assert error.traceback.startswith("Traceback (most recent call last):")
    assert 'in fail_in_process_1\n    raise ValueError("process 1 could not go on")' in (
        error.traceback
    )
    assert "_child.py" not in error.traceback  # it starts in fn
    assert str(error).startswith(
        "process 1 of 2 failed first, in fn: ValueError: process 1 could not go on\n"
    )
    assert error.traceback.rstrip() in str(error)
    # Process 0 was ended by kdist's liveness channel (exit 1), not killed by run_job.
    assert [(e.process_id, e.exit_status, e.signal, e.stopped) for e in error.ends] == [
        (0, 1, None, False),
        (1, 1, None, False),
    ]
    assert "process 1 (host" in "\n".join(error.ends[0].output)  # its "failed first" line
    assert "  process 0 (pid " in str(error) and "): exit 1" in str(error)
    assert time.monotonic() - started < JOB_TIMEOUT / 2
    assert_gone([e.pid for e in error.ends])
    assert list(temporary.iterdir()) == []


@pytest.mark.multiprocess
def test_a_hang_ends_at_the_timeout_naming_the_hung_process() -> None:
    timeout = 15.0
    started = time.monotonic()
    with pytest.raises(JobTimeout) as caught:
        run_job(hang_in_process_1, timeout=timeout)
    elapsed = time.monotonic() - started
    error = caught.value
    assert isinstance(error, TimeoutError) and isinstance(error, JobFailed)
    assert timeout <= elapsed < timeout + 10
    assert error.timeout == timeout
    assert error.still_running == (1,) and error.process_id == 1
    assert str(error).startswith(
        "the job did not end within 15 s: fn had not returned in process 1 (of 2); "
        "process 0 returned and waited for the others; every process was stopped\n"
    )
    # Its stack, dumped at the timeout, is in its last lines and in the message.
    assert any("in hang_in_process_1" in line for line in error.ends[1].output), error
    assert "[1]   File " in str(error) and "in hang_in_process_1" in str(error)
    assert [(e.returned, e.stopped) for e in error.ends] == [(True, True), (False, True)]
    assert_gone([e.pid for e in error.ends])


@pytest.mark.multiprocess
def test_a_process_killed_by_a_signal_is_named_with_its_signal() -> None:
    with pytest.raises(JobFailed) as caught:
        run_job(sigkill_in_process_1, timeout=JOB_TIMEOUT)
    error = caught.value
    assert error.process_id == 1
    assert error.signal is signal.SIGKILL
    assert error.traceback == ""
    assert error.error == "killed by SIGKILL"
    assert str(error).startswith("process 1 of 2 failed first: killed by SIGKILL\n")
    assert "  process 1 (pid " in str(error) and "): killed by SIGKILL" in str(error)
    assert error.ends[0].exit_status == 1 and not error.ends[0].stopped  # kdist ended it
    assert_gone([e.pid for e in error.ends])


@pytest.mark.multiprocess
def test_a_return_value_that_cannot_be_pickled_is_a_failure_of_that_process() -> None:
    with pytest.raises(JobFailed) as caught:
        run_job(return_what_cannot_be_pickled, num_processes=2, timeout=JOB_TIMEOUT)
    error = caught.value
    assert str(error).startswith("process ")
    assert "failed first, while pickling fn's return value: TypeError: " in str(error)
    assert error.process_id in (0, 1)


@pytest.mark.multiprocess
def test_the_processes_die_with_a_caller_killed_by_sigkill(tmp_path: Path) -> None:
    """PR_SET_PDEATHSIG: a caller that cannot clean up (SIGKILL) still takes its job along."""
    script = tmp_path / "caller.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(TESTS)!r}]
            from kdist.testing import run_job
            from test_testing import write_pid_and_wait

            run_job(write_pid_and_wait, {str(tmp_path)!r}, timeout=300)
            """
        )
    )
    caller = subprocess.Popen(
        [sys.executable, str(script)],
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + JOB_TIMEOUT
        while len(list(tmp_path.glob("pid-*"))) < 2:
            assert time.monotonic() < deadline and caller.poll() is None, "the job never ran"
            time.sleep(0.05)
        pids = [int(p.read_text()) for p in tmp_path.glob("pid-*")]
        assert all(alive(pid) for pid in pids)
    finally:
        caller.kill()
        caller.wait(timeout=10)
    assert wait_until_gone(pids, timeout=15) == []


def write_pid_and_wait(folder: str) -> None:
    me = kdist.cluster_spec().process_id  # type: ignore[union-attr]
    Path(folder, f"pid-{me}.partial").write_text(str(os.getpid()))
    Path(folder, f"pid-{me}.partial").rename(Path(folder, f"pid-{me}"))
    time.sleep(300)


# --- Side by side --------------------------------------------------------------------------


@pytest.mark.multiprocess
def test_two_jobs_started_at_once_from_two_threads_do_not_clash() -> None:
    results: dict[int, list[dict[str, Any]] | BaseException] = {}

    def one(index: int) -> None:
        try:
            results[index] = run_job(describe_me, index, timeout=JOB_TIMEOUT)
        except BaseException as error:
            results[index] = error

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOB_TIMEOUT + 30)
    assert sorted(results) == [0, 1], results
    jobs = [results[0], results[1]]
    for index, reports in enumerate(jobs):
        assert isinstance(reports, list), reports
        assert [r["args"] for r in reports] == [(index,), (index,)]
    assert jobs[0][0]["coordinator"] != jobs[1][0]["coordinator"]  # type: ignore[index]
    assert_gone([r["pid"] for reports in jobs for r in reports])  # type: ignore[union-attr]


@pytest.mark.multiprocess
def test_a_coordinator_port_taken_meanwhile_starts_the_job_again_on_another(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """free_port() said free, then something else bound it before process 0 could: the
    roll call reports PortInUseError at once, and run_job starts again on a fresh port."""
    from kdist import _core

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    real_free_port = _core.free_port
    monkeypatch.setattr(_core, "free_port", lambda: next(ports, None) or real_free_port())
    try:
        reports = run_job(describe_me, timeout=JOB_TIMEOUT)
    finally:
        taken.close()
    err = capfd.readouterr().err
    assert "[0] kdist.PortInUseError: " in err
    assert (
        f"kdist.testing.run_job: the coordinator's port {port_of_taken(err)} was taken before "
        "process 0 could bind it; starting the job again on another port"
    ) in err
    assert port_of(reports[0]["coordinator"]) != port_of_taken(err)


def port_of_taken(stderr: str) -> int:
    marker = "the coordinator's port "
    return int(stderr[stderr.index(marker) + len(marker) :].split(maxsplit=1)[0])


# --- Usage ---------------------------------------------------------------------------------


def _nested() -> object:
    def inner() -> None:
        pass

    return inner


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: run_job(lambda: 1), TypeError, r"expected fn to be a module-level function"),
        (lambda: run_job(_nested()), TypeError, r"expected fn to be a module-level function"),
        (lambda: run_job(1), TypeError, r"^run_job: expected fn to be a function, received 1$"),
        (
            lambda: run_job(describe_me, threading.Lock()),
            TypeError,
            r"^run_job: fn's arguments cannot be pickled: ",
        ),
        (
            lambda: run_job(describe_me, num_processes=0),
            ValueError,
            r"^run_job: expected num_processes to be a positive integer, received 0$",
        ),
        (
            lambda: run_job(describe_me, devices_per_process=True),
            TypeError,
            r"^run_job: expected devices_per_process to be a positive integer, received True$",
        ),
        (
            lambda: run_job(describe_me, timeout="5"),
            TypeError,
            r"^run_job: expected timeout in seconds \(a number\), received '5'$",
        ),
        (
            lambda: run_job(describe_me, timeout=float("inf")),
            ValueError,
            r"^run_job: expected a positive, finite timeout, received inf$",
        ),
        (
            lambda: run_job(describe_me, env={"A": 1}),
            TypeError,
            r"^run_job: expected env to map strings to strings, received 'A': 1$",
        ),
    ],
)
def test_wrong_arguments_raise_before_any_process_starts(
    call: Any, error: type[Exception], match: str, temporary: Path
) -> None:
    with pytest.raises(error, match=match):
        call()
    assert list(temporary.iterdir()) == []


def test_job_failed_pickles_with_its_attributes() -> None:
    end = kdist.testing.ProcessEnd(1, 42, None, signal.SIGKILL, False, False, ("x",))
    error = JobTimeout("m", process_id=1, error="e", ends=(end,), timeout=3.0, still_running=(1,))
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is JobTimeout and str(again) == "m"
    assert (again.process_id, again.ends, again.timeout, again.still_running) == (
        1,
        (end,),
        3.0,
        (1,),
    )
    assert again.signal is signal.SIGKILL
    assert repr(JobFailed) == "<class 'kdist.testing.JobFailed'>"


# --- A script's own function ---------------------------------------------------------------


@pytest.mark.multiprocess
def test_a_function_of_a_script_run_as_main_runs_in_every_process(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            """
            import kdist
            from kdist.testing import run_job

            def twice(x):
                return 2 * x + kdist.cluster_spec().process_id

            if __name__ == "__main__":
                print(run_job(twice, 20, num_processes=2, timeout=90))
            """
        )
    )
    result = subprocess.run(
        [sys.executable, str(script)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT + 30,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[-1] == "[40, 41]"
