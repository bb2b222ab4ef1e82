"""`kdist launch`: an N-process job on this machine, with the coordinator on loopback.

Each process runs in its own process group (so that its own children are
signalled with it) and, on Linux, asks the kernel to SIGKILL it when the
launcher dies (PR_SET_PDEATHSIG), so that each process the launcher started
dies with it, even when the launcher is killed with SIGKILL. That covers only
those processes: their own children are killed with the process group when
the launcher ends the job, but outlive a launcher killed with SIGKILL unless
they arrange to die with their parent. The launcher watches its processes without
reaping them (waitid with WNOWAIT) until the end, so a process group id it
signals can never belong to someone else's processes.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from kdist import _core

_PR_SET_PDEATHSIG = 1
_POLL_SECONDS = 0.05
_READ_CHUNK = 65536
_READER_JOIN_SECONDS = 5.0
EXIT_TIMEOUT = 124  # as timeout(1)
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# After the first failure, how long the others get to leave by themselves (kdist's
# liveness channel ends them within about a second) before they are signalled.
SETTLE_SECONDS = 3.0
# The variable that names the file where kdist appends each process's records of how its
# job ended (JSON lines: the core's verdict_record.h); the launcher reads them instead of
# parsing the lines kdist prints.
VERDICT_FILE_VARIABLE = "KDIST_VERDICT_FILE"
# Record events that name the job's first failure.
_FAILURE_EVENTS = ("failed", "peer_failed", "died")


def child_environment(
    base: Mapping[str, str],
    *,
    process_id: int,
    num_processes: int,
    port: int,
    devices_per_process: int | None,
) -> dict[str, str]:
    """The environment of process `process_id` of a launched job.

    Args:
        base: The launcher's environment.
        process_id: The process's id in `[0, num_processes)`.
        num_processes: The number of processes.
        port: The coordinator's port on 127.0.0.1.
        devices_per_process: When set, JAX's CPU backend with this many
            devices (JAX_PLATFORMS=cpu, JAX_NUM_CPU_DEVICES).

    Returns:
        A new dict: `base` with the KERAS_DISTRIBUTION_* variables set, and
        PYTHONUNBUFFERED=1 unless `base` sets it (so lines arrive as written).

    Example:
        >>> from kdist._cli.launch import child_environment
        >>> env = child_environment({}, process_id=1, num_processes=2, port=1234,
        ...                         devices_per_process=None)
        >>> env["KERAS_DISTRIBUTION_JOB_ADDRESSES"], env["KERAS_DISTRIBUTION_PROCESS_ID"]
        ('127.0.0.1:1234', '1')
    """
    env = dict(base)
    env["KERAS_DISTRIBUTION_JOB_ADDRESSES"] = f"127.0.0.1:{port}"
    env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = str(num_processes)
    env["KERAS_DISTRIBUTION_PROCESS_ID"] = str(process_id)
    if devices_per_process is not None:
        env["JAX_PLATFORMS"] = "cpu"
        env["JAX_NUM_CPU_DEVICES"] = str(devices_per_process)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A function for the child, between fork and exec: SIGKILL me when my parent dies.

    Everything it needs is looked up here, in the parent, so the child only
    makes two system calls. None where prctl does not exist (not Linux).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()
    kill_signal = int(signal.SIGKILL)

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, kill_signal, 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before prctl took effect
            os.kill(os.getpid(), kill_signal)

    return hook


def _shell_status(info: os.waitid_result) -> int:
    """A child's exit as a shell reports it: its exit code, or 128 + the signal."""
    if info.si_code == os.CLD_EXITED:
        return int(info.si_status)
    return 128 + int(info.si_status)


class _Output:
    """The launcher's stdout and stderr, written one whole line at a time."""

    def __init__(self, out: BinaryIO, err: BinaryIO) -> None:
        self.out, self.err = out, err
        self._lock = threading.Lock()

    def write(self, stream: BinaryIO, data: bytes) -> None:
        with self._lock:
            try:
                stream.write(data)
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: keep draining the children
                pass

    def note(self, message: str) -> None:
        self.write(self.err, f"kdist launch: {message}\n".encode())


# Gloo (JAX's CPU collectives) prints one of these to stdout for every device whenever it
# connects a group, two threads at once at times (so several can share a line). They say
# nothing when the count is the expected one; a line where it is not is kept.
_GLOO_CONNECTED = re.compile(
    rb"\[Gloo\] Rank \d+ is connected to (\d+) peer ranks\. "
    rb"Expected number of connected peer ranks is : (\d+)"
)


