"""What travels between run_job() and its processes, as pickled files in the job's folder.

The caller writes one `Task` (`task.pickle`); each process writes one `Record`
(`process-<id>.pickle`) before it leaves: the pickled return value of `fn`, or where
and how it failed, with its formatted traceback. A file appears whole or not at all
(written beside, then renamed).
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path

TASK_FILE = "task.pickle"


def stacks_signal() -> int:
    """The signal that prints every thread's Python stack to a process's stderr: run_job
    sends it at its timeout to each process still running, before it kills them. The
    core's one "write your stacks" signal (a real-time signal nothing else uses; the stall
    watchdog's too), never one a program may choose as a stop signal. Loads the core:
    called in the processes, and by run_job only at a timeout."""
    from kdist import _core

    return int(_core.stack_signal())


@dataclass(frozen=True)
class Task:
    """What every process of the job runs."""

    payload: bytes  # pickle of (fn, args, kwargs); fn by reference
    sys_path: tuple[str, ...]  # the caller's, so that fn's module imports the same way
    module: str  # fn's module's name ("__main__" for a script's own function)
    module_file: str | None  # its file: for a script, or a module the path cannot find
    rewrite_asserts: bool  # the caller's module had pytest's assertion rewriting
    initialize: bool  # whether to call kdist.initialize() before fn


@dataclass(frozen=True)
class Record:
    """What one process left: its result, or its failure."""

    process_id: int
    ok: bool
    value: bytes = b""  # the pickled return value (ok)
    phase: str = ""  # where it failed: "initialize", "load", "call" or "return"
    error: str = ""  # the exception named (leaving.describe): "ValueError: bad shape"
    traceback: str = ""
    port_in_use: bool = False  # process 0's initialize found the coordinator's port taken
    at: float = 0.0  # time.monotonic() when it was written (one clock for the machine)


def record_path(folder: Path, process_id: int) -> Path:
    return folder / f"process-{process_id}.pickle"


def write(path: Path, value: object) -> None:
    """Pickles `value` to `path`, atomically."""
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as file:
        pickle.dump(value, file)
    os.replace(partial, path)


def read_task(folder: Path) -> Task:
    with open(folder / TASK_FILE, "rb") as file:
        task = pickle.load(file)
    assert isinstance(task, Task), type(task)
    return task


def read_record(folder: Path, process_id: int) -> Record | None:
    """The record process `process_id` left, or None when it left none."""
    try:
        with open(record_path(folder, process_id), "rb") as file:
            record = pickle.load(file)
    except FileNotFoundError:
        return None
    assert isinstance(record, Record), type(record)
    return record
