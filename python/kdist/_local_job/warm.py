"""Warm spares: one waiting interpreter per local process, ready to run its next attempt
without paying the interpreter's start and the heavy imports again.

A spare (`kdist._local_job.spare`) is started with the job's environment less the
variables of one attempt (`attempt_variable`), imports JAX, jaxlib, Keras (when installed
and KERAS_BACKEND=jax), kdist and the modules named with `--preload`, and waits; importing
JAX starts no backend. When an attempt starts, `SparePool.take` hands the spare of local
process i its activation (the attempt's command, environment and folder) and returns its
`Popen`, whose pipes are the process's stdout and stderr as a cold start's would be; the
program then runs exactly as `python PROGRAM ARGS` or `python -m MODULE ARGS` would. Only
such a command, run by this interpreter, starts warm (`python_program`); anything else, and
any process whose spare is not ready, starts cold. A spare that died or does not answer is
replaced, never used; a new one is started as soon as one is used (`maintain`). Nothing here
starts a thread: every call comes from the starter's main thread (the one a spare's
PR_SET_PDEATHSIG watches).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdist._local_job import spare as spare_program

# What starts a spare: its module's serve(), binding no name in __main__.
SPARE_CODE = "__import__('kdist._local_job.spare', fromlist=['serve']).serve()"
# The variables that belong to one attempt of one process: not in a spare's environment
# (so one spare serves any attempt), set when it is activated. None is read at import time
# by JAX, Keras or kdist (kdist's import reads nothing; JAX reads its JAX_* settings, which
# are the job's and stay in the spare's environment).
ATTEMPT_PREFIXES = ("KERAS_DISTRIBUTION_", "KDIST_", "JAX_COORDINATOR_")
ATTEMPT_VARIABLES = frozenset({"CUDA_VISIBLE_DEVICES", "JAX_PROCESS_ID", "JAX_NUM_PROCESSES"})
# A spare that has not said "ready" this long after its start hangs: it is replaced.
READY_SECONDS = 180.0
# A spare that does not answer its activation within this is not used (started cold).
ACTIVATION_SECONDS = 5.0
# How long an attempt waits for a spare that is still importing (it is ahead of a cold
# start, which would import from the beginning): then it starts cold.
IMPORTING_WAIT_SECONDS = 60.0
# Spares of one process that died or hung in a row before its warm start is given up.
MOST_FAILURES = 3
# How much lower a spare's priority is while it imports (only where every thread can be
# put back on activation: root, or RLIMIT_NICE allows it), so that it leaves the CPU to
# the running attempt.
SPARE_NICE = 10
_KILL_WAIT_SECONDS = 10.0


def attempt_variable(name: str) -> bool:
    """Whether the variable `name` belongs to one attempt of one process (not in a spare's
    environment; set when the spare is activated).

    Example:
        >>> from kdist._local_job.warm import attempt_variable
        >>> attempt_variable("KDIST_RESTART_COUNT"), attempt_variable("JAX_PLATFORMS")
        (True, False)
    """
    return name.startswith(ATTEMPT_PREFIXES) or name in ATTEMPT_VARIABLES


def spare_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A spare's environment for a process whose attempt environment is `env`: `env` less
    the attempt's variables (attempt_variable)."""
    return {name: value for name, value in env.items() if not attempt_variable(name)}


@dataclass(frozen=True)
class PythonProgram:
    """A command that can start warm: `python PROGRAM ARGS` or `python -m MODULE ARGS`."""

    kind: str  # "path" or "module"
    target: str  # PROGRAM as given, or MODULE
    args: tuple[str, ...]


def same_interpreter(found: str, interpreter: str) -> bool:
    """Whether `found` runs as `interpreter`: the same file (links followed) in the same
    folder (a virtual environment's python, python3 and python3.13 are one; the interpreter
    they link to, outside the environment, is another)."""
    try:
        return os.path.realpath(os.path.dirname(os.path.abspath(found))) == os.path.realpath(
            os.path.dirname(os.path.abspath(interpreter))
        ) and os.path.samefile(found, interpreter)
    except OSError:
        return False


