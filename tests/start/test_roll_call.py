"""The roll call with real processes on loopback: binding, hellos, verdicts and deadlines.

Every process runs tests/programs/roll_call_report.py under a hard timeout and
is killed by its pid when the test ends. A failing process must end like any
Python program (traceback, exit code 1) and leave nothing behind: no thread,
no child process, and a coordinator port that a plain socket can bind at once.
"""

from __future__ import annotations

import functools
import os
import random
import re
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from helpers.support import (
    PROGRAMS,
    Finished,
    Running,
    Spawned,
    clean_env,
    free_port,
    run_processes,
)
from kdist import _core

pytestmark = pytest.mark.multiprocess

SCRIPT = str(PROGRAMS / "roll_call_report.py")


def env_for(
    process_id: int,
    num_processes: int,
    port: int,
    *,
    timeout: float,
    host: str = "127.0.0.1",
    progress_interval: float | None = None,
    **extra: str,
) -> dict[str, str]:
    env = clean_env(
        2,
        KERAS_DISTRIBUTION_JOB_ADDRESSES=f"{host}:{port}",
        KERAS_DISTRIBUTION_NUM_PROCESSES=str(num_processes),
        KERAS_DISTRIBUTION_PROCESS_ID=str(process_id),
        KDIST_INIT_TIMEOUT=str(timeout),
    )
    if progress_interval is not None:
        env["ROLL_CALL_TEST_PROGRESS_INTERVAL"] = str(progress_interval)
    env.update(extra)
    return env


def run(
    envs: Sequence[Mapping[str, str]], *, timeout: float, delays: Sequence[float] | None = None
) -> list[Finished]:
    return run_processes(
        [[sys.executable, SCRIPT]] * len(envs), envs, timeout=timeout, start_delays=delays
    )


def port_binds_at_once(port: int) -> bool:
    """Whether a plain socket (no SO_REUSEADDR) binds the port: no listener and
    no TIME_WAIT left on it."""
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True


@functools.cache
def jax_import_tasks() -> int:
    """Kernel tasks that `import jax` itself starts (JAX's, not kdist's),
    counted once in a fresh interpreter."""
    code = (
        "import os; before = len(os.listdir('/proc/self/task')); import jax; "
        "print(len(os.listdir('/proc/self/task')) - before)"
    )
    [result] = run_processes([[sys.executable, "-c", code]], [clean_env()], timeout=60)
    assert result.returncode == 0, result.describe()
    return int(result.stdout.strip())


def assert_nothing_left(report: Mapping[str, object]) -> None:
    """No kdist thread (Python or native) and no child process is left. kdist
    imports JAX while the roll call waits, so JAX's own threads may be there."""
    assert report["threads_after"] == report["threads_before"], report
    assert not [n for n in report["thread_names"] if str(n).startswith("kdist")], report
    assert not [n for n in report["task_names"] if str(n).startswith("kdist")], report
    expected = int(report["tasks_before"]) + (jax_import_tasks() if report["jax_imported"] else 0)
    assert report["tasks_after"] == expected, report
    assert report["children"] == [], report


def assert_failed_cleanly(result: Finished, error: str) -> dict[str, object]:
    """The process raised `error` from initialize(), printed the traceback,
    exited with code 1, and left no thread or child behind."""
    assert result.returncode == 1, result.describe()
    assert "Traceback (most recent call last)" in result.stderr, result.describe()
    assert f"\nkdist.{error}: " in result.stderr, result.describe()
    report = result.report()
    assert report["ok"] is False and report["error"] == error, result.describe()
    assert_nothing_left(report)
    return report


def assert_succeeded(result: Finished, device_count: int) -> dict[str, object]:
    assert result.returncode == 0, result.describe()
    report = result.report()
    assert report["ok"] is True and report["device_count"] == device_count, report
    return report


