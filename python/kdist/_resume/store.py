"""The backup directory: one writer per file, a new directory per backup, committed by a
rename and then by replacing one small file.

    backup_dir/
      latest.json                 the commit point: names the current backup (and, with
                                  double_checkpoint, the previous one); written by
                                  process 0 to a new name, then renamed over the old one
      step-000000037/             one complete backup (the step it holds in its name)
        manifest.json             process 0: the job, every variable's shape, dtype and
                                  placement, the position in training (written last)
        process-00000.bin         process 0: the bytes of the shards it wrote
        process-00000.json        process 0: where each of its shards is in its .bin, and
                                  its host state (Python's and NumPy's random states)
        process-00001.json ...    every other process: the same for its own shards
      incoming-000000042/         a backup being written; never read

Each process writes only its own two files, and of each shard only the copy it holds
as replica 0 (so a replicated variable is written once, by the process holding its
first copy; a sharded one by the processes holding its parts). Process 0 alone writes
the manifest, renames `incoming-N` to `step-N`, replaces `latest.json`, and removes
what is no longer named there. Every file is flushed to the disk (fsync) before the
step that makes it count. A process killed at any moment leaves `latest.json` naming a
complete backup (or no `latest.json`, before the first one): an `incoming-*` directory
or a `step-*` directory that `latest.json` does not name is left over, and process 0
removes it when training starts again.

Every process reads every backup file it needs, so `backup_dir` must be a directory
every process sees (a shared file system across hosts), as for Keras's own callback.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from kdist import _jax_backend
from kdist._resume.snapshot import Index, normalized_index

FORMAT = "kdist.BackupAndRestore"
VERSION = 1
LATEST = "latest.json"
MANIFEST = "manifest.json"
STEP_PREFIX = "step-"
INCOMING_PREFIX = "incoming-"


@dataclass(frozen=True)
class Shard:
    """One shard a process writes: the variable's number in the manifest, its part."""

    variable: int
    index: Index
    data: np.ndarray


def incoming(root: Path, step: int) -> Path:
    """The directory every process writes the backup of `step` into (made if needed)."""
    directory = root / f"{INCOMING_PREFIX}{step:09d}"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def process_file(directory: Path, process_id: int, suffix: str) -> Path:
    return directory / f"process-{process_id:05d}{suffix}"


def write_process_files(
    directory: Path, process_id: int, shards: Iterable[Shard], host: Mapping[str, object]
) -> None:
    """This process's files of a backup: its shards' bytes, then where each one is."""
    entries: list[list[object]] = []
    offset = 0
    with open(process_file(directory, process_id, ".bin"), "wb") as out:
        for shard in shards:
            data = np.ascontiguousarray(shard.data).reshape(-1).view(np.uint8)
            out.write(data.data)
            entries.append([shard.variable, [list(s) for s in shard.index], offset, data.size])
            offset += data.size
        _flush(out)
    index = {"process_id": process_id, "host": dict(host), "shards": entries}
    _write(process_file(directory, process_id, ".json"), index)


def commit(
    root: Path,
    written: Path,
    step: int,
    manifest: Mapping[str, object],
    *,
    num_processes: int,
    keep_previous: bool,
) -> Path:
    """Process 0, once every process wrote its files into `written`: writes the manifest,
    renames the directory to `step-N`, makes `latest.json` name it, and removes the
    backups it no longer names. Returns the committed directory.

    Raises:
        OSError: a process's files are not in `written` (`backup_dir` is not a directory
            every process sees), or a write failed.
    """
    missing = [p for p in range(num_processes) if not process_file(written, p, ".json").is_file()]
    if missing:
        raise OSError(
            f"kdist.BackupAndRestore: the files of processes {missing} are not in {written}, "
            "though every process wrote them there: backup_dir must be a directory every "
            "process of the job sees (a shared file system across hosts)."
        )
    _write(written / MANIFEST, manifest)
    _sync_directory(written)
    current, _ = named_backups(root)
    target = root / f"{STEP_PREFIX}{step:09d}"
    if target.name == current:
        # The same step again (a job resumed at step N saving N): a new name, so that
        # `latest.json` names a complete backup at every moment.
        target = _free_name(root, target.name)
    elif target.exists():
        shutil.rmtree(target)  # a leftover that latest.json does not name
    os.rename(written, target)
    _sync_directory(root)
    _write_replacing(
        root / LATEST,
        {
            "format": FORMAT,
            "version": VERSION,
            "backup": target.name,
            "previous": current if keep_previous else None,
        },
    )
    remove_unnamed(root)
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
    path = root / LATEST
    if not path.is_file():
        return None, None
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
    current, previous = latest.get("backup"), latest.get("previous")
    return (
        current if isinstance(current, str) else None,
        previous if isinstance(previous, str) else None,
    )


