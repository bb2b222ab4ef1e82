"""Every process of a job on this machine, started and ended together.

`start()` starts each process in its own process group, told to die with its
parent, and copies its output line by line with an `[id] ` prefix. A `Job`
watches them (without reaping), learns the first failure (or how kdist stopped
the job) from the records kdist appends to each process's KDIST_VERDICT_FILE,
stops what is left by process group, and reaps.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Container, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from kdist._local_job.output import Output, copy_lines, is_gloo_connected_note, shortened, table
from kdist._local_job.process import (
    FAILURE_EVENTS,
    VERDICT_FILE_VARIABLE,
    Process,
    VerdictEvent,
    die_with_parent_hook,
)
from kdist._local_job.warm import SparePool

POLL_SECONDS = 0.05
_READER_JOIN_SECONDS = 5.0
# After the first failure, how long the others get to leave by themselves (kdist's
# liveness channel ends them within about a second) before they are signalled.
SETTLE_SECONDS = 3.0

# What sees each line a process writes: the process, whether it is a stderr line, the line.
LineHook = Callable[[Process, bool, bytes], None]


class Job:
    """The processes of one job, and what their ends say."""

    def __init__(
        self,
        processes: list[Process],
        output: Output,
        received: list[int],
        stopped_by: str = "the launcher",
    ) -> None:
        self.processes = processes
        self.output = output
        self.received = received  # signals the starter received (it stops waiting on one)
        self.stopped_by = stopped_by
        self.started = time.monotonic()
        # Each process's progress file, once started (kdist._progress: its steps so far).
        self.progress_files: list[Path] = []

    def on_line(self, process: Process, is_stderr: bool, line: bytes) -> None:
        """Keeps a process's last lines and its last error line."""
        text = line.rstrip(b"\r\n")
        decoded = text.decode(errors="replace")
        process.tail.append(decoded)
        if is_stderr:
            process.error_tail.append(decoded)
            if text.strip():
                process.last_error = decoded

    def records(self, events: Sequence[str]) -> list[dict[str, Any]]:
        """Every process's records of these events, process by process."""
        return [r for p in self.processes for r in p.records() if r.get("event") in events]

    def process(self, process_id: object) -> Process | None:
        """This job's process with that (job-wide) id, None when it runs elsewhere."""
        return next((p for p in self.processes if p.process_id == process_id), None)

    @property
    def blamed(self) -> Process | None:
        """The process here that kdist's channel named as the job's first failure, if
        it named one of this machine's."""
        for record in self.records(FAILURE_EVENTS):
            named = record.get("process_id")
            if isinstance(named, int):
                return self.process(named)
        return None

    def ending(self) -> str | None:
        """How kdist ended the job when it stopped it or the stall watchdog did, in
        words: "every process stopped at step 42: process 1 (host h, pid 9) asked to
        stop (SIGTERM)"; None when it did neither."""
        for event, how in (
            (VerdictEvent.STALLED, "the job stalled: {message}"),
            (VerdictEvent.STOP_NOW, "the job stopped at once: {who} asked to stop ({message})"),
            (
                VerdictEvent.STOP_AT,
                "every process stopped at step {step}: {who} asked to stop ({message})",
            ),
        ):
            found = self.records((event,))
            if found:
                r = found[0]
                who = f"process {r.get('process_id')} (host {r.get('host')}, pid {r.get('pid')})"
                return how.format(who=who, message=r.get("message"), step=r.get("step"))
        return None

    def first_failure(self) -> Process | None:
        """The process kdist named first, else the first to exit with a non-zero status."""
        blamed = self.blamed
        if blamed is not None and blamed.poll() not in (None, 0):
            return blamed
        failed = [p for p in self.processes if p.poll() not in (None, 0) and not p.signalled]
        failed = failed or [p for p in self.processes if p.poll() not in (None, 0)]
        return min(failed, key=lambda p: p.exited_at or 0.0) if failed else None

    def summary(self) -> str:
        """One line per process: id, host, pid, how it ended, when, its last error line;
        the first failure (or the process that asked the job to stop, or the stuck one)
        marked."""
        decided = self.records((VerdictEvent.STOP_NOW, VerdictEvent.STOP_AT, VerdictEvent.STALLED))
        if decided and not self.records(FAILURE_EVENTS):
            first = self.process(decided[0].get("process_id"))
            stalled = decided[0].get("event") == VerdictEvent.STALLED
            legend = "(* the stuck process)" if stalled else "(* the process asked to stop)"
        else:
            first, legend = self.first_failure(), "(* the first failure)"
        host = socket.gethostname()
        rows = [("", "process", "host", "pid", "ended", "after", "last error line")]
        for p in self.processes:
            p.poll()
            after = "" if p.exited_at is None else f"{p.exited_at - self.started:.2f} s"
            mark = "*" if p is first else ""
            error = p.error_line if p.status not in (None, 0) or p is first else ""
            ended = p.ended_how(self.stopped_by)
            rows.append((mark, str(p.process_id), host, str(p.pid), ended, after, shortened(error)))
        return "\n".join(table(rows)) + "\n" + legend

    def running(self) -> list[Process]:
        return [p for p in self.processes if p.poll() is None]

    def stop(self, signum: int, grace: float) -> None:
        """Sends `signum` to every running process, then SIGKILL after `grace` seconds
        (at once on a second Ctrl-C / SIGTERM)."""
        already = len(self.received)
        for process in self.running():
            process.signal_group(signum)
        deadline = time.monotonic() + grace
        while self.running() and time.monotonic() < deadline and len(self.received) <= already:
            time.sleep(POLL_SECONDS)
        for process in self.running():
            process.signal_group(signal.SIGKILL)

    def finish(self) -> None:
        """Kills what is left of every process group, reaps, and drains the output."""
        for process in self.processes:
            process.signal_group(signal.SIGKILL)  # leftovers; the leader is unreaped, so ours
        for process in self.processes:
            process.popen.wait()
        for process in self.processes:
            for reader in process.readers:
                reader.join(_READER_JOIN_SECONDS)
            if process.log is not None:
                process.log.close()