# 1 ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_unreachable_coordinator_fails_within_its_deadline(host: str) -> None:
    port = free_port()
    [result] = run([env_for(1, 2, port, timeout=3, host=host)], timeout=30)
    report = assert_failed_cleanly(result, "CoordinatorUnreachableError")
    # At the 3 s deadline, not before; the upper bound only rules out a hang (a loaded
    # 2-core machine can add seconds).
    assert 2.9 <= float(report["elapsed"]) < 20, report
    message = str(report["message"])
    assert f"could not reach the coordinator {host}:{port} within 3 s" in message
    assert re.search(r": \d+ attempts, last error: connection refused", message), message
    assert re.search(r"elapsed \d+(\.\d)? s", message), message
    assert port_binds_at_once(port)


# 2 ---------------------------------------------------------------------------


def test_coordinator_alone_names_the_missing_process() -> None:
    port = free_port()
    [result] = run([env_for(0, 2, port, timeout=3)], timeout=30)
    report = assert_failed_cleanly(result, "RendezvousTimeoutError")
    assert float(report["elapsed"]) >= 2.9, report  # at the deadline, not before
    assert "with 1 of 2 joined; missing process ids [1]" in str(report["message"])
    assert port_binds_at_once(port)


# 3 ---------------------------------------------------------------------------


@pytest.mark.parametrize("family, host", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_taken_port_is_reported_at_once_with_its_holder(family: int, host: str) -> None:
    port = free_port()
    with socket.socket(family, socket.SOCK_STREAM) as holder:
        holder.bind((host, port))
        holder.listen()
        [result] = run([env_for(0, 2, port, timeout=30)], timeout=30)
    report = assert_failed_cleanly(result, "PortInUseError")
    assert float(report["elapsed"]) < 10, report  # at once, not at the 30 s deadline
    message = str(report["message"])
    assert f"cannot use coordinator port {port}" in message
    assert f"held by pid {os.getpid()}" in message, message
    assert port_binds_at_once(port)


@pytest.mark.parametrize("host", ["::", "127.0.0.1"])
def test_a_port_held_the_way_grpc_holds_it_is_reported_at_once(host: str) -> None:
    """gRPC (a leftover JAX coordinator) binds with SO_REUSEPORT on every interface. A
    listener that also set SO_REUSEPORT would share that port silently; kdist's must not."""
    port = free_port()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind((host, port))
        holder.listen()
        [result] = run([env_for(0, 2, port, timeout=30)], timeout=30)
    report = assert_failed_cleanly(result, "PortInUseError")
    assert float(report["elapsed"]) < 10, report
    assert f"held by pid {os.getpid()}" in str(report["message"]), report


def test_a_port_held_by_a_real_jax_coordination_service_is_reported_at_once(
    tmp_path: Path,
) -> None:
    """The holder that matters in real jobs: JAX's own coordination service (gRPC) left
    running on the coordinator port."""
    port = free_port()
    service = (
        "import sys, time\n"
        "from jax._src.lib import _jax\n"
        f"service = _jax.get_distributed_runtime_service('[::]:{port}', 2)\n"
        "print('serving', flush=True)\n"
        "time.sleep(120)\n"
    )
    with Spawned(tmp_path) as spawned:
        holder = spawned.start([sys.executable, "-c", service], clean_env(1))
        deadline = time.monotonic() + 60
        while not (tmp_path / "process-0.out").read_text().strip() and time.monotonic() < deadline:
            assert holder.proc.poll() is None, holder.stderr()
            time.sleep(0.05)
        assert "serving" in (tmp_path / "process-0.out").read_text(), holder.stderr()
        [result] = run([env_for(0, 2, port, timeout=30)], timeout=30)
        report = assert_failed_cleanly(result, "PortInUseError")
        assert float(report["elapsed"]) < 10, report
        assert f"held by pid {holder.pid}" in str(report["message"]), report


def test_a_port_left_in_time_wait_by_a_closed_listener_binds_again() -> None:
    """A listener that closed its side of a connection first leaves the port in
    TIME_WAIT for about a minute; the next roll call on that port must still bind it."""
    port = free_port()
    with socket.create_server(("127.0.0.1", port)) as listener:
        client = socket.create_connection(("127.0.0.1", port), timeout=10)
        accepted, _ = listener.accept()
        accepted.close()  # the listening side closes first: TIME_WAIT on `port`
        client.recv(1)
        client.close()
    assert not port_binds_at_once(port)  # the TIME_WAIT is really there
    results = run([env_for(i, 2, port, timeout=60) for i in range(2)], timeout=90)
    for result in results:
        assert result.returncode == 0, result.describe()


# 4 ---------------------------------------------------------------------------


def test_duplicate_process_id_fails_every_process_naming_both_claimants() -> None:
    port = free_port()
    envs = [env_for(i, 3, port, timeout=20) for i in (0, 1, 1)]
    results = run(envs, timeout=40, delays=[0, 0.3, 0.6])
    reports = [assert_failed_cleanly(r, "RendezvousError") for r in results]
    first, second = reports[1], reports[2]
    for report in reports:
        message = str(report["message"])
        assert "process id 1 is claimed twice" in message, message
        for claimant in (first, second):
            assert f"host {claimant['host']}, pid {claimant['pid']}" in message, message
    assert port_binds_at_once(port)


# 5 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("second", "expected"),
    [
        (
            {"num_processes": 3},
            [
                "disagree on num_processes",
                "has num_processes=3 (from KERAS_DISTRIBUTION_NUM_PROCESSES)",
                "has num_processes=2 (from KERAS_DISTRIBUTION_NUM_PROCESSES)",
            ],
        ),
        (
            {"host": "localhost"},
            [
                "disagree on the coordinator address",
                "has localhost:{port}",
                "has 127.0.0.1:{port}",
            ],
        ),
    ],
    ids=["num_processes", "coordinator_address"],
)
def test_disagreeing_process_fails_both_naming_both_values(
    second: dict[str, Any], expected: list[str]
) -> None:
    port = free_port()
    results = run(
        [
            env_for(0, 2, port, timeout=20),
            env_for(
                1,
                second.get("num_processes", 2),
                port,
                timeout=20,
                host=second.get("host", "127.0.0.1"),
            ),
        ],
        timeout=40,
    )
    for result in results:
        message = str(assert_failed_cleanly(result, "RendezvousError")["message"])
        for text in expected:
            assert text.format(port=port) in message, message
    assert port_binds_at_once(port)


