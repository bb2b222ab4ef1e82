"""When storage fails, across real processes: kdist.BackupAndRestore in 2-process jobs
(tests/programs/keras_backup.py, 2 processes x 2 CPU devices, loopback) whose backup
folder is read-only, a file, not writable by the user the processes run as, or fills up
mid-training, and whose backups are garbled.

The mounts (a read-only bind mount, a small tmpfs) are made in a private mount namespace
(`unshare --mount`, held by a sleeping process): every process of the job is started in it
(`nsenter`), the test reads and writes its files through /proc/<holder>/root, and nothing
is mounted on the machine itself; the namespace goes with its last process. The
non-root user is `nobody` (setpriv), in such a namespace too, where /root (mode 0700 on
this machine, and the Python under it) is replaced by a folder that user may enter.
These tests need root, and skip, saying so, without it.
Every wait is bounded by JOB_SECONDS.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from helpers.keras_backup_jobs import (
    JOB_SECONDS,
    SEED,
    assert_same_training_state,
    finish,
    run_job,
    start_job,
    wait_until,
)
from helpers.support import (
    NEEDS_KERAS,
    NEEDS_ORBAX,
    Finished,
    Spawned,
)

pytestmark = [pytest.mark.multiprocess, NEEDS_KERAS, NEEDS_ORBAX]

STEPS_PER_EPOCH, EPOCHS = 16, 3
NEEDS_ROOT = pytest.mark.skipif(
    os.geteuid() != 0, reason="mount namespaces and another user need root"
)


class MountNamespace:
    """A private mount namespace, held by a sleeping process until `close`."""

    def __init__(self) -> None:
        if shutil.which("unshare") is None or shutil.which("nsenter") is None:
            pytest.skip("unshare and nsenter (util-linux) are not installed")
        self.holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sleep", str(JOB_SECONDS * 4)]
        )
        own = os.readlink("/proc/self/ns/mnt")
        deadline = time.monotonic() + 30
        while True:
            try:
                if os.readlink(f"/proc/{self.holder.pid}/ns/mnt") != own:
                    break
            except OSError:
                pass
            if self.holder.poll() is not None or time.monotonic() > deadline:
                self.close()
                pytest.skip("unshare --mount failed: no mount namespaces here")
            time.sleep(0.01)

    def command(self, args: Sequence[str]) -> list[str]:
        """`args`, run in the namespace."""
        return ["nsenter", "-t", str(self.holder.pid), "-m", "--", *args]

    def run(self, *args: str) -> None:
        subprocess.run(self.command(args), check=True, timeout=60, capture_output=True)

    def path(self, path: Path) -> Path:
        """`path` as the namespace's processes see it, from outside the namespace."""
        return Path(f"/proc/{self.holder.pid}/root") / path.relative_to("/")

    def close(self) -> None:
        if self.holder.poll() is None:
            self.holder.kill()
        self.holder.wait(timeout=30)


@pytest.fixture
def namespace() -> Iterator[MountNamespace]:
    made = MountNamespace()
    try:
        yield made
    finally:
        made.close()


def steps_of(text: str) -> list[int]:
    return [int(line.split()[1]) for line in text.splitlines() if line.startswith("step ")]


def assert_named_before_any_step(ended: list[Finished], *texts: str) -> None:
    """Every process ended with an error (not 0, not a stop's 143) naming `texts` in its
    own output, having trained no batch."""
    for result in ended:
        assert result.returncode not in (0, None, 143), result.describe()
        assert steps_of(result.stdout) == [], result.describe()
        for text in texts:
            assert text in result.stderr, result.describe()


# --- the folder, checked before the first step ------------------------------------------------


@NEEDS_ROOT
def test_a_read_only_folder_is_named_before_any_step_in_every_process(
    tmp_path: Path, namespace: MountNamespace
) -> None:
    backup_dir = tmp_path / "backup"
    backup_dir.mkdir()
    namespace.run("mount", "--bind", str(backup_dir), str(backup_dir))
    namespace.run("mount", "-o", "remount,bind,ro", str(backup_dir))
    env = {"BACKUP_DIR": str(backup_dir), "BACKUP_SAVE_FREQ": "2"}
    ended = run_job(tmp_path / "job", env, namespace.command([]))
    assert_named_before_any_step(
        ended,
        "BackupStorageError",
        f"backup_dir {backup_dir} cannot be written ([Errno 30] Read-only file system",
    )
    assert list(backup_dir.iterdir()) == []


def test_a_file_where_the_folder_should_be_is_named_before_any_step_in_every_process(
    tmp_path: Path,
) -> None:
    backup_dir = tmp_path / "backup"
    backup_dir.write_text("a file")
    env = {"BACKUP_DIR": str(backup_dir), "BACKUP_SAVE_FREQ": "2"}
    ended = run_job(tmp_path / "job", env)
    assert_named_before_any_step(
        ended, "BackupStorageError", f"backup_dir {backup_dir} is not a folder: a file is there"
    )
    assert backup_dir.read_text() == "a file"


