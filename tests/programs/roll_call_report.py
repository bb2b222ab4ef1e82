"""A process that runs kdist.initialize() from its environment and reports.

Prints one JSON line: on success the devices it sees; on failure the
exception's type and message, how long initialize() took, and what it left
behind (threads, kernel tasks, child processes), then re-raises so the
process ends with the traceback like any Python program.

ROLL_CALL_TEST_PROGRESS_INTERVAL (seconds) lowers the progress interval.
"""

import json
import logging
import os
import sys
import threading
import time

import kdist
import kdist._log

logging.basicConfig(
    level=logging.INFO, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s"
)
interval = os.environ.get("ROLL_CALL_TEST_PROGRESS_INTERVAL")
if interval:
    kdist._log.FIRST_SECONDS = kdist._log.REPEAT_SECONDS = float(interval)


def tasks() -> int:
    return len(os.listdir("/proc/self/task"))


def settled_tasks() -> int:
    """The task count once it stops falling: a thread that Python has joined
    may take a moment more to leave the kernel's list (at most 1 s here)."""
    count = tasks()
    for _ in range(20):
        time.sleep(0.05)
        now = tasks()
        if now == count:
            break
        count = now
    return count


def task_names() -> list[str]:
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names


def children() -> list[str]:
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                found += f.read().split()
        except OSError:
            pass
    return found


report = {"pid": os.getpid(), "host": os.uname().nodename}
threads_before, tasks_before = threading.active_count(), tasks()
started = time.monotonic()
try:
    kdist.initialize()
except BaseException as error:
    report.update(
        ok=False,
        error=type(error).__name__,
        message=str(error),
        elapsed=time.monotonic() - started,
        threads_before=threads_before,
        threads_after=threading.active_count(),
        thread_names=[t.name for t in threading.enumerate()],
        tasks_before=tasks_before,
        tasks_after=settled_tasks(),
        task_names=task_names(),
        jax_imported="jax" in sys.modules,
        children=children(),
    )
    print(json.dumps(report), flush=True)
    raise
report.update(
    ok=True,
    elapsed=time.monotonic() - started,
    process_id=kdist.cluster_spec().process_id,
    device_count=kdist.get_device_count(),
    compared=kdist.cluster_spec().compared_environment,
    tls_state=kdist.cluster_spec().tls_state,
)
print(json.dumps(report), flush=True)
kdist.shutdown()
