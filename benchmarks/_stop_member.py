"""One process of a stopping benchmark (benchmarks/stopping.py); argv[1] is the case.

signal   steps with a collective each; process 1 signals itself (SIGTERM) at step 40;
         reports when (time.time()) and at which step should_stop turned True
stall    process 1 stops reporting at step 20 (time.sleep); the watchdog ends the job;
         reports nothing (the harness times the exits)
barrier  30 kdist.barrier calls and 30 multihost_utils.sync_global_devices calls;
         reports the median of each, in microseconds
"""

import json
import os
import signal
import statistics
import sys
import time

import numpy as np

import kdist

case = sys.argv[1]
kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None
me = spec.process_id

from jax.experimental import multihost_utils  # noqa: E402

if case == "barrier":
    timings: dict[str, list[float]] = {"barrier_us": [], "sync_global_devices_us": []}
    for i in range(5):  # warm up both
        kdist.barrier(f"warm {i}")
        multihost_utils.sync_global_devices(f"warm {i}")
    for i in range(30):
        started = time.perf_counter()
        kdist.barrier(f"b{i}")
        timings["barrier_us"].append((time.perf_counter() - started) * 1e6)
        started = time.perf_counter()
        multihost_utils.sync_global_devices(f"s{i}")
        timings["sync_global_devices_us"].append((time.perf_counter() - started) * 1e6)
    print(json.dumps({k: statistics.median(v) for k, v in timings.items()}), flush=True)
    sys.exit(0)

signalled_at = None
for step in range(100000):
    if case == "signal" and me == 1 and step == 40:
        signalled_at = {"step": step, "time": time.time()}
        os.kill(os.getpid(), signal.SIGTERM)
    if case == "stall" and me == 1 and step == 20:
        print(json.dumps({"last_progress": time.time()}), flush=True)
        time.sleep(1000)
    if kdist.should_stop(step):
        print(json.dumps({"true_at": time.time(), "step": step, "signalled": signalled_at}))
        break
    multihost_utils.process_allgather(np.array([step]))
    time.sleep(0.002)
