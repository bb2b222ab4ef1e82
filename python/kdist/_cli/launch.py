"""`kdist launch`: an N-process job on this machine, with the coordinator on loopback.

Each process runs in its own process group (so that its own children are
signalled with it) and, on Linux, asks the kernel to SIGKILL it when the
launcher dies (PR_SET_PDEATHSIG), so that each process the launcher started
dies with it, even when the launcher is killed with SIGKILL. That covers only
those processes: their own children are killed with the process group when
the launcher ends the job, but outlive a launcher killed with SIGKILL unless
they arrange to die with their parent. The launcher watches its processes without
reaping them (waitid with WNOWAIT) until the end, so a process group id it
signals can never belong to someone else's processes. Starting, watching,
copying the output and stopping are `kdist._local_job`'s, shared with
`kdist.testing.run_job`; this module is the command's policy: signals, notes,
the timeout and the exit status.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from kdist import _core
from kdist._local_job.environment import child_environment
from kdist._local_job.job import POLL_SECONDS, SETTLE_SECONDS, Job, start
from kdist._local_job.output import Output
from kdist._local_job.process import VERDICT_FILE_VARIABLE, Process

EXIT_TIMEOUT = 124  # as timeout(1)
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def launch(
    command: Sequence[str],
    *,
    num_processes: int,
    devices_per_process: int | None = None,
    port: int | None = None,
    timeout: float | None = None,
    grace: float = 30.0,
    stall_timeout: float | None = None,
    out: BinaryIO | None = None,
    err: BinaryIO | None = None,
) -> int:
    """Runs `command` as `num_processes` processes of one job on 127.0.0.1.

    Must run in the main thread (it handles SIGINT, SIGTERM and SIGHUP,
    forwarding them to every process) of a process without other threads
    (on Linux each child is told to die with its parent between fork and exec).

    Args:
        command: The program and its arguments.
        num_processes: How many processes; each gets its id in
            KERAS_DISTRIBUTION_PROCESS_ID.
        devices_per_process: When set, each process uses JAX's CPU backend
            with this many devices. Defaults to None: the machine's devices.
        port: The coordinator's port. Defaults to None: a free port.
        timeout: Seconds after which the whole job is stopped (exit status
            124). Defaults to None: no limit.
        grace: Seconds between SIGTERM and SIGKILL when stopping; a kdist job
            stops together at one agreed step meanwhile. Defaults to 30.
        stall_timeout: When set, KDIST_STALL_TIMEOUT for every process (kdist's
            stall watchdog). Defaults to None: off.
        out: Where the processes' stdout lines go. Defaults to stdout.
        err: Where their stderr lines and the launcher's notes go. Defaults
            to stderr.

    After the first non-zero exit the others get SETTLE_SECONDS to leave by
    themselves (kdist's liveness channel ends them at once), then SIGTERM and,
    after `grace`, SIGKILL. The launcher then names the first failure (the
    process kdist's channel named, else the first to exit non-zero) and prints
    a summary table: process, host, pid, how it ended, when, its last error
    line, with the first failure marked.

    Returns:
        0 when every process exited with 0; else the first failure's status
        (128 + N for a process killed by signal N); 128 + N when the
        launcher received signal N; 124 on timeout; 127 (126) when the
        command cannot be found (executed).

    Example:
        >>> from kdist._cli.launch import launch
        >>> launch(["true"], num_processes=2)  # doctest: +SKIP
        0
    """
    output = Output(out or sys.stdout.buffer, err or sys.stderr.buffer)
    port = port or _core.free_port()
    records = Path(tempfile.mkdtemp(prefix="kdist-launch-"))
    envs = []
    for i in range(num_processes):
        env = child_environment(
            os.environ,
            process_id=i,
            num_processes=num_processes,
            port=port,
            devices_per_process=devices_per_process,
        )
        env[VERDICT_FILE_VARIABLE] = str(records / f"process-{i}.jsonl")
        if stall_timeout is not None:
            env["KDIST_STALL_TIMEOUT"] = repr(stall_timeout)
        envs.append(env)
    received: list[int] = []
    previous = {
        s: signal.signal(s, lambda signum, _frame: received.append(signum))
        for s in _FORWARDED_SIGNALS
    }
    job: Job | None = None
    # Made before the start so that the output readers can feed it the kdist lines.
    pending = Job([], output, received)
    try:
        try:
            processes = start(command, envs, output, pending.on_line)
        except FileNotFoundError:
            output.note(f"cannot run {command[0]!r}: no such file or command")
            return EXIT_NOT_FOUND
        except PermissionError:
            output.note(f"cannot run {command[0]!r}: permission denied")
            return EXIT_CANNOT_EXECUTE
        except OSError as error:  # ENOEXEC (not a program nor a #! script), ENOTDIR, ...
            output.note(f"cannot run {command[0]!r}: {error.strerror or error}")
            return EXIT_CANNOT_EXECUTE
        pending.processes, pending.started = processes, time.monotonic()
        job = pending
        output.note(
            f"started {num_processes} process{'es' if num_processes != 1 else ''} "
            f"(pids {', '.join(str(p.pid) for p in processes)}), coordinator 127.0.0.1:{port}"
        )
        return _supervise(job, timeout, grace)
    finally:
        if job is not None:
            job.finish()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        shutil.rmtree(records, ignore_errors=True)


def _end_after_failure(job: Job, failed: Process, grace: float) -> int:
    """The first non-zero exit: lets the others leave by themselves (kdist's liveness
    channel ends them within about a second; a SIGTERM would be caught by JAX's
    preemption notifier and only waste the grace), stops what is left, then blames
    the first failure (the one kdist named, else the first non-zero exit), prints the
    summary table and returns that failure's status."""
    assert failed.status is not None
    others = [p for p in job.processes if p is not failed and p.poll() is None]
    job.output.note(
        f"process {failed.process_id} exited with status {failed.status}"
        + (
            f"; giving the others {SETTLE_SECONDS:g} s to leave, then stopping them"
            if others
            else ""
        )
    )
    job.settle(SETTLE_SECONDS)
    if job.running():
        job.stop(signal.SIGTERM, grace)
    ending = job.ending()
    if ending is not None:  # the job stopped or stalled, as kdist decided
        job.output.note(ending)
        job.output.note("summary:\n" + job.summary())
        return failed.status
    first = job.first_failure() or failed
    assert first.status is not None
    job.output.note(
        f"process {first.process_id} failed first ({first.ended_how()})"
        + (f": {first.error_line}" if first.error_line else "")
    )
    job.output.note("summary:\n" + job.summary())
    return first.status


def _supervise(job: Job, timeout: float | None, grace: float) -> int:
    """Waits for the job; stops it on the first failure, a signal or the timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if job.received:
            signum = job.received[0]
            job.output.note(
                f"received {signal.Signals(signum).name}: forwarding it to every process"
            )
            job.stop(signum, grace)
            ending = job.ending()
            if ending is not None:
                job.output.note(ending)
            return 128 + signum
        failed = next((p for p in job.processes if p.poll() not in (None, 0)), None)
        if failed is not None:
            return _end_after_failure(job, failed, grace)
        if not job.running():
            return 0
        if deadline is not None and time.monotonic() >= deadline:
            job.output.note(f"timed out after {timeout:g} s; stopping every process")
            job.stop(signal.SIGTERM, grace)
            return EXIT_TIMEOUT
        time.sleep(POLL_SECONDS)