# 6 ---------------------------------------------------------------------------


def test_workers_started_before_process_zero_wait_and_succeed() -> None:
    port = free_port()
    token = {"KDIST_RENDEZVOUS_TOKEN": "same-secret-everywhere"}
    envs = [env_for(i, 3, port, timeout=60, progress_interval=0.5, **token) for i in range(3)]
    results = run(envs, timeout=120, delays=[2.0, 0.0, 0.0])
    for result in results:
        assert_succeeded(result, device_count=6)
    for worker in results[1:]:
        assert f"waiting for the coordinator 127.0.0.1:{port}: connection refused" in worker.stderr
    assert "roll call complete: 3 of 3 processes joined" in results[0].stderr


# 7 ---------------------------------------------------------------------------


def _connect_when_listening(port: int, timeout: float) -> socket.socket:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _expect_reset_after_the_challenge(client: socket.socket) -> None:
    """Reads what process 0 sends a connection that never says hello: at most its
    challenge (sent on accepting it), then a reset."""
    received = b""
    with pytest.raises(ConnectionResetError):
        while True:
            chunk = client.recv(4096)
            if chunk == b"":
                raise AssertionError("closed without a reset")
            received += chunk
            assert len(received) <= 31, received  # one challenge frame, nothing more
    version = _core.PROTOCOL_VERSION.to_bytes(2, "big")
    assert (b"KDRV" + version + b"\x00\x05").startswith(received[:8]), received


