"""One process of a job on this machine: dies with its parent, watched without reaping.

A process is started in its own process group (so that its own children are
signalled with it) and asks the kernel to SIGKILL it when its parent dies
(PR_SET_PDEATHSIG, Linux), so that it dies with whoever started it, even when
that one is killed with SIGKILL. Its exit is watched without reaping it (waitid
with WNOWAIT) until the end, so a process group id that is signalled can never
belong to someone else's processes.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import enum
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

_PR_SET_PDEATHSIG = 1
# How many of a process's last output lines are kept (both streams, in arrival order).
TAIL_LINES = 40

_Prctl = Callable[[int, int, int, int, int], int]


def _prctl() -> _Prctl | None:
    """libc's prctl, or None where it does not exist (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def _die_with(prctl: _Prctl, parent: int) -> None:
    """SIGKILL me when my parent dies; at once when it already has (before prctl took effect)."""
    kill_signal = int(signal.SIGKILL)
    prctl(_PR_SET_PDEATHSIG, kill_signal, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), kill_signal)


def die_with_parent_hook() -> Callable[[], None] | None:
    """A function for the child, between fork and exec: SIGKILL me when my parent dies.

    Everything it needs is looked up here, in the parent, so the child only
    makes two system calls. None where prctl does not exist (not Linux). Only
    for a parent without other threads (Python code runs between fork and exec).
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    return lambda: _die_with(prctl, parent)


def die_with_parent(parent: int) -> bool:
    """In a process that was started by `parent`: SIGKILL me when `parent` dies.

    The same as die_with_parent_hook(), asked for by the started program itself
    once it runs, for parents that may have threads (where no Python code may run
    between fork and exec). When `parent` is already gone, ends this process now.

    Returns:
        Whether the kernel was asked (False where prctl does not exist).
    """
    prctl = _prctl()
    if prctl is None:
        return False
    _die_with(prctl, parent)
    return True


def shell_status(info: os.waitid_result) -> int:
    """A child's exit as a shell reports it: its exit code, or 128 + the signal."""
    if info.si_code == os.CLD_EXITED:
        return int(info.si_status)
    return 128 + int(info.si_status)


def signal_name(number: int) -> str:
    """ "SIGTERM" for 15; "signal 40" for a number without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# The variable that names the file where kdist appends each process's records of how
# its job ended (JSON lines, the core's liveness/verdict_record.h): read, not the lines
# parsed. The core reads it once, when it resolves the process's settings.
VERDICT_FILE_VARIABLE = "KDIST_VERDICT_FILE"


class VerdictEvent(enum.StrEnum):
    """A verdict record's event: the core's VerdictEvent names (liveness/verdict_record.h;
    tests/package/test_core_rules.py holds the two lists against each other)."""

    FAILED = "failed"  # the reporter's own uncaught exception
    PEER_FAILED = "peer_failed"  # another process failed first
    DIED = "died"  # another process's connection closed without a finish
    UNREACHABLE = "unreachable"  # another process's host answered nothing
    STOP_NOW = "stop_now"  # the job stopped at once
    STOP_AT = "stop_at"  # the job agreed on a stop step
    STALLED = "stalled"  # the stall watchdog ended the job


# The events that name the job's first failure.
FAILURE_EVENTS = (
    VerdictEvent.FAILED,
    VerdictEvent.PEER_FAILED,
    VerdictEvent.DIED,
    VerdictEvent.UNREACHABLE,
)


@dataclass
class Process:
    """One started process of a job, and what is known of its end."""

    process_id: int
    popen: subprocess.Popen[bytes]
    verdict_file: Path | None = None  # where kdist in it records how its job ended
    status: int | None = None  # shell-style exit status once it has exited
    killed_by: int | None = None  # the signal that ended it, when one did
    readers: list[threading.Thread] = field(default_factory=list)
    log: BinaryIO | None = None  # the file that gets every line it writes, when there is one
    exited_at: float | None = None  # time.monotonic() when it was seen to exit
    last_error: str = ""  # its last non-empty stderr line
    signalled: bool = False  # it was stopped (signalled while still running)
    warm: bool = False  # it runs in a warm spare (kdist._local_job.warm), not a cold start
    # Its last lines of output, both streams in arrival order, without the prefix.
    tail: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=TAIL_LINES)
    )
    # Its last stderr lines (stdout and stderr are read apart, so their order in `tail`
    # is only roughly the order they were written in).
    error_tail: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=TAIL_LINES)
    )

    def records(self) -> list[dict[str, Any]]:
        """What kdist in this process recorded about its job's end (oldest first)."""
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

    def _last_traceback(self) -> list[str]:
        """Its last Python traceback and what follows it on stderr, or []."""
        errors = list(self.error_tail)
        starts = [i for i, line in enumerate(errors) if line.startswith("Traceback (most recent")]
        return errors[starts[-1] :] if starts else []

    def last_lines(self, most: int = 30) -> list[str]:
        """Its last Python traceback when its last stderr lines hold one (what follows
        it on stderr included), else its last lines of output; at most `most` lines,
        the end kept."""
        return (self._last_traceback() or list(self.tail))[-most:]

    @property
    def raised(self) -> str:
        """What it said of its failure on stderr: the exception line of its last Python
        traceback ("TypeError: cannot reshape ..."), the first line after the frames
        (which are indented), not the last line, which is the exception's last note
        when it has notes (JAX's "For simplicity, JAX has removed its internal frames
        ..."); without a traceback, its last non-empty stderr line."""
        for line in self._last_traceback()[1:]:
            if line.strip() and not line[0].isspace():
                return line
        return self.last_error

    @property
    def error_line(self) -> str:
        """The line that says how it ended: kdist's own verdict when it recorded one
        (a traceback may still be flushing around it), else the agreed stop it left at
        (not JAX's "SIGTERM caught" note that follows it), else the exception its last
        Python traceback names, else its last stderr line."""
        records = self.records()
        ends = [r for r in records if r.get("exit_status", -1) != -1]
        if not ends:
            ends = [r for r in records if r.get("event") == VerdictEvent.STOP_AT]
        if ends:
            return str(ends[-1].get("line", ""))
        return self.raised

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
                if code is not None and code < 0:
                    self.killed_by = -code
                return self.status
            if info is not None:
                self.status = shell_status(info)
                if info.si_code != os.CLD_EXITED:
                    self.killed_by = int(info.si_status)
        if self.status is not None and self.exited_at is None:
            self.exited_at = time.monotonic()
        return self.status

    def ended_how(self, stopped_by: str = "the launcher") -> str:
        """'exit 0', 'exit 1', 'killed by SIGKILL' (and 'stopped by <stopped_by>')."""
        if self.status is None:
            return "running"
        how = (
            f"killed by {signal_name(self.killed_by)}"
            if self.killed_by is not None
            else f"exit {self.status}"
        )
        return how + (f" (stopped by {stopped_by})" if self.signalled else "")

    def signal_group(self, signum: int) -> None:
        """Sends `signum` to the process's group (its children included)."""
        if self.poll() is None:
            self.signalled = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)
