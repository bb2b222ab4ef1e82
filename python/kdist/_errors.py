"""kdist's exceptions: one tree under KdistError.

Each class also subclasses the built-in exception a Keras or JAX user already
catches, so existing `except ValueError:` / `except TimeoutError:` code keeps
working. The compiled core raises these by name (see cpp/bindings/core_module.cc).
"""


class KdistError(Exception):
    """Base class of every error kdist raises."""


class ConfigError(KdistError, ValueError):
    """A setting is malformed, out of range, missing or inconsistent.

    The message names the value, where it came from (argument, environment
    variable, detected scheduler) and the expected form.
    """


class ArgumentTypeError(KdistError, TypeError, ValueError):
    """An argument of a distribution type has the wrong type.

    Both a TypeError (what Python code expects for a wrong type) and a
    ValueError (what `keras.distribution` raises for the same mistake: a
    `device_mesh` that is not a DeviceMesh, a `layout_map` that is not a
    LayoutMap, a LayoutMap value that is not a layout), so code written for
    either keeps catching it.
    """


class InitializationOrderError(KdistError, RuntimeError):
    """initialize() was called too late: the JAX backend already started."""


class PortInUseError(KdistError, OSError):
    """The coordinator's port is already taken by a live listener."""


class CoordinatorUnreachableError(KdistError, ConnectionError):
    """A worker could not reach the coordinator before its deadline."""


class RendezvousError(KdistError, RuntimeError):
    """The processes of the job disagree (ids, process count, configuration)."""


class RendezvousTimeoutError(RendezvousError, TimeoutError):
    """Not every process joined the roll call before the deadline."""


class BarrierError(KdistError, RuntimeError):
    """A `kdist.barrier()` cannot complete: processes met at barriers of different
    names, or a process finished without reaching it. The message names the
    barriers, the processes at each and their hosts."""


class BarrierTimeoutError(BarrierError, TimeoutError):
    """Not every process reached a `kdist.barrier()` before its timeout; raised in
    every waiting process, naming the processes (and hosts) that did not arrive."""


class BackupMismatchError(KdistError, ValueError):
    """A backup of `kdist.BackupAndRestore` was written by a job of another size (process
    or device count) or layout (mesh, axis names, the variables' shardings), or for
    another model; the message says what the backup holds, what this job has, and what
    to do. It is never loaded silently."""


class BackupStorageError(KdistError, OSError):
    """The backup directory of `kdist.BackupAndRestore` (or `kdist.load_backup`) cannot
    serve: it cannot be made or written (read-only, not a folder, no permission, full),
    a save failed there (no space, an I/O error, the folder removed), or no backup kept
    there reads whole. Raised in every process, naming the folder (or each backup tried)
    and the operating system's reason; also an OSError, so `except OSError:` catches it.
    Its `errno` is the OS error's when there is one (errno.EROFS, errno.ENOSPC, ...)."""


# Tracebacks, reprs and pickles name each class as users import it: kdist.ConfigError,
# not kdist._errors.ConfigError (every one is exported by kdist/__init__.py).
for _public in (
    KdistError,
    ConfigError,
    ArgumentTypeError,
    InitializationOrderError,
    PortInUseError,
    CoordinatorUnreachableError,
    RendezvousError,
    RendezvousTimeoutError,
    BarrierError,
    BarrierTimeoutError,
    BackupMismatchError,
    BackupStorageError,
):
    _public.__module__ = "kdist"
del _public
