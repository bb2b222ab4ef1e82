"""run_job(): a function run in every process of a fresh job on this machine."""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from kdist._local_job.attempt import Attempt, End, Hooks
from kdist._local_job.environment import environments
from kdist._local_job.job import Job
from kdist._local_job.output import Output
from kdist._local_job.process import Process
from kdist.testing import _records
from kdist.testing._failures import JobFailed, JobTimeout, ProcessEnd

# A port taken between free_port() and process 0's bind (by another job, or any
# program that binds or connects meanwhile): the job starts again on a fresh port, at
# most this many times in all.
PORT_ATTEMPTS = 3
# Each process's KDIST_INIT_TIMEOUT, as a share of the job's timeout: a start that
# cannot complete fails in kdist.initialize() (naming the missing processes) before
# run_job's own deadline.
_INIT_TIMEOUT_SHARE = 0.8
# At the timeout: how long the processes still running get to print their stacks.
_STACKS_SECONDS = 0.5
_NAME = "kdist.testing.run_job"
_PHASES = {
    "initialize": "in kdist.initialize()",
    "load": "while loading fn and its arguments",
    "call": "in fn",
    "return": "while pickling fn's return value",
}


def run_job(
    fn: Callable[..., Any],
    /,
    *args: Any,
    num_processes: int = 2,
    devices_per_process: int = 1,
    timeout: float = 60,
    env: Mapping[str, str] | None = None,
    initialize: bool = True,
    **kwargs: Any,
) -> list[Any]:
    """Runs `fn(*args, **kwargs)` in every process of a fresh job on this machine.

    Starts `num_processes` Python processes, each on JAX's CPU backend with
    `devices_per_process` devices, configured as `kdist launch` configures its
    processes (the coordinator on 127.0.0.1 at a free port, the
    KERAS_DISTRIBUTION_* variables), calls `kdist.initialize()` in each, then
    `fn`. Each process imports `fn` from its module with the caller's `sys.path`
    (so a function in a test file works as pytest imports it, its assertions
    rewritten as pytest rewrites them); `fn`, `args` and `kwargs` are pickled,
    `fn` by reference. Each process's output is copied to this process's
    stdout and stderr, every line prefixed with `[id] ` (pytest captures it
    and shows it with a failing test).

    The processes' environment is this process's, without the variables that
    name a job (KERAS_DISTRIBUTION_*, JAX's job variables, every variable a
    cluster detector reads), with KDIST_INIT_TIMEOUT at 80% of `timeout` and
    a fresh KDIST_ROLL_CALL_TOKEN (so that jobs side by side never join each
    other's roll call), then `env`.

    Every process is ended before run_job returns or raises: at the first
    failure (kdist's liveness channel ends the others within about a second;
    what is left is killed), at the timeout, and on any exception in the
    caller (KeyboardInterrupt included). Each process runs in its own process
    group, killed as a whole, and dies with the calling thread's process
    (PR_SET_PDEATHSIG). The job's files live in a temporary folder, removed
    at the end. When process 0 finds the coordinator's port taken (it was
    free a moment before), the job starts again on another port, at most
    PORT_ATTEMPTS times.

    Args:
        fn: A module-level function (or any object pickle stores by
            reference, such as a builtin). Positional only.
        *args: Its positional arguments, pickled.
        num_processes: How many processes. Defaults to 2.
        devices_per_process: JAX CPU devices in each process
            (JAX_NUM_CPU_DEVICES). Defaults to 1.
        timeout: Seconds for the whole job, from the first process's start to
            the last one's exit. Defaults to 60.
        env: Variables set in every process, over the environment described
            above. Defaults to None.
        initialize: Whether each process calls `kdist.initialize()` before
            `fn`. False for `fn` that starts the job itself (with its own
            arguments, or `keras.distribution.initialize()`). Defaults to True.
        **kwargs: Its keyword arguments, pickled (the names above go to
            run_job, not to `fn`).

    Returns:
        `fn`'s return value in each process, in process-id order, pickled back.

    Raises:
        TypeError: an argument has the wrong type, or `fn` or its arguments
            cannot be pickled (a lambda, a function defined inside another).
        ValueError: `num_processes`, `devices_per_process` or `timeout` is
            out of range.
        JobFailed: a process failed: `fn` raised in it (`.traceback` is its
            traceback), its start failed, or it died (`.signal`); `.ends`
            says how every process ended.
        JobTimeout: the job did not end within `timeout` (a JobFailed and a
            TimeoutError); `.still_running` names the processes in which `fn`
            had not returned, and their last output lines hold their stacks.

    Example:
        >>> import kdist
        >>> from kdist.testing import run_job
        >>> run_job(kdist.get_device_count, num_processes=2, devices_per_process=2)
        [4, 4]
    """
    return run(
        fn,
        args,
        kwargs,
        num_processes=num_processes,
        devices_per_process=devices_per_process,
        timeout=timeout,
        env=env,
        initialize=initialize,
    )


