"""When storage fails, in this process (8 CPU devices; a job of one process): each check of
kdist.BackupAndRestore's folder before the first step, the backups kept (`keep=`), a
damaged backup never loaded (the one before it restored, or every one named), a save that
fails named, and kdist.load_backup's fallback. Across real processes, with mounts made in
mount namespaces: test_backup_storage_multiprocess.py.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kdist
from helpers.keras_backup_models import (
    BATCH,
    EPOCHS,
    SEED,
    Crash,
    build,
    crash_after,
    data,
    settled,
)
from helpers.support import NEEDS_KERAS, NEEDS_ORBAX

pytestmark = [NEEDS_KERAS, NEEDS_ORBAX]


@pytest.fixture
def keras(keras_on_jax: Any) -> Any:
    return keras_on_jax


class Steps:
    """Counts the batches a fit trained (a callback made on demand)."""

    def __init__(self, keras: Any) -> None:
        counter = self

        class Count(keras.callbacks.Callback):  # type: ignore[misc, name-defined]
            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                counter.count += 1

        self.count = 0
        self.callback = Count()


def fit(model: Any, callbacks: list[Any]) -> Any:
    x, y = data()
    return model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, verbose=0, callbacks=callbacks)


def state(model: Any) -> list[np.ndarray]:
    return [np.asarray(v.value) for v in [*model.weights, *model.optimizer.variables]]


def crashed_with_backups(
    keras: Any, root: Path, crash_at: int = 10, units: int = 16, **kwargs: Any
) -> None:
    """A fit saving every 4 batches that crashes after `crash_at`: step-4 and step-8 kept."""
    backup = kdist.BackupAndRestore(root, save_freq=4, **kwargs)
    with pytest.raises(Crash):
        fit(build(keras, units=units), [backup, crash_after(keras, crash_at)])
    settled()


def said(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    """What kdist said: on stderr ("kdist: ..."), or to its logger when logging is set up
    (as under pytest)."""
    return capsys.readouterr().err + "".join(f"kdist: {r.getMessage()}\n" for r in caplog.records)


# The first layer's kernel of a model this wide (8 x 64 float32: 2 KiB) is more than Orbax
# keeps inside its index nodes (OCDBT's max_inline_value_bytes, 1 KiB), which carry a
# CRC-32C of their own: it is written as raw bytes (kdist writes without compression) that
# nothing of Orbax's checks (a zarr shard's CRC-32C covers its index, not its chunks).
# Changed there, only kdist's checksums can tell.
WIDE = 64


def garble_array_data(keras: Any, backup: Path) -> str:
    """Overwrites the first layer's kernel in `backup` (a model `WIDE` wide's) with other
    numbers, byte for byte in place, and nothing else: what a bad disk or a torn copy
    leaves in the array data itself, every file the same size. Returns the file changed,
    relative to `backup`."""
    from kdist._resume import arrays

    model = build(keras, units=WIDE)
    kernel = model.get_layer("dense_in").kernel
    assert model.trainable_variables[0] is kernel
    key = arrays.key_of("trainable", 0)
    saved = np.asarray(arrays.restore(backup, {key: kernel.value}, "the test")[key])
    raw = saved.tobytes()  # little-endian float32, as Orbax's "bytes" codec writes them
    holding = [
        path
        for path in sorted((backup / "state").rglob("*"))
        if path.is_file() and raw in path.read_bytes()
    ]
    assert len(holding) == 1, holding
    data = holding[0].read_bytes()
    assert data.count(raw) == 1
    holding[0].write_bytes(data.replace(raw, (saved + 1).astype(saved.dtype).tobytes()))
    return holding[0].relative_to(backup).as_posix()


# --- the folder, checked before the first step -------------------------------------------------


def test_a_file_where_the_folder_should_be_is_named_when_the_callback_is_made(
    keras: Any, tmp_path: Path
) -> None:
    where = tmp_path / "backup"
    where.write_text("not a folder")
    with pytest.raises(kdist.BackupStorageError) as raised:
        kdist.BackupAndRestore(where, save_freq=2)
    assert raised.value.errno == errno.ENOTDIR
    assert isinstance(raised.value, OSError) and isinstance(raised.value, kdist.KdistError)
    assert str(raised.value).startswith(
        f"kdist.BackupAndRestore: backup_dir {where} is not a folder: a file is there. "
        "Expected a folder every process can write and flush files into"
    ), raised.value
    assert where.read_text() == "not a folder"  # left as it was


def test_a_folder_that_cannot_be_made_is_named_with_the_os_reason(
    keras: Any, tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    where = tmp_path / "file" / "backup"
    with pytest.raises(kdist.BackupStorageError, match=r"cannot be made \(\[Errno 20\] Not a dir"):
        kdist.BackupAndRestore(where)


def test_the_folder_is_made_and_the_probe_file_removed(keras: Any, tmp_path: Path) -> None:
    where = tmp_path / "a" / "b"
    kdist.BackupAndRestore(where)
    assert where.is_dir() and list(where.iterdir()) == []


def test_a_folder_without_room_for_one_more_backup_is_named_with_the_sizes(
    tmp_path: Path,
) -> None:
    """The room check against this file system's own free space (statvfs), asked for
    more than it has."""
    from kdist._resume import storage

    free = storage.free_bytes(tmp_path)
    assert free is not None
    with pytest.raises(kdist.BackupStorageError) as raised:
        storage.check_writable(tmp_path, "kdist.BackupAndRestore", one_backup_bytes=free + 10**9)
    assert raised.value.errno == errno.ENOSPC
    assert f"backup_dir {tmp_path} has " in str(raised.value)
    assert "one more backup of this model needs about" in str(raised.value)
    storage.check_writable(tmp_path, "kdist.BackupAndRestore", one_backup_bytes=1)


def test_a_folder_removed_before_the_fit_is_made_again_at_its_start(
    keras: Any, tmp_path: Path
) -> None:
    backup = kdist.BackupAndRestore(tmp_path / "backup", save_freq=4, delete_checkpoint=False)
    shutil.rmtree(tmp_path / "backup")
    fit(build(keras), [backup])
    settled()
    assert (tmp_path / "backup" / "latest.json").is_file()


# --- a save that fails -----------------------------------------------------------------------


def test_a_folder_removed_during_training_fails_the_next_save_naming_it(
    keras: Any, tmp_path: Path
) -> None:
    """The folder removed after the save of step 4: the save of step 8 is named (the
    folder, the OS error), and training stops there instead of going on without a
    backup."""
    root = tmp_path / "backup"
    steps = Steps(keras)

    class RemoveAfterFive(keras.callbacks.Callback):  # type: ignore[misc, name-defined]
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if steps.count == 5:
                settled()
                shutil.rmtree(root)

    backup = kdist.BackupAndRestore(root, save_freq=4)
    with pytest.raises(kdist.BackupStorageError) as raised:
        fit(build(keras), [steps.callback, RemoveAfterFive(), backup])
    assert raised.value.errno == errno.ENOENT
    assert str(raised.value).startswith(
        f"kdist.BackupAndRestore: the save of step 8 into {root} failed: [Errno 2] No such "
        "file or directory"
    ), raised.value
    assert steps.count == 8  # no batch after the failed save
    assert not root.exists()  # not made again in silence


def test_a_commit_that_fails_is_named_at_the_next_batch_and_the_previous_backup_stays(
    keras: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An I/O error in the commit of step 8 (in the background): named at the next batch
    after it is known, with the backup that stays (step 4)."""
    from kdist._resume import store

    commit = store.commit

    def failing(*args: Any, **kwargs: Any) -> Any:
        if args[2] == 8:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return commit(*args, **kwargs)

    monkeypatch.setattr(store, "commit", failing)
    root = tmp_path / "backup"
    steps = Steps(keras)
    with pytest.raises(kdist.BackupStorageError) as raised:
        fit(build(keras), [steps.callback, kdist.BackupAndRestore(root, save_freq=4)])
    assert raised.value.errno == errno.EIO
    assert f"the save of step 8 into {root} failed: [Errno 5] Input/output error" in str(
        raised.value
    )
    assert f"the newest whole backup stays {root / 'step-000000004'}" in str(raised.value)
    assert 8 < steps.count <= 12, steps.count  # named at a batch after it, not at the end
    assert json.loads((root / "latest.json").read_text())["backup"] == "step-000000004"


