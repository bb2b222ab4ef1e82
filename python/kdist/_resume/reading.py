"""A committed backup's arrays, read onto a model's own variables, whole or not at all:
the check that the backup is of this model, then each array restored onto the sharding
the variable has in this job (each process reads only the parts it holds), with the
checks that the backup is whole. The callback's resume and `kdist.load_backup` both read
a backup this way; choosing.py decides which kept backup.

Whole means: the manifest has the CRC-32 `latest.json` recorded for it; this process's
share of the backup's files has the sizes and CRC-32s the manifest lists (checksums.py);
and, once every process found its share whole (choosing.py agrees on it before Orbax
reads: Orbax's read of a garbled file fails midway and leaves TensorStore's reads
behind), Orbax reads every array, each restored array has the shape and dtype of its
variable, and this process's host file reads. Nothing is assigned to the model until all
of them passed, in every process.
"""

from __future__ import annotations

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


def check_files(
    model: Any,
    directory: Path,
    manifest_crc32: int | None,
    share: tuple[int, int],
    *,
    groups: Sequence[str] = snapshot.GROUPS,
    advice: str = snapshot.RESTORE_OR_START_AFRESH,
) -> dict[str, Any]:
    """The first half of a read, before Orbax reads anything: the backup's manifest,
    checked against `manifest_crc32` and against the variables of `model` in `groups`,
    and this process's `share` of its files (this process's index, the processes that
    share the check) checked against the manifest's sums. Returns the manifest.

    Raises:
        kdist.BackupMismatchError: the backup is of another model.
        OSError: the manifest or a file of this share is not as written.
    """
    manifest = store.read_manifest(directory, manifest_crc32)
    where = f"The backup in {directory} (step {manifest['step']})"
    current = [snapshot.describe(*entry) for entry in snapshot.training_variables(model, groups)]
    saved = [snapshot.Described.from_json(entry) for entry in manifest["variables"]]
    snapshot.check_variables(saved, current, where, groups=groups, advice=advice)
    sums = manifest.get("checksums")
    problems = checksums.damaged(directory, sums, share) if isinstance(sums, dict) else []
    if problems:
        more = f"; and {len(problems) - 4} more" if len(problems) > 4 else ""
        shown = "; ".join(problems[:4]) + more
        raise OSError(f"{len(problems)} of its files are not as written: {shown}")
    return manifest


def read_arrays(
    model: Any,
    directory: Path,
    manifest: dict[str, Any],
    *,
    groups: Sequence[str] = snapshot.GROUPS,
    user: str = "kdist.BackupAndRestore",
    host_of: int | None = None,
) -> Whole:
    """The second half, once every process found its share of the files whole: every
    array of `model`'s variables in `groups` read by Orbax onto this job's shardings,
    each checked for its variable's shape and dtype; with `host_of`, that process's host
    state too.

    Raises:
        OSError: Orbax cannot read an array, or gives one of another shape, or the host
            file cannot be read.
    """
    variables = snapshot.training_variables(model, groups)
    targets = {arrays.key_of(group, i): v.value for group, i, v in variables}
    values = arrays.restore(directory, targets, user)
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