def python_program(  # noqa: PLR0911 (one return per way a command is refused)
    command: Sequence[str],
    env: Mapping[str, str],
    interpreter: str = sys.executable,
    cwd: str | None = None,
) -> PythonProgram | None:
    """The program of `command` when it can start warm, else None.

    It can when it is `PYTHON PROGRAM ARGS` (PROGRAM a file) or `PYTHON -m MODULE ARGS`,
    with no other interpreter option, and PYTHON (looked up on `env`'s PATH, as the cold
    start would) is `interpreter`.

    Example:
        >>> import sys
        >>> from kdist._local_job.warm import python_program
        >>> python_program([sys.executable, "-m", "json.tool", "-h"], {}).kind
        'module'
        >>> python_program(["env", "X=1", sys.executable, "-m", "json.tool"], {}) is None
        True
        >>> python_program([sys.executable, "-u", "-m", "json.tool"], {}) is None
        True
    """
    if len(command) < 2:
        return None
    found = shutil.which(command[0], path=env.get("PATH", os.defpath))
    if found is None or not same_interpreter(found, interpreter):
        return None
    if command[1] == "-m":
        if len(command) < 3 or not command[2] or command[2].startswith("-"):
            return None
        return PythonProgram("module", command[2], tuple(command[3:]))
    if command[1].startswith("-"):
        return None
    if not os.path.isfile(os.path.join(cwd or os.getcwd(), command[1])):
        return None  # a folder or a zip file (a __main__.py), or nothing: cold
    return PythonProgram("path", command[1], tuple(command[2:]))


def default_preload(env: Mapping[str, str]) -> list[str]:
    """The modules a spare imports by default: JAX, jaxlib, Keras when it is installed and
    KERAS_BACKEND=jax (any other backend would import TensorFlow or torch), and what
    kdist.initialize() loads."""
    modules = ["jax", "jaxlib"]
    if env.get("KERAS_BACKEND") == "jax" and importlib.util.find_spec("keras") is not None:
        modules.append("keras")
    return [*modules, "kdist", "kdist._start.initialize"]


def _can_renice() -> bool:
    """Whether a spare can put its threads back to this priority after importing at a
    lower one (CAP_SYS_NICE, or an RLIMIT_NICE that allows it)."""
    if os.geteuid() == 0:
        return True
    current = os.getpriority(os.PRIO_PROCESS, 0)
    return resource.getrlimit(resource.RLIMIT_NICE)[0] >= 20 - current


def _stopped(pid: int) -> bool:
    """Whether `pid` is stopped (SIGSTOP, a tracer) or gone: it would not run its activation."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("T", "t", "Z", "X")


def rss_mib(pid: int) -> float | None:
    """The resident memory of `pid` in MiB (VmRSS), None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass
class Spare:
    """One waiting interpreter for local process `index`."""

    index: int
    command: tuple[str, ...]
    env: dict[str, str]
    popen: subprocess.Popen[bytes]
    channel: socket.socket  # the pool's end; the spare has the other
    log: Path
    started: float = field(default_factory=time.monotonic)
    ready: bool = False
    ready_seconds: float | None = None  # from its start to "ready"
    memory_mib: float | None = None  # its resident memory once ready
    _buffer: bytes = b""
    closed: bool = False  # the spare closed its end (it is leaving)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def read(self) -> None:
        """Takes in what the spare said (never blocks)."""
        while not self.closed:
            try:
                chunk = self.channel.recv(4096)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                break
            self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            if line.split(b" ", 1)[0].decode(errors="replace") == spare_program.READY:
                self.ready = True
                self.ready_seconds = time.monotonic() - self.started
                self.memory_mib = rss_mib(self.pid)

    def exited(self) -> bool:
        return self.popen.poll() is not None

    def last_lines(self, most: int = 5) -> str:
        """Its log's last lines (what it printed while importing)."""
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return " | ".join(line.strip() for line in lines[-most:] if line.strip())

    def kill(self) -> None:
        """Ends the spare and its process group, reaps it and closes its ends."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.popen.poll() is None:
                os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(_KILL_WAIT_SECONDS)
        self.close_ends()

    def close_ends(self) -> None:
        self.channel.close()
        for pipe in (self.popen.stdout, self.popen.stderr):
            if pipe is not None:
                pipe.close()

    def activate(self, activation: dict[str, Any], timeout: float) -> str:
        """Sends the activation; returns "" once the spare runs it, else why it did not."""
        try:
            self.channel.setblocking(True)
            self.channel.settimeout(timeout)
            self.channel.sendall(json.dumps(activation).encode() + b"\n")
        except OSError as error:
            return f"its activation could not be sent ({error})"
        deadline = time.monotonic() + timeout
        answer = b""
        while not answer.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.channel], [], [], left)[0]:
                return f"it did not answer its activation within {timeout:g} s"
            try:
                chunk = self.channel.recv(4096)
            except OSError as error:
                return f"it did not answer its activation ({error})"
            if not chunk:
                return "it left without running the program"
            answer += chunk
        word, _, detail = answer.decode(errors="replace").strip().partition(" ")
        if word != spare_program.RUNNING:
            return f"it could not take its activation: {detail or word}"
        return ""


def state_folder() -> Path:
    """Where each kdist launcher with warm spares on this machine says how they are (one
    JSON file per launcher pid, for `kdist doctor`): XDG_RUNTIME_DIR, else the temporary
    folder, in a folder of this user's."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"kdist-warm-{os.getuid()}"


