"""How a run_job() job ended badly: JobFailed, JobTimeout and each process's end."""

from __future__ import annotations

from dataclasses import dataclass
from signal import Signals

from kdist._errors import KdistError


@dataclass(frozen=True)
class ProcessEnd:
    """How one process of a run_job() job ended.

    Attributes:
        process_id: Its id in the job.
        pid: Its operating-system process id (gone once run_job returns).
        exit_status: Its exit code, when it exited by itself; else None.
        signal: The signal that ended it, when one did; else None.
        stopped: Whether run_job stopped it (it was still running after the first
            failure, or at the timeout).
        returned: Whether `fn` returned in it.
        output: Its last lines of output (stdout and stderr, in the order they came).
    """

    process_id: int
    pid: int
    exit_status: int | None
    signal: Signals | None
    stopped: bool
    returned: bool
    output: tuple[str, ...] = ()

    def describe(self) -> str:
        """'exit 1', 'killed by SIGKILL', 'still running; stopped by run_job (SIGKILL)', ..."""
        if self.stopped:
            how = "still running; stopped by run_job"
            if self.signal is not None:
                how += f" ({self.signal.name})"
        elif self.signal is not None:
            how = f"killed by {self.signal.name}"
        else:
            how = f"exit {self.exit_status}"
        return how + ("; fn returned" if self.returned else "")


class JobFailed(KdistError, RuntimeError):
    """A process of a run_job() job failed; every process was ended.

    Attributes:
        process_id: The process that failed first: the first whose `fn` raised
            (or whose start, or the pickling of its return value, failed), else
            the first that died (a signal, `os._exit`) or exited without returning.
        error: What it raised, its type and message's first line ("ValueError: bad
            shape"; not the notes that follow, such as JAX's traceback-filtering
            note), or how it ended ("killed by SIGKILL").
        traceback: Its traceback, as text, from that process; "" when it left
            none (killed by a signal, os._exit).
        ends: How every process ended, in process-id order.
    """

    def __init__(
        self,
        message: str,
        *,
        process_id: int | None = None,
        error: str = "",
        traceback: str = "",
        ends: tuple[ProcessEnd, ...] = (),
    ) -> None:
        super().__init__(message)
        self.process_id = process_id
        self.error = error
        self.traceback = traceback
        self.ends = ends

    @property
    def signal(self) -> Signals | None:
        """The signal that killed the first failure, if one did."""
        for end in self.ends:
            if end.process_id == self.process_id and not end.stopped:
                return end.signal
        return None


class JobTimeout(JobFailed, TimeoutError):
    """A run_job() job did not end within its timeout; every process was ended.

    Also a TimeoutError. `process_id` is the first process still running `fn`
    (or its start) at the deadline; `still_running` names all of them, and each
    one's `ends[i].output` ends with its Python stacks, dumped at the deadline.

    Attributes:
        timeout: The timeout, in seconds.
        still_running: The processes in which `fn` had not returned at the deadline
            (every running one, when `fn` had returned in all of them).
    """

    def __init__(
        self,
        message: str,
        *,
        process_id: int | None = None,
        error: str = "",
        traceback: str = "",
        ends: tuple[ProcessEnd, ...] = (),
        timeout: float = 0.0,
        still_running: tuple[int, ...] = (),
    ) -> None:
        super().__init__(
            message, process_id=process_id, error=error, traceback=traceback, ends=ends
        )
        self.timeout = timeout
        self.still_running = still_running


for _public in (JobFailed, JobTimeout, ProcessEnd):
    _public.__module__ = "kdist.testing"
del _public
