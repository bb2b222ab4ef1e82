"""kdist.BackupAndRestore across real processes: stopped by SIGTERM and resumed, resumed
on other job shapes and layouts, killed in the middle of a save, one writer per kdist
file, and Keras's own callback beside it.

Every job is 2 processes x 2 CPU devices on loopback (a resumed one: 1 x 4, 4 x 1, 1 x 1
too), real jax.distributed, real Keras on its JAX backend (tests/programs/keras_backup.py:
a Dense-Dropout-Dense model with Adam, 16 batches per epoch, 3 epochs). A job that is
stopped is started again by the test (a second run of the same command), or by
`kdist launch --max-restarts` (the launcher's own restart).
Every wait is bounded by JOB_SECONDS.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.keras_backup_jobs import (
    JOB_SECONDS,
    SCRIPT,
    SEED,
    assert_same_training_state,
    finish,
    run_job,
    start_job,
    wait_until,
)
from helpers.launched import Launcher, attempt_rows
from helpers.support import (
    NEEDS_KERAS,
    NEEDS_ORBAX,
    Finished,
    Running,
    Spawned,
    clean_env,
)

pytestmark = [pytest.mark.multiprocess, NEEDS_KERAS, NEEDS_ORBAX]

STEPS_PER_EPOCH, EPOCHS = 16, 3


def steps_of(process: Running) -> int:
    """The last "step N" the process printed (0 before its first batch)."""
    lines = [line for line in process.stdout().splitlines() if line.startswith("step ")]
    return int(lines[-1].split()[1]) if lines else 0


def reports_of(results: list[Finished], returncode: int | None = 0) -> list[dict[str, Any]]:
    for result in results:
        if returncode is not None:
            assert result.returncode == returncode, result.describe()
    return [result.report() for result in results]


_references: dict[str, list[dict[str, Any]]] = {}


@pytest.fixture
def reference(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The uninterrupted run of a distribution (with SEED, no backup), made once."""

    def get(dist: str) -> list[dict[str, Any]]:
        if dist not in _references:
            directory = tmp_path_factory.mktemp(f"reference-{dist}")
            env = {"BACKUP_DIR": str(directory / "unused"), "BACKUP_IMPL": "none"}
            env.update(BACKUP_DIST=dist, BACKUP_SEED=SEED)
            _references[dist] = reports_of(run_job(directory, env))
        return _references[dist]

    return get


# --- stopped by a signal, resumed at the next batch ------------------------------------------


@pytest.mark.parametrize("dist", ["dp", "mp_across"])
def test_a_job_stopped_by_sigterm_mid_epoch_resumes_with_the_uninterrupted_weights(
    tmp_path: Path, reference: Any, dist: str
) -> None:
    """SIGTERM to a random process at a random batch of the middle epoch: every process
    saves at the agreed step and stops; the job started again (without the program's
    seed: everything random comes from the backup) ends bit for bit as the run that was
    never stopped. mp_across: each process holds half of each kernel (the "model" axis
    across the processes), which Keras's own callback cannot save at all."""
    expected = reference(dist)
    backup_dir = tmp_path / "backup"
    env = {"BACKUP_DIR": str(backup_dir), "BACKUP_DIST": dist, "BACKUP_SAVE_FREQ": "epoch"}
    target = random.randint(STEPS_PER_EPOCH + 1, 2 * STEPS_PER_EPOCH - 2)
    victim = random.randrange(2)
    (tmp_path / "first").mkdir()
    with Spawned(tmp_path / "first") as spawned:
        job = start_job(spawned, {**env, "BACKUP_SEED": SEED, "BACKUP_STEP_SLEEP": "0.02"})
        wait_until(job, lambda: steps_of(job[0]) >= target, f"step {target}")
        os.kill(job[victim].pid, signal.SIGTERM)
        first = reports_of(finish(job), returncode=128 + signal.SIGTERM)  # an agreed stop
    stopped = {report["stopped_step"] for report in first}
    assert len(stopped) == 1, first
    step = stopped.pop()
    assert target <= step < EPOCHS * STEPS_PER_EPOCH, (target, step)
    assert [report["iterations"] for report in first] == [step, step]
    latest = json.loads((backup_dir / "latest.json").read_text())
    assert latest["backup"] == f"step-{step:09d}"
    saved = backup_dir / latest["backup"]
    assert sorted(p.name for p in saved.iterdir()) == [
        "host-00000.json",
        "host-00001.json",
        "manifest.json",
        "state",
    ]  # committed: each process's host file, the manifest, Orbax's arrays

    second = reports_of(run_job(tmp_path / "second", env))
    for report in second:
        assert report["restored_step"] == step
        assert report["iterations"] == EPOCHS * STEPS_PER_EPOCH  # no batch trained twice
        assert report["backup_dir_exists"] is False  # removed once training finished
    for pid in (0, 1):
        assert_same_training_state(expected[pid], second[pid])
    # The epochs after the stop report the uninterrupted losses, the resumed one included.
    resumed = EPOCHS - step // STEPS_PER_EPOCH
    assert second[0]["loss"] == expected[0]["loss"][-resumed:]


