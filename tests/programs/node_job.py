"""A process of a job started by `kdist launch --nodes`: a real collective across the
nodes, then one JSON line with what it was given.

NODE_JOB_FAIL=<process id>: that process raises after the collective (every attempt).
NODE_JOB_SLEEP=<seconds>: every process sleeps that long after the collective.
NODE_JOB_STEPS=1: every process then steps (kdist.should_stop each 50 ms, for at most 120 s)
until the job agrees to stop, and prints the step ("NODE_JOB_STOPPED <step>").
"""

import hashlib
import json
import os
import time

import numpy as np
from jax.experimental import multihost_utils

import kdist

kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None
gathered = multihost_utils.process_allgather(np.array([spec.process_id], dtype=np.int32))
print(
    "NODE_JOB "
    + json.dumps(
        {
            "process_id": spec.process_id,
            "num_processes": spec.num_processes,
            "gathered": [int(x) for x in np.asarray(gathered).ravel()],
            # Which roll call token this attempt's processes share (its digest only).
            "token": hashlib.sha256(
                os.environ.get("KDIST_ROLL_CALL_TOKEN", "").encode()
            ).hexdigest()[:16],
            "place": {
                name: [getattr(spec, name), spec.sources.get(name)]
                for name in ("node_rank", "num_nodes", "local_process_id", "job_id")
            },
            # The thrash guard the agent set for its processes (cluster_spec, doctor).
            "guard": {
                name: [getattr(spec, name), spec.sources.get(name)]
                for name in ("max_reforms", "reform_window")
            },
            "variables": {
                k: os.environ.get(k)
                for k in (
                    "KDIST_RESTART_COUNT",
                    "KDIST_NODE_RANK",
                    "KDIST_NUM_NODES",
                    "KDIST_LOCAL_PROCESS_ID",
                    "KDIST_JOB_ID",
                    "KERAS_DISTRIBUTION_JOB_ADDRESSES",
                )
            },
        }
    ),
    flush=True,
)
if os.environ.get("NODE_JOB_SLEEP"):
    time.sleep(float(os.environ["NODE_JOB_SLEEP"]))
if os.environ.get("NODE_JOB_FAIL") == str(spec.process_id):
    raise ValueError("node job failed on purpose")
if os.environ.get("NODE_JOB_STEPS"):
    deadline = time.monotonic() + 120
    step = 0
    while not kdist.should_stop(step):
        assert time.monotonic() < deadline, "never asked to stop"
        time.sleep(0.05)
        step += 1
    print(f"NODE_JOB_STOPPED {step}", flush=True)