# --- the backups kept ------------------------------------------------------------------------


@pytest.mark.parametrize(("keep", "kept"), [(1, [8]), (2, [8, 4]), (3, [8, 4])])
def test_keep_keeps_the_newest_backups_and_latest_json_lists_them(
    keras: Any, tmp_path: Path, keep: int, kept: list[int]
) -> None:
    crashed_with_backups(keras, tmp_path, keep=keep)
    latest = json.loads((tmp_path / "latest.json").read_text())
    names = [f"step-{step:09d}" for step in kept]
    assert [entry["backup"] for entry in latest["kept"]] == names
    assert latest["backup"] == names[0]
    assert latest["previous"] == (names[1] if len(names) > 1 else None)
    # The crashed fit's process lives on (this one): it still holds the folder's lease, as a
    # notebook whose fit raised does until it fits again or exits (kdist._resume.lease).
    lease = json.loads((tmp_path / ".kdist-lease.json").read_text())
    assert lease["pid"] == os.getpid(), lease
    listed = sorted(p.name for p in tmp_path.iterdir())
    assert listed == sorted([".kdist-lease.json", "latest.json", *names])
    manifest = json.loads((tmp_path / names[0] / "manifest.json").read_text())
    assert "host-00000.json" in manifest["checksums"]
    assert any(name.startswith("state/") for name in manifest["checksums"])