def test_garbage_clients_do_not_stop_the_roll_call(tmp_path: Path) -> None:
    port = free_port()
    with Spawned(tmp_path) as spawned:
        head = spawned.start(
            [sys.executable, SCRIPT], env_for(0, 2, port, timeout=60, progress_interval=0.3)
        )
        silent = _connect_when_listening(port, timeout=20)
        garbage = []
        try:
            for payload in (
                b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
                random.Random(3).randbytes(512),
                b"KDRV\x00\x01\x00\x01\xff\xff\xff\xff",  # a header announcing 4 GiB
            ):
                client = socket.create_connection(("127.0.0.1", port), timeout=5)
                client.sendall(payload)
                garbage.append(client)
            for client in garbage:  # each is reset, not answered (beyond its challenge)
                _expect_reset_after_the_challenge(client)
            assert head.wait_for_stderr("dropped 3 connections", timeout=10), head.stderr()
            worker = spawned.start([sys.executable, SCRIPT], env_for(1, 2, port, timeout=60))
            results = [head.finish(timeout=90), worker.finish(timeout=90)]
            _expect_reset_after_the_challenge(silent)  # the silent one is reset at the end
        finally:
            silent.close()
            for client in garbage:
                client.close()
    for result in results:
        assert_succeeded(result, device_count=4)


# 8 ---------------------------------------------------------------------------


def start_head_and_kill_a_worker_after_its_hello(
    spawned: Spawned, port: int, *, head_timeout: float, worker_timeout: float
) -> Running:
    """Starts process 0 of 3 and process 1; kills process 1 once process 0 counts
    it as joined, and waits until process 0 counts it as missing again. Returns
    process 0, still waiting."""
    head = spawned.start(
        [sys.executable, SCRIPT],
        env_for(0, 3, port, timeout=head_timeout, progress_interval=0.2),
    )
    worker = spawned.start([sys.executable, SCRIPT], env_for(1, 3, port, timeout=worker_timeout))
    assert head.wait_for_stderr("2 of 3 processes joined; missing process ids [2]", 20), (
        head.stderr()
    )
    worker.kill()
    assert head.wait_for_stderr("1 of 3 processes joined; missing process ids [1-2]", 5), (
        head.stderr()
    )
    return head


def test_worker_killed_after_its_hello_is_reported_missing(tmp_path: Path) -> None:
    port = free_port()
    with Spawned(tmp_path) as spawned:
        head = start_head_and_kill_a_worker_after_its_hello(
            spawned, port, head_timeout=8, worker_timeout=30
        )
        result = head.finish(timeout=30)
    message = str(assert_failed_cleanly(result, "RendezvousTimeoutError")["message"])
    assert "with 1 of 3 joined; missing process ids [1-2]" in message
    assert port_binds_at_once(port)


def test_worker_killed_after_its_hello_may_rejoin(tmp_path: Path) -> None:
    port = free_port()
    with Spawned(tmp_path) as spawned:
        head = start_head_and_kill_a_worker_after_its_hello(
            spawned, port, head_timeout=60, worker_timeout=60
        )
        again = spawned.start([sys.executable, SCRIPT], env_for(1, 3, port, timeout=60))
        other = spawned.start([sys.executable, SCRIPT], env_for(2, 3, port, timeout=60))
        results = [head.finish(120), again.finish(120), other.finish(120)]
    for result in results:
        assert_succeeded(result, device_count=6)


# 10 --------------------------------------------------------------------------