@NEEDS_ROOT
def test_a_folder_the_user_cannot_write_is_named_before_any_step_in_every_process(
    tmp_path: Path, namespace: MountNamespace
) -> None:
    """The processes run as `nobody`; the folder is root's (mode 0755)."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    shared = Path(tempfile.mkdtemp(prefix="kdist-test-unwritable-"))
    try:
        shared.chmod(0o755)
        backup_dir = shared / "backup"
        backup_dir.mkdir(mode=0o755)
        home = shared / "home"  # Keras's home, this user's
        home.mkdir()
        home.chmod(0o777)
        # /root (0700) holds this Python: in the namespace, a folder nobody may enter
        # holds the same Python (and nothing else of /root).
        root = shared / "root"
        (root / ".pyenv").mkdir(parents=True)
        root.chmod(0o755)
        if Path("/root/.pyenv").is_dir():
            namespace.run("mount", "--bind", "/root/.pyenv", str(root / ".pyenv"))
        namespace.run("mount", "--rbind", str(root), "/root")
        user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        env = {"BACKUP_DIR": str(backup_dir), "BACKUP_SAVE_FREQ": "2", "KERAS_HOME": str(home)}
        ended = run_job(tmp_path / "job", env, namespace.command(user))
        assert_named_before_any_step(
            ended,
            "BackupStorageError",
            f"backup_dir {backup_dir} cannot be written ([Errno 13] Permission denied",
            f"{backup_dir} belongs to uid 0 and this process runs as uid 65534",
        )
        assert list(backup_dir.iterdir()) == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)


# --- a disk that fills during training ----------------------------------------------------------


@NEEDS_ROOT
def test_a_disk_that_fills_mid_training_is_named_and_the_restart_resumes_from_the_last_whole(
    tmp_path: Path, namespace: MountNamespace
) -> None:
    """The backups' folder is a 16 MB tmpfs; once the backup of step 4 is committed, the
    test fills it. The next save fails with ENOSPC, named in every process with the
    folder; the job ends with an error status (not 0, not 143). Space freed, the same
    command resumes from the newest whole backup and trains to the end."""
    backup_dir = tmp_path / "backup"
    backup_dir.mkdir()
    namespace.run("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(backup_dir))
    seen = namespace.path(backup_dir)
    env = {
        "BACKUP_DIR": str(backup_dir),
        "BACKUP_SAVE_FREQ": "4",
        "BACKUP_SEED": SEED,
        "BACKUP_STEP_SLEEP": "0.05",
    }
    (tmp_path / "first").mkdir()
    with Spawned(tmp_path / "first") as spawned:
        job = start_job(spawned, env, namespace.command([]))

        def committed() -> bool:
            try:
                return json.loads((seen / "latest.json").read_text())["backup"] is not None
            except (OSError, ValueError):
                return False

        wait_until(job, committed, "a committed backup")
        with open(seen / "filler", "wb") as filler:  # the disk fills
            block = b"\0" * (1 << 20)
            try:
                while True:
                    filler.write(block)
                    filler.flush()
            except OSError:
                pass
        whole = json.loads((seen / "latest.json").read_text())["backup"]
        first = finish(job)
    for result in first:
        assert result.returncode not in (0, None, 143), result.describe()
        assert "No space left on device" in result.stderr, result.describe()
        assert str(backup_dir) in result.stderr, result.describe()
        assert max(steps_of(result.stdout)) < EPOCHS * STEPS_PER_EPOCH, result.describe()
    said = "BackupStorageError: kdist.BackupAndRestore: the save of"
    named = [r for r in first if said in r.stderr]
    assert named, [r.describe() for r in first]
    latest = json.loads((seen / "latest.json").read_text())
    assert latest["backup"] == whole  # the newest whole backup stays the one to resume
    step = int(whole.split("-")[1])

    (seen / "filler").unlink()  # space freed
    second = run_job(tmp_path / "second", env, namespace.command([]))
    for result in second:
        assert result.returncode == 0, result.describe()
        report = result.report()
        assert report["restored_step"] == step
        assert report["iterations"] == EPOCHS * STEPS_PER_EPOCH


# --- garbled backups -----------------------------------------------------------------------------


def garble(backup: Path) -> None:
    """Every array file of the backup (Orbax's data files) overwritten, same length."""
    files = [p for p in (backup / "state").rglob("*") if p.is_file() and "/d/" in p.as_posix()]
    assert files, backup
    for path in files:
        path.write_bytes(bytes((i * 7 + 3) % 251 for i in range(path.stat().st_size)))


def stopped_job(directory: Path) -> tuple[Path, dict[str, str], int]:
    """A 2 x 2 job saving every 4 batches, stopped (kdist.request_stop after step 5) at an
    agreed step before 8: that step's backup and step 4's kept. Returns the folder, the
    job's settings and the newest backup's step."""
    backup_dir = directory / "backup"
    env = {"BACKUP_DIR": str(backup_dir), "BACKUP_SAVE_FREQ": "4"}
    first = {**env, "BACKUP_SEED": SEED, "BACKUP_STOP_AT": "5", "BACKUP_STEP_SLEEP": "0.05"}
    ended = run_job(directory / "stopped", first)
    assert all(r.returncode == 143 for r in ended), [r.describe() for r in ended]
    step = int(ended[0].report()["stopped_step"])
    latest = json.loads((backup_dir / "latest.json").read_text())
    assert [entry["backup"] for entry in latest["kept"]] == [f"step-{step:09d}", "step-000000004"]
    return backup_dir, env, step


def reference(directory: Path) -> list[dict[str, Any]]:
    env = {"BACKUP_DIR": str(directory / "unused"), "BACKUP_IMPL": "none", "BACKUP_SEED": SEED}
    ended = run_job(directory, env)
    assert all(r.returncode == 0 for r in ended), [r.describe() for r in ended]
    return [r.report() for r in ended]


def test_a_garbled_newest_backup_is_named_in_every_process_and_the_one_before_restored(
    tmp_path: Path,
) -> None:
    backup_dir, env, step = stopped_job(tmp_path)
    damaged = backup_dir / f"step-{step:09d}"
    garble(damaged)
    expected = reference(tmp_path / "reference")
    second = run_job(tmp_path / "second", env)
    for result in second:
        assert result.returncode == 0, result.describe()
        assert (
            f"kdist.BackupAndRestore cannot read the backup {damaged} (step {step}) whole: "
            "OSError: "
        ) in result.stderr, result.describe()
        assert "was changed since it was written (its CRC-32 differs)" in result.stderr
        assert f"restoring the one before it, {backup_dir / 'step-000000004'}" in result.stderr
        report = result.report()
        assert report["restored_step"] == 4
        assert report["iterations"] == EPOCHS * STEPS_PER_EPOCH
    for pid in (0, 1):
        assert_same_training_state(expected[pid], second[pid].report())


def test_when_every_backup_is_garbled_each_is_named_and_nothing_trains(tmp_path: Path) -> None:
    backup_dir, env, step = stopped_job(tmp_path)
    for garbled in (step, 4):
        garble(backup_dir / f"step-{garbled:09d}")
    ended = run_job(tmp_path / "second", env)
    for result in ended:
        assert result.returncode not in (0, None, 143), result.describe()
        assert steps_of(result.stdout) == [], result.describe()  # not from scratch
        assert "BackupStorageError" in result.stderr, result.describe()
        assert f"none of the 2 backups kept in {backup_dir} reads whole" in result.stderr
    # The list, whole, in the process that raised it first (the others may be ended by
    # the job with its first line).
    listed = [r for r in ended if f"  - {backup_dir / 'step-000000004'} (step 4):" in r.stderr]
    assert listed, [r.describe() for r in ended]
    assert f"  - {backup_dir / f'step-{step:09d}'} (step {step}):" in listed[0].stderr
    assert (backup_dir / f"step-{step:09d}").is_dir() and (backup_dir / "step-000000004").is_dir()


def test_a_sigkill_during_the_fallback_s_restore_leaves_the_backups_to_the_next_run(
    tmp_path: Path,
) -> None:
    """The newest backup garbled; process 1 is SIGKILLed while it restores the one before
    it. The job ends; the next run falls back again and trains to the end from step 4."""
    backup_dir, env, step = stopped_job(tmp_path)
    garble(backup_dir / f"step-{step:09d}")
    latest = (backup_dir / "latest.json").read_text()
    (tmp_path / "killed").mkdir()
    with Spawned(tmp_path / "killed") as spawned:
        job = start_job(spawned, {**env, "BACKUP_HANG_RESTORE": "1"})
        wait_until(job, lambda: "restoring an older backup" in job[1].stdout(), "the fallback")
        os.kill(job[1].pid, signal.SIGKILL)
        killed = finish(job)
    assert killed[1].returncode == -signal.SIGKILL
    assert killed[0].returncode not in (0, None), killed[0].describe()
    assert steps_of(killed[0].stdout) == []
    assert (backup_dir / "latest.json").read_text() == latest  # nothing changed meanwhile
    second = run_job(tmp_path / "second", env)
    for result in second:
        assert result.returncode == 0, result.describe()
        report = result.report()
        assert report["restored_step"] == 4
        assert report["iterations"] == EPOCHS * STEPS_PER_EPOCH
