"""kdist._local_job.attempt: one start of a local job, watched to one typed end.

Real processes (small Python programs, no JAX): each end, what the hooks see, and that
nothing is left running.
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

from kdist._local_job.attempt import Attempt, End, Hooks, verdict_file
from kdist._local_job.output import Output
from kdist._local_job.process import Process

PY = sys.executable


def _attempt(tmp_path: Path, codes: list[str], **kwargs: object) -> Attempt:
    """An attempt whose process i runs `codes[i]` (all the same command line: the code is
    chosen by KDIST_TEST_CODE)."""
    envs = [{"KDIST_TEST_CODE": code, "PATH": "/usr/bin:/bin"} for code in codes]
    command = [PY, "-c", "import os; exec(os.environ['KDIST_TEST_CODE'])"]
    output = Output(io.BytesIO(), io.BytesIO())
    # No fork-to-exec hook: this test process may have threads (JAX's, from other tests).
    return Attempt(command, envs, tmp_path, output, hook_before_exec=False, **kwargs)  # type: ignore[arg-type]


def test_every_process_exiting_0_is_passed_with_each_verdict_file_named(tmp_path: Path) -> None:
    code = "import os; open(os.environ['KDIST_VERDICT_FILE'], 'w').write('x')"
    attempt = _attempt(tmp_path, [code, code])
    assert attempt.run() is End.PASSED
    assert [p.status for p in attempt.job.processes] == [0, 0]
    assert verdict_file(tmp_path, 1) == tmp_path / "process-1.jsonl"
    assert verdict_file(tmp_path, 0).exists() and verdict_file(tmp_path, 1).exists()


def test_a_failure_settles_then_stops_the_others_and_names_the_first(tmp_path: Path) -> None:
    seen: list[int] = []
    hooks = Hooks(failed=lambda _job, process: seen.append(process.process_id))
    attempt = _attempt(
        tmp_path, ["raise SystemExit(3)", "import time; time.sleep(120)"], grace=0.5, hooks=hooks
    )
    began = time.monotonic()
    assert attempt.run() is End.FAILED
    assert time.monotonic() - began < 60  # settled (3 s), then SIGTERM: not the sleep
    assert seen == [0]
    assert attempt.failed is not None and attempt.failed.process_id == 0
    assert attempt.failed.status == 3
    assert attempt.job.processes[1].signalled
    assert not attempt.job.running()


def test_the_deadline_stops_what_runs_after_the_hook_saw_it(tmp_path: Path) -> None:
    running: list[list[int]] = []
    hooks = Hooks(deadline=lambda _job, procs: running.append([p.process_id for p in procs]))
    attempt = _attempt(
        tmp_path,
        ["pass", "import time; time.sleep(120)"],
        deadline=time.monotonic() + 1.0,
        hooks=hooks,
    )
    assert attempt.run() is End.TIMED_OUT
    assert running == [[1]]
    assert [p.process_id for p in attempt.timed_out] == [1]
    assert attempt.job.processes[1].popen.returncode == -9  # grace None: SIGKILL at once


def test_a_signal_to_the_starter_is_forwarded_and_ends_it_stopped(tmp_path: Path) -> None:
    received = [15]  # as if SIGTERM had arrived
    seen: list[int] = []
    hooks = Hooks(signalled=lambda _job, signum: seen.append(signum))
    attempt = _attempt(
        tmp_path, ["import time; time.sleep(120)"], received=received, grace=5.0, hooks=hooks
    )
    assert attempt.run() is End.STOPPED
    assert attempt.signum == 15 and seen == [15]
    assert attempt.job.processes[0].popen.returncode == -15


def test_process_0_finding_its_port_taken_ends_it_port_taken(tmp_path: Path) -> None:
    asked: list[int] = []

    def port_taken(process: Process) -> bool:
        asked.append(process.process_id)
        return True

    attempt = _attempt(
        tmp_path,
        ["raise SystemExit(1)", "import time; time.sleep(120)"],
        hooks=Hooks(port_taken=port_taken),
    )
    assert attempt.run() is End.PORT_TAKEN
    assert asked and set(asked) == {0}
    assert not attempt.job.running()  # the others were killed at the end


def test_a_command_that_cannot_start_ends_cannot_start(tmp_path: Path) -> None:
    output = Output(io.BytesIO(), io.BytesIO())
    attempt = Attempt([str(tmp_path / "missing")], [{}], tmp_path, output, hook_before_exec=False)
    assert attempt.run() is End.CANNOT_START
    assert isinstance(attempt.error, FileNotFoundError)
