"""Which kept backup a restore loads: the newest one that reads whole in every process.

`latest.json` names the backups kept (`keep=`, the newest first). Each is read whole or
not at all (reading.py: the manifest's own checksum, the files' checksums, Orbax's read,
the arrays' shapes, the host file); what a process found is then agreed with every other
process (jax.distributed's key-value store: each process publishes its verdict on each
backup tried, and reads every other's), so that they all load the same backup or all go
on to the one before it: a damage that only one process's share of the files shows is
seen by all. A damaged backup is named in every process (its folder, its step, what is
wrong, which process saw it); when none reads whole, `kdist.BackupStorageError` lists
each backup tried and why, and training does not start from scratch in silence.

A backup of another model (`kdist.BackupMismatchError`) is not damage: it is raised as it
is, without trying an older backup (an older one is of the same other model).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kdist import _jax_backend, _log
from kdist._errors import BackupMismatchError, BackupStorageError
from kdist._resume import store

Loaded = TypeVar("Loaded")
Manifest = TypeVar("Manifest")

_KEY = "kdist/backup-restore/{call}/{backup}/{phase}/{process}"
_lock = threading.Lock()
# This process's restores, numbered: the n-th restore of every process agrees with the
# n-th of the others (every process of a job restores the same number of times).
_calls = itertools.count()
_MISMATCH = "mismatch: "


def newest_whole(
    root: Path,
    check: Callable[[Path, int | None, tuple[int, int]], Manifest],
    read: Callable[[Path, Manifest], Loaded],
    user: str,
    *,
    timeout: float | None = None,
    forget_damaged: bool = False,
) -> tuple[Path, Loaded] | None:
    """The newest kept backup in `root` that reads whole in every process, and what
    `read` made of it; None when `root` holds none. Each backup is read in two halves,
    each agreed by every process before the next: `check(directory, manifest_crc32,
    share)` (the files, before Orbax reads any: what it returns is handed to `read`),
    then `read(directory, checked)` (Orbax's read). Either raises OSError (or any error
    of Orbax's) for a backup that is not whole.
    With `forget_damaged` (the callback, which writes there), process 0 then drops the
    newer backups that did not read whole from `latest.json`.

    Raises:
        kdist.BackupStorageError: backups are kept, but none reads whole (the message
            lists each one tried and why).
        kdist.BackupMismatchError: the newest backup is of another model.
    """
    kept = store.kept_backups(root)
    if not kept:
        return None
    processes, me = _processes()
    with _lock:
        call = next(_calls)
    tried: list[str] = []
    for attempt, (name, manifest_crc) in enumerate(kept):
        directory = root / name
        loaded: Loaded | None = None
        checked: Manifest | None = None
        problem: str | None = None
        try:
            checked = check(directory, manifest_crc, (me, processes))
        except BackupMismatchError as error:
            problem = _MISMATCH + str(error)
        except Exception as error:
            problem = f"{type(error).__name__}: {error}"
        key = _KEY.format(call=call, backup=attempt, phase="files", process="{process}")
        problem = _agreed(key, problem, processes, me, timeout)
        if problem is not None and problem.startswith(_MISMATCH):
            raise BackupMismatchError(problem[len(_MISMATCH) :])
        if problem is None:
            assert checked is not None
            try:
                loaded = read(directory, checked)
            except Exception as error:  # Orbax and TensorStore raise their own kinds
                problem = f"{type(error).__name__}: {error}"
            key = _KEY.format(call=call, backup=attempt, phase="arrays", process="{process}")
            problem = _agreed(key, problem, processes, me, timeout)
        if problem is None:
            assert loaded is not None
            if attempt > 0 and me == 0 and forget_damaged:
                store.drop_newer_than(root, name)  # the newer ones are never read again
            return directory, loaded
        step = _step_of(name)
        tried.append(f"{directory} (step {step}): {problem}")
        later = kept[attempt + 1 :]
        then = (
            f"restoring the one before it, {root / later[0][0]}, instead"
            if later
            else "no older backup is kept"
        )
        warn(f"{user} cannot read the backup {directory} (step {step}) whole: {problem}; {then}")
    listed = "\n".join(f"  - {line}" for line in tried)
    raise BackupStorageError(
        f"{user}: none of the {len(tried)} backups kept in {root} reads whole, so training "
        f"does not start: expected at least one whole backup (the newest first, then the "
        f"ones before it); received:\n{listed}\nTraining does not start from scratch in "
        f"silence: to start afresh, remove {root} (or give another backup_dir); to resume, "
        "put a whole copy of a backup back (docs/resume.md, When storage fails)."
    )


def warn(line: str) -> None:
    """A line every user must see, whatever logging says: a WARNING of kdist's logger once
    the program (or a library: absl, under JAX and Orbax) configured logging, where an
    INFO line would be hidden; else `kdist: <line>` on stderr."""
    if _log.configured_by_program():
        _log.LOGGER.warning("%s", line)
    else:
        _log.say(line)


def _processes() -> tuple[int, int]:
    """(processes, this one's index) of the job whose processes agree; (1, 0) outside one."""
    if not _jax_backend.distributed_started():
        return 1, 0
    return _jax_backend.process_count_and_index()


def _agreed(
    key: str, problem: str | None, processes: int, me: int, timeout: float | None
) -> str | None:
    """The first problem any process had with this backup (None: every one read it whole),
    the same answer in every process."""
    if processes == 1:
        return problem
    from kdist._together import stop

    seconds = timeout if timeout is not None else stop.job_timeout()
    verdict = json.dumps(problem)
    _jax_backend.key_value_set(key.format(process=me), verdict)
    for process in range(processes):
        if process == me:
            found = problem
        else:
            found = json.loads(_jax_backend.key_value_get(key.format(process=process), seconds))
        if found is not None:
            return f"{found} (seen by process {process})"
    return None


def _step_of(name: str) -> str:
    digits = name[len(store.STEP_PREFIX) :].split("-", maxsplit=1)[0]
    return str(int(digits)) if digits.isdigit() else "?"