def is_gloo_connected_note(line: bytes) -> bool:
    r"""Whether `line` holds nothing but Gloo's "connected as expected" notes.

    Example:
        >>> from kdist._cli.launch import is_gloo_connected_note
        >>> note = b"[Gloo] Rank 1 is connected to 3 peer ranks. "
        >>> is_gloo_connected_note(note + b"Expected number of connected peer ranks is : 3\n")
        True
        >>> is_gloo_connected_note(note + b"Expected number of connected peer ranks is : 4\n")
        False
    """
    rest = line.strip()
    if not rest.startswith(b"[Gloo]"):
        return False
    for match in _GLOO_CONNECTED.finditer(rest):
        if match.group(1) != match.group(2):
            return False
        rest = rest.replace(match.group(0), b"", 1)
    return not rest.strip()


def _copy_lines(
    source: BinaryIO,
    output: _Output,
    stream: BinaryIO,
    prefix: bytes,
    on_line: Callable[[bytes], None] | None = None,
    *,
    drop: Callable[[bytes], bool] | None = None,
) -> None:
    """Copies `source` to `stream` until EOF, each line prefixed with `prefix`;
    `on_line` sees each whole line; whole lines for which `drop` says True are left out."""
    at_line_start = True
    try:
        while True:
            chunk = source.readline(_READ_CHUNK)
            if not chunk:
                break
            if on_line is not None and at_line_start:
                on_line(chunk)
            if drop is not None and at_line_start and chunk.endswith(b"\n") and drop(chunk):
                continue
            output.write(stream, (prefix if at_line_start else b"") + chunk)
            at_line_start = chunk.endswith(b"\n")
        if not at_line_start:
            output.write(stream, b"\n")
    finally:
        source.close()


@dataclass
class _Process:
    process_id: int
    popen: subprocess.Popen[bytes]
    verdict_file: Path | None = None  # where kdist in it records how its job ended
    status: int | None = None  # shell-style exit status once it has exited
    killed_by: int | None = None  # the signal that ended it, when one did
    readers: list[threading.Thread] = field(default_factory=list)
    exited_at: float | None = None  # time.monotonic() when the launcher saw it exit
    last_error: str = ""  # its last non-empty stderr line
    signalled: bool = False  # the launcher stopped it

    def records(self) -> list[dict[str, Any]]:
        """What kdist in this process recorded about the job's end (oldest first)."""
        if self.verdict_file is None:
            return []
        try:
            text = self.verdict_file.read_text(errors="replace")
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    out.append(record)
        return out

    @property
    def error_line(self) -> str:
        """The line that says how it ended: kdist's own verdict when it recorded one
        (a traceback may still be flushing around it), else its last stderr line."""
        ends = [r for r in self.records() if r.get("exit_status", -1) != -1]
        return str(ends[-1].get("line", "")) if ends else self.last_error

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        """The exit status once the process has exited; it stays unreaped (a zombie)."""
        if self.status is None:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # reaped elsewhere: fall back to Popen's record
                code = self.popen.poll()
                self.status = 0 if code is None else (code if code >= 0 else 128 - code)
                return self.status
            if info is not None:
                self.status = _shell_status(info)
                if info.si_code != os.CLD_EXITED:
                    self.killed_by = int(info.si_status)
        if self.status is not None and self.exited_at is None:
            self.exited_at = time.monotonic()
        return self.status

    def ended_how(self) -> str:
        """'exit 0', 'exit 143', 'killed by SIGKILL' (and 'stopped by the launcher')."""
        if self.status is None:
            return "running"
        if self.killed_by is not None:
            how = f"killed by {_signal_name(self.killed_by)}"
        else:
            how = f"exit {self.status}"
        return how + (" (stopped by the launcher)" if self.signalled else "")

    def signal_group(self, signum: int) -> None:
        """Sends `signum` to the process's group (its children included)."""
        if self.poll() is None:
            self.signalled = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class _Job:
    def __init__(self, processes: list[_Process], output: _Output, received: list[int]) -> None:
        self.processes = processes
        self.output = output
        self.received = received
        self.started = time.monotonic()

    def on_stderr_line(self, process: _Process, line: bytes) -> None:
        """Remembers a process's last error line."""
        text = line.rstrip(b"\r\n")
        if text.strip():
            process.last_error = text.decode(errors="replace")

    def records(self, events: Sequence[str]) -> list[dict[str, Any]]:
        """Every process's records of these events, process by process."""
        return [r for p in self.processes for r in p.records() if r.get("event") in events]

    def blamed(self) -> int | None:
        """The process kdist's channel named as the job's first failure, if it did."""
        for record in self.records(_FAILURE_EVENTS):
            named = record.get("process_id")
            if isinstance(named, int) and 0 <= named < len(self.processes):
                return named
        return None

    def ending(self) -> str | None:
        """How kdist ended the job when it stopped it or the stall watchdog did, in
        words: "every process stopped at step 42: process 1 (host h, pid 9) asked to
        stop (SIGTERM)"; None when it did neither."""
        for event, how in (
            ("stalled", "the job stalled: {message}"),
            ("stop_now", "the job stopped at once: {who} asked to stop ({message})"),
            ("stop_at", "every process stopped at step {step}: {who} asked to stop ({message})"),
        ):
            found = self.records((event,))
            if found:
                r = found[0]
                who = f"process {r.get('process_id')} (host {r.get('host')}, pid {r.get('pid')})"
                return how.format(who=who, message=r.get("message"), step=r.get("step"))
        return None

    def first_failure(self) -> _Process | None:
        """The process kdist named first, else the first to exit with a non-zero status."""
        blamed = self.blamed()
        if blamed is not None and self.processes[blamed].poll() not in (None, 0):
            return self.processes[blamed]
        failed = [p for p in self.processes if p.poll() not in (None, 0) and not p.signalled]
        failed = failed or [p for p in self.processes if p.poll() not in (None, 0)]
        return min(failed, key=lambda p: p.exited_at or 0.0) if failed else None

    def settle(self, seconds: float) -> None:
        """Waits up to `seconds` for every process to leave by itself."""
        deadline = time.monotonic() + seconds
        while self.running() and time.monotonic() < deadline and not self.received:
            time.sleep(_POLL_SECONDS)

    def summary(self) -> str:
        """One line per process: id, host, pid, how it ended, when, its last error line;
        the first failure (or the process that asked the job to stop) marked."""
        asked = self.records(("stop_now", "stop_at"))
        if asked and not self.records(_FAILURE_EVENTS):
            named = asked[0].get("process_id")
            first = (
                self.processes[named]
                if isinstance(named, int) and 0 <= named < len(self.processes)
                else None
            )
            legend = "(* the process asked to stop)"
        else:
            first, legend = self.first_failure(), "(* the first failure)"
        host = socket.gethostname()
        rows = [("", "process", "host", "pid", "ended", "after", "last error line")]
        for p in self.processes:
            p.poll()
            after = "" if p.exited_at is None else f"{p.exited_at - self.started:.2f} s"
            mark = "*" if p is first else ""
            error = p.error_line if p.status not in (None, 0) or p is first else ""
            error = error if len(error) <= 160 else error[:157] + "..."
            rows.append((mark, str(p.process_id), host, str(p.pid), p.ended_how(), after, error))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
        lines = [
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
            + "  "
            + row[-1]
            for row in rows
        ]
        return "\n".join(line.rstrip() for line in lines) + "\n" + legend

    def running(self) -> list[_Process]:
        return [p for p in self.processes if p.poll() is None]

    def stop(self, signum: int, grace: float) -> None:
        """Sends `signum` to every running process, then SIGKILL after `grace` seconds
        (at once on a second Ctrl-C / SIGTERM)."""
        already = len(self.received)
        for process in self.running():
            process.signal_group(signum)
        deadline = time.monotonic() + grace
        while self.running() and time.monotonic() < deadline and len(self.received) <= already:
            time.sleep(_POLL_SECONDS)
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


