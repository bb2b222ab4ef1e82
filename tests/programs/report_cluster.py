"""A cluster member: kdist.initialize() from the environment, then one JSON report line.

`what_this_process_sees()` is the report; tests/start/test_multiprocess.py runs it through
kdist.testing.run_job, the launcher and detection tests run this file as a program.
"""

import json
import random
import time
from typing import Any

import numpy as np

import kdist


def what_this_process_sees() -> dict[str, Any]:
    """What a process of the job sees, once kdist.initialize() is done."""
    spec = kdist.cluster_spec()
    assert spec is not None
    kdist.initialize()  # the same configuration again: a no-op
    try:
        kdist.initialize(num_processes=spec.num_processes + 1)
        second_call_error = ""
    except kdist.ConfigError as error:
        second_call_error = str(error)
    return {
        "process_id": spec.process_id,
        "num_processes": spec.num_processes,
        "coordinator": spec.coordinator_address,
        "sources": spec.sources,
        "scheduler": spec.scheduler,
        "local_device_ids": spec.local_device_ids,
        "fingerprint": spec.fingerprint,
        # The job seed, and what it did: draws from the generators it seeds (Python's
        # and NumPy's, which Keras's default seeding draws from).
        "seed": spec.seed,
        "draws": [random.random(), float(np.random.random())],
        "devices": kdist.list_devices(),
        "device_count": kdist.get_device_count(),
        "second_call_error": second_call_error,
    }


if __name__ == "__main__":
    started = time.perf_counter()
    kdist.initialize()
    init_seconds = time.perf_counter() - started
    print(json.dumps({**what_this_process_sees(), "init_seconds": init_seconds}), flush=True)
    kdist.shutdown()
