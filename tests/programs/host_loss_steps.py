"""A job of kdist.should_stop(step) steps for the host-loss tests: kdist.initialize(),
then HOST_LOSS_STEPS steps of HOST_LOSS_STEP_SECONDS each, asking should_stop every
step; at step HOST_LOSS_BARRIER_STEP (when set) every process meets at a kdist.barrier,
so that the channel carries traffic then. Prints "running" once it has taken 10 steps,
and one JSON line at the end (the step it stopped at, or None when it ran them all, and
how long the barrier took).

The steps have no collective: JAX's collectives between namespace hosts need Gloo on
the address that reached the coordinator (another change); the liveness channel, which
these tests are about, needs none.
"""

import json
import os
import time

import kdist

STEPS = int(os.environ.get("HOST_LOSS_STEPS", "1000000"))
STEP_SECONDS = float(os.environ.get("HOST_LOSS_STEP_SECONDS", "0.01"))
BARRIER_STEP = int(os.environ.get("HOST_LOSS_BARRIER_STEP", "-1"))

kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None

stopped_at = None
barrier_seconds = None
for step in range(STEPS):
    if kdist.should_stop(step):
        stopped_at = step
        break
    if step == 10:
        print("running", flush=True)
    if step == BARRIER_STEP:
        started = time.monotonic()
        kdist.barrier("blackout", timeout=60)
        barrier_seconds = time.monotonic() - started
    time.sleep(STEP_SECONDS)

report = {"process_id": spec.process_id, "stopped_at": stopped_at, "barrier": barrier_seconds}
print(json.dumps(report), flush=True)
