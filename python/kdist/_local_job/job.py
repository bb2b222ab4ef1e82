"""Every process of a job on this machine, started and ended together.

`start()` starts each process in its own process group, told to die with its
parent, and copies its output line by line with an `[id] ` prefix. A `Job`
watches them (without reaping), learns the first failure from the line kdist's
liveness channel prints, stops what is left by process group, and reaps.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from kdist._local_job.output import Output, copy_lines, is_gloo_connected_note
from kdist._local_job.process import Process, die_with_parent_hook

POLL_SECONDS = 0.05
_READER_JOIN_SECONDS = 5.0
# After the first failure, how long the others get to leave by themselves (kdist's
# liveness channel ends them within about a second) before they are signalled.
SETTLE_SECONDS = 3.0
# The lines kdist's liveness channel prints that name the job's first failure:
# "kdist: process 1 (host h, pid 9) failed first: ...", "... died (...) while the job
# was running", and the failing process's own "... failed: ...; told the other processes".
# Searched anywhere in a line: the channel's thread can write its line while the main
# thread is in the middle of printing a traceback ("ValueErrorkdist: process 1 ...").
_BLAME = re.compile(
    rb"kdist: process (\d+) \(.*?\) (?:failed first: |died \(|failed: .*; told the other)"
)

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
        # The process that kdist's liveness channel named as the first failure.
        self.blamed: int | None = None
        self._lock = threading.Lock()

    def on_line(self, process: Process, is_stderr: bool, line: bytes) -> None:
        """Keeps a process's last lines, its last error line and the first failure kdist names."""
        text = line.rstrip(b"\r\n")
        process.tail.append(text.decode(errors="replace"))
        if not is_stderr:
            return
        if text.strip():
            process.last_error = text.decode(errors="replace")
        match = _BLAME.search(text)
        if match is not None:
            process.kdist_line = text[match.start() :].decode(errors="replace")
            named = int(match.group(1))
            with self._lock:
                if self.blamed is None and 0 <= named < len(self.processes):
                    self.blamed = named

    def first_failure(self) -> Process | None:
        """The process kdist named first, else the first to exit with a non-zero status."""
        with self._lock:
            blamed = self.blamed
        if blamed is not None and self.processes[blamed].poll() not in (None, 0):
            return self.processes[blamed]
        failed = [p for p in self.processes if p.poll() not in (None, 0) and not p.signalled]
        failed = failed or [p for p in self.processes if p.poll() not in (None, 0)]
        return min(failed, key=lambda p: p.exited_at or 0.0) if failed else None

    def settle(self, seconds: float) -> None:
        """Waits up to `seconds` for every process to leave by itself."""
        deadline = time.monotonic() + seconds
        while self.running() and time.monotonic() < deadline and not self.received:
            time.sleep(POLL_SECONDS)

    def summary(self) -> str:
        """One line per process: id, host, pid, how it ended, when, its last error line."""
        first = self.first_failure()
        host = socket.gethostname()
        rows = [("", "process", "host", "pid", "ended", "after", "last error line")]
        for p in self.processes:
            p.poll()
            after = "" if p.exited_at is None else f"{p.exited_at - self.started:.2f} s"
            mark = "*" if p is first else ""
            error = p.error_line if p.status not in (None, 0) or p is first else ""
            error = error if len(error) <= 160 else error[:157] + "..."
            ended = p.ended_how(self.stopped_by)
            rows.append((mark, str(p.process_id), host, str(p.pid), ended, after, error))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
        lines = [
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
            + "  "
            + row[-1]
            for row in rows
        ]
        return "\n".join(line.rstrip() for line in lines) + "\n(* the first failure)"

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


def _bind_line_hook(hook: LineHook, process: Process, is_stderr: bool) -> Callable[[bytes], None]:
    return lambda line: hook(process, is_stderr, line)


def start(
    command: Sequence[str],
    envs: Sequence[Mapping[str, str]],
    output: Output,
    on_line: LineHook | None = None,
    *,
    hook_before_exec: bool = True,
) -> list[Process]:
    """Starts one process of `command` per environment, then the threads that copy
    their output (threads only after the last fork, so the fork-to-exec hook runs in
    a single-threaded parent).

    Args:
        command: The program and its arguments, the same for every process.
        envs: Each process's environment, in process-id order.
        output: Where their lines go, each with its `[id] ` prefix (Gloo's
            "connected as expected" notes on stdout are left out).
        on_line: Sees each line (both streams) with its process.
        hook_before_exec: True: each process is told to die with this one between
            fork and exec (Python code runs there: only for a parent without other
            threads). False: the program asks for it itself once it runs
            (`process.die_with_parent`), as kdist.testing's child does.

    Returns:
        The started processes, in process-id order.
    """
    hook = die_with_parent_hook() if hook_before_exec else None
    processes: list[Process] = []
    try:
        for process_id, env in enumerate(envs):
            popen = subprocess.Popen(
                list(command),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=hook,  # noqa: PLW1509 (no thread exists yet: see the docstring)
            )
            processes.append(Process(process_id, popen))
    except BaseException:
        for process in processes:
            process.signal_group(signal.SIGKILL)
            process.popen.wait()
            for pipe in (process.popen.stdout, process.popen.stderr):
                if pipe is not None:
                    pipe.close()
        raise
    for process in processes:
        prefix = f"[{process.process_id}] ".encode()
        pipes = (
            (process.popen.stdout, output.out, False, is_gloo_connected_note),
            (process.popen.stderr, output.err, True, None),
        )
        for source, stream, is_stderr, drop in pipes:
            assert source is not None
            hook_line = None if on_line is None else _bind_line_hook(on_line, process, is_stderr)
            reader = threading.Thread(
                target=copy_lines,
                args=(source, output, stream, prefix, hook_line),
                kwargs={"drop": drop},
                daemon=True,
            )
            reader.start()
            process.readers.append(reader)
    return processes
