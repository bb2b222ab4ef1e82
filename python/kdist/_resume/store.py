"""The backup directory: a new folder per backup, committed by a rename and then by
replacing one small file; kdist's files beside Orbax's.

    backup_dir/
      latest.json                 the commit point: names the backups kept, the newest
                                  first (`keep`, 2 by default), each with its manifest's
                                  CRC-32; written by process 0 to a new name, then
                                  renamed over the old one
      step-000000037/             one complete backup (the step it holds in its name)
        manifest.json             process 0: the job that wrote it, every variable's
                                  path, shape and dtype, the position in training, the
                                  size and CRC-32 of every other file (checksums.py;
                                  written last, once the arrays are complete)
        host-00000.json           each process: its host state (Python's and NumPy's
        host-00001.json ...       random states), written by that process only
        state/                    the arrays: one Orbax checkpoint (arrays.py), each
                                  shard written once by a process that holds it
      incoming-000000042/         a backup being written; never read

Process 0 alone writes the manifest, renames `incoming-N` to `step-N`, replaces
`latest.json`, and removes the backups that are no longer named there (the oldest, once
`keep` are kept). Every file of
kdist's is flushed to the disk (fsync) before the step that makes it count; Orbax's
folder is complete before the manifest is written (it has its final name only once
Orbax finalized it). A process killed at any moment leaves `latest.json` naming a
complete backup (or no `latest.json`, before the first one): an `incoming-*` folder or a
`step-*` folder that `latest.json` does not name is left over, and process 0 removes it
when training starts again.

Every process reads what it needs of a backup, so `backup_dir` must be a directory every
process sees (a shared file system across hosts), as for Keras's own callback.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from kdist._resume import checksums
from kdist._resume.arrays import STATE

FORMAT = "kdist.BackupAndRestore"
VERSION = 2  # 1: kdist's own shard files (process-N.bin); 2: the arrays on Orbax
LATEST = "latest.json"
MANIFEST = "manifest.json"
STEP_PREFIX = "step-"
INCOMING_PREFIX = "incoming-"


def incoming(root: Path, step: int) -> Path:
    """The directory every process writes the backup of `step` into (made if needed; the
    backup directory itself is not: one removed during training fails the save).

    Raises:
        OSError: it cannot be made (FileNotFoundError: `root` was removed).
    """
    directory = root / f"{INCOMING_PREFIX}{step:09d}"
    directory.mkdir(exist_ok=True)
    return directory


def host_file(directory: Path, process_id: int) -> Path:
    return directory / f"host-{process_id:05d}.json"


def write_host_file(directory: Path, process_id: int, host: Mapping[str, object]) -> None:
    """This process's file of a backup: its host state."""
    _write(host_file(directory, process_id), {"process_id": process_id, "host": dict(host)})


def read_host_file(directory: Path, process_id: int) -> dict[str, Any]:
    """What process `process_id` recorded of its host state in the backup `directory`
    (process 0's when the backup was written by fewer processes).

    Raises:
        OSError: the file is missing or damaged.
    """
    path = host_file(directory, process_id)
    if not path.is_file():
        path = host_file(directory, 0)
    return dict(_read(path).get("host", {}))


def commit(
    root: Path,
    written: Path,
    step: int,
    manifest: Mapping[str, object],
    *,
    num_processes: int,
    keep: int,
) -> Path:
    """Process 0, once every process wrote its files into `written` and Orbax completed
    its folder there: sums every file of the backup into the manifest, writes the
    manifest, renames the directory to `step-N`, makes `latest.json` name it first among
    the `keep` newest, and removes the backups it no longer names (never an
    `incoming-*` folder: the next backup may be being written). Returns the committed
    directory.

    Raises:
        OSError: a process's files are not in `written` (`backup_dir` is not a directory
            every process sees), or a write failed.
    """
    missing = [p for p in range(num_processes) if not host_file(written, p).is_file()]
    if missing or not (written / STATE).is_dir():
        what = f"the files of processes {missing}" if missing else f"Orbax's folder {STATE}/"
        raise OSError(
            f"kdist.BackupAndRestore: {what} are not in {written}, though every process "
            "wrote them there: backup_dir must be a directory every process of the job "
            "sees (a shared file system across hosts)."
        )
    files = [host_file(written, p).name for p in range(num_processes)] + [STATE]
    summed = {**manifest, "checksums": checksums.of_files(written, files)}
    manifest_crc = _write(written / MANIFEST, summed)
    _sync_directory(written)
    kept = kept_backups(root)
    current = kept[0][0] if kept else None
    target = root / f"{STEP_PREFIX}{step:09d}"
    if target.name == current:
        # The same step again (a job resumed at step N saving N): a new name, so that
        # `latest.json` names a complete backup at every moment.
        target = _free_name(root, target.name)
    elif target.exists():
        shutil.rmtree(target)  # a leftover that latest.json does not name
    os.rename(written, target)
    _sync_directory(root)
    kept = [(target.name, manifest_crc), *kept][: max(1, keep)]
    _write_replacing(
        root / LATEST,
        {
            "format": FORMAT,
            "version": VERSION,
            "backup": target.name,
            "previous": kept[1][0] if len(kept) > 1 else None,
            "kept": [{"backup": name, "manifest_crc32": crc} for name, crc in kept],
        },
    )
    remove_unnamed(root, incoming_too=False)
    return target


def _free_name(root: Path, name: str) -> Path:
    for n in range(1, 1_000_000):
        candidate = root / f"{name}-{n}"
        if not candidate.exists():
            return candidate
    raise OSError(f"kdist.BackupAndRestore: no free name for {name} in {root}")