def logged_report(logs: Path, attempt: int, process_id: int) -> dict[str, Any]:
    """The JSON report of one process of one attempt, from `kdist launch --log-dir`."""
    log = logs / f"attempt-{attempt}" / f"process-{process_id}.log"
    reports = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert len(reports) == 1, log.read_text()[-3000:]
    return reports[0]


@pytest.mark.parametrize("dist", ["dp", "mp_across"])
def test_under_kdist_launch_a_sigterm_mid_epoch_is_restarted_and_ends_as_uninterrupted(
    tmp_path: Path, reference: Any, dist: str
) -> None:
    """The launcher does the restart: `kdist launch -n 2 --devices-per-process 2
    --max-restarts 1`, SIGTERM to one of its processes at a random batch of the middle
    epoch. Attempt 0 stops at one agreed step (every process exits 143), attempt 1
    (restart_count 1, without the program's seed) starts warm (each process in the spare
    made during attempt 0: issue 54), resumes at that step, trains each remaining batch
    once and ends with the uninterrupted run's weights and optimizer state, bit for bit;
    the launcher exits 0 with one row per attempt."""
    expected = reference(dist)
    backup_dir, logs = tmp_path / "backup", tmp_path / "logs"
    env = clean_env(
        2,
        BACKUP_DIR=str(backup_dir),
        BACKUP_DIST=dist,
        BACKUP_SAVE_FREQ="epoch",
        BACKUP_SEED=SEED,  # attempt 0 only (the worker ignores it on a restart)
        BACKUP_STEP_SLEEP="0.02",
        KDIST_INIT_TIMEOUT=str(JOB_SECONDS // 2),
        KERAS_BACKEND="jax",
        KERAS_HOME="/tmp/kdist-test-keras-home",
    )
    target = random.randint(STEPS_PER_EPOCH + 1, 2 * STEPS_PER_EPOCH - 2)
    victim = random.randrange(2)
    args = ["-n", "2", "--devices-per-process", "2", "--max-restarts", "1"]
    launcher = Launcher([*args, "--log-dir", str(logs), "--", sys.executable, SCRIPT], env)
    try:
        launcher.wait_for(lambda: f"[0] step {target}" in launcher.stdout, timeout=JOB_SECONDS)
        os.kill(launcher.started_pids()[victim], signal.SIGTERM)
        assert launcher.wait(timeout=JOB_SECONDS) == 0, launcher.describe()
    finally:
        launcher.end()

    rows = attempt_rows(launcher)
    assert [row[:1] + row[2:3] for row in rows] == [["0", "143"], ["1", "0"]], launcher.describe()
    started = [line for line in launcher.stderr if "started 2 processes" in line]
    assert "warm" not in started[0] and "; warm: 0, 1 (spares" in started[1], launcher.describe()
    first = [logged_report(logs, 0, pid) for pid in (0, 1)]
    stopped = {report["stopped_step"] for report in first}
    assert len(stopped) == 1, first
    step = stopped.pop()
    assert target <= step < EPOCHS * STEPS_PER_EPOCH, (target, step)
    assert f"every process stopped at step {step}" in " ".join(rows[0]), launcher.describe()
    # Where the job stopped and where it went on from, on the console although the program
    # imports Orbax (absl configures the root logger at WARNING): issue 60.
    errors = "\n".join(launcher.stderr)
    assert f"BackupAndRestore saved step {step} to {backup_dir} at the agreed stop" in errors
    assert f"BackupAndRestore resumes from {backup_dir}" in errors, launcher.describe()
    for report in first:
        assert (report["restart_count"], report["restored_step"]) == (0, None)
        assert report["iterations"] == step

    second = [logged_report(logs, 1, pid) for pid in (0, 1)]
    for report in second:
        assert report["restart_count"] == 1
        assert report["restored_step"] == step
        assert report["stopped_step"] is None
        assert report["iterations"] == EPOCHS * STEPS_PER_EPOCH  # no batch trained twice
        assert report["backup_dir_exists"] is False
    for pid in (0, 1):
        assert_same_training_state(expected[pid], second[pid])
    resumed = EPOCHS - step // STEPS_PER_EPOCH
    assert second[0]["loss"] == expected[0]["loss"][-resumed:]


# --- resumed on another job shape or layout ------------------------------------------------------

STOP_AT = 20  # process 0 asks for a stop after this batch (epoch 1, batch 4)
_stopped: dict[str, tuple[Path, list[dict[str, Any]]]] = {}


@pytest.fixture
def stopped_backup(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A 2 x 2 job of a distribution stopped (kdist.request_stop) after step STOP_AT, made
    once: (its backup directory, its reports: the weights as saved)."""

    def get(dist: str) -> tuple[Path, list[dict[str, Any]]]:
        if dist not in _stopped:
            directory = tmp_path_factory.mktemp(f"stopped-{dist}")
            env = {
                "BACKUP_DIR": str(directory / "backup"),
                "BACKUP_DIST": dist,
                "BACKUP_SAVE_FREQ": "false",  # only at the stop
                "BACKUP_SEED": SEED,
                "BACKUP_STOP_AT": str(STOP_AT),
            }
            reports = reports_of(run_job(directory / "run", env), returncode=None)
            steps = {report["stopped_step"] for report in reports}
            assert len(steps) == 1 and None not in steps, reports
            _stopped[dist] = (directory / "backup", reports)
        return _stopped[dist]

    return get


def resumed_on(
    tmp_path: Path, backup: Path, dist: str, num_processes: int, devices: int, **env: str
) -> list[Finished]:
    """The backup (a copy: training's end removes it) resumed by a job of that shape."""
    copy = tmp_path / "backup"
    shutil.copytree(backup, copy)
    env = {"BACKUP_DIR": str(copy), "BACKUP_DIST": dist, "BACKUP_REPORT_RESTORED": "1", **env}
    return run_job(tmp_path / "job", env, num_processes=num_processes, devices=devices)


def assert_restored_as_saved(saved: dict[str, Any], resumed: dict[str, Any]) -> None:
    """Every weight and optimizer variable as the fit began equals the saved one (as the
    stopped job ended: it stopped at the step it saved), bit for bit."""
    for part in ("weights", "optimizer"):
        assert list(saved[part]) == list(resumed[f"restored_{part}"])
        for name, values in saved[part].items():
            np.testing.assert_array_equal(
                np.array(resumed[f"restored_{part}"][name]), np.array(values), name
            )


@pytest.mark.parametrize(
    ("num_processes", "devices"), [(1, 4), (4, 1), (1, 1)], ids=["1x4", "4x1", "1x1"]
)
def test_a_backup_of_a_2x2_job_resumes_on_another_shape(
    tmp_path: Path, stopped_backup: Any, num_processes: int, devices: int
) -> None:
    """DataParallel, saved by 2 processes x 2 devices at the agreed stop: a job of another
    shape restores every variable onto its own devices (weights and optimizer state
    equal to what was saved), resumes at the next global step and trains to the end (16
    batches per epoch in every shape: each process feeds 4 rows a batch)."""
    backup, saved = stopped_backup("dp")
    step = saved[0]["stopped_step"]
    reports = reports_of(resumed_on(tmp_path, backup, "dp", num_processes, devices))
    assert len(reports) == num_processes
    for report in reports:
        assert report["restored_step"] == step
        assert report["iterations_at_start"] == step
        assert report["iterations"] == EPOCHS * STEPS_PER_EPOCH  # trained on to the end
        assert report["backup_dir_exists"] is False
        assert_restored_as_saved(saved[0], report)


def test_a_2x2_model_parallel_backup_resumes_in_data_parallel(
    tmp_path: Path, stopped_backup: Any
) -> None:
    """mp_across (each process holds half of each kernel) saved; resumed by a 2 x 2 job
    with DataParallel (every kernel whole on every device)."""
    backup, saved = stopped_backup("mp_across")
    step = saved[0]["stopped_step"]
    reports = reports_of(resumed_on(tmp_path, backup, "dp", 2, 2))
    for report in reports:
        assert report["restored_step"] == step
        assert report["iterations"] == EPOCHS * STEPS_PER_EPOCH
        assert_restored_as_saved(saved[0], report)


def test_a_backup_of_another_model_is_refused_naming_the_difference(
    tmp_path: Path, stopped_backup: Any
) -> None:
    backup, saved = stopped_backup("dp")
    step = saved[0]["stopped_step"]
    ended = resumed_on(tmp_path, backup, "dp", 2, 2, BACKUP_UNITS="32")
    assert all(r.returncode not in (0, None) for r in ended), [r.describe() for r in ended]
    report = ended[0].report()
    where = tmp_path / "backup" / f"step-{step:09d}"
    assert report["error"].startswith(
        f"BackupMismatchError: The backup in {where} (step {step}): 'sequential/dense_in/kernel' "
        "(trainable variable 0) was saved as float32[8, 16]; this model's "
        "'sequential/dense_in/kernel' (trainable variable 0) is float32[8, 32]. The backup was "
        "written for another model"
    ), report["error"]
    assert (where / "manifest.json").is_file()  # refused, kept


# --- killed in the middle of a save ------------------------------------------------------------


def killed_mid_save(
    directory: Path, env: Mapping[str, str], knob: str, victim: int, marker: str
) -> list[Finished]:
    """A job of two with `knob` set, its process `victim` SIGKILLed once its output says
    `marker` (the save of step 8 under way); both processes' ends, the other's asserted."""
    directory.mkdir()
    with Spawned(directory) as spawned:
        job = start_job(spawned, {**env, "BACKUP_SEED": SEED, knob: str(victim)})
        wait_until(job, lambda: marker in job[victim].stdout(), marker)
        os.kill(job[victim].pid, signal.SIGKILL)
        killed = finish(job)
    assert killed[victim].returncode == -signal.SIGKILL
    other = killed[1 - victim]
    assert other.returncode not in (0, None), other.describe()  # ended with the job
    return killed


def assert_the_next_run_resumes_from_step_4(
    directory: Path, env: Mapping[str, str], expected: list[dict[str, Any]]
) -> None:
    """The next run resumes from the backup of step 4 and ends as the uninterrupted run."""
    second = reports_of(run_job(directory, env))
    for report in second:
        assert report["restored_step"] == 4
        assert report["iterations"] == EPOCHS * STEPS_PER_EPOCH
    for pid in (0, 1):
        assert_same_training_state(expected[pid], second[pid])


def test_a_kill_between_the_shard_files_and_the_commit_leaves_the_previous_backup(
    tmp_path: Path, reference: Any
) -> None:
    """Process 0 is SIGKILLed after every process wrote its files of step 8 (Orbax's
    arrays complete) and before it commits them (its commit, in the background, hangs
    there); the job ends, and the next run resumes from step 4."""
    backup_dir = tmp_path / "backup"
    env = {"BACKUP_DIR": str(backup_dir), "BACKUP_SAVE_FREQ": "4"}
    killed_mid_save(tmp_path / "first", env, "BACKUP_HANG_COMMIT", 0, "committing")
    assert json.loads((backup_dir / "latest.json").read_text())["backup"] == "step-000000004"
    leftover = backup_dir / "incoming-000000008"
    assert sorted(p.name for p in leftover.iterdir()) == [
        "host-00000.json",
        "host-00001.json",
        "state",
    ]  # Orbax's arrays of step 8 complete, no manifest: never committed, never read
    assert_the_next_run_resumes_from_step_4(tmp_path / "second", env, reference("dp"))


def test_a_sigkill_while_orbax_writes_a_backup_leaves_the_previous_one_whole(
    tmp_path: Path, reference: Any
) -> None:
    """Process 1 is SIGKILLed while Orbax writes the backup of step 8 (its write stalls
    in Orbax's background thread, among the write's own futures: the checkpoint is not
    finalized, process 0 waits for it at Orbax's barrier); the job ends, latest.json
    still names step 4, whole, and the next run resumes from it and ends as the run that
    was never stopped."""
    backup_dir = tmp_path / "backup"
    env = {"BACKUP_DIR": str(backup_dir), "BACKUP_SAVE_FREQ": "4"}
    killed_mid_save(tmp_path / "first", env, "BACKUP_STALL_WRITE", 1, "orbax is writing")
    assert json.loads((backup_dir / "latest.json").read_text())["backup"] == "step-000000004"
    previous = backup_dir / "step-000000004"
    assert sorted(p.name for p in previous.iterdir()) == [
        "host-00000.json",
        "host-00001.json",
        "manifest.json",
        "state",
    ]
    leftover = sorted(p.name for p in (backup_dir / "incoming-000000008").iterdir())
    # Orbax's folder still has its temporary name: the write never completed.
    assert "state" not in leftover and "manifest.json" not in leftover, leftover
    assert any(name.startswith("state.orbax-checkpoint-tmp") for name in leftover), leftover
    assert_the_next_run_resumes_from_step_4(tmp_path / "second", env, reference("dp"))


# --- one writer per file; removed once -----------------------------------------------------------


def writers(reports: list[dict[str, Any]], kinds: tuple[str, ...]) -> dict[str, set[int]]:
    """Each path under the backup directory, with the processes that did `kinds` to it."""
    found: dict[str, set[int]] = {}
    for pid, report in enumerate(reports):
        for _, kind, path in report["audit"]:
            if kind in kinds:
                found.setdefault(path, set()).add(pid)
    return found


def times(report: dict[str, Any], kinds: tuple[str, ...], path: str | None = None) -> list[float]:
    return [t for t, kind, p in report["audit"] if kind in kinds and path in (None, p)]


def test_difference_one_writer_per_file_and_one_removal_where_keras_s_own_fails(
    tmp_path: Path,
) -> None:
    """One epoch; process 1 is 3 s late at the end of training (before the backup's own
    end-of-epoch hook). kdist: each file has one writer, and process 0 removes the
    directory once, after process 1 is done with it. Keras's own: both processes write
    the same file; process 0 opens it first and is still saving into it (its save waits
    for process 1) when process 1 opens it too, and HDF5's file lock fails process 1:
    the job ends with an error instead of a backup."""
    common = {"BACKUP_EPOCHS": "1", "BACKUP_SLOW_END": "1:3"}
    ours_dir, theirs_dir = tmp_path / "kdist-backup", tmp_path / "keras-backup"
    ours = reports_of(
        run_job(
            tmp_path / "kdist", {**common, "BACKUP_DIR": str(ours_dir), "BACKUP_SAVE_FREQ": "4"}
        )
    )
    theirs_ended = run_job(
        tmp_path / "keras", {**common, "BACKUP_DIR": str(theirs_dir), "BACKUP_IMPL": "keras"}
    )
    # kdist: one writer per kdist file (Orbax's, under state/, are Orbax's: each array's
    # shards written once, by a process holding them); process 0 alone renames and
    # removes, once at the end.
    written = {
        path: pids
        for path, pids in writers(ours, ("write",)).items()
        if "/state" not in path and not path.startswith(".kdist-probe-")
    }  # (each process's probe file, written and removed before the first step, is its own)
    assert written, ours
    assert all(len(pids) == 1 for pids in written.values()), written
    assert {p for p, pids in written.items() if pids == {1}} == {
        f"incoming-{step:09d}/host-00001.json" for step in (4, 8, 12, 16)
    }
    assert writers(ours, ("rename", "rmtree")) and all(
        pids == {0} for pids in writers(ours, ("rename", "rmtree")).values()
    )
    removals = times(ours[0], ("rmtree",), ".")
    assert len(removals) == 1
    assert removals[0] > max(times(ours[1], ("write", "mkdir")))  # after process 1's last
    assert not ours_dir.exists()

    # Keras's own: both processes open the same file, and the second one fails on HDF5's
    # lock, which process 0 holds (process 0 is then ended with the job, often before it
    # reports: only process 1's report is read).
    assert all(r.returncode not in (0, None) for r in theirs_ended), [
        r.describe() for r in theirs_ended
    ]
    late = theirs_ended[1].report()
    assert times(late, ("write",), "latest.weights.h5"), late["audit"]
    assert str(late["error"]).startswith("BlockingIOError"), late["error"]
    assert "unable to lock file" in str(late["error"]), late["error"]
