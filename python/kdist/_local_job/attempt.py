"""One attempt of a job on this machine: every process started, watched to one end, and
what is left stopped.

`kdist launch` and `kdist.testing.run_job` both run their jobs as attempts; what each
adds is its policy around them (the launcher's restarts, notes and exit status; run_job's
new port when the coordinator's port was taken, and its results). An attempt ends one
way (`End`): every process passed; one failed (the others get SETTLE_SECONDS to leave by
themselves, then are stopped); the starter received a signal (forwarded to every
process); the deadline came; process 0 found the coordinator's port taken; or the
command could not be started. The hooks let the policy speak (a note, the stacks of the
processes still running) before the attempt stops anything.

Each process's KDIST_VERDICT_FILE is `<folder>/process-<id>.jsonl` (the one layout) and
its KDIST_PROGRESS_FILE `<folder>/progress-<id>.json` (kdist._progress); the caller owns
`folder`.
"""

from __future__ import annotations

import enum
import signal
import time
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kdist import _progress
from kdist._local_job.job import POLL_SECONDS, SETTLE_SECONDS, Job, start
from kdist._local_job.output import Output
from kdist._local_job.process import VERDICT_FILE_VARIABLE, Process
from kdist._local_job.warm import SparePool


class End(enum.Enum):
    """How an attempt ended."""

    PASSED = "passed"  # every process exited with 0
    FAILED = "failed"  # a process exited with a non-zero status
    STOPPED = "stopped"  # the starter received a signal, forwarded to every process
    TIMED_OUT = "timed out"  # the deadline came with processes still running
    PORT_TAKEN = "port taken"  # process 0 found the coordinator's port taken
    CANNOT_START = "cannot start"  # the command could not be started (`error`)


def verdict_file(folder: Path, process_id: int) -> Path:
    """Where process `process_id` of an attempt in `folder` appends kdist's records."""
    return folder / f"process-{process_id}.jsonl"


@dataclass
class Hooks:
    """What the starter's policy does at an attempt's turning points, before the attempt
    stops anything (each may be left out)."""

    # The processes have started (the launcher's "started N processes" note).
    started: Callable[[Job], None] | None = None
    # A process exited with a non-zero status (first), the others not yet settled.
    failed: Callable[[Job, Process], None] | None = None
    # The starter received this signal; it is forwarded next.
    signalled: Callable[[Job, int], None] | None = None
    # The deadline came; these processes are still running (run_job dumps their stacks).
    deadline: Callable[[Job, list[Process]], None] | None = None
    # Asked once process 0 exited non-zero: did it find the coordinator's port taken?
    port_taken: Callable[[Process], bool] | None = None