def test_wrong_token_is_refused_and_named() -> None:
    port = free_port()
    results = run(
        [
            env_for(0, 2, port, timeout=3, KDIST_ROLL_CALL_TOKEN="right-secret"),
            env_for(1, 2, port, timeout=20, KDIST_ROLL_CALL_TOKEN="wrong-secret"),
        ],
        timeout=40,
    )
    worker = str(assert_failed_cleanly(results[1], "RendezvousError")["message"])
    assert "its KDIST_ROLL_CALL_TOKEN does not match the one of process 0" in worker
    head = str(assert_failed_cleanly(results[0], "RendezvousTimeoutError")["message"])
    assert "missing process ids [1]" in head
    assert "refused process 1" in head and "wrong KDIST_ROLL_CALL_TOKEN" in head
    for result in results:
        assert "right-secret" not in result.stderr + result.stdout
        assert "wrong-secret" not in result.stderr + result.stdout
    assert port_binds_at_once(port)


# Ctrl-C and the switch -------------------------------------------------------


def test_ctrl_c_interrupts_the_wait_and_leaves_nothing(tmp_path: Path) -> None:
    port = free_port()
    with Spawned(tmp_path) as spawned:
        worker = spawned.start(
            [sys.executable, SCRIPT], env_for(1, 2, port, timeout=60, progress_interval=0.2)
        )
        assert worker.wait_for_stderr("waiting for the coordinator", 20), worker.stderr()
        os.kill(worker.pid, signal.SIGINT)
        # finish() kills the worker (returncode None) if it is still waiting after 10 s.
        result = worker.finish(timeout=10)
    assert result.returncode == -signal.SIGINT, result.describe()  # how Python ends on Ctrl-C
    report = result.report()
    assert report["error"] == "KeyboardInterrupt", report
    assert_nothing_left(report)


def test_ctrl_c_cannot_reach_a_process_started_with_sigint_ignored_and_kdist_says_so(
    tmp_path: Path,
) -> None:
    """The SIGINT-ignored window on purpose: a process started with SIGINT ignored (as
    nohup or a background job of a non-interactive shell start it) keeps ignoring it,
    so a Ctrl-C during the roll call's wait goes missing and the wait goes on. kdist
    cannot tell an intended ignore from an accidental one, so it leaves the
    disposition alone and says so before the wait; SIGTERM still ends the process."""
    port = free_port()
    ignoring = ["sh", "-c", 'trap \'\' INT; exec "$0" "$@"', sys.executable, SCRIPT]
    with Spawned(tmp_path) as spawned:
        worker = spawned.start(ignoring, env_for(1, 2, port, timeout=60, progress_interval=0.2))
        assert worker.wait_for_stderr("waiting for the coordinator", 20), worker.stderr()
        assert "SIGINT is ignored in this process" in worker.stderr()
        os.kill(worker.pid, signal.SIGINT)
        lines = worker.stderr().count("waiting for the coordinator")
        # Still waiting: more progress lines come after the SIGINT.
        deadline = time.monotonic() + 10
        while worker.stderr().count("waiting for the coordinator") < lines + 2:
            assert worker.proc.poll() is None, worker.stderr()
            assert time.monotonic() < deadline, worker.stderr()
            time.sleep(0.05)
        os.kill(worker.pid, signal.SIGTERM)
        result = worker.finish(timeout=10)
    assert result.returncode == -signal.SIGTERM, result.describe()
    assert result.stderr.count("SIGINT is ignored in this process") == 1


def test_a_process_with_the_default_sigint_gets_no_note(tmp_path: Path) -> None:
    port = free_port()
    with Spawned(tmp_path) as spawned:
        worker = spawned.start(
            [sys.executable, SCRIPT], env_for(1, 2, port, timeout=2, progress_interval=0.2)
        )
        result = worker.finish(timeout=20)
    assert result.returncode == 1, result.describe()
    assert "SIGINT is ignored" not in result.stderr


def test_preflight_off_starts_plain_jax() -> None:
    port = free_port()
    envs = [env_for(i, 2, port, timeout=60, KDIST_PREFLIGHT="0") for i in range(2)]
    results = run(envs, timeout=120)
    for result in results:
        assert_succeeded(result, device_count=4)
        assert "roll call" not in result.stderr