def read_states() -> list[dict[str, Any]]:
    """What every running launcher with warm spares on this machine wrote (`state_folder`);
    files of launchers that are gone are left out."""
    states = []
    folder = state_folder()
    try:
        files = sorted(folder.glob("*.json"))
    except OSError:
        return []
    for path in files:
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        launcher = state.get("launcher_pid") if isinstance(state, dict) else None
        if isinstance(launcher, int) and Path(f"/proc/{launcher}").exists():
            states.append(state)
    return states


def machine_report(environ: Mapping[str, str]) -> dict[str, Any]:
    """What `kdist doctor` says of warm starts on this machine: for each running launcher
    with spares (`read_states`), whether its next attempt would start warm, with the
    spares' memory; and what a launcher started from `environ` would preload.

    Example:
        >>> from kdist._local_job.warm import machine_report
        >>> report = machine_report({})
        >>> report["preload"][:2], isinstance(report["summary"], list)
        (['jax', 'jaxlib'], True)
    """
    launchers: list[dict[str, Any]] = []
    for state in read_states():
        spares = [s for s in state.get("spares", []) if isinstance(s, dict)]
        ready = sorted(int(s["local_process"]) for s in spares if s.get("ready"))
        importing = sorted(int(s["local_process"]) for s in spares if not s.get("ready"))
        wanted = sorted(int(i) for i in state.get("wanted", []))
        memory = [float(s["memory_mib"]) for s in spares if s.get("memory_mib") is not None]
        command = next((list(s.get("command", [])) for s in spares), [])
        launchers.append(
            {
                "launcher_pid": state.get("launcher_pid"),
                "command": command,
                "ready": ready,
                "importing": importing,
                "next_attempt_warm": bool(wanted) and ready == wanted,
                "memory_mib": max(memory) if memory else None,
            }
        )
    preload = default_preload(environ)
    summary = []
    for found in launchers:
        size = ""
        if found["memory_mib"] is not None:
            size = f", about {found['memory_mib']:.0f} MiB each (resident)"
        still = ", ".join(str(i) for i in found["importing"])
        ready_ids = ", ".join(str(i) for i in found["ready"]) or "none"
        summary.append(
            f"kdist launch pid {found['launcher_pid']} ({' '.join(found['command'])}): the next "
            f"attempt starts {'warm' if found['next_attempt_warm'] else 'cold for some processes'}"
            f"; spares ready for local processes {ready_ids}"
            + size
            + (f"; still importing: {still}" if still else "")
        )
    if not launchers:
        summary.append("no kdist launch with warm spares runs on this machine")
    summary.append(
        f"a restart (and a --nodes attempt) of `python PROGRAM` / `python -m MODULE` run by "
        f"{sys.executable} starts warm; its spares import {', '.join(preload)}"
        + ("" if "keras" in preload else " (Keras only with KERAS_BACKEND=jax)")
        + "; other commands, and --no-warm, start cold"
    )
    return {
        "interpreter": sys.executable,
        "preload": preload,
        "launchers": launchers,
        "summary": summary,
    }