def _bind_line_hook(
    hook: Callable[[_Process, bytes], None], process: _Process
) -> Callable[[bytes], None]:
    return lambda line: hook(process, line)


def _start(
    command: Sequence[str],
    envs: Sequence[Mapping[str, str]],
    output: _Output,
    on_stderr_line: Callable[[_Process, bytes], None] | None = None,
) -> list[_Process]:
    """Starts every process, then the threads that copy their output (threads
    only after the last fork, so the fork-to-exec hook runs in a single-threaded
    parent)."""
    hook = _die_with_parent_hook()
    processes: list[_Process] = []
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
            verdict = env.get(VERDICT_FILE_VARIABLE)
            processes.append(_Process(process_id, popen, Path(verdict) if verdict else None))
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
            (process.popen.stdout, output.out, None, is_gloo_connected_note),
            (process.popen.stderr, output.err, process, None),
        )
        for source, stream, watched, drop in pipes:
            assert source is not None
            on_line = None
            if watched is not None and on_stderr_line is not None:
                on_line = _bind_line_hook(on_stderr_line, watched)
            reader = threading.Thread(
                target=_copy_lines,
                args=(source, output, stream, prefix, on_line),
                kwargs={"drop": drop},
                daemon=True,
            )
            reader.start()
            process.readers.append(reader)
    return processes


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
        grace: Seconds between SIGTERM and SIGKILL when stopping. Defaults to 5.
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
    output = _Output(out or sys.stdout.buffer, err or sys.stderr.buffer)
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
    job: _Job | None = None
    # Made before the start so that the output readers can feed it the kdist lines.
    pending = _Job([], output, received)
    try:
        try:
            processes = _start(command, envs, output, pending.on_stderr_line)
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


def _end_after_failure(job: _Job, failed: _Process, grace: float) -> int:
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


def _supervise(job: _Job, timeout: float | None, grace: float) -> int:
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
        time.sleep(_POLL_SECONDS)
