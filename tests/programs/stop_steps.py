"""A training-like loop for the stop tests: kdist.initialize(), then steps of a few
milliseconds with a collective each, asking kdist.should_stop(step) every step.

STOP_TEST_MODE chooses the program:
  agreed         should_stop every step; report the step it stopped at
  no_protocol    the same loop without should_stop (a stop signal ends it)
  request        as agreed, and process STOP_TEST_WHO calls request_stop("time limit")
                 at step STOP_TEST_REQUEST_AT (20), before that step's should_stop
  request_alone  process STOP_TEST_WHO asks should_stop(0), then request_stop("time limit")
                 at once, then should_stop every step until it stops, and writes the file
                 STOP_TEST_FLAG; the others ask nothing until that file is there (60 s at
                 most), then should_stop every step: only the requester was armed
  drift          as agreed, process STOP_TEST_WHO runs one step behind the others
  python_handler as agreed, with a Python SIGTERM handler installed before initialize;
                 reports whether it ran and what reached_preemption_sync_point said
  stall_sleep / stall_lock / stall_read
                 as agreed, but process STOP_TEST_WHO gets stuck at step 20 in
                 time.sleep, a lock acquire or an os.read on a pipe nobody writes
  never_reports  no should_stop, no barrier: a long wait (the watchdog must not judge it)
  barrier_ok / barrier_timeout / barrier_mismatch
                 barriers: all meet; process STOP_TEST_WHO never comes; it comes
                 under another name

Every process prints "running" once it has taken its first steps, and one JSON line
at the end.
"""

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

MODE = os.environ["STOP_TEST_MODE"]
WHO = int(os.environ.get("STOP_TEST_WHO", "1"))
STEP_SECONDS = float(os.environ.get("STOP_TEST_STEP_SECONDS", "0.003"))
REQUEST_AT = int(os.environ.get("STOP_TEST_REQUEST_AT", "20"))

handler_calls = []
if MODE == "python_handler":

    def on_term(signum: int, _frame: object) -> None:
        handler_calls.append(signum)

    signal.signal(signal.SIGTERM, on_term)

import kdist  # noqa: E402

kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None
me = spec.process_id

from jax.experimental import multihost_utils  # noqa: E402


def say(**fields: object) -> None:
    print(json.dumps({"process_id": me, **fields}), flush=True)


def stuck() -> None:
    if MODE == "stall_sleep":
        time.sleep(1000)
    elif MODE == "stall_lock":
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()  # never released: stuck in a C call without the GIL
    elif MODE == "stall_read":
        read_end, _write_end = os.pipe()
        os.read(read_end, 1)  # nobody ever writes


if MODE == "never_reports":
    print("running", flush=True)
    time.sleep(float(os.environ.get("STOP_TEST_WAIT_SECONDS", "3")))
    say(done=True)
    sys.exit(0)

if MODE.startswith("barrier"):
    print("running", flush=True)
    started = time.monotonic()
    try:
        if MODE == "barrier_ok":
            for i in range(3):
                kdist.barrier(f"round {i}", timeout=60)
        elif MODE == "barrier_timeout":
            if me != WHO:
                kdist.barrier("save", timeout=2)
            else:
                time.sleep(8)
        elif MODE == "barrier_mismatch":
            kdist.barrier("eval" if me == WHO else "save", timeout=30)
        say(ok=True, seconds=time.monotonic() - started)
    except kdist.KdistError as error:
        say(
            ok=False,
            error=type(error).__name__,
            is_timeout=isinstance(error, TimeoutError),
            message=str(error),
            seconds=time.monotonic() - started,
        )
    sys.exit(0)

if MODE == "request_alone":
    flag = Path(os.environ["STOP_TEST_FLAG"])
    if me == WHO:
        kdist.should_stop(0)  # armed: the only process that is
        kdist.request_stop("time limit")
        step = 1
    else:  # not at a first should_stop yet: until the requester has stopped
        waited = time.monotonic()
        while not flag.exists() and time.monotonic() - waited < 60:
            time.sleep(0.01)
        step = 0
    while not kdist.should_stop(step) and step < 100000:
        step += 1
        time.sleep(STEP_SECONDS)
    if me == WHO:
        flag.write_text(str(step))
    say(stopped_at=step)
    sys.exit(0)

stopped_at = None
preemption_step = None
stop_seen_at = None
for step in range(1000000):
    if MODE == "drift" and me == WHO and step > 0:
        time.sleep(STEP_SECONDS)  # one step behind
    if MODE == "request" and me == WHO and step == REQUEST_AT:
        kdist.request_stop("time limit")
    if MODE.startswith("stall") and me == WHO and step == 20:
        stuck()
    stop = MODE != "no_protocol" and kdist.should_stop(step)
    if MODE == "python_handler":
        # kdist stops at its step; JAX's own preemption sync point (XLA's handler was
        # called too) comes a little later: go on until it does, or 20 s.
        if stop and stopped_at is None:
            stopped_at, stop_seen_at = step, time.monotonic()
        if preemption_step is None and multihost_utils.reached_preemption_sync_point(step):
            preemption_step = step
        if stopped_at is not None and (
            preemption_step is not None or time.monotonic() - stop_seen_at > 20
        ):
            break
    elif stop:
        stopped_at = step
        break
    multihost_utils.process_allgather(np.array([step]))
    if step == 5:
        print("running", flush=True)
    time.sleep(STEP_SECONDS)

time.sleep(0.2)  # the Python handler runs at the next bytecode after a signal
say(stopped_at=stopped_at, handler_calls=handler_calls, preemption_step=preemption_step)