def _bind_line_hook(hook: LineHook, process: Process, is_stderr: bool) -> Callable[[bytes], None]:
    return lambda line: hook(process, is_stderr, line)


def start(
    command: Sequence[str],
    envs: Sequence[Mapping[str, str]],
    output: Output,
    on_line: LineHook | None = None,
    *,
    hook_before_exec: bool = True,
    quiet: Container[int] = (),
    log_files: Sequence[Path] | None = None,
    first_id: int = 0,
    spares: SparePool | None = None,
) -> list[Process]:
    """Starts one process of `command` per environment, then the threads that copy
    their output (threads only after the last fork, so the fork-to-exec hook runs in
    a single-threaded parent).

    Args:
        command: The program and its arguments, the same for every process.
        envs: Each process's environment, in process-id order.
        output: Where their lines go, each with its `[id] ` prefix, the job-wide id (Gloo's
            "connected as expected" notes on stdout are left out).
        on_line: Sees each line (both streams) with its process.
        quiet: The ids of the processes whose lines stay off `output` (they still
            reach `on_line` and their log file).
        log_files: When given, one file per process (in process-id order) that
            gets every line it writes, both streams as they arrive, without the
            prefix; made with its folder, and closed by `Job.finish()`.
        first_id: The job-wide id of the first process (a machine's share of a job
            across machines): process i of `envs` is process first_id + i.
        hook_before_exec: True: each process is told to die with this one between
            fork and exec (Python code runs there: only for a parent without other
            threads). False: the program asks for it itself once it runs
            (`process.die_with_parent`), as kdist.testing's child does.
        spares: When given, process i runs in local process i's warm spare when it has a
            ready one for this command and environment (kdist._local_job.warm), else it
            starts cold, as without.

    Returns:
        The started processes, in process-id order.
    """
    hook = die_with_parent_hook() if hook_before_exec else None
    processes: list[Process] = []
    logs: list[BinaryIO] = []
    try:
        for path in log_files or ():
            path.parent.mkdir(parents=True, exist_ok=True)
            logs.append(path.open("wb"))
        for index, env in enumerate(envs):
            popen = None if spares is None else spares.take(index, command, env)
            warm = popen is not None
            if popen is None:
                popen = subprocess.Popen(
                    list(command),
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    preexec_fn=hook,  # noqa: PLW1509 (no thread exists yet: see the docstring)
                )
            verdict = env.get(VERDICT_FILE_VARIABLE)
            process = Process(first_id + index, popen, Path(verdict) if verdict else None)
            process.warm = warm
            process.log = logs[index] if logs else None
            processes.append(process)
    except BaseException:
        for log in logs:
            log.close()
        for process in processes:
            process.signal_group(signal.SIGKILL)
            process.popen.wait()
            for pipe in (process.popen.stdout, process.popen.stderr):
                if pipe is not None:
                    pipe.close()
        raise
    for process in processes:
        prefix = f"[{process.process_id}] ".encode()
        shown = process.process_id not in quiet
        pipes = (
            (process.popen.stdout, output.out if shown else None, False, is_gloo_connected_note),
            (process.popen.stderr, output.err if shown else None, True, None),
        )
        for source, stream, is_stderr, drop in pipes:
            assert source is not None
            hook_line = None if on_line is None else _bind_line_hook(on_line, process, is_stderr)
            reader = threading.Thread(
                target=copy_lines,
                args=(source, output, stream, prefix, hook_line),
                kwargs={"drop": drop, "log": process.log},
                daemon=True,
            )
            reader.start()
            process.readers.append(reader)
    return processes
