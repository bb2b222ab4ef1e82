"""`kdist launch` through real subprocesses: output, failures, signals, no orphans."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from helpers.launched import ROOT, Launcher, attempt_rows
from helpers.support import KDIST_SCRIPT, PROGRAMS, alive, clean_env, run_processes, wait_until_gone

CHILD = str(PROGRAMS / "launch_child.py")


@pytest.fixture
def launchers() -> Iterator[list[Launcher]]:
    """Launchers a test starts; each is killed, with every pid it reported, at the end."""
    started: list[Launcher] = []
    yield started
    for launcher in started:
        launcher.end(
            [int(r["grandchild_pid"]) for r in launcher.reports().values() if "grandchild_pid" in r]
        )


def start(launchers: list[Launcher], args: Sequence[str], env: dict[str, str]) -> Launcher:
    launcher = Launcher(args, env)
    launchers.append(launcher)
    return launcher


@pytest.mark.multiprocess
@pytest.mark.compat
def test_two_process_job_runs_initialize_and_prints_devices(tmp_path: Path) -> None:
    env = clean_env(2, LAUNCH_TEST_DIR=str(tmp_path))
    result = subprocess.run(
        [
            str(KDIST_SCRIPT),
            "launch",
            "-n",
            "2",
            "--devices-per-process",
            "2",
            "--timeout",
            "150",
            "--",
            sys.executable,
            "examples/hello_cluster.py",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    devices = {}
    for process_id in (0, 1):
        pattern = (
            rf"\[{process_id}\] process {process_id} of 2: initialize took [\d.]+ s; "
            r"global devices (.*)"
        )
        matches = [m for line in result.stdout.splitlines() if (m := re.fullmatch(pattern, line))]
        assert len(matches) == 1, result.stdout
        devices[process_id] = matches[0].group(1)
    assert devices[0] == devices[1]
    assert devices[0].count("cpu:") == 4
    assert all(line[:4] in ("[0] ", "[1] ") for line in result.stdout.splitlines())


def test_each_process_gets_its_settings_and_prefixed_lines(
    tmp_path: Path, launchers: list[Launcher]
) -> None:
    launcher = start(
        launchers,
        [
            "-n",
            "3",
            "--port",
            "23456",
            "--devices-per-process",
            "3",
            "--",
            sys.executable,
            CHILD,
            "exit",
        ],
        clean_env(2, LAUNCH_TEST_DIR=str(tmp_path)),
    )
    assert launcher.wait() == 0, launcher.describe()
    reports = launcher.reports()
    assert sorted(reports) == [0, 1, 2]
    for process_id, report in reports.items():
        assert report["env"] == {
            "KERAS_DISTRIBUTION_JOB_ADDRESSES": "127.0.0.1:23456",
            "KERAS_DISTRIBUTION_NUM_PROCESSES": "3",
            "KERAS_DISTRIBUTION_PROCESS_ID": str(process_id),
            "JAX_PLATFORMS": "cpu",
            "JAX_NUM_CPU_DEVICES": "3",
        }
        assert f"[{process_id}] stderr line of process {process_id}" in launcher.stderr
    assert len(launcher.started_pids()) == 3
    assert wait_until_gone(launcher.started_pids()) == []


def test_no_process_inherits_the_variables_of_the_launchers_own_job(
    tmp_path: Path, launchers: list[Launcher]
) -> None:
    """kdist launch inside another job (a Slurm step, mpirun, an outer kdist job): its
    processes get their own job variables, none of the outer job's
    (kdist._local_job.environment.environments, which kdist.testing uses too)."""
    outer = {
        "SLURM_PROCID": "7",
        "SLURM_NTASKS": "8",
        "OMPI_COMM_WORLD_RANK": "7",
        "JAX_PROCESS_ID": "7",
        "JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234",
        "KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234",
        "HOSTNAME": "node-7",
        "LAUNCH_TEST_KEPT": "yes",
    }
    launcher = start(
        launchers,
        ["-n", "2", "--", sys.executable, CHILD, "exit"],
        clean_env(2, LAUNCH_TEST_DIR=str(tmp_path), LAUNCH_TEST_REPORT=",".join(outer), **outer),
    )
    assert launcher.wait() == 0, launcher.describe()
    for process_id, report in launcher.reports().items():
        assert report["asked"] == {
            **{name: None for name in outer},
            "KERAS_DISTRIBUTION_JOB_ADDRESSES": report["env"]["KERAS_DISTRIBUTION_JOB_ADDRESSES"],
            "HOSTNAME": "node-7",  # the machine's name names no job
            "LAUNCH_TEST_KEPT": "yes",
        }, process_id
        assert report["env"]["KERAS_DISTRIBUTION_JOB_ADDRESSES"].startswith("127.0.0.1:")


def test_a_free_port_is_chosen_and_partial_lines_are_kept(
    tmp_path: Path, launchers: list[Launcher]
) -> None:
    launcher = start(
        launchers,
        ["-n", "2", "--", sys.executable, CHILD, "partial"],
        clean_env(2, LAUNCH_TEST_DIR=str(tmp_path)),
    )
    assert launcher.wait() == 0, launcher.describe()
    reports = launcher.reports().values()
    addresses = {r["env"]["KERAS_DISTRIBUTION_JOB_ADDRESSES"] for r in reports}  # type: ignore[index]
    assert len(addresses) == 1
    assert re.fullmatch(r"127\.0\.0\.1:\d+", addresses.pop())
    assert "[0] no newline from 0" in launcher.stdout
    assert "[1] no newline from 1" in launcher.stdout


def test_a_failing_process_stops_the_others_and_its_status_propagates(
    tmp_path: Path, launchers: list[Launcher]
) -> None:
    launcher = start(
        launchers,
        ["-n", "2", "--grace", "10", "--", sys.executable, CHILD, "fail"],
        clean_env(2, LAUNCH_TEST_DIR=str(tmp_path)),
    )
    assert launcher.wait(timeout=90) == 3, launcher.describe()
    assert (
        "kdist launch: process 1 exited with status 3; giving the others 3 s to leave, then "
        "stopping them" in launcher.stderr
    )
    assert (
        "kdist launch: process 1 failed first (exit 3): stderr line of process 1" in launcher.stderr
    )
    assert "[0] got SIGTERM" in launcher.stdout  # stopped, not killed
    pids = launcher.started_pids()
    assert len(pids) == 2
    assert wait_until_gone(pids) == []


def test_stopping_reaches_the_children_of_a_process(
    tmp_path: Path, launchers: list[Launcher]
) -> None:
    launcher = start(
        launchers,
        ["-n", "2", "--grace", "10", "--", sys.executable, CHILD, "grandchild"],
        clean_env(2, LAUNCH_TEST_DIR=str(tmp_path)),
    )
    assert launcher.wait(timeout=90) == 3, launcher.describe()
    grandchild = int(launcher.reports()[0]["grandchild_pid"])  # type: ignore[arg-type]
    assert wait_until_gone([grandchild, *launcher.started_pids()]) == []


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_to_the_launcher_is_forwarded_and_leaves_nothing_behind(
    tmp_path: Path, launchers: list[Launcher], signum: signal.Signals, status: int
) -> None:
    launcher = start(
        launchers,
        ["-n", "2", "--grace", "10", "--", sys.executable, CHILD, "sleep"],
        clean_env(2, LAUNCH_TEST_DIR=str(tmp_path)),
    )
    launcher.wait_for(lambda: len(launcher.reports()) == 2)
    pids = launcher.started_pids()
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    launcher.proc.send_signal(signum)
    assert launcher.wait() == status, launcher.describe()
    assert f"[0] got {signum.name}" in launcher.stdout
    assert f"[1] got {signum.name}" in launcher.stdout
    assert wait_until_gone(pids) == []


def test_children_die_with_a_killed_launcher(tmp_path: Path, launchers: list[Launcher]) -> None:
    launcher = start(
        launchers,
        ["-n", "2", "--", sys.executable, CHILD, "sleep"],
        clean_env(2, LAUNCH_TEST_DIR=str(tmp_path)),
    )
    launcher.wait_for(lambda: len(launcher.reports()) == 2)
    pids = launcher.started_pids()
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    launcher.proc.kill()  # SIGKILL: no handler runs; the kernel kills the children
    launcher.wait()
    assert wait_until_gone(pids) == []


def test_timeout_stops_the_job(tmp_path: Path, launchers: list[Launcher]) -> None:
    launcher = start(
        launchers,
        ["-n", "2", "--timeout", "2", "--", sys.executable, CHILD, "sleep"],
        clean_env(2, LAUNCH_TEST_DIR=str(tmp_path)),
    )
    assert launcher.wait() == 124, launcher.describe()
    assert any("timed out after 2 s" in line for line in launcher.stderr)
    assert wait_until_gone(launcher.started_pids()) == []


@pytest.mark.parametrize(
    ("args", "returncode", "message"),
    [
        (["-n", "2"], 2, "launch needs the command to run after '--'"),
        (["-n", "0", "--", "true"], 2, "expected a positive integer, got '0'"),
        (
            ["-n", "2", "--", "kdist-no-such-command"],
            127,
            "cannot run 'kdist-no-such-command': no such file or command",
        ),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], returncode: int, message: str) -> None:
    env = clean_env(2, LAUNCH_TEST_DIR=str(tmp_path))
    (result,) = run_processes([[sys.executable, "-m", "kdist", "launch", *args]], [env], timeout=60)
    assert result.returncode == returncode, result.describe()
    assert message in result.stderr, result.describe()


def test_a_command_that_is_not_a_program_exits_126(tmp_path: Path) -> None:
    not_a_program = tmp_path / "not-a-program"
    not_a_program.write_bytes(b"\x7fELF but not really")
    not_a_program.chmod(0o755)
    env = clean_env(2, LAUNCH_TEST_DIR=str(tmp_path))
    command = [sys.executable, "-m", "kdist", "launch", "-n", "2", "--", str(not_a_program)]
    (result,) = run_processes([command], [env], timeout=60)
    assert result.returncode == 126, result.describe()
    assert f"cannot run {str(not_a_program)!r}: Exec format error" in result.stderr, (
        result.describe()
    )


@pytest.mark.parametrize(
    ("args", "example"),
    [
        (
            ["--help"],
            "kdist launch -n 2 --devices-per-process 2 -- python examples/hello_cluster.py",
        ),
        (
            ["launch", "--help"],
            "kdist launch -n 2 --devices-per-process 2 -- python examples/hello_cluster.py",
        ),
        (["doctor", "--help"], "srun --ntasks=2 kdist doctor --no-probe"),
    ],
)
def test_help_texts_have_examples(args: list[str], example: str) -> None:
    (result,) = run_processes([[sys.executable, "-m", "kdist", *args]], [clean_env()], timeout=60)
    assert result.returncode == 0, result.describe()
    examples = result.stdout.split("examples:", 1)
    assert len(examples) == 2, result.describe()
    assert example in examples[1], result.describe()


# --- restarts, logs and quiet processes ---------------------------------------------------

RESTART_CHILD = str(PROGRAMS / "restart_steps.py")


def test_a_job_that_fails_only_on_its_first_attempt_ends_in_success(
    launchers: list[Launcher],
) -> None:
    launcher = start(
        launchers,
        ["-n", "2", "--max-restarts", "1", "--", sys.executable, RESTART_CHILD, "fail_first"],
        clean_env(2),
    )
    assert launcher.wait(timeout=120) == 0, launcher.describe()
    reports = [json.loads(line.split(" ", 1)[1]) for line in launcher.stdout if "attempt" in line]
    assert sorted((r["attempt"], r["process_id"]) for r in reports) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    ports = {r["attempt"]: r["address"] for r in reports}
    assert ports[0] != ports[1], "each attempt has a fresh coordinator port"
    assert (
        "kdist launch: attempt 0 failed (exit 1); starting the job again (attempt 1 of at most 2)"
        in launcher.stderr
    ), launcher.describe()
    rows = attempt_rows(launcher)
    assert [row[:3] for row in rows] == [
        ["0", ports[0].rsplit(":", 1)[1], "1"],
        ["1", ports[1].rsplit(":", 1)[1], "0"],
    ], launcher.describe()
    assert "RuntimeError: fails on attempt 0 only" in " ".join(rows[0])


def test_a_job_that_always_fails_exhausts_its_restarts_with_one_row_per_attempt(
    launchers: list[Launcher],
) -> None:
    launcher = start(
        launchers,
        ["-n", "2", "--max-restarts", "2", "--", sys.executable, RESTART_CHILD, "always_fail"],
        clean_env(2),
    )
    assert launcher.wait(timeout=180) == 1, launcher.describe()
    assert len(launcher.started_pids()) == 2
    assert sum("kdist launch: started 2 processes" in line for line in launcher.stderr) == 3
    rows = attempt_rows(launcher)
    assert [row[0] for row in rows] == ["0", "1", "2"], launcher.describe()
    for number, row in enumerate(rows):
        line = " ".join(row)
        assert row[2] == "1" and "failed (exit 1)" in line, line
        assert re.search(r"process 1 \(host \S+, pid \d+\): RuntimeError: fails on every", line)
        assert f"(this is attempt {number})" in line, line


def test_the_same_failure_twice_ends_the_job_with_one_whatever_restarts_are_left(
    tmp_path: Path, launchers: list[Launcher]
) -> None:
    """The one restart rule of -n and --nodes (the job's ledger): attempt 1 failing as
    attempt 0 did, at the same point (process, exit status, error line), ends the job with
    status 1 although --max-restarts 3 would allow two more; attempts.json says so."""
    logs = tmp_path / "logs"
    launcher = start(
        launchers,
        [
            "-n", "2", "--max-restarts", "3", "--log-dir", str(logs),
            "--", sys.executable, RESTART_CHILD, "same_failure",
        ],
        clean_env(2),
    )  # fmt: skip
    assert launcher.wait(timeout=180) == 1, launcher.describe()
    assert sum("kdist launch: started 2 processes" in line for line in launcher.stderr) == 2
    assert any(
        "attempt 1 failed as attempt 0 did, at the same point" in line
        and "RuntimeError: fails the same way on every attempt" in line
        and "not restarting again" in line
        for line in launcher.stderr
    ), launcher.describe()
    rows = attempt_rows(launcher)
    assert [(row[0], row[2]) for row in rows] == [("0", "1"), ("1", "1")], launcher.describe()
    recorded = json.loads((logs / "attempts.json").read_text())
    assert recorded["exit_status"] == 1
    assert [a["attempt"] for a in recorded["attempts"]] == [0, 1]
    assert all(a["counted"] and a["processes"] == 2 for a in recorded["attempts"])
    assert recorded["attempts"][0]["ended"].startswith("failed (exit 1): process 1 (host ")
    # Goodput (issue 55), for -n too: the phases add up to the job's wall time.
    goodput = recorded["goodput"]
    phases = ("productive", "starting", "restarting", "recomputing", "waiting")
    wall = recorded["attempts"][-1]["ended_seconds"]
    assert sum(goodput[f"{p}_seconds"] for p in phases) == pytest.approx(wall, rel=1e-6)
    assert goodput["restarting_seconds"] > 0 and goodput["waiting_seconds"] == 0
    assert any(line.strip().startswith("goodput: productive ") for line in launcher.stderr)


def test_no_restart_by_default_nor_after_success(launchers: list[Launcher]) -> None:
    once = start(
        launchers,
        ["-n", "2", "--", sys.executable, RESTART_CHILD, "always_fail"],
        clean_env(2),
    )
    assert once.wait(timeout=120) == 1, once.describe()
    assert sum("started 2 processes" in line for line in once.stderr) == 1
    assert not any(
        line.startswith(("kdist launch: attempt", "kdist launch: attempts")) for line in once.stderr
    ), once.describe()
    succeeded = start(
        launchers,
        ["-n", "2", "--max-restarts", "3", "--", sys.executable, RESTART_CHILD, "fail_first"],
        clean_env(2, KDIST_RESTART_COUNT="1"),  # the launcher's own count is not inherited
    )
    assert succeeded.wait(timeout=120) == 0, succeeded.describe()
    assert sum("started 2 processes" in line for line in succeeded.stderr) == 2


def test_a_signal_to_the_launcher_is_not_restarted(
    tmp_path: Path, launchers: list[Launcher]
) -> None:
    launcher = start(
        launchers,
        ["-n", "2", "--max-restarts", "2", "--", sys.executable, CHILD, "wait"],
        clean_env(2, LAUNCH_TEST_DIR=str(tmp_path)),
    )
    launcher.wait_for(lambda: len(launcher.reports()) == 2)
    launcher.proc.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=90) == 128 + signal.SIGTERM, launcher.describe()
    assert sum("started 2 processes" in line for line in launcher.stderr) == 1
    rows = attempt_rows(launcher)
    assert len(rows) == 1 and "stopped by the launcher's SIGTERM" in " ".join(rows[0])


@pytest.mark.multiprocess
def test_a_job_stopped_by_a_signal_to_one_process_is_started_again(
    tmp_path: Path, launchers: list[Launcher]
) -> None:
    """A scheduler's stop of one process (SIGTERM to its pid): the job stops together,
    exits 143, and the launcher starts the next attempt, which sees its restart count."""
    launcher = start(
        launchers,
        [
            "-n", "2", "--devices-per-process", "1", "--max-restarts", "1", "--",
            sys.executable, RESTART_CHILD, "stop_then_finish",
        ],
        clean_env(1, RESTART_TEST_DIR=str(tmp_path)),
    )  # fmt: skip
    launcher.wait_for((tmp_path / "stepping-1").exists, timeout=120)
    os.kill(launcher.started_pids()[1], signal.SIGTERM)
    assert launcher.wait(timeout=180) == 0, launcher.describe()
    assert any(re.fullmatch(r"\[0\] stopped at step \d+", line) for line in launcher.stdout)
    rows = attempt_rows(launcher)
    assert [row[2] for row in rows] == ["143", "0"], launcher.describe()
    first = " ".join(rows[0])
    assert "every process stopped at step" in first, first
    assert re.search(r"process 1 \(host \S+, pid \d+\) asked to stop \(SIGTERM\)", first), first
    # Attempt 0's summary: each process's line is the stop it left at (not JAX's
    # "SIGTERM caught" note, which may come after it).
    summary = launcher.stderr.index("kdist launch: summary:")
    rows_of_attempt_0 = launcher.stderr[summary + 2 : summary + 4]
    stop_line = re.compile(r"asked to stop \(SIGTERM\); every process stops at step \d+$")
    assert all(stop_line.search(row) for row in rows_of_attempt_0), launcher.describe()


def test_log_dir_keeps_every_line_of_every_process_and_attempt(
    tmp_path: Path, launchers: list[Launcher]
) -> None:
    logs = tmp_path / "logs"
    launcher = start(
        launchers,
        [
            "-n", "3", "--max-restarts", "1", "--log-dir", str(logs), "--quiet-processes", "1-",
            "--", sys.executable, RESTART_CHILD, "fail_first",
        ],
        clean_env(2),
    )  # fmt: skip
    assert launcher.wait(timeout=120) == 0, launcher.describe()
    files = sorted(str(p.relative_to(logs)) for p in logs.rglob("*") if p.is_file())
    expected = [f"attempt-{a}/process-{i}.log" for a in (0, 1) for i in (0, 1, 2)]
    assert files == [*expected, "attempts.json"], files  # the attempts table, for machines
    for attempt in (0, 1):
        for process_id in (0, 1, 2):
            text = (logs / f"attempt-{attempt}" / f"process-{process_id}.log").read_text()
            report = json.loads(next(line for line in text.splitlines() if line[:1] == "{"))
            assert (report["attempt"], report["process_id"]) == (attempt, process_id)
            assert not text.startswith("["), "the log has no prefix"
    failed = (logs / "attempt-0" / "process-1.log").read_text()
    assert "Traceback (most recent call last)" in failed
    assert "RuntimeError: fails on attempt 0 only" in failed
    # The console: only process 0 (with its prefix) and the launcher's notes...
    assert [line[:4] for line in launcher.stdout] == ["[0] ", "[0] "], launcher.describe()
    assert not any(line.startswith(("[1]", "[2]")) for line in launcher.stderr)
    # ...and, the quiet process having failed, its traceback right above the summary.
    at = launcher.stderr.index("kdist launch: the last lines of process 1:")
    tail = launcher.stderr[at + 1 : at + 5]
    assert tail[0] == "  Traceback (most recent call last):", launcher.describe()
    assert tail[-1] == "  RuntimeError: fails on attempt 0 only", launcher.describe()
    assert launcher.stderr[at + 5].startswith("kdist launch: process 1 failed first")
    assert launcher.stderr[at + 6] == "kdist launch: summary:"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-restarts", "-1"], "expected an integer >= 0, got '-1'"),
        (["--quiet-processes", "x"], "expected process ids such as 1,3 or 2-5"),
        (["--quiet-processes", "5-2"], "low <= high, got '5-2'"),
    ],
)
def test_restart_and_log_usage_errors(args: list[str], message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kdist", "launch", "-n", "2", *args, "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and message in result.stderr, result.stderr


@pytest.mark.multiprocess
def test_stall_timeout_ends_a_job_with_a_stuck_process_and_marks_that_process(
    launchers: list[Launcher],
) -> None:
    """`--stall-timeout S` turns kdist's stall watchdog on in every process: process 1
    sleeps at step 20 while process 0 goes on; the job ends, the stuck process named."""
    launcher = start(
        launchers,
        [
            "-n", "2", "--devices-per-process", "1", "--stall-timeout", "2", "--",
            sys.executable, str(PROGRAMS / "stop_steps.py"),
        ],
        clean_env(1, STOP_TEST_MODE="stall_sleep", STOP_TEST_WHO="1"),
    )  # fmt: skip
    assert launcher.wait(timeout=120) not in (0, None), launcher.describe()
    stderr = "\n".join(launcher.stderr)
    assert re.search(
        r"kdist launch: the job stalled: process 1 \(host \S+, pid \d+\) made no progress for "
        r"2\.0 s at step \d+",
        stderr,
    ), launcher.describe()
    summary = launcher.stderr.index("kdist launch: summary:")
    rows = launcher.stderr[summary + 2 : summary + 4]
    assert [row.split()[0] for row in rows] == ["0", "*"], launcher.describe()
    assert launcher.stderr[summary + 4] == "(* the stuck process)", launcher.describe()