def named_backups(root: Path) -> tuple[str | None, str | None]:
    """The names of the current and previous backups in `latest.json` (None: none).

    Raises:
        OSError: `latest.json` exists but cannot be read, or is not a kdist backup's.
    """
    kept = kept_backups(root)
    return (kept[0][0] if kept else None, kept[1][0] if len(kept) > 1 else None)


def kept_backups(root: Path) -> list[tuple[str, int | None]]:
    """The backups `latest.json` names, the newest first, each with its manifest's CRC-32
    (None: not recorded, a backup of an earlier kdist); empty without `latest.json`.

    Raises:
        OSError: `latest.json` exists but cannot be read, or is not a kdist backup's.
    """
    path = root / LATEST
    if not path.is_file():
        return []
    latest = _read(path)
    if latest.get("format") != FORMAT:
        raise OSError(
            f"{path} is not a kdist.BackupAndRestore file (format {latest.get('format')!r})"
        )
    if latest.get("version") != VERSION:
        raise OSError(
            f"{path} is of version {latest.get('version')!r} of kdist's backup format; this "
            f"kdist reads version {VERSION}"
        )
    listed = latest.get("kept")
    if isinstance(listed, list):
        kept = []
        for entry in listed:
            name = entry.get("backup") if isinstance(entry, dict) else None
            crc = entry.get("manifest_crc32") if isinstance(entry, dict) else None
            if isinstance(name, str) and _is_backup_name(name):
                kept.append((name, crc if isinstance(crc, int) else None))
        return kept
    names = [latest.get("backup"), latest.get("previous")]
    return [(n, None) for n in names if isinstance(n, str) and _is_backup_name(n)]


def drop_newer_than(root: Path, name: str) -> None:
    """Process 0, after a restore fell back to the kept backup `name`: `latest.json` keeps
    `name` and the ones before it only, so that the newer ones, which do not read whole,
    are never restored and are removed as leftovers (at the next commit or start)."""
    kept = kept_backups(root)
    names = [n for n, _ in kept]
    if name not in names or names[0] == name:
        return
    kept = kept[names.index(name) :]
    _write_replacing(
        root / LATEST,
        {
            "format": FORMAT,
            "version": VERSION,
            "backup": kept[0][0],
            "previous": kept[1][0] if len(kept) > 1 else None,
            "kept": [{"backup": n, "manifest_crc32": crc} for n, crc in kept],
        },
    )


def _is_backup_name(name: str) -> bool:
    """A name of a backup folder beside latest.json (never a path elsewhere)."""
    return name.startswith(STEP_PREFIX) and "/" not in name and name not in (".", "..")


def read_manifest(directory: Path, crc32: int | None = None) -> dict[str, Any]:
    """A committed backup's manifest (checked against `crc32`, its CRC-32 as
    `latest.json` recorded it, when given).

    Raises:
        OSError: it is missing, unreadable, changed since it was written, or of another
            format.
    """
    manifest = _read(directory / MANIFEST, crc32)
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise OSError(
            f"{directory / MANIFEST} is not a version-{VERSION} kdist.BackupAndRestore manifest"
        )
    return manifest


def remove_unnamed(root: Path, *, incoming_too: bool = True) -> None:
    """Removes every `step-*` directory that `latest.json` does not name, and every
    `incoming-*` one with `incoming_too` (process 0, when no other process writes)."""
    if not root.is_dir():
        return
    named = {name for name, _ in kept_backups(root)}
    prefixes = (INCOMING_PREFIX, STEP_PREFIX) if incoming_too else (STEP_PREFIX,)
    for entry in root.iterdir():
        ours = entry.name.startswith(prefixes)
        if ours and entry.name not in named and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)


def remove_all(root: Path) -> None:
    """Removes the backup directory (as Keras's own callback does at the end of training);
    a folder that is a mount point (EBUSY) is emptied instead."""
    if not root.exists():
        return
    try:
        shutil.rmtree(root)
    except OSError as error:
        if error.errno != errno.EBUSY:
            raise
        for entry in root.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()


# --- files -----------------------------------------------------------------------------


def _read(path: Path, crc32: int | None = None) -> dict[str, Any]:
    with open(path, "rb") as stream:
        data = stream.read()
    if crc32 is not None and checksums.of_bytes(data) != crc32:
        raise OSError(
            f"{path} was changed since it was written (its CRC-32 differs from the one "
            f"{LATEST} recorded): the backup is damaged"
        )
    try:
        loaded = json.loads(data)
    except ValueError as error:
        raise OSError(f"{path} is not valid JSON ({error}): the backup is damaged") from error
    if not isinstance(loaded, dict):
        raise OSError(f"{path} does not hold a JSON object: the backup is damaged")
    return loaded


def _write(path: Path, value: Mapping[str, object]) -> int:
    """Writes `value` as JSON to `path`, flushed to the disk; returns its CRC-32."""
    data = json.dumps(value).encode()
    with open(path, "wb") as out:
        out.write(data)
        _flush(out)
    return checksums.of_bytes(data)


def _write_replacing(path: Path, value: Mapping[str, object]) -> None:
    """Writes `path` so that a reader sees the old file or the new one, never a part."""
    fresh = path.with_name(f"{path.name}.new")
    _write(fresh, value)
    os.replace(fresh, path)
    _sync_directory(path.parent)


def _flush(stream: BinaryIO) -> None:
    stream.flush()
    os.fsync(stream.fileno())


def _sync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