def read_manifest(directory: Path) -> dict[str, Any]:
    """A committed backup's manifest.

    Raises:
        OSError: it is missing, unreadable, or of another format.
    """
    manifest = _read(directory / MANIFEST)
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise OSError(
            f"{directory / MANIFEST} is not a version-{VERSION} kdist.BackupAndRestore manifest"
        )
    return manifest


@dataclass
class ShardReader:
    """Reads the shards of a committed backup, wherever each was written."""

    directory: Path
    num_processes: int
    _where: dict[tuple[int, Index], tuple[int, int, int]] = field(default_factory=dict)
    _hosts: dict[int, dict[str, Any]] = field(default_factory=dict)
    _files: dict[int, BinaryIO] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for process in range(self.num_processes):
            index = _read(process_file(self.directory, process, ".json"))
            self._hosts[process] = dict(index.get("host", {}))
            for variable, spans, offset, nbytes in index["shards"]:
                key = (int(variable), tuple((int(a), int(b)) for a, b in spans))
                self._where[key] = (process, int(offset), int(nbytes))

    def host(self, process_id: int) -> dict[str, Any]:
        """What process `process_id` recorded of its host state."""
        return self._hosts[process_id]

    def read(self, variable: int, index: Index, dtype: str) -> np.ndarray:
        """The shard `index` of variable `variable`, as a NumPy array.

        Raises:
            OSError: no process wrote it, or its file is shorter than recorded.
        """
        found = self._where.get((variable, index))
        if found is None:
            raise OSError(
                f"{self.directory}: no process wrote the part {list(index)} of variable "
                f"{variable}; the backup is incomplete"
            )
        process, offset, nbytes = found
        stream = self._files.get(process)
        if stream is None:
            stream = self._files[process] = open(  # noqa: SIM115 (closed by close())
                process_file(self.directory, process, ".bin"), "rb"
            )
        stream.seek(offset)
        data = stream.read(nbytes)
        if len(data) != nbytes:
            raise OSError(
                f"{process_file(self.directory, process, '.bin')} is truncated: {nbytes} "
                f"bytes expected at offset {offset}, {len(data)} found"
            )
        shape = tuple(stop - start for start, stop in index)
        return np.frombuffer(data, dtype=_jax_backend.numpy_dtype(dtype)).reshape(shape).copy()

    def close(self) -> None:
        for stream in self._files.values():
            stream.close()
        self._files.clear()


def remove_unnamed(root: Path) -> None:
    """Removes every `incoming-*` directory and every `step-*` that `latest.json` does not
    name (process 0, when no other process writes)."""
    if not root.is_dir():
        return
    named = set(named_backups(root)) - {None}
    for entry in root.iterdir():
        ours = entry.name.startswith((INCOMING_PREFIX, STEP_PREFIX))
        if ours and entry.name not in named and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)


def remove_all(root: Path) -> None:
    """Removes the backup directory (as Keras's own callback does at the end of training)."""
    if root.exists():
        shutil.rmtree(root)


def shards_of(values: Sequence[tuple[int, Any]]) -> list[Shard]:
    """The shards this process writes of each (number, jax.Array): the ones it holds as
    replica 0, copied to the host."""
    shards = []
    for number, value in values:
        shape = tuple(value.shape)
        for shard in value.addressable_shards:
            if shard.replica_id == 0:
                shards.append(
                    Shard(number, normalized_index(shard.index, shape), np.asarray(shard.data))
                )
    return shards


# --- files -----------------------------------------------------------------------------


def _read(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as stream:
            loaded = json.loads(stream.read())
    except ValueError as error:
        raise OSError(f"{path} is not valid JSON ({error}): the backup is damaged") from error
    if not isinstance(loaded, dict):
        raise OSError(f"{path} does not hold a JSON object: the backup is damaged")
    return loaded


def _write(path: Path, value: Mapping[str, object]) -> None:
    with open(path, "wb") as out:
        out.write(json.dumps(value).encode())
        _flush(out)


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
