"""Files only this process can read, for JAX to open by path: its TLS key and certificates.

JAX takes its mutual TLS settings as paths (and re-reads the files now and then), so the
key kdist makes for this process must be a file while the job runs. It lives in memory: an
anonymous memory file (`memfd_create`), opened by JAX as `/proc/self/fd/N`, which no other
user can open, no disk holds, and the kernel frees when the process ends, however it ends
(`os._exit`, SIGKILL). Where the system has no memory files or no `/proc`, the files go to
a private temporary folder (mode 0700, each file 0600), removed by `close()`, at exit, or
at the latest by the system's temporary-folder cleaning after a SIGKILL.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading

_PROC_FD = "/proc/self/fd"


class SecretFiles:
    """A set of private files for this process; `close()` removes them all.

    Example:
        >>> files = SecretFiles()
        >>> path = files.write("example.pem", b"secret")
        >>> open(path, "rb").read()
        b'secret'
        >>> files.close()
    """

    def __init__(self, *, in_memory: bool | None = None) -> None:
        """Args:
        in_memory: Whether the files live in memory. Defaults to None: in memory where
            this system can (`os.memfd_create` and `/proc/self/fd`), else in a private
            temporary folder.
        """
        if in_memory is None:
            in_memory = hasattr(os, "memfd_create") and os.path.isdir(_PROC_FD)
        self._in_memory = in_memory
        self._descriptors: list[int] = []
        self._folder: str | None = None
        self._lock = threading.Lock()
        atexit.register(self.close)

    @property
    def where(self) -> str:
        """Where the files live, in words (for the log)."""
        if self._in_memory:
            return "in memory (memfd)"
        return f"in the private folder {self._folder or '(not made yet)'}"

    def write(self, name: str, data: bytes) -> str:
        """Writes `data` to a new private file and returns the path JAX opens.

        Args:
            name: The file's name (in the folder; the memory file's label).
            data: Its content.

        Returns:
            `/proc/self/fd/N` for a memory file, else the file's path in the private folder.

        Raises:
            OSError: the system refused the file.
        """
        with self._lock:
            if self._in_memory:
                descriptor = os.memfd_create(f"kdist-{name}", os.MFD_CLOEXEC)
                self._descriptors.append(descriptor)
                _write_all(descriptor, data)
                return f"{_PROC_FD}/{descriptor}"
            if self._folder is None:
                self._folder = tempfile.mkdtemp(prefix="kdist-tls-")  # mode 0700
            path = os.path.join(self._folder, name)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                _write_all(descriptor, data)
            finally:
                os.close(descriptor)
            return path

    def close(self) -> None:
        """Removes every file (closes the memory files, deletes the folder); idempotent."""
        with self._lock:
            for descriptor in self._descriptors:
                with contextlib.suppress(OSError):
                    os.close(descriptor)
            self._descriptors.clear()
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
                self._folder = None
        atexit.unregister(self.close)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]
