"""The program each process of a run_job() job runs.

    python -m kdist.testing._child FOLDER PARENT_PID

It asks to die with its parent (the caller of run_job), reads the job's `Task` from
FOLDER, calls `kdist.initialize()` (configured by the KERAS_DISTRIBUTION_* variables
run_job set), imports `fn`'s module as the caller did (the caller's `sys.path`; a
test module with pytest's assertion rewriting when the caller's had it), calls `fn`,
and leaves one `Record` in FOLDER: the pickled return value, or where it failed and
its traceback. A failure is then raised again, so that the process ends as any
Python program does: the traceback on stderr, kdist's liveness channel telling the
other processes, exit status 1.

The core's stack signal (`_records.stacks_signal()`) prints every thread's Python stack to
stderr (run_job sends it, at its timeout, to each process still running, before it kills
them).
"""

from __future__ import annotations

import ast
import faulthandler
import importlib
import importlib.util
import os
import pickle
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from kdist._errors import PortInUseError
from kdist._local_job.process import die_with_parent
from kdist._together import leaving
from kdist.testing import _records

# The main module of a caller that ran as a script, as multiprocessing names it.
_MAIN_ALIAS = "__mp_main__"


def _module_from_file(name: str, file: str, *, rewrite_asserts: bool) -> ModuleType:
    """Executes `file` as the module `name` (registered in sys.modules), its assert
    statements rewritten as pytest rewrites a test module's when `rewrite_asserts`."""
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None:
        raise ImportError(f"cannot load {file!r} as the module {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    source = Path(file).read_bytes()
    tree = ast.parse(source, filename=file)
    if rewrite_asserts:
        from _pytest.assertion.rewrite import rewrite_asserts as rewrite

        rewrite(tree, source, file)
    code = compile(tree, file, "exec", dont_inherit=True)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _import_module_of_fn(task: _records.Task) -> None:
    """Imports the module `fn` lives in, as the caller found it."""
    name, file = task.module, task.module_file
    if name == "__main__":
        if file is None:
            raise ImportError("fn is defined in __main__, which has no file", name=name)
        sys.modules["__main__"] = _module_from_file(
            _MAIN_ALIAS, file, rewrite_asserts=task.rewrite_asserts
        )
        return
    if name in sys.modules:
        return
    if task.rewrite_asserts and file is not None:
        _module_from_file(name, file, rewrite_asserts=True)
        return
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as error:
        # A module the path does not find (pytest's importlib import mode): its file.
        missing = error.name or ""
        if file is None or not (name == missing or name.startswith(missing + ".")):
            raise
        _module_from_file(name, file, rewrite_asserts=False)


def _without_first_frame(error: BaseException) -> TracebackType | None:
    tb = error.__traceback__
    return tb.tb_next if tb is not None else None


def run(folder: Path, process_id: int) -> None:
    """Runs the task in `folder` as process `process_id`; leaves its record there."""
    task = _records.read_task(folder)
    sys.path[:] = task.sys_path
    phase = "initialize"
    try:
        if task.initialize:
            import kdist

            kdist.initialize()
        phase = "load"
        _import_module_of_fn(task)
        fn, args, kwargs = pickle.loads(task.payload)
        phase = "call"
        value: Any = fn(*args, **kwargs)
        phase = "return"
        data = pickle.dumps(value)
    except BaseException as error:
        # An error out of JAX is often the consequence of another process's failure:
        # kdist's channel then ends this process (without a record) with that news.
        leaving.wait_if_a_consequence(type(error), error.__traceback__)
        # The traceback starts in fn: this function's own frame says nothing.
        tb = _without_first_frame(error) if phase == "call" else error.__traceback__
        text = "".join(traceback.format_exception(type(error), error, tb))
        last = leaving.describe(error)
        _records.write(
            _records.record_path(folder, process_id),
            _records.Record(
                process_id,
                ok=False,
                phase=phase,
                error=last,
                traceback=text,
                port_in_use=(
                    process_id == 0 and phase == "initialize" and isinstance(error, PortInUseError)
                ),
                at=time.monotonic(),
            ),
        )
        raise
    _records.write(
        _records.record_path(folder, process_id),
        _records.Record(process_id, ok=True, value=data, at=time.monotonic()),
    )


def main(argv: list[str]) -> None:
    folder, parent = Path(argv[1]), int(argv[2])
    die_with_parent(parent)
    faulthandler.register(_records.stacks_signal(), all_threads=True)
    run(folder, int(os.environ["KERAS_DISTRIBUTION_PROCESS_ID"]))


if __name__ == "__main__":
    main(sys.argv)
