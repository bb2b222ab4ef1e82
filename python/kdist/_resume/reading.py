"""A committed backup's arrays, read onto a model's own variables: the check that the
backup is of this model, then each array restored onto the sharding the variable has in
this job (each process reads only the parts it holds). The callback's resume and
`kdist.load_backup` both read a backup this way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kdist._resume import arrays, snapshot


def restored_values(
    model: Any,
    directory: Path,
    manifest: Mapping[str, Any],
    where: str,
    *,
    groups: Sequence[str] = snapshot.GROUPS,
    advice: str = snapshot.RESTORE_OR_START_AFRESH,
    user: str = "kdist.BackupAndRestore",
) -> dict[str, Any]:
    """The backup's value of every variable of `model`'s training state in `groups`, by
    key, each on the variable's own sharding in this job. `where` names the backup and
    `advice` says what to do in a mismatch's message; `user` names who reads it.

    Raises:
        kdist.BackupMismatchError: the backup is of another model.
        OSError: the backup cannot be read.
    """
    variables = snapshot.training_variables(model, groups)
    current = [snapshot.describe(*entry) for entry in variables]
    saved = [snapshot.Described.from_json(entry) for entry in manifest["variables"]]
    snapshot.check_variables(saved, current, where, groups=groups, advice=advice)
    targets = {arrays.key_of(group, i): v.value for group, i, v in variables}
    return arrays.restore(directory, targets, user)
