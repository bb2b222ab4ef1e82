"""kdist under a real Slurm: scripts/slurm.sh's single-node cluster (slurm-wlm 22.05, munge,
no cgroups, loopback only), real srun steps and sbatch jobs, real scancel, time limits
and requeues.

What a real Slurm adds to the hand-set-variable tests (tests/clusters/test_detection.py, which
cover versions and layouts one node cannot): the variables srun really sets, the signals
scancel, a time limit and a requeue really send, and when. Every task is a real process
on JAX's CPU backend; every wait is bounded; each test cancels what it submitted.

The figures (scancel to every task gone, next to KillWait; when a time limit's signal
arrived) are printed: `pytest -m slurm -s tests/clusters/test_slurm.py` shows them.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from helpers.slurm_cluster import Cluster
from helpers.slurm_events import (
    KERAS_BATCHES,
    STEP_SECONDS,
    WORKER,
    assert_resumed_as_uninterrupted,
    assert_stopped_together,
    event,
    events,
    expected_total,
    figure,
    keras_batch_script,
    keras_env,
    keras_report,
    run_keras_reference,
    started_at,
    submit,
    task_files,
    task_output,
    wait_events,
    wait_gone,
    wait_reports,
)
from helpers.support import KDIST_SCRIPT, json_objects

pytestmark = pytest.mark.slurm

HOST = os.uname().nodename


# --- starting -----------------------------------------------------------------------------


@pytest.mark.parametrize("options", [["-n2"], ["-n3", "--overcommit"]], ids=["n2", "n3"])
def test_srun_alone_configures_the_job(slurm: Cluster, tmp_path: Path, options: list[str]) -> None:
    tasks = int(options[0][2:])
    env = slurm.env(SLURM_TEST_MODE="report", SLURM_TEST_DIR=str(tmp_path))
    with slurm.jobs() as jobs:
        result = slurm.srun(
            jobs.new(),
            [sys.executable, WORKER],
            env=env,
            options=[*options, *task_files(tmp_path)],
            timeout=STEP_SECONDS,
        )
    assert result.returncode == 0, (result.stderr, [task_output(tmp_path, i) for i in range(tasks)])
    reports = [json_objects(task_output(tmp_path, i)[0])[-1] for i in range(tasks)]
    port = 61440 + int(reports[0]["job_id"]) % 4096  # as JAX derives it
    for task, report in enumerate(reports):
        assert report["process_id"] == task == int(report["slurm_procid"])
        assert report["num_processes"] == tasks
        assert report["scheduler"] == "slurm"
        assert report["coordinator"] == f"localhost:{port}"
        assert report["devices"] == 2 * tasks and report["local_devices"] == 2
        sources = report["sources"]
        assert sources["job_addresses"] == "slurm (SLURM_STEP_NODELIST, SLURM_JOB_ID)"
        assert sources["num_processes"] == "slurm (SLURM_STEP_NUM_TASKS)"
        assert sources["process_id"] == "slurm (SLURM_PROCID)"
        assert (report["restart_count"], sources["restart_count"]) == (0, "default")


def test_kdist_doctor_under_srun(slurm: Cluster, tmp_path: Path) -> None:
    with slurm.jobs() as jobs:
        result = slurm.srun(
            jobs.new(),
            [str(KDIST_SCRIPT), "doctor", "--json"],
            env=slurm.env(),
            options=["-n2", *task_files(tmp_path)],
            timeout=STEP_SECONDS,
        )
    assert result.returncode == 0, result.stderr
    for task in range(2):
        report = json.loads(task_output(tmp_path, task)[0])
        assert report["ok"] is True, report["error"]
        assert report["scheduler"] == "slurm"
        config = report["config"]
        assert (config["process_id"], config["num_processes"]) == (task, 2)
        assert config["sources"]["process_id"] == "slurm (SLURM_PROCID)"
        assert config["restart_count"] == 0
        slurm_report = next(d for d in report["detectors"] if d["name"] == "slurm")
        assert slurm_report["values"]["process_id"]["value"] == str(task)


# --- failing and contradicting --------------------------------------------------------------


def test_a_task_that_raises_is_named_by_the_other_at_once(slurm: Cluster, tmp_path: Path) -> None:
    env = slurm.env(SLURM_TEST_MODE="fail", SLURM_TEST_WHO="1", SLURM_TEST_DIR=str(tmp_path))
    with slurm.jobs() as jobs:
        result = slurm.srun(
            jobs.new(),
            [sys.executable, WORKER],
            env=env,
            options=["-n2", *task_files(tmp_path)],
            timeout=STEP_SECONDS,
        )
    ended = time.time()
    assert result.returncode != 0
    failing = event(tmp_path, 1, "failing")
    assert failing is not None, events(tmp_path, 1)
    line = (
        f"kdist: process 1 (host {HOST}, pid {failing['pid']}) failed first: RuntimeError: "
        "injected failure at step 20"
    )
    assert line in task_output(tmp_path, 0)[1], task_output(tmp_path, 0)
    seconds = ended - float(failing["time"])  # srun's own exit included
    figure(f"a task raised: the step ended {seconds:.2f} s later, the other task naming it")
    assert seconds < 10


CONTRADICTION = (
    '{variable}="{mine}" (from the environment) contradicts {theirs}="{value}" (detected: '
    "slurm): this process takes its other settings ({others}) from slurm"
)


@pytest.mark.parametrize("setting", ["num_processes", "process_id"])
def test_a_value_that_contradicts_slurm_is_named_in_every_task_at_once(
    slurm: Cluster, tmp_path: Path, setting: str
) -> None:
    code = "import kdist\nkdist.initialize()\n"
    if setting == "num_processes":
        env = slurm.env(KERAS_DISTRIBUTION_NUM_PROCESSES="3")
        command = [sys.executable, "-c", code]
    else:
        env = slurm.env()
        # Each task claims the other's id.
        command = [
            "bash",
            "-c",
            f'KERAS_DISTRIBUTION_PROCESS_ID=$((1 - SLURM_PROCID)) exec {sys.executable} -c "$0"',
            code,
        ]
    started = time.monotonic()
    with slurm.jobs() as jobs:
        result = slurm.srun(
            jobs.new(), command, env=env, options=["-n2", *task_files(tmp_path)], timeout=120
        )
    seconds = time.monotonic() - started
    assert result.returncode != 0
    for task in range(2):
        if setting == "num_processes":
            wanted = CONTRADICTION.format(
                variable="KERAS_DISTRIBUTION_NUM_PROCESSES",
                mine=3,
                theirs="SLURM_STEP_NUM_TASKS",
                value=2,
                others="job_addresses, process_id",
            )
        else:
            wanted = CONTRADICTION.format(
                variable="KERAS_DISTRIBUTION_PROCESS_ID",
                mine=1 - task,
                theirs="SLURM_PROCID",
                value=task,
                others="job_addresses, num_processes",
            )
        stderr = task_output(tmp_path, task)[1]
        assert f"kdist.ConfigError: {wanted}" in stderr, stderr
    figure(f"a contradicting {setting}: srun -n2 ended in {seconds:.2f} s (the deadline is 300 s)")
    assert seconds < 30


# --- stopping -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["scancel"], ["scancel", "--signal=TERM"]])
def test_scancel_stops_every_task_at_one_step_before_kill_wait(
    slurm: Cluster, tmp_path: Path, command: list[str]
) -> None:
    with slurm.jobs() as jobs:
        job_id = submit(
            slurm,
            jobs.new(),
            tmp_path,
            [],
            SLURM_TEST_STEPS="1000000",
            SLURM_TEST_SAVE_SECONDS="1",  # a checkpoint that takes a while
        )
        wait_events(tmp_path, "running", 2, STEP_SECONDS)
        pids = [int(event(tmp_path, i, "running")["pid"]) for i in range(2)]  # type: ignore[index]
        signalled = time.monotonic()
        slurm.run(*command, job_id)
        gone = wait_gone(pids, 3 * slurm.kill_wait)
        step = assert_stopped_together(tmp_path, 2)
        fields = slurm.wait_job(job_id, {"CANCELLED", "COMPLETED", "FAILED"}, STEP_SECONDS)
    figure(
        f"{' '.join(command)}: every task stopped at step {step}, saved (1 s) and was gone "
        f"{gone:.2f} s after the command (KillWait {slurm.kill_wait:g} s); job "
        f"{fields.get('JobState')}, exit {fields.get('ExitCode')}"
    )
    assert gone < slurm.kill_wait
    assert time.monotonic() - signalled < STEP_SECONDS
    stderr = (tmp_path / "batch.out").read_text()
    assert "asked to stop (SIGTERM); every process stops at step" in stderr, stderr


@pytest.mark.slow
def test_the_time_limit_itself_stops_every_task_at_one_step(slurm: Cluster, tmp_path: Path) -> None:
    # At the limit (checked every ~30 s, so up to 30 s after it) slurmstepd sends each task
    # SIGTERM, SIGCONT and SIGTERM again within milliseconds, then SIGKILL after KillWait:
    # one stop, which the tasks must not take for a second one ("now").
    with slurm.jobs() as jobs:
        job_id = submit(
            slurm,
            jobs.new(),
            tmp_path,
            ["--time=1"],
            SLURM_TEST_STEPS="1000000",
            SLURM_TEST_SAVE_SECONDS="1",
        )
        wait_events(tmp_path, "running", 2, STEP_SECONDS)
        pids = [int(event(tmp_path, i, "running")["pid"]) for i in range(2)]  # type: ignore[index]
        started = started_at(slurm.job(job_id))
        wait_events(tmp_path, "stopped", 2, 120)
        wait_gone(pids, 3 * slurm.kill_wait)
        gone = time.time()
        step = assert_stopped_together(tmp_path, 2)
        seen = min(float(event(tmp_path, i, "stopped")["stop_seen"]) for i in range(2))  # type: ignore[arg-type]
        fields = slurm.wait_job(job_id, {"TIMEOUT"}, STEP_SECONDS)
    batch = (tmp_path / "batch.out").read_text()
    assert "DUE TO TIME LIMIT" in batch and "a second time" not in batch, batch
    figure(
        f"--time=1: SIGTERM reached should_stop {seen - started:.0f} s into the job (the limit "
        f"is 60 s); every task stopped at step {step}, saved (1 s) and was gone "
        f"{gone - seen:.2f} s after it (KillWait {slurm.kill_wait:g} s); job {fields['JobState']}"
    )
    assert gone - seen < slurm.kill_wait


def test_a_time_limit_signal_stops_the_tasks_and_the_requeued_job_resumes(
    slurm: Cluster, tmp_path: Path
) -> None:
    # --signal=USR1@50 (without B:, so every job step's tasks get it): Slurm checks time
    # limits every ~30 s and sends it at the first check less than N + 30 s before the
    # limit, so between 40 and 70 s into this 120 s job: after the tasks' start even on a
    # busy machine. The first run's steps are slow enough (600 x 0.2 s) that it always
    # comes before the last one.
    steps = 600
    with slurm.jobs() as jobs:
        job_id = submit(
            slurm,
            jobs.new(),
            tmp_path,
            ["--time=2", "--signal=USR1@50", "--requeue"],
            KDIST_STOP_SIGNALS="SIGTERM,SIGUSR1",
            SLURM_TEST_STEPS=str(steps),
            SLURM_TEST_STEP_SECONDS="0.2",
            REQUEUE_UNFINISHED="1",
        )
        wait_events(tmp_path, "running", 2, STEP_SECONDS)
        started = started_at(slurm.job(job_id))
        wait_events(tmp_path, "stopped", 2, 120)
        step = assert_stopped_together(tmp_path, 2)
        seen = min(float(event(tmp_path, i, "stopped")["stop_seen"]) for i in range(2))  # type: ignore[arg-type]
        # The batch script requeues the unfinished job; it runs again from the saved step.
        slurm.start_now(job_id, STEP_SECONDS)
        wait_events(tmp_path, "finished", 2, STEP_SECONDS, run=1)
        fields = slurm.wait_job(job_id, {"COMPLETED", "FAILED"}, STEP_SECONDS)
    batch = (tmp_path / "batch.out").read_text()
    assert "asked to stop (SIGUSR1); every process stops at step" in batch, batch
    for i in range(2):
        resumed = event(tmp_path, i, "resumed", run=1)
        assert resumed is not None and resumed["step"] == step, events(tmp_path, i)
        result = json.loads((tmp_path / f"result-{i}.json").read_text())
        assert result["total"] == expected_total(steps, 2)
    assert fields["Restarts"] == "1"
    figure(
        f"--time=2 --signal=USR1@50: SIGUSR1 reached should_stop {seen - started:.0f} s into "
        f"the job ({120 - (seen - started):.0f} s before the limit); both tasks stopped at step "
        f"{step}; the requeued run resumed there and ended with the uninterrupted total"
    )


def test_a_requeued_job_resumes_and_ends_with_the_uninterrupted_result(
    slurm: Cluster, tmp_path: Path
) -> None:
    # scontrol requeue of a running job (what preemption with PreemptMode=REQUEUE does):
    # Slurm ends the job as scancel does (SIGTERM, KillWait, SIGKILL) and queues it again
    # with SLURM_RESTART_COUNT=1.
    steps = 400
    with slurm.jobs() as jobs:
        job_id = submit(
            slurm,
            jobs.new(),
            tmp_path,
            ["--requeue"],
            SLURM_TEST_STEPS=str(steps),
            SLURM_TEST_STEP_SECONDS="0.1",  # 40 s uninterrupted: the requeue comes first
        )
        wait_events(tmp_path, "running", 2, STEP_SECONDS)
        pids = [int(event(tmp_path, i, "running")["pid"]) for i in range(2)]  # type: ignore[index]
        slurm.run("scontrol", "requeue", job_id)
        gone = wait_gone(pids, 3 * slurm.kill_wait)
        step = assert_stopped_together(tmp_path, 2)
        slurm.start_now(job_id, STEP_SECONDS)
        wait_events(tmp_path, "finished", 2, STEP_SECONDS, run=1)
        fields = slurm.wait_job(job_id, {"COMPLETED", "FAILED"}, STEP_SECONDS)
    for i in range(2):
        resumed = event(tmp_path, i, "resumed", run=1)
        assert resumed is not None, events(tmp_path, i)
        assert resumed["step"] == step
        # The restart count reaches cluster_spec(), with its source.
        assert resumed["restart_count_source"] == "slurm (SLURM_RESTART_COUNT)"
        result = json.loads((tmp_path / f"result-{i}.json").read_text())
        assert result == {"total": expected_total(steps, 2), "steps": steps}
    assert fields["Restarts"] == "1"
    figure(
        f"scontrol requeue: every task stopped at step {step} and was gone {gone:.2f} s later "
        f"(KillWait {slurm.kill_wait:g} s); the second run (restart_count 1) resumed there"
    )
    assert gone < slurm.kill_wait


# --- the Keras main job: kdist.BackupAndRestore under a time limit and a requeue -----------


@pytest.mark.slow
def test_the_keras_job_saves_at_the_time_limit_signal_and_the_requeued_job_ends_as_uninterrupted(
    slurm: Cluster, tmp_path: Path
) -> None:
    # kdist.BackupAndRestore in model.fit, --signal=USR1@30 with KDIST_STOP_SIGNALS: every
    # task saves at the agreed batch and stops; the requeued run (SLURM_RESTART_COUNT=1)
    # resumes at the next batch and ends with the weights of a fit that was never stopped.
    # The first run's batches take 3 s (48 x 3 s, longer than the 120 s limit). Slurm sends
    # --signal=USR1@30 at its first time-limit check (every ~30 s) less than 60 s before the
    # limit: 60 to 90 s into the job, after the imports and kdist.initialize even on a busy
    # machine (before them, its default action would kill the task; with --time=1 it came 22 s
    # in, and on a busy machine before kdist.initialize).
    reference_dir = tmp_path / "reference"
    reference_dir.mkdir()
    with slurm.jobs() as jobs:
        expected = run_keras_reference(slurm, jobs.new(), reference_dir, ["-n2"], STEP_SECONDS)
        job_id = slurm.sbatch(
            jobs.new(),
            keras_batch_script(tmp_path),
            env=slurm.env(
                **keras_env(tmp_path),
                SLURM_TEST_DIR=str(tmp_path),
                BACKUP_DIR=str(tmp_path / "backup"),
                BACKUP_SAVE_FREQ="epoch",
                KDIST_STOP_SIGNALS="SIGTERM,SIGUSR1",
            ),
            options=[
                "-n2",
                f"--output={tmp_path}/batch.out",
                "--open-mode=append",
                "--time=2",
                "--signal=USR1@30",
                "--requeue",
            ],
        )
        wait_reports(tmp_path, "run0", 2 * STEP_SECONDS)
        first = [keras_report(tmp_path, i, "run0") for i in range(2)]
        slurm.start_now(job_id, STEP_SECONDS)
        fields = slurm.wait_job(job_id, {"COMPLETED", "FAILED"}, 2 * STEP_SECONDS)
        second = [keras_report(tmp_path, i, "run1") for i in range(2)]
    step = assert_resumed_as_uninterrupted(tmp_path, first, second, expected, fields)
    total = KERAS_BATCHES
    ends, started = first[0]["batch_ends"], first[0]["marks"]
    assert isinstance(ends, list) and isinstance(started, dict)
    stopped_after = ends[step - 1] - started["started"]
    figure(
        f"Keras fit with kdist.BackupAndRestore, --time=2 --signal=USR1@30: both tasks saved "
        f"at batch {step} of {total} and stopped ({stopped_after:.0f} s after task 0 started); "
        f"the requeued run resumed at batch {step + 1} and ended with the uninterrupted "
        f"weights and optimizer state"
    )
