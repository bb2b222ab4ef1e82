"""A cluster member: kdist.initialize() from the environment, then one JSON report line."""

import json
import random
import time

import numpy as np

import kdist

started = time.perf_counter()
kdist.initialize()
init_seconds = time.perf_counter() - started
spec = kdist.cluster_spec()
assert spec is not None
kdist.initialize()  # the same configuration again: a no-op
try:
    kdist.initialize(num_processes=spec.num_processes + 1)
    second_call_error = ""
except kdist.ConfigError as error:
    second_call_error = str(error)
print(
    json.dumps(
        {
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
            "init_seconds": init_seconds,
            "second_call_error": second_call_error,
        }
    ),
    flush=True,
)
kdist.shutdown()
