"""One process of a job in which process FAULTY (argv[2]) meets a fault (argv[1])
after the start, while the others wait for it in a collective.

Faults: "exception" (uncaught, main thread), "thread" (uncaught, in another
thread), "sigkill", "segfault", "exit0" (os._exit(0) after the work), "none"
(everyone finishes normally), "ignore" (an exception, the others run with
KDIST_ON_PEER_FAILURE=ignore and wait until they are told), "start" (JAX's own
initialize raises in process FAULTY after the roll call's "go", as a driver
error would, while the others wait in JAX's barrier for it).

Prints {"event": "fault", "at": time.time()} just before the fault, and
{"event": "done", ...} when a process reaches its normal end.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import signal
import sys
import threading
import time

import kdist

FAULT = sys.argv[1]
FAULTY = int(sys.argv[2]) if len(sys.argv) > 2 else 1

logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s: %(message)s")
if FAULT == "start" and int(os.environ["KERAS_DISTRIBUTION_PROCESS_ID"]) == FAULTY:
    # The fault is injected at the JAX boundary of this one process; the job is real.
    from kdist import _jax_backend

    def _failing_initialize(*args: object, **kwargs: object) -> None:
        print(json.dumps({"event": "fault", "at": time.time()}), flush=True)
        raise RuntimeError("injected start failure")

    _jax_backend.initialize_distributed = _failing_initialize  # type: ignore[assignment]
kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None
me = spec.process_id

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402


def say(event: str, **extra: object) -> None:
    # One write for the line and its newline: a C++ thread's line cannot land between them.
    line = json.dumps({"event": event, "process_id": me, "at": time.time(), **extra})
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# Work every process does together first: the job runs.
total = multihost_utils.process_allgather(np.array([me]))
say("started", gathered=[int(x) for x in np.asarray(total).ravel()])


def fault() -> None:
    say("fault")
    if FAULT in ("exception", "ignore"):
        raise RuntimeError("injected failure")
    if FAULT == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if FAULT == "segfault":
        ctypes.string_at(0)
    if FAULT == "exit0":
        os._exit(0)


if me == FAULTY and FAULT != "none":
    if FAULT == "thread":
        say("fault")
        worker = threading.Thread(
            target=lambda: (_ for _ in ()).throw(ValueError("injected in a thread")),
            name="loader",
        )
        worker.start()
        worker.join()
        time.sleep(60)  # not reached: the thread's failure ends the process
    fault()

if FAULT == "exit0":
    # The others keep working a little longer, then end normally; process FAULTY left.
    time.sleep(1.0)
    say("done")
    sys.exit(0)

if FAULT == "ignore":
    deadline = time.monotonic() + 30
    while not kdist._together.leaving.reported_failures() and time.monotonic() < deadline:
        time.sleep(0.05)
    say("done", reported=kdist._together.leaving.reported_failures())
    sys.exit(0)

if FAULT == "none":
    multihost_utils.process_allgather(np.array([me]))
    if me == FAULTY:
        time.sleep(1.5)  # the others finish first and wait for this one
    say("done")
    sys.exit(0)

# Wait for the faulty process in a collective it never joins.
multihost_utils.process_allgather(np.array([me + 100]))
say("done", unexpected=True)
del jax