def run(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    num_processes: int,
    devices_per_process: int,
    timeout: float,
    env: Mapping[str, str] | None,
    initialize: bool,
) -> list[Any]:
    """run_job() with fn's arguments apart from its own (the pytest plugin's entry)."""
    task = _task(fn, args, kwargs, initialize)
    _check_count("num_processes", num_processes)
    _check_count("devices_per_process", devices_per_process)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"run_job: expected timeout in seconds (a number), received {timeout!r}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"run_job: expected a positive, finite timeout, received {timeout!r}")
    extra = _check_env(env)

    from kdist import _core

    base = dict(os.environ)
    base["KDIST_INIT_TIMEOUT"] = str(max(1, int(timeout * _INIT_TIMEOUT_SHARE)))
    base["KDIST_ROLL_CALL_TOKEN"] = secrets.token_hex(16)
    output = Output(_TextSink(sys.stdout), _TextSink(sys.stderr), name=_NAME)
    deadline = time.monotonic() + timeout
    folder = Path(tempfile.mkdtemp(prefix="kdist-run-job-"))
    try:
        for attempt in range(1, PORT_ATTEMPTS + 1):
            port = _core.free_port()
            envs = [
                {**env, **extra}
                for env in environments(
                    base,
                    num_processes=num_processes,
                    port=port,
                    devices_per_process=devices_per_process,
                )
            ]
            attempt_folder = folder / f"attempt-{attempt}"
            attempt_folder.mkdir()
            _records.write(attempt_folder / _records.TASK_FILE, task)
            run = _attempt(attempt_folder, envs, output, deadline)
            end = run.run()
            if end is End.PORT_TAKEN and attempt < PORT_ATTEMPTS and time.monotonic() < deadline:
                output.note(
                    f"the coordinator's port {port} was taken before process 0 could bind it; "
                    "starting the job again on another port"
                )
                continue
            if end is End.CANNOT_START:
                assert run.error is not None
                raise run.error
            return _Outcome(run, timeout).results()
        raise AssertionError("unreachable: the last attempt returns or raises")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"run_job: expected {name} to be a positive integer, received {value!r}")
    if value < 1:
        raise ValueError(f"run_job: expected {name} to be a positive integer, received {value!r}")


def _check_env(env: object) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise TypeError(
            f"run_job: expected env to be a mapping of variable names to strings, "
            f"received {type(env).__name__}"
        )
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(
                f"run_job: expected env to map strings to strings, received {name!r}: {value!r}"
            )
    return dict(env)


