"""A wait is visible with no logging configured, and quiet when the program says so.

Real processes wait for a coordinator that is not there (a worker) or for processes that
never come (process 0), with Python's logging left as a fresh interpreter has it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from helpers.support import Spawned, clean_env, free_port, run_python

# The default cadence: a first line after 5 s, so "within about 10 s" leaves room for a
# busy machine (the bound only ends the wait; nothing is timed).
FIRST_LINE_BOUND_SECONDS = 30


def job_env(process_id: int, num_processes: int, port: int) -> dict[str, str]:
    return clean_env(
        KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
        KERAS_DISTRIBUTION_NUM_PROCESSES=str(num_processes),
        KERAS_DISTRIBUTION_PROCESS_ID=str(process_id),
        KDIST_INIT_TIMEOUT="120",
    )


def program(prelude: str = "") -> list[str]:
    return [sys.executable, "-c", f"{prelude}import kdist\nkdist.initialize()\n"]


@pytest.mark.multiprocess
def test_a_worker_with_no_logging_configured_says_what_it_waits_for(tmp_path: Path) -> None:
    port = free_port()  # nothing listens: every attempt is refused
    with Spawned(tmp_path) as spawned:
        worker = spawned.start(program(), job_env(1, 2, port))
        expected = f"kdist: process 1 of 2: waiting for the coordinator 127.0.0.1:{port}: "
        assert worker.wait_for_stderr(expected, FIRST_LINE_BOUND_SECONDS), worker.stderr()
        line = next(line for line in worker.stderr().splitlines() if line.startswith(expected))
        assert "connection refused" in line, line
        assert line.endswith(" of 120 s"), line  # how much of the deadline is spent


@pytest.mark.multiprocess
def test_process_0_with_no_logging_configured_names_the_missing_ids(tmp_path: Path) -> None:
    with Spawned(tmp_path) as spawned:
        head = spawned.start(program(), job_env(0, 4, free_port()))
        expected = "kdist: process 0 of 4: 1 of 4 processes joined; missing process ids [1-3]"
        assert head.wait_for_stderr(expected, FIRST_LINE_BOUND_SECONDS), head.stderr()


def test_the_next_lines_come_every_half_minute_not_every_few_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The core calls the callback every FIRST_SECONDS (5 s); a line is said at the first
    call and then once per REPEAT_SECONDS (30 s), on a fake clock."""
    from kdist import _log

    said: list[str] = []
    now = [100.0]
    monkeypatch.setattr(_log, "say", said.append)
    monkeypatch.setattr(_log.time, "monotonic", lambda: now[0])
    progress = _log.Progress("process 1 of 2")
    for _ in range(13):  # the core's calls at 5, 10, ..., 65 s of waiting
        now[0] += 5.0
        progress("waiting for the coordinator 10.0.0.1:1234: connection refused; ...")
    assert len(said) == 3  # at 5 s, 35 s and 65 s
    assert said[0] == (
        "process 1 of 2: waiting for the coordinator 10.0.0.1:1234: connection refused; ..."
    )


def test_configured_by_program_reads_levels_and_handlers() -> None:
    import logging

    from kdist import _log

    fresh = logging.Logger("kdist-test-fresh")
    assert not _log.configured_by_program(fresh)  # no parent: nothing configured
    fresh.setLevel(logging.ERROR)
    assert _log.configured_by_program(fresh)
    child = logging.getLogger("kdist-test-parent.child")
    parent = logging.getLogger("kdist-test-parent")
    handler = logging.NullHandler()
    parent.addHandler(handler)
    try:
        assert _log.configured_by_program(child)
    finally:
        parent.removeHandler(handler)


@pytest.mark.multiprocess
@pytest.mark.parametrize(
    "configuration",
    [
        "logging.getLogger('kdist').setLevel(logging.ERROR)",
        "logging.disable(logging.INFO)",
    ],
)
def test_a_program_that_quiets_kdist_sees_none_of_it(tmp_path: Path, configuration: str) -> None:
    prelude = (
        f"import logging\n{configuration}\n"
        "import kdist._log\nkdist._log.FIRST_SECONDS = kdist._log.REPEAT_SECONDS = 0.1\n"
    )
    with Spawned(tmp_path) as spawned:
        # A control with the same cadence and no configuration shows its lines meanwhile.
        control = spawned.start(
            program("import kdist._log\nkdist._log.FIRST_SECONDS = 0.1\n"),
            job_env(1, 2, free_port()),
        )
        quiet = spawned.start(program(prelude), job_env(1, 2, free_port()))
        assert control.wait_for_stderr("kdist: process 1 of 2: waiting", FIRST_LINE_BOUND_SECONDS)
        assert not quiet.wait_for_stderr("waiting", 1.0), quiet.stderr()


@pytest.mark.parametrize(
    "configuration",
    [
        "import orbax.checkpoint",  # absl's logging.basicConfig(): a root handler, at WARNING
        "logging.basicConfig(level=logging.WARNING)",
    ],
)
def test_a_root_logger_at_warning_does_not_hide_kdists_lines(configuration: str) -> None:
    """Importing Orbax (absl configures the root logger) or a program's own basicConfig at
    WARNING would drop kdist's INFO records: the lines a user must see (where a job resumed,
    the agreed stop) go to stderr instead. Only kdist's own logger quiets them."""
    if configuration.startswith("import orbax") and importlib.util.find_spec("orbax") is None:
        pytest.skip("orbax-checkpoint is not installed (pip install 'kdist[backup]')")
    result = run_python(
        f"import logging\n{configuration}\nimport kdist._log\n"
        "assert logging.root.handlers, 'the root logger is configured'\n"
        "kdist._log.say('BackupAndRestore resumes from /b (a job of 2 processes): step 12')\n"
        "logging.getLogger('kdist').setLevel(logging.WARNING)\n"
        "kdist._log.say('quieted by the program')\n",
        env=clean_env(1),
    )
    assert result.returncode == 0, result.describe()
    assert "kdist: BackupAndRestore resumes from /b" in result.stderr, result.describe()
    assert "quieted by the program" not in result.stderr


@pytest.mark.multiprocess
def test_a_program_that_configured_logging_gets_the_lines_as_kdist_records(
    tmp_path: Path,
) -> None:
    prelude = (
        "import logging\nlogging.basicConfig(level=logging.INFO, format='%(name)s|%(message)s')\n"
        "import kdist._log\nkdist._log.FIRST_SECONDS = kdist._log.REPEAT_SECONDS = 0.1\n"
    )
    with Spawned(tmp_path) as spawned:
        worker = spawned.start(program(prelude), job_env(1, 2, free_port()))
        expected = "kdist|process 1 of 2: waiting for the coordinator"
        assert worker.wait_for_stderr(expected, FIRST_LINE_BOUND_SECONDS), worker.stderr()
        assert "kdist: process 1 of 2" not in worker.stderr()  # not written twice
