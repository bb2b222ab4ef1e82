"""One persistent compilation cache for every attempt of a job on this machine.

Unless the user set one of JAX's cache variables (`USER_VARIABLES`), every process of every
attempt gets JAX_COMPILATION_CACHE_DIR (in --log-dir when given, else a folder of the job's
that kdist removes at the end) with thresholds that let a small program's compilations in,
so a later attempt compiles nothing an earlier one compiled. A folder that cannot be written
is named in a note and the job runs without it: never fatal. Only for a JAX the suite runs
(`_jax_backend.within_tested_range`): JAX 0.12.1's cache hangs a multi-process job at its
first step read from the cache (two processes on CPU, raw `jax.distributed` and a `jit` with
a cross-process sum, run twice on one cache folder: the second run never ends), so for a
newer JAX kdist leaves the cache off and says so. JAX reads these variables when
it is imported; they are the job's (the same for every attempt), so a warm spare
(`kdist._local_job.warm`) has them from its start.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

# JAX's names (jax/_src/config.py: each setting's JAX_<NAME> variable).
CACHE_DIR_VARIABLE = "JAX_COMPILATION_CACHE_DIR"
MIN_COMPILE_TIME_VARIABLE = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
MIN_ENTRY_SIZE_VARIABLE = "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"
ENABLE_VARIABLE = "JAX_ENABLE_COMPILATION_CACHE"
# Any of them set by the user: kdist leaves JAX's cache to them (JAX_ENABLE_COMPILATION_CACHE
# =false turns it off).
USER_VARIABLES = (
    CACHE_DIR_VARIABLE,
    MIN_COMPILE_TIME_VARIABLE,
    MIN_ENTRY_SIZE_VARIABLE,
    ENABLE_VARIABLE,
)
# The folder's name in --log-dir.
LOG_DIR_FOLDER = "jax-compilation-cache"


@dataclass
class CompileCache:
    """What the processes of every attempt get, and what the starter does at the end."""

    folder: Path | None = None  # None: no cache from kdist (the user's, or none)
    made_by_kdist: bool = False  # a job-scoped folder: removed by `close`
    variables: dict[str, str] = field(default_factory=dict)
    warning: str = ""  # why kdist gives no cache, told at the start ("" when nothing to tell)

    def close(self) -> None:
        """Removes the folder when kdist made it for this job."""
        if self.folder is not None and self.made_by_kdist:
            shutil.rmtree(self.folder, ignore_errors=True)


def plan(
    environ: Mapping[str, str], log_dir: Path | None, jax_version: str | None = None
) -> CompileCache:
    """The job's compilation cache on this machine: made (and checked writable) now.

    Args:
        environ: The starter's environment (the user's variables).
        log_dir: --log-dir; None: a folder of the job's in the temporary folder.
        jax_version: The JAX the processes run; None: the one installed here
            (`_jax_backend.jax_version()`, read from its metadata, not imported).

    Returns:
        The cache; with no folder when the user set JAX's variables, when JAX is newer than
        the newest tested, or when the folder cannot be written (`warning` says which and
        what to do).

    Example:
        >>> from kdist._local_job.compile_cache import plan
        >>> plan({"JAX_COMPILATION_CACHE_DIR": "/mine"}, None, "0.12.0.1").folder is None
        True
        >>> plan({}, None, "0.12.1").warning.startswith("the compilation cache is off")
        True
        >>> cache = plan({}, None, "0.12.0.1")
        >>> sorted(cache.variables)[0], cache.made_by_kdist
        ('JAX_COMPILATION_CACHE_DIR', True)
        >>> cache.close()
    """
    mine = [name for name in USER_VARIABLES if name in environ]
    if mine:
        return CompileCache()  # JAX's cache is the user's
    from kdist import _jax_backend  # not at import: `kdist --help` reads no JAX module

    if jax_version is None:
        jax_version = _jax_backend.jax_version()
    if not _jax_backend.within_tested_range(jax_version):
        why = (
            f"the compilation cache is off: JAX {jax_version} is "
            f"{_jax_backend.tested_range(jax_version)}, and JAX 0.12.1's cache hangs a "
            "multi-process job at its first cached step; every attempt compiles again "
            "(set JAX_COMPILATION_CACHE_DIR to use JAX's cache anyway)"
        )
        return CompileCache(warning=why)
    made = log_dir is None
    try:
        if log_dir is None:
            folder = Path(tempfile.mkdtemp(prefix="kdist-jax-cache-"))
        else:
            folder = log_dir / LOG_DIR_FOLDER
            folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".kdist-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        where = "a temporary folder" if log_dir is None else str(log_dir / LOG_DIR_FOLDER)
        why = (
            f"the compilation cache {where} cannot be written ({error.strerror or error}): "
            "every attempt compiles again"
        )
        return CompileCache(warning=why)
    variables = {
        CACHE_DIR_VARIABLE: str(folder),
        # Every compilation, however short and small (JAX's defaults keep those under 1 s
        # out, which is all of a small program's).
        MIN_COMPILE_TIME_VARIABLE: "0",
        MIN_ENTRY_SIZE_VARIABLE: "0",
    }
    return CompileCache(folder, made, variables)