@pytest.mark.parametrize(
    ("keep", "error", "match"),
    [
        (0, ValueError, r"keep must be a positive integer .* Received: keep=0"),
        ("2", kdist.ArgumentTypeError, r"keep must be a positive integer .* of type str"),
        (True, kdist.ArgumentTypeError, r"of type bool"),
    ],
)
def test_keep_is_checked(
    keras: Any, tmp_path: Path, keep: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        kdist.BackupAndRestore(tmp_path, keep=keep)


# --- a damaged backup is never loaded ---------------------------------------------------------


def test_a_garbled_newest_backup_is_named_and_the_one_before_it_restored(
    keras: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Its array data changed in place (same sizes, Orbax's own index untouched): Orbax
    alone would load other numbers without a word; kdist's checksum refuses it, named with
    its folder, step and file; step 4 restored, and training ends as the run never
    interrupted; latest.json no longer lists the damaged one."""
    from kdist._resume import checksums

    crashed_with_backups(keras, tmp_path, units=WIDE)
    changed = garble_array_data(keras, tmp_path / "step-000000008")
    # Without kdist's checksums, the damaged backup reads (Orbax finds nothing wrong), with
    # the changed numbers.
    with monkeypatch.context() as unchecked:
        unchecked.setattr(checksums, "damaged", lambda *args: [])
        probe = build(keras, units=WIDE, seed=SEED + 1)
        assert kdist.load_backup(probe, tmp_path) == 8
    garbled_kernel = np.asarray(probe.get_layer("dense_in").kernel.value)
    capsys.readouterr()
    caplog.set_level(logging.INFO, logger="kdist")
    expected = build(keras, units=WIDE)
    fit(expected, [])
    model = build(keras, units=WIDE, seed=SEED + 1)
    backup = kdist.BackupAndRestore(tmp_path, save_freq=4, delete_checkpoint=False)
    kept: list[list[str]] = []

    class Kept(keras.callbacks.Callback):  # type: ignore[misc, name-defined]
        def on_train_begin(self, logs: Any = None) -> None:  # after the restore's
            latest = json.loads((tmp_path / "latest.json").read_text())
            kept.append([entry["backup"] for entry in latest["kept"]])

    class Restored(keras.callbacks.Callback):  # type: ignore[misc, name-defined]
        def on_train_begin(self, logs: Any = None) -> None:
            restored.append(np.asarray(self.model.get_layer("dense_in").kernel.value))

    restored: list[np.ndarray] = []
    fit(model, [backup, Kept(), Restored()])
    settled()
    assert backup.restored_step == 4
    assert not np.array_equal(restored[0], garbled_kernel)
    assert kept == [["step-000000004"]]  # the damaged one is never listed again
    for a, b in zip(state(expected), state(model), strict=True):
        np.testing.assert_array_equal(a, b)
    text = said(capsys, caplog)
    damaged = tmp_path / "step-000000008"
    assert (
        f"kdist: kdist.BackupAndRestore cannot read the backup {damaged} (step 8) whole: "
        f"OSError: 1 of its files are not as written: {changed} was changed since it was "
        "written (its CRC-32 differs)"
    ) in text, text
    assert f"restoring the one before it, {tmp_path / 'step-000000004'}, instead" in text


def test_a_newest_backup_with_a_file_missing_or_truncated_falls_back(
    keras: Any, tmp_path: Path
) -> None:
    crashed_with_backups(keras, tmp_path)
    host = tmp_path / "step-000000008" / "host-00000.json"
    host.write_bytes(host.read_bytes()[:10])  # a truncated sync
    backup = kdist.BackupAndRestore(tmp_path, save_freq=4)
    steps = Steps(keras)
    fit(build(keras, seed=SEED + 1), [backup, steps.callback])
    assert backup.restored_step == 4


def test_a_changed_manifest_is_not_read(keras: Any, tmp_path: Path) -> None:
    """The manifest edited (still valid JSON): its CRC-32 in latest.json differs."""
    crashed_with_backups(keras, tmp_path)
    manifest = tmp_path / "step-000000008" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"step": 8', '"step": 9'))
    backup = kdist.BackupAndRestore(tmp_path, save_freq=4)
    fit(build(keras, seed=SEED + 1), [backup])
    assert backup.restored_step == 4


def test_when_no_backup_reads_whole_each_is_named_and_training_does_not_start(
    keras: Any, tmp_path: Path
) -> None:
    crashed_with_backups(keras, tmp_path, units=WIDE)
    for step in (8, 4):
        garble_array_data(keras, tmp_path / f"step-{step:09d}")
    steps = Steps(keras)
    with pytest.raises(kdist.BackupStorageError) as raised:
        fit(
            build(keras, units=WIDE, seed=SEED + 1),
            [kdist.BackupAndRestore(tmp_path), steps.callback],
        )
    message = str(raised.value)
    assert message.startswith(
        f"kdist.BackupAndRestore: none of the 2 backups kept in {tmp_path} reads whole, so "
        "training does not start"
    ), message
    for step in (8, 4):
        assert (
            f"\n  - {tmp_path / f'step-{step:09d}'} (step {step}): OSError: 1 of its files are "
            "not as written: "
        ) in message, message
    assert "Training does not start from scratch in silence" in message
    assert steps.count == 0
    assert {p.name for p in tmp_path.iterdir()} >= {"step-000000004", "step-000000008"}  # kept


def test_a_backup_of_another_model_is_refused_without_trying_an_older_one(
    keras: Any, tmp_path: Path
) -> None:
    crashed_with_backups(keras, tmp_path)
    other = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    other.compile(optimizer="adam", loss="mse")
    with pytest.raises(kdist.BackupMismatchError, match=r"step-000000008 \(step 8\)"):
        fit(other, [kdist.BackupAndRestore(tmp_path)])


# --- kdist.load_backup -------------------------------------------------------------------------


def test_load_backup_falls_back_past_a_garbled_backup_without_writing(
    keras: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    crashed_with_backups(keras, tmp_path, units=WIDE)
    garble_array_data(keras, tmp_path / "step-000000008")
    latest = (tmp_path / "latest.json").read_text()
    model = build(keras, units=WIDE, seed=SEED + 1)
    caplog.set_level(logging.INFO, logger="kdist")
    assert kdist.load_backup(model, tmp_path) == 4
    text = said(capsys, caplog)
    assert "kdist.load_backup cannot read the backup" in text, text
    assert "was changed since it was written (its CRC-32 differs)" in text, text
    assert (tmp_path / "latest.json").read_text() == latest  # a reader writes nothing


def test_load_backup_names_a_file_given_as_the_folder(keras: Any, tmp_path: Path) -> None:
    (tmp_path / "backup").write_text("")
    with pytest.raises(kdist.BackupStorageError, match=r"is not a folder: a file is there"):
        kdist.load_backup(build(keras), tmp_path / "backup")


def test_load_backup_lists_every_backup_when_none_reads(keras: Any, tmp_path: Path) -> None:
    crashed_with_backups(keras, tmp_path, units=WIDE)
    for step in (8, 4):
        garble_array_data(keras, tmp_path / f"step-{step:09d}")
    with pytest.raises(kdist.BackupStorageError, match=r"^kdist\.load_backup: none of the 2"):
        kdist.load_backup(build(keras, units=WIDE), tmp_path)