def _task(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], initialize: bool
) -> _records.Task:
    """What every process runs; raises TypeError for what cannot travel by pickle."""
    if not callable(fn):
        raise TypeError(f"run_job: expected fn to be a function, received {fn!r}")
    if not isinstance(initialize, bool):
        raise TypeError(
            f"run_job: expected initialize to be True or False, received {initialize!r}"
        )
    qualname = getattr(fn, "__qualname__", "")
    module_name = getattr(fn, "__module__", None)
    if "<locals>" in qualname or "<lambda>" in qualname or not isinstance(module_name, str):
        raise TypeError(
            f"run_job: expected fn to be a module-level function (each process imports it "
            f"from its module), received {fn!r}; define it at the top level of a module"
        )
    module = sys.modules.get(module_name)
    module_file = getattr(module, "__file__", None)
    if module_name == "__main__" and not module_file:
        raise TypeError(
            f"run_job: expected fn to be defined in a module or a script, received {fn!r} from "
            "an interactive session (its __main__ has no file for the processes to import)"
        )
    try:
        pickle.dumps(fn)
    except Exception as error:
        raise TypeError(
            f"run_job: fn cannot be pickled by reference ({error}); received {fn!r}; define it "
            "at the top level of a module"
        ) from error
    try:
        payload = pickle.dumps((fn, args, kwargs))
    except Exception as error:
        raise TypeError(f"run_job: fn's arguments cannot be pickled: {error}") from error
    loader = getattr(module, "__loader__", None)
    return _records.Task(
        payload=payload,
        sys_path=tuple(sys.path),
        module=module_name,
        module_file=module_file if isinstance(module_file, str) else None,
        # pytest's loader of test modules (looked up by name: run_job never imports pytest).
        rewrite_asserts=type(loader).__name__ == "AssertionRewritingHook",
        initialize=initialize,
    )


class _TextSink:
    """A text stream (sys.stdout as it is now: pytest's capture, a notebook's) as a ByteSink;
    None (a program without one) takes nothing."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def write(self, data: bytes, /) -> object:
        return None if self._stream is None else self._stream.write(data.decode(errors="replace"))

    def flush(self) -> object:
        return None if self._stream is None else self._stream.flush()


def _dump_stacks(_job: Job, running: list[Process]) -> None:
    """At the deadline: every thread's stack of each process still running, to its stderr."""
    stacks = _records.stacks_signal()
    for process in running:
        process.signalled = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, stacks)
    time.sleep(_STACKS_SECONDS)


def _found_port_taken(folder: Path) -> Callable[[Process], bool]:
    """Whether process 0's record (it exited non-zero) says the coordinator's port was taken."""

    def port_taken(_first: Process) -> bool:
        record = _records.read_record(folder, 0)
        return record is not None and record.port_in_use

    return port_taken


def _attempt(folder: Path, envs: list[dict[str, str]], output: Output, deadline: float) -> Attempt:
    """One start of the job on one port: every process runs kdist.testing's child on the
    task in `folder`; at the first failure the others get SETTLE_SECONDS, then SIGKILL;
    at the deadline, the stacks of those still running, then SIGKILL."""
    command = [sys.executable, "-m", "kdist.testing._child", str(folder), str(os.getpid())]
    return Attempt(
        command,
        envs,
        folder,
        output,
        deadline=deadline,
        grace=None,
        hooks=Hooks(deadline=_dump_stacks, port_taken=_found_port_taken(folder)),
        stopped_by="run_job",
        hook_before_exec=False,
    )