class SparePool:
    """One spare per local process of a job, kept ready for its next attempt.

    Args:
        preload: Modules every spare imports besides `default_preload`'s (`--preload`).
        note: Says something to the user (the starter's notes).
        interpreter: The Python that runs the spares; only commands it runs start warm.
            Defaults to this one.

    Example:
        >>> from kdist._local_job.warm import SparePool
        >>> pool = SparePool()
        >>> pool.take(0, ["true"], {})  # not a Python program: None, the process starts cold
        >>> pool.close()
    """

    def __init__(
        self,
        preload: Sequence[str] = (),
        note: Callable[[str], None] | None = None,
        interpreter: str = sys.executable,
    ) -> None:
        self.preload = list(preload)
        self.note = note or (lambda _text: None)
        self.interpreter = interpreter
        self.keep = True  # False: no new spare is started (no attempt can follow)
        self.last_memory_mib: float | None = None  # the resident memory of the last one used
        self.folder = Path(tempfile.mkdtemp(prefix="kdist-warm-"))
        self.nice = SPARE_NICE if _can_renice() else 0
        self._wanted: dict[int, tuple[tuple[str, ...], dict[str, str]]] = {}
        self._spares: dict[int, Spare] = {}
        self._failures: dict[int, int] = {}
        self._started = 0
        self._state_file: Path | None = None
        self._last_state = ""

    # --- what the starters call -----------------------------------------------------

    def expect(self, index: int, command: Sequence[str], env: Mapping[str, str]) -> bool:
        """Local process `index` will run `command` with `env` (an attempt's environment,
        or one like it): its spare is started at the next `maintain`. Returns whether the
        command can start warm."""
        if python_program(command, env, self.interpreter) is None:
            return False
        self._wanted[index] = (tuple(command), spare_environment(env))
        return True

    def take(
        self, index: int, command: Sequence[str], env: Mapping[str, str]
    ) -> subprocess.Popen[bytes] | None:
        """Local process `index`'s ready spare, activated with `command` and `env`: the
        process, running. None when it must start cold (not a Python program this
        interpreter runs, no spare ready, or the spare did not take its activation)."""
        program = python_program(command, env, self.interpreter)
        if program is None:
            return None
        key = spare_environment(env)
        self._wanted[index] = (tuple(command), key)
        spare = self._spares.get(index)
        if spare is None:
            return None
        if spare.command != tuple(command) or spare.env != key:
            self._drop(index, "")  # made for another command or environment
            return None
        spare.read()
        deadline = time.monotonic() + IMPORTING_WAIT_SECONDS
        while not (spare.ready or spare.closed or spare.exited()) and time.monotonic() < deadline:
            select.select([spare.channel], [], [], 0.05)  # still importing: ahead of a cold start
            spare.read()
        if not spare.ready or spare.exited():
            return None  # maintain() replaces a dead one
        why = "it is stopped" if _stopped(spare.pid) else ""
        if not why:
            why = spare.activate(
                {
                    "command": list(command),
                    "kind": program.kind,
                    "target": program.target,
                    "args": list(program.args),
                    "env": dict(env),
                    "cwd": os.getcwd(),
                },
                ACTIVATION_SECONDS,
            )
        if why:
            self._fail(index, f"was not used: {why}")
            return None
        del self._spares[index]
        self._failures[index] = 0
        if spare.memory_mib is not None:
            self.last_memory_mib = spare.memory_mib
        spare.channel.close()
        return spare.popen

    def maintain(self) -> None:
        """Replaces every spare that died or hangs, and starts the spares wanted (never
        blocks; from the starter's main thread only)."""
        now = time.monotonic()
        for index, spare in list(self._spares.items()):
            spare.read()
            if spare.exited():
                self._fail(index, f"died while waiting ({self._status(spare)})")
            elif not spare.ready and now - spare.started > READY_SECONDS:
                self._fail(index, f"was not ready after {READY_SECONDS:g} s")
        if self.keep:
            for index, (command, env) in sorted(self._wanted.items()):
                if index not in self._spares and self._failures.get(index, 0) < MOST_FAILURES:
                    self._start(index, command, env)
        self._write_state()

    def ready(self) -> list[int]:
        """The local processes whose spare is ready now."""
        for spare in self._spares.values():
            spare.read()
        return sorted(i for i, s in self._spares.items() if s.ready and not s.exited())

    def memory_mib(self) -> float | None:
        """The largest resident memory of a ready spare, in MiB (None: none ready yet)."""
        sizes = [s.memory_mib for s in self._spares.values() if s.memory_mib is not None]
        return max(sizes) if sizes else None

    def describe(self) -> str:
        """ "2 spares ready (pids 7, 8), 262 MiB each" and the like."""
        ready = self.ready()
        if not ready:
            waiting = len(self._spares)
            return f"{waiting} spare{'s' if waiting != 1 else ''} importing" if waiting else ""
        pids = ", ".join(str(self._spares[i].pid) for i in ready)
        memory = self.memory_mib()
        size = f", about {memory:.0f} MiB each (resident)" if memory is not None else ""
        return f"{len(ready)} spare{'s' if len(ready) != 1 else ''} ready (pids {pids}){size}"

    def close(self) -> None:
        """Ends every spare and removes the pool's files."""
        for index in list(self._spares):
            self._spares.pop(index).kill()
        if self._state_file is not None:
            with contextlib.suppress(OSError):
                self._state_file.unlink()
        shutil.rmtree(self.folder, ignore_errors=True)

    # --- inside -------------------------------------------------------------------

    def _start(self, index: int, command: tuple[str, ...], env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair()
        self._started += 1
        log = self.folder / f"spare-{index}-{self._started}.log"
        try:
            popen = subprocess.Popen(
                [
                    command[0],
                    "-c",
                    SPARE_CODE,
                    str(theirs.fileno()),
                    str(os.getpid()),
                    str(self.nice),
                    str(log),
                    ",".join([*default_preload(env), *self.preload]),
                ],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as error:
            ours.close()
            self._failures[index] = MOST_FAILURES
            self.note(f"warm start: cannot start a spare for process {index}: {error}")
            return
        finally:
            theirs.close()
        ours.setblocking(False)
        self._spares[index] = Spare(index, command, env, popen, ours, log)

    def _drop(self, index: int, why: str) -> None:
        spare = self._spares.pop(index, None)
        if spare is None:
            return
        if why:
            lines = spare.last_lines()
            self.note(
                f"warm start: the spare of local process {index} (pid {spare.pid}) {why}"
                + (f" [its last lines: {lines}]" if lines else "")
                + ("; starting another" if self.keep else "")
            )
        spare.kill()

    def _fail(self, index: int, why: str) -> None:
        self._failures[index] = self._failures.get(index, 0) + 1
        self._drop(index, why)
        if self._failures[index] >= MOST_FAILURES:
            self.note(
                f"warm start: {MOST_FAILURES} spares of local process {index} failed in a "
                "row; it starts cold from now on"
            )

    @staticmethod
    def _status(spare: Spare) -> str:
        code = spare.popen.returncode
        if code is None:
            return "running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit {code}"

    def _write_state(self) -> None:
        """Says how the spares are, for `kdist doctor` (only when it changed)."""
        spares = [
            {
                "local_process": s.index,
                "pid": s.pid,
                "ready": s.ready and not s.exited(),
                "memory_mib": None if s.memory_mib is None else round(s.memory_mib, 1),
                "command": list(s.command),
            }
            for s in self._spares.values()
        ]
        state = {
            "launcher_pid": os.getpid(),
            "interpreter": self.interpreter,
            "keep": self.keep,
            "wanted": sorted(self._wanted),
            "spares": spares,
        }
        text = json.dumps(state)
        if text == self._last_state:
            return
        self._last_state = text
        try:
            folder = state_folder()
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if folder.stat().st_uid != os.getuid():
                return  # someone else's folder: say nothing there
            path = folder / f"{os.getpid()}.json"
            partial = path.with_suffix(".tmp")
            partial.write_text(text)
            partial.replace(path)
            self._state_file = path
        except OSError:
            return
