"""A committed backup's arrays, read onto a model's own variables, whole or not at all:
the check that the backup is of this model, then each array restored onto the sharding
the variable has in this job (each process reads only the parts it holds), with the
checks that the backup is whole. The callback's resume and `kdist.load_backup` both read
a backup this way; choosing.py decides which kept backup.

Whole means: the manifest has the CRC-32 `latest.json` recorded for it; this process's
share of the backup's files has the sizes and CRC-32s the manifest lists (checksums.py:
checked in a thread while Orbax reads, so the check costs the restore little wall time);
Orbax reads every array; each restored array has the shape and dtype of its variable;
and this process's host file reads. Nothing is assigned to the model until all of them
passed, in every process (choosing.py).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdist._resume import arrays, checksums, snapshot, store


@dataclass(frozen=True)
class Whole:
    """A backup read whole: its manifest, each variable's value by key (on this job's
    sharding), and this process's host state (None: not asked for)."""

    manifest: dict[str, Any]
    values: dict[str, Any]
    host: dict[str, Any] | None


def read_whole(
    model: Any,
    directory: Path,
    manifest_crc32: int | None,
    share: tuple[int, int],
    *,
    groups: Sequence[str] = snapshot.GROUPS,
    advice: str = snapshot.RESTORE_OR_START_AFRESH,
    user: str = "kdist.BackupAndRestore",
    host_of: int | None = None,
) -> Whole:
    """The backup in `directory`, read whole (see the module's docstring) for the
    variables of `model` in `groups`; `share` is (this process's index, the processes
    that share the files' check); with `host_of`, that process's host state too.

    Raises:
        kdist.BackupMismatchError: the backup is of another model.
        OSError: the backup is not whole (the message says what is wrong).
        Exception: what Orbax raised.
    """
    manifest = store.read_manifest(directory, manifest_crc32)
    where = f"The backup in {directory} (step {manifest['step']})"
    variables = snapshot.training_variables(model, groups)
    current = [snapshot.describe(*entry) for entry in variables]
    saved = [snapshot.Described.from_json(entry) for entry in manifest["variables"]]
    snapshot.check_variables(saved, current, where, groups=groups, advice=advice)
    targets = {arrays.key_of(group, i): v.value for group, i, v in variables}

    sums = manifest.get("checksums")
    problems: list[str] = []
    checker = None
    if isinstance(sums, dict):
        checker = threading.Thread(
            target=lambda: problems.extend(checksums.damaged(directory, sums, share)),
            name="kdist-backup-check",
            daemon=True,
        )
        checker.start()
    try:
        values = arrays.restore(directory, targets, user)
    finally:
        if checker is not None:
            checker.join()
    if problems:
        more = f"; and {len(problems) - 4} more" if len(problems) > 4 else ""
        shown = "; ".join(problems[:4]) + more
        raise OSError(f"{len(problems)} of its files are not as written: {shown}")
    _check_shapes(values, targets)
    host = store.read_host_file(directory, host_of) if host_of is not None else None
    return Whole(manifest, values, host)


def _check_shapes(values: Mapping[str, Any], targets: Mapping[str, Any]) -> None:
    """Raises OSError unless Orbax gave back every array asked for, each of its target's
    shape and dtype."""
    for key, target in targets.items():
        value = values.get(key)
        if value is None:
            raise OSError(f"Orbax gave back no array {key!r}")
        if tuple(value.shape) != tuple(target.shape) or str(value.dtype) != str(target.dtype):
            raise OSError(
                f"Orbax read {key!r} as {value.dtype}{list(value.shape)}; the manifest and "
                f"the variable say {target.dtype}{list(target.shape)}"
            )