class _Outcome:
    """What an ended attempt left: the return values, or the JobFailed / JobTimeout that
    says why there are none."""

    def __init__(self, attempt: Attempt, timeout: float) -> None:
        self.folder = attempt.folder
        self.job = attempt.job
        self.timed_out = attempt.timed_out if attempt.end is End.TIMED_OUT else []
        self.timeout = timeout

    def results(self) -> list[Any]:
        """The return values, or the JobFailed / JobTimeout that says why there are none."""
        for process in self.job.processes:
            process.poll()  # reaped by now: the status Popen recorded
        records = {
            p.process_id: _records.read_record(self.folder, p.process_id)
            for p in self.job.processes
        }
        ends = tuple(self._end(p, records[p.process_id]) for p in self.job.processes)
        if self.timed_out:
            raise self._timeout(records, ends)
        failed = [r for r in records.values() if r is not None and not r.ok]
        if failed or any(p.status != 0 for p in self.job.processes) or None in records.values():
            raise self._failure(records, ends)
        values = []
        for process_id, record in records.items():
            assert record is not None
            try:
                values.append(pickle.loads(record.value))
            except Exception as error:
                raise JobFailed(
                    f"process {process_id}'s return value cannot be unpickled here: "
                    f"{type(error).__name__}: {error}",
                    process_id=process_id,
                    error=f"{type(error).__name__}: {error}",
                    ends=ends,
                ) from error
        return values

    @staticmethod
    def _end(process: Process, record: _records.Record | None) -> ProcessEnd:
        killer = None
        if process.killed_by is not None:
            with contextlib.suppress(ValueError):
                killer = signal.Signals(process.killed_by)
        return ProcessEnd(
            process_id=process.process_id,
            pid=process.pid,
            exit_status=process.status if killer is None else None,
            signal=killer,
            stopped=process.signalled,
            returned=record is not None and record.ok,
            output=tuple(process.tail),
        )

    def _first_failure(self, records: dict[int, _records.Record | None]) -> Process:
        """Who failed first: a process that died without a record when kdist's liveness
        channel named it; else the first whose fn (or start) raised, by the machine's
        clock; else the one kdist named or the first to exit non-zero; else one that
        left without returning."""
        job = self.job
        named = job.blamed
        if named is not None and records[named.process_id] is None and named.status != 0:
            return named
        raised = [r for r in records.values() if r is not None and not r.ok]
        if raised:
            return job.processes[min(raised, key=lambda r: r.at).process_id]
        first = job.first_failure()
        if first is not None:
            return first
        return next(p for p in job.processes if records[p.process_id] is None)

    def _failure(
        self, records: dict[int, _records.Record | None], ends: tuple[ProcessEnd, ...]
    ) -> JobFailed:
        first = self._first_failure(records)
        record = records[first.process_id]
        end = ends[first.process_id]
        n = len(self.job.processes)
        if record is not None and not record.ok:
            error = record.error
            headline = (
                f"process {first.process_id} of {n} failed first, "
                f"{_PHASES.get(record.phase, record.phase)}: {error}"
            )
            body = record.traceback.rstrip("\n")
        else:
            error = end.describe() if first.status != 0 else "exit 0 without returning from fn"
            headline = f"process {first.process_id} of {n} failed first: {error}"
            body = "it left no traceback; its last lines of output:\n" + _lines(
                first.process_id, end.output
            )
        return JobFailed(
            f"{headline}\n{body}\nhow each process ended:\n{_ends_table(ends)}",
            process_id=first.process_id,
            error=error,
            traceback=record.traceback if record is not None else "",
            ends=ends,
        )

    def _timeout(
        self, records: dict[int, _records.Record | None], ends: tuple[ProcessEnd, ...]
    ) -> JobTimeout:
        running = [p.process_id for p in self.timed_out]
        stuck = [i for i in running if records[i] is None] or running
        n = len(self.job.processes)
        returned = [i for i in running if i not in stuck]
        headline = (
            f"the job did not end within {self.timeout:g} s: fn had not returned in "
            f"process{'es' if len(stuck) > 1 else ''} {_ids(stuck)} (of {n})"
            + (
                f"; process{'es' if len(returned) > 1 else ''} {_ids(returned)} returned and "
                "waited for the others"
                if returned
                else ""
            )
            + "; every process was stopped"
        )
        tails = "\n".join(
            f"process {i}'s last lines of output (its Python stacks, dumped at the timeout):\n"
            + _lines(i, ends[i].output)
            for i in stuck
        )
        return JobTimeout(
            f"{headline}\n{tails}\nhow each process ended:\n{_ends_table(ends)}",
            process_id=stuck[0],
            error=f"still running at the timeout ({self.timeout:g} s)",
            ends=ends,
            timeout=self.timeout,
            still_running=tuple(stuck),
        )


def _ids(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids)


def _lines(process_id: int, lines: tuple[str, ...]) -> str:
    return "\n".join(f"  [{process_id}] {line}" for line in lines) if lines else "  (none)"


def _ends_table(ends: tuple[ProcessEnd, ...]) -> str:
    return "\n".join(f"  process {e.process_id} (pid {e.pid}): {e.describe()}" for e in ends)
