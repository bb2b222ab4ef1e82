"""A backup's save in the background: one at a time, committed once its arrays are
complete.

`BackgroundSave.start` hands the arrays to Orbax (arrays.py), which returns once they
are off the devices, and then waits in a thread for the write to complete in every
process; in process 0 that thread then commits the backup (store.py). The next save,
the agreed stop and the end of training wait for it first (`wait`), so a save is never
committed twice or out of order, and what the write or the commit raised is raised
there, in the training thread.

The thread is not a daemon: a process that ends (its training finished, or it raised)
stays until the backup it was writing is committed. `wait_all` waits for every save of
this process (a new `fit` reads the directory only once the last one is committed).

A save that fails (Orbax's write or the commit: no space, an I/O error, the folder
removed) is turned into the error `failed` makes of it (storage.py: the folder, the OS
error, the backup that stays) and raised in the training thread: at the next batch
(`raise_if_failed`, which does not wait), or at the next `wait`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kdist._resume.arrays import ArrayWriter

_in_flight: set[BackgroundSave] = set()
_lock = threading.Lock()


class BackgroundSave:
    """The saves of one callback, one at a time."""

    def __init__(self, user: str) -> None:
        self._user = user
        self._writer: ArrayWriter | None = None  # made at the first save (imports Orbax)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.committed_seconds: list[float] = []  # from each save's start to its commit

    def start(
        self,
        directory: Path,
        values: Mapping[str, Any],
        commit: Callable[[], object] | None,
        failed: Callable[[BaseException], BaseException] = lambda error: error,
        done: Callable[[], object] | None = None,
    ) -> None:
        """Waits for the previous save, then starts writing `values` into `directory`;
        returns once they are off the devices. `commit` (process 0's) runs once the
        arrays are complete in every process; `failed` makes the error to raise of what
        the write or the commit raised; `done` runs once this process's part is written
        (and, in process 0, committed)."""
        self.wait()
        started = time.perf_counter()
        if self._writer is None:
            self._writer = ArrayWriter(self._user)
        writer = self._writer
        try:
            writer.start(directory, values)
        except Exception as error:  # Orbax's own kinds wrap the OS error
            raise failed(error) from error

        def finish() -> None:
            # What it raises is raised again by wait(), in the training thread: Orbax's
            # write failed (its own kinds wrap the OS error), or the commit's I/O did;
            # anything else (a bug) as it is.
            try:
                try:
                    writer.wait()
                except Exception as error:
                    raise failed(error) from error
                if commit is not None:
                    try:
                        commit()
                    except OSError as error:
                        raise failed(error) from error
                self.committed_seconds.append(time.perf_counter() - started)
                if done is not None:
                    done()
            except BaseException as error:
                self._error = error
            finally:
                with _lock:
                    _in_flight.discard(self)

        with _lock:
            _in_flight.add(self)
        self._thread = threading.Thread(target=finish, name="kdist-backup-save")
        self._thread.start()

    def raise_if_failed(self) -> None:
        """Raises what the save in flight raised if it already ended so; never waits."""
        thread = self._thread
        if thread is not None and not thread.is_alive():
            self.wait()

    def wait(self) -> None:
        """Returns once the save in flight (if any) is committed; raises what it raised."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error


def wait_all() -> None:
    """Waits for every save in flight in this process (what they raise stays theirs)."""
    with _lock:
        saves = list(_in_flight)
    for save in saves:
        thread = save._thread
        if thread is not None:
            thread.join()
