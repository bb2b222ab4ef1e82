"""How one attempt ended on this machine, once its processes are gone: one blame for every
starter (`kdist launch -n`, the agent of `kdist launch --nodes`).

The answer is an `Outcome`: this machine's status, and the failure that began here as a
structure (`kdist._core.JobFailure`), which the job's ledger compares field by field (the
same failure at the same point twice ends the job). Where it began is read from the
records kdist appends to each process's verdict file (the process the liveness channel
named first, the step the job stopped at), else from the processes' exits.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kdist._local_job.attempt import Attempt, End
from kdist._local_job.job import Job
from kdist._local_job.process import FAILURE_EVENTS, Process, VerdictEvent

if TYPE_CHECKING:
    from kdist._core import JobFailure

# How many of the first failed process's last lines are printed above the summary.
TAIL_LINES = 30
EXIT_CANNOT_EXECUTE = 126  # as a shell's
EXIT_NOT_FOUND = 127


@dataclass
class Outcome:
    """One attempt's end on this machine."""

    status: int  # this machine's processes' status: 0 when all passed
    # The failure that began here (None: all passed, or this machine's processes were
    # ended because of another machine's failure).
    failure: JobFailure | None
    ending: str | None = None  # how kdist ended the job (a stop, a stall), in words
    first: Process | None = None  # this machine's first failed process, when there is one


def blame(run: Attempt, node: str = "") -> Outcome:
    """The outcome of an attempt that `run` ran to `run.end` (its processes reaped).

    Args:
        run: The finished attempt.
        node: This machine's node name ("" on one machine), named in the failure.

    Returns:
        An Outcome; its failure is None when the job's first failure (as kdist's channel
        named it) began on another machine.
    """
    job = run.job
    if run.end is End.PASSED:
        return Outcome(0, None)
    if run.end is End.CANNOT_START:
        assert run.error is not None
        status, what = cannot_run(run.command, run.error)
        failure = _failure(
            kind="PROCESS",
            process_id=run.first_id,
            node=node,
            host=socket.gethostname(),
            exit_status=status,
            ended_how=f"exit {status}",
            what=what,
        )
        return Outcome(status, failure)
    decided = _decided_record(job)
    if decided is not None:
        return _stopped_or_stalled(job, decided, node)
    named = _named_process_id(job)
    status = next((p.status for p in job.processes if p.status not in (None, 0)), 1) or 1
    if named is not None and job.process(named) is None:
        return Outcome(status, None)  # it began on another machine
    first = job.first_failure() or run.failed
    if first is None or first.status is None:
        return Outcome(status, _failure(kind="NODE_ENDED", node=node, exit_status=status))
    failure = _failure(
        kind="PROCESS",
        process_id=first.process_id,
        node=node,
        host=socket.gethostname(),
        pid=first.pid,
        exit_status=first.status or status,
        ended_how=first.ended_how(),
        what=_failure_message(job, first),
    )
    return Outcome(first.status or status, failure, first=first)


def cannot_run(command: Sequence[str], error: OSError) -> tuple[int, str]:
    """The status (as a shell's) and the words when the command cannot be started.

    Example:
        >>> cannot_run(["nope"], FileNotFoundError(2, "No such file"))
        (127, "cannot run 'nope': no such file or command")
    """
    if isinstance(error, FileNotFoundError):
        return EXIT_NOT_FOUND, f"cannot run {command[0]!r}: no such file or command"
    if isinstance(error, PermissionError):
        return EXIT_CANNOT_EXECUTE, f"cannot run {command[0]!r}: permission denied"
    # ENOEXEC (not a program nor a #! script), ENOTDIR, ...
    return EXIT_CANNOT_EXECUTE, f"cannot run {command[0]!r}: {error.strerror or error}"


def print_end(job: Job, outcome: Outcome) -> None:
    """What the starter prints once an attempt failed: how kdist ended the job (a stop, a
    stall), or the first failure's last lines (its traceback) and its line; then the
    summary table of this machine's processes."""
    if outcome.ending is not None:
        job.output.note(outcome.ending)
    elif outcome.first is not None and outcome.failure is not None:
        lines = outcome.first.last_lines(TAIL_LINES)
        if lines:
            job.output.note(
                f"the last lines of process {outcome.first.process_id}:\n"
                + "\n".join(f"  {line}" for line in lines)
            )
        line = outcome.first.error_line  # kdist's own verdict line, else its exception
        job.output.note(
            f"process {outcome.first.process_id} failed first ({outcome.first.ended_how()})"
            + (f": {line}" if line else "")
        )
    job.output.note("summary:\n" + job.summary())


def _decided_record(job: Job) -> dict[str, Any] | None:
    """kdist's record of a stop or a stall that ended the job, when no failure did."""
    if job.records(FAILURE_EVENTS):
        return None
    for event in (VerdictEvent.STALLED, VerdictEvent.STOP_NOW, VerdictEvent.STOP_AT):
        found = job.records((event,))
        if found:
            return found[0]
    return None


def _stopped_or_stalled(job: Job, record: dict[str, Any], node: str) -> Outcome:
    status = next((p.status for p in job.processes if p.status not in (None, 0)), 1) or 1
    ending = job.ending()
    if record.get("event") == VerdictEvent.STALLED:
        failure = _failure(
            kind="STALLED", node=node, exit_status=status, what=str(record.get("message", ""))
        )
        return Outcome(status, failure, ending)
    step = record.get("step") if record.get("event") == VerdictEvent.STOP_AT else -1
    failure = _failure(
        kind="STOPPED",
        process_id=_int(record.get("process_id"), -1),
        node=node,
        host=str(record.get("host", "")),
        pid=_int(record.get("pid"), 0),
        exit_status=status,
        what=str(record.get("message", "")),
        step=_int(step, -1),
    )
    return Outcome(status, failure, ending)


def _named_process_id(job: Job) -> int | None:
    """The job-wide id of the process kdist's channel named as the job's first failure."""
    for record in job.records(FAILURE_EVENTS):
        named = record.get("process_id")
        if isinstance(named, int):
            return named
    return None


def _failure_message(job: Job, process: Process) -> str:
    """What kdist recorded as `process`'s failure, else the exception its traceback names."""
    for record in job.records(FAILURE_EVENTS):
        if record.get("process_id") == process.process_id and record.get("message"):
            return str(record["message"])
    return process.raised or process.error_line


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) else default


def _failure(*, kind: str, **fields: Any) -> JobFailure:
    from kdist import _core

    failure = _core.JobFailure()
    failure.kind = getattr(_core.FailureKind, kind)
    for name, value in fields.items():
        setattr(failure, name, value)
    return failure