@dataclass
class Attempt:
    """One start of the job: `run()` starts it, watches it to its end and stops what is
    left; then `end` says how it ended and `job` holds its processes (reaped)."""

    command: Sequence[str]
    envs: Sequence[Mapping[str, str]]  # each process's, in process-id order
    folder: Path  # the attempt's files: each process's verdict file
    output: Output
    received: list[int] = field(default_factory=list)  # signals the starter received
    deadline: float | None = None  # monotonic; None: no limit
    grace: float | None = None  # SIGTERM, then SIGKILL after it; None: SIGKILL at once
    hooks: Hooks = field(default_factory=Hooks)
    stopped_by: str = "the launcher"  # how the summary names who stopped a process
    hook_before_exec: bool = True  # see job.start
    quiet: Container[int] = ()
    log_files: Sequence[Path] | None = None
    first_id: int = 0  # the job-wide id of envs[0] (a machine's share of a larger job)
    # Warm spares: process i runs in local process i's when one is ready (job.start), and
    # the pool replaces what was used or died while the attempt runs.
    spares: SparePool | None = None
    # What run() found.
    end: End = End.PASSED
    failed: Process | None = None  # the first process to exit non-zero
    signum: int | None = None  # End.STOPPED: the signal
    timed_out: list[Process] = field(default_factory=list)  # running at the deadline
    error: OSError | None = None  # End.CANNOT_START
    seconds: float = 0.0

    def __post_init__(self) -> None:
        self.job = Job([], self.output, self.received, stopped_by=self.stopped_by)

    def run(self) -> End:
        began = time.monotonic()
        envs = [
            {
                **env,
                VERDICT_FILE_VARIABLE: str(verdict_file(self.folder, i)),
                _progress.VARIABLE: str(_progress.file_of(self.folder, i)),
            }
            for i, env in enumerate(self.envs)
        ]
        job = self.job
        try:
            try:
                # The job (its line hook) exists before the start, so that the output
                # readers feed it the kdist lines from the first one.
                job.processes = start(
                    self.command,
                    envs,
                    self.output,
                    job.on_line,
                    hook_before_exec=self.hook_before_exec,
                    quiet=self.quiet,
                    log_files=self.log_files,
                    first_id=self.first_id,
                    spares=self.spares,
                )
            except OSError as error:
                self.error, self.end = error, End.CANNOT_START
                return self.end
            job.started = time.monotonic()
            job.progress_files = self.progress_files()
            if self.hooks.started is not None:
                self.hooks.started(job)
            self.end = self._watch()
            return self.end
        finally:
            self.seconds = time.monotonic() - began
            job.finish()  # kills what is left of every process group, reaps, drains

    def progressed(self) -> bool:
        """Whether a process of this attempt saved a backup or stepped past its first
        step (what it told through kdist._progress)."""
        return _progress.any_progress(
            _progress.file_of(self.folder, i) for i in range(len(self.envs))
        )

    def progress_files(self) -> list[Path]:
        """Each process's KDIST_PROGRESS_FILE (kdist._progress)."""
        return [_progress.file_of(self.folder, i) for i in range(len(self.envs))]

    def steps(self) -> _progress.Steps:
        """The steps this attempt's processes reported, merged (goodput's)."""
        return _progress.steps_of(self.progress_files())

    def _watch(self) -> End:
        job, hooks = self.job, self.hooks
        while True:
            if self.spares is not None:
                self.spares.maintain()  # a new spare as soon as one was used or died
            if self.received:
                self.signum = self.received[0]
                if hooks.signalled is not None:
                    hooks.signalled(job, self.signum)
                job.stop(self.signum, self.grace or 0.0)
                return End.STOPPED
            self.failed = next((p for p in job.processes if p.poll() not in (None, 0)), None)
            if self.failed is not None:
                return self._after_failure(self.failed)
            if not job.running():
                return End.PASSED
            if self.deadline is not None and time.monotonic() >= self.deadline:
                self.timed_out = job.running()
                if hooks.deadline is not None:
                    hooks.deadline(job, self.timed_out)
                self._stop()
                return End.TIMED_OUT
            time.sleep(POLL_SECONDS)

    def _after_failure(self, failed: Process) -> End:
        """Lets the others leave by themselves (kdist's liveness channel ends them within
        about a second; a SIGTERM would be caught by JAX's preemption notifier and only
        waste the grace), then stops what is left."""
        if self._port_taken():
            return End.PORT_TAKEN
        if self.hooks.failed is not None:
            self.hooks.failed(self.job, failed)
        settled = time.monotonic() + SETTLE_SECONDS
        if self.deadline is not None:
            settled = min(settled, self.deadline)
        while self.job.running() and time.monotonic() < settled and not self.received:
            if self._port_taken():
                return End.PORT_TAKEN
            time.sleep(POLL_SECONDS)
        if self.job.running():
            self._stop()
        return End.FAILED

    def _port_taken(self) -> bool:
        first = self.job.processes[0]
        if self.hooks.port_taken is None or first.poll() in (None, 0):
            return False
        return self.hooks.port_taken(first)

    def _stop(self) -> None:
        if self.grace is None:
            for process in self.job.running():
                process.signal_group(signal.SIGKILL)
        else:
            self.job.stop(signal.SIGTERM, self.grace)
