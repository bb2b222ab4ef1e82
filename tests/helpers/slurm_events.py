"""What the tasks of tests/programs/slurm_steps.py and keras_backup.py leave behind under a
real Slurm (event logs, saved states, per-task outputs, reports), the batch scripts that run
them, and the waits and checks on them; shared by tests/clusters/test_slurm.py (one node) and
tests/clusters/test_slurm_multinode.py (several).

Every wait has a deadline; the tasks' pids are this machine's (a multi-node cluster's nodes
are network namespaces, not pid namespaces), so a test sees them end.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.slurm_cluster import Cluster, Job
from helpers.support import PROGRAMS, json_objects

WORKER = str(PROGRAMS / "slurm_steps.py")
STEP_SECONDS = 90  # bounds one srun step or one run of a batch job; nothing is timed by it


def figure(text: str) -> None:
    print(f"\nslurm figure: {text}", file=sys.stderr)


def events(directory: Path, process_id: int) -> list[dict[str, object]]:
    path = directory / f"events-{process_id}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def event(directory: Path, process_id: int, name: str, run: int = 0) -> dict[str, object] | None:
    """Process `process_id`'s event `name` in the job's run `run` (its restart count)."""
    for record in events(directory, process_id):
        if record["event"] == name and record["restart_count"] == run:
            return record
    return None


def wait_events(
    directory: Path,
    name: str,
    tasks: int,
    timeout: float,
    run: int = 0,
    *,
    ended: Callable[[], str | None] | None = None,
) -> None:
    """Until every task logged `name`; fails at the deadline, or as soon as `ended` says
    what ended the tasks first (a step's exit status, a job's state)."""
    deadline = time.monotonic() + timeout
    while any(event(directory, i, name, run) is None for i in range(tasks)):
        assert time.monotonic() < deadline, (
            f"no {name!r} event from every task after {timeout} s: "
            f"{[events(directory, i) for i in range(tasks)]}"
        )
        why = ended() if ended is not None else None
        if why is not None and any(event(directory, i, name, run) is None for i in range(tasks)):
            pytest.fail(
                f"no {name!r} event from every task: {why}: "
                f"{[events(directory, i) for i in range(tasks)]}"
            )
        time.sleep(0.05)


def wait_gone(pids: list[int], timeout: float) -> float:
    """Seconds until none of `pids` runs any more (the tasks are slurmstepd's children)."""
    started = time.monotonic()
    while any(Path(f"/proc/{pid}").exists() for pid in pids):
        assert time.monotonic() - started < timeout, f"tasks {pids} still run after {timeout} s"
        time.sleep(0.01)
    return time.monotonic() - started


def task_output(directory: Path, task: int) -> tuple[str, str]:
    """Task `task`'s stdout and stderr, from srun --output/--error files."""
    return (
        (directory / f"task-{task}.out").read_text(errors="replace"),
        (directory / f"task-{task}.err").read_text(errors="replace"),
    )


TASK_FILES = ["--output={dir}/task-%t.out", "--error={dir}/task-%t.err"]


def task_files(directory: Path) -> list[str]:
    return [option.format(dir=directory) for option in TASK_FILES]


def started_at(fields: dict[str, str]) -> float:
    """A job's StartTime (Slurm writes local time, to the second) as a time.time() value."""
    return time.mktime(time.strptime(fields["StartTime"], "%Y-%m-%dT%H:%M:%S"))


def expected_total(steps: int, tasks: int) -> int:
    """The result of an uninterrupted run of slurm_steps.py."""
    return steps * (steps - 1) // 2 * tasks * (tasks + 1) // 2


BATCH_SCRIPT = """#!/bin/bash
# The batch script of the stop tests: one srun step of every task; a run that did not
# reach the last step is requeued (the job resumes from the state its tasks saved).
srun {python} {worker}
status=$?
echo "batch: srun exited with status $status (restart ${{SLURM_RESTART_COUNT:-0}})"
if [ ! -f "$SLURM_TEST_DIR/result-0.json" ] && [ -n "${{REQUEUE_UNFINISHED:-}}" ]; then
  scontrol requeue "$SLURM_JOB_ID"
fi
exit $status
"""


def batch_script(directory: Path) -> Path:
    path = directory / "job.sh"
    path.write_text(BATCH_SCRIPT.format(python=sys.executable, worker=WORKER))
    path.chmod(0o755)
    return path


def submit(slurm: Cluster, job: Job, directory: Path, options: list[str], **env: str) -> str:
    """sbatch of batch_script(): two tasks (`options` may spread them: -N2)."""
    return slurm.sbatch(
        job,
        batch_script(directory),
        env=slurm.env(SLURM_TEST_DIR=str(directory), **env),
        options=["-n2", f"--output={directory}/batch.out", "--open-mode=append", *options],
    )


def assert_stopped_together(directory: Path, tasks: int, run: int = 0) -> int:
    """Every task stopped at one step, saved it, and exited by itself; returns the step."""
    stopped = [event(directory, i, "stopped", run) for i in range(tasks)]
    assert None not in stopped, [events(directory, i) for i in range(tasks)]
    steps = {record["step"] for record in stopped if record}
    assert len(steps) == 1, stopped
    for i in range(tasks):
        saved = json.loads((directory / f"state-{i}.json").read_text())
        assert saved["next_step"] == steps.copy().pop()
        assert event(directory, i, "exited", run) is not None, events(directory, i)
    return int(steps.pop())


# --- the Keras main job: tests/programs/keras_backup.py, kdist.BackupAndRestore -------------

KERAS_WORKER = str(PROGRAMS / "keras_backup.py")
KERAS_BATCHES = 3 * 16  # keras_backup.py's default: 3 epochs of 16 batches
KERAS_BATCH_SCRIPT = """#!/bin/bash
# fit() with kdist.BackupAndRestore in every task. The first run's batches are slow
# ($FIRST_RUN_STEP_SLEEP s each, 3 by default: longer than the job's limit in all), so a
# time-limit signal lands mid-training. A run that stopped (a non-zero status: 128 + the stop
# signal) requeues the job once.
restart=${{SLURM_RESTART_COUNT:-0}}
if [ "$restart" = 0 ]; then export BACKUP_STEP_SLEEP=${{FIRST_RUN_STEP_SLEEP:-3}}; fi
srun --output="$SLURM_TEST_DIR/keras-%t-run$restart.out" \\
  --error="$SLURM_TEST_DIR/keras-%t-run$restart.err" {python} {worker}
status=$?
echo "batch: srun exited with status $status (restart $restart)"
if [ "$status" != 0 ] && [ "$restart" = 0 ]; then
  scontrol requeue "$SLURM_JOB_ID"
fi
exit $status
"""


def keras_batch_script(directory: Path) -> Path:
    path = directory / "keras-job.sh"
    path.write_text(KERAS_BATCH_SCRIPT.format(python=sys.executable, worker=KERAS_WORKER))
    path.chmod(0o755)
    return path


def keras_env(directory: Path) -> dict[str, str]:
    """keras_backup.py's settings for a run whose files go to `directory` (its seed: every
    run of a test, stopped or not, trains the same model)."""
    return {
        "KERAS_BACKEND": "jax",
        "KERAS_HOME": str(directory / "keras-home"),
        "BACKUP_SEED": "20261201",
    }


def run_keras_reference(
    slurm: Cluster,
    job: Job,
    directory: Path,
    options: list[str],
    timeout: float,
    *,
    tasks: int = 2,
) -> list[dict[str, object]]:
    """An uninterrupted fit (keras_backup.py without a backup) as one srun step with
    `options`, its outputs in `directory` (run "reference"): each task's report, what a
    stopped and resumed job must end with."""
    result = slurm.srun(
        job,
        [sys.executable, KERAS_WORKER],
        env=slurm.env(
            **keras_env(directory),
            BACKUP_IMPL="none",
            BACKUP_DIR=str(directory / "unused"),
            SLURM_TEST_DIR=str(directory),
        ),
        options=[
            *options,
            f"--output={directory}/keras-%t-reference.out",
            f"--error={directory}/keras-%t-reference.err",
        ],
        timeout=timeout,
    )
    assert result.returncode == 0, (result.stderr, job_outputs(directory, "reference", tasks))
    return [keras_report(directory, task, "reference", tasks) for task in range(tasks)]


def keras_report(directory: Path, task: int, run: str, tasks: int = 2) -> dict[str, object]:
    """The JSON line keras_backup.py prints last, from task `task`'s output of `run`."""
    out = directory / f"keras-{task}-{run}.out"
    found = json_objects(out.read_text()) if out.exists() else []
    assert found, job_outputs(directory, run, tasks)
    return found[-1]


def wait_reports(directory: Path, run: str, timeout: float, tasks: int = 2) -> None:
    """Until every task of `run` printed its last line (its report) and ended."""
    deadline = time.monotonic() + timeout
    for task in range(tasks):
        out = directory / f"keras-{task}-{run}.out"
        while not (out.exists() and out.read_text().rstrip().endswith("}")):
            if time.monotonic() >= deadline:
                pytest.fail(
                    f"no report in {out} after {timeout} s\n{job_outputs(directory, run, tasks)}"
                )
            time.sleep(0.1)


def job_outputs(directory: Path, run: str, tasks: int = 2) -> str:
    """The batch script's output and the tail of each task's output and errors in `run`."""
    parts = []
    names = [f"keras-{task}-{run}.{kind}" for task in range(tasks) for kind in ("out", "err")]
    for name in ["batch.out", *names]:
        path = directory / name
        text = path.read_text(errors="replace")[-2000:] if path.exists() else "(none)"
        parts.append(f"--- {name}:\n{text}")
    return "\n".join(parts)


def assert_resumed_as_uninterrupted(
    directory: Path,
    first: list[dict[str, object]],
    second: list[dict[str, object]],
    expected: list[dict[str, object]],
    fields: dict[str, str],
) -> int:
    """The first run stopped at one agreed batch on SIGUSR1, the requeued one resumed at the
    next and ended with the weights and optimizer state of `expected` (an uninterrupted
    run); returns the batch."""
    batch = (directory / "batch.out").read_text()
    errors = "".join(
        (directory / f"keras-{i}-run0.err").read_text(errors="replace") for i in range(len(first))
    )
    assert "asked to stop (SIGUSR1); every process stops at step" in errors, batch
    assert "batch: srun exited with status 0 (restart 1)" in batch, batch
    assert (fields["JobState"], fields["Restarts"]) == ("COMPLETED", "1"), fields
    stopped = {report["stopped_step"] for report in first}
    assert len(stopped) == 1 and None not in stopped, first
    step = stopped.pop()
    assert isinstance(step, int) and 0 < step < KERAS_BATCHES, (step, KERAS_BATCHES)
    for pid in range(len(first)):
        assert second[pid]["restored_step"] == step, second[pid]
        assert second[pid]["iterations"] == KERAS_BATCHES  # no batch trained twice
        for part in ("weights", "optimizer"):
            got, want = second[pid][part], expected[pid][part]
            assert isinstance(got, dict) and isinstance(want, dict)
            assert list(got) == list(want)
            for name, values in want.items():
                assert got[name] == values, (part, name)
    return step
