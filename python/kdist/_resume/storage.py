"""Whether the backup folder can serve, checked before the first step, and a save that
failed there, named: both as `kdist.BackupStorageError` (also an OSError), with the
folder, the operating system's reason and what to do.

The check at the start (`check_writable`): the folder exists or can be made, it is a
folder, a probe file can be written there and flushed to the disk (a real write and an
fsync, then removed: a read-only mount, a missing permission or a full disk fail here,
as they would at the first save), and, once the model is known, the file system has room
for one more backup as far as `statvfs` can tell (a shared file system's quota may still
refuse it; the save then fails as below). Every process checks for itself (they all see
the folder), so each raises the same error before any step.

`save_failed` makes the error a failed save raises (Orbax's write or kdist's commit: no
space, an I/O error, the folder removed), naming the backup that stays the one a restart
uses.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import uuid
from pathlib import Path

from kdist._errors import BackupStorageError

_PROBE_BYTES = 4096
_ADVICE = (
    "Give a backup_dir on a writable file system every process of the job sees, with room "
    "for the backups kept (see docs/resume.md, When storage fails)"
)


def check_writable(root: Path, user: str, *, one_backup_bytes: int | None = None) -> None:
    """Raises kdist.BackupStorageError unless `root` is (or can be made) a folder this
    process can write and flush a file into, with room for `one_backup_bytes` more
    (None: room not checked). `user` names who asks, for the message."""
    if root.exists() and not root.is_dir():
        raise _error(
            errno.ENOTDIR,
            user,
            root,
            "is not a folder: a file is there",
            "move the file away or give another path",
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _error(
            error.errno, user, root, f"cannot be made ({_reason(error)})", _who_may_write(root)
        ) from error
    probe = root / f".kdist-probe-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        _write_and_flush(probe)
    except OSError as error:
        raise _error(
            error.errno,
            user,
            root,
            f"cannot be written ({_reason(error)}: a probe file written and flushed there failed)",
            _who_may_write(root),
        ) from error
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    if one_backup_bytes is None:
        return
    free = free_bytes(root)
    if free is not None and free < one_backup_bytes:
        raise _error(
            errno.ENOSPC,
            user,
            root,
            f"has {_size(free)} free; one more backup of this model needs about "
            f"{_size(one_backup_bytes)} ({os.strerror(errno.ENOSPC)})",
            "free space there, or give a backup_dir on a larger file system",
        )


def check_readable(root: Path, user: str) -> None:
    """Raises kdist.BackupStorageError when `root` exists but is not a folder this
    process can list (`kdist.load_backup` only reads: a read-only folder serves)."""
    if not root.exists():
        return  # no backup there: the reader says what it found
    if not root.is_dir():
        raise _error(
            errno.ENOTDIR,
            user,
            root,
            "is not a folder: a file is there",
            "give the backup_dir the callback saved into",
        )
    try:
        with os.scandir(root) as entries:
            next(entries, None)
    except OSError as error:
        raise _error(
            error.errno, user, root, f"cannot be read ({_reason(error)})", _who_may_write(root)
        ) from error


def free_bytes(root: Path) -> int | None:
    """Bytes this process may still write on `root`'s file system (None: unknown)."""
    try:
        stats = os.statvfs(root)
    except OSError:
        return None
    return int(stats.f_bavail) * int(stats.f_frsize)


def save_failed(
    user: str, root: Path, step: int, error: BaseException, kept: str | None
) -> BackupStorageError:
    """The error of a save of `step` into `root` that raised `error`; `kept` names the
    newest whole backup (None: none yet)."""
    os_error = _os_error_in(error)
    code = os_error.errno if os_error is not None else None
    stays = (
        f"the newest whole backup stays {root / kept}: a restart resumes from it"
        if kept
        else "no backup was committed yet: a restart starts from scratch"
    )
    what = _reason(os_error) if os_error is not None else f"{type(error).__name__}: {error}"
    if os_error is not None and str(os_error) not in what:
        what = f"{what}; {type(error).__name__}: {error}"
    message = (
        f"{user}: the save of step {step} into {root} failed: {what}. Training stops here "
        f"(a job that goes on without a backup loses more at its next end); {stays}. "
        f"{_ADVICE}."
    )
    failed = BackupStorageError(message)
    failed.errno = code  # only errno: with strerror and filename, str() would be the OS's
    return failed


# --- helpers -------------------------------------------------------------------------------


def _write_and_flush(path: Path) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        written = os.write(descriptor, b"\0" * _PROBE_BYTES)
        if written != _PROBE_BYTES:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _os_error_in(error: BaseException | None) -> OSError | None:
    """The first OSError with an errno in `error` or its causes (Orbax and TensorStore
    wrap the operating system's error in their own)."""
    seen = 0
    while error is not None and seen < 16:
        if isinstance(error, OSError) and error.errno is not None:
            return error
        error = error.__cause__ or error.__context__
        seen += 1
    return None


def _reason(error: OSError) -> str:
    if error.errno is None:
        return str(error)
    return f"[Errno {error.errno}] {error.strerror or os.strerror(error.errno)}"


def _who_may_write(root: Path) -> str:
    """What to do about a folder this process may not write: who owns it, who we are."""
    folder = root
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        owner = folder.stat().st_uid
    except OSError:
        return "make it writable to this process, or give another backup_dir"
    me = os.geteuid()
    if owner != me:
        return (
            f"{folder} belongs to uid {owner} and this process runs as uid {me}: make it "
            "writable to this user (or a group it is in), or give another backup_dir"
        )
    return (
        "make it writable (mount it read-write, or fix its permissions), or give another backup_dir"
    )


def _size(count: int) -> str:
    return f"{count / 1e6:,.1f} MB" if count >= 100_000 else f"{count:,} bytes"


def _error(code: int | None, user: str, root: Path, what: str, advice: str) -> BackupStorageError:
    error = BackupStorageError(
        f"{user}: backup_dir {root} {what}. Expected a folder every process can write and "
        f"flush files into, with room for one more backup (from the backup_dir argument); "
        f"checked before the first step. What to do: {advice}."
    )
    error.errno = code  # only errno: with strerror and filename, str() would be the OS's
    return error
