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
        self, directory: Path, values: Mapping[str, Any], commit: Callable[[], object] | None
    ) -> None:
        """Waits for the previous save, then starts writing `values` into `directory`;
        returns once they are off the devices. `commit` (process 0's) runs once the
        arrays are complete in every process."""
        self.wait()
        started = time.perf_counter()
        if self._writer is None:
            self._writer = ArrayWriter(self._user)
        writer = self._writer
        writer.start(directory, values)

        def finish() -> None:
            try:
                writer.wait()
                if commit is not None:
                    commit()
                self.committed_seconds.append(time.perf_counter() - started)
            except BaseException as error:  # raised again by wait(), in the training thread
                self._error = error
            finally:
                with _lock:
                    _in_flight.discard(self)

        with _lock:
            _in_flight.add(self)
        self._thread = threading.Thread(target=finish, name="kdist-backup-save")
        self._thread.start()

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
