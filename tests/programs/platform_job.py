"""A process of a job whose platform alone configures it (a Cloud TPU's metadata server,
GKE's or SkyPilot's variables): kdist.initialize() with no settings, then a real
collective (`multihost_utils.process_allgather` of each process's id) and one JSON line:
what kdist resolved, with every value's source, and what the collective returned."""

import json
import os

import numpy as np

import kdist

kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None

from jax.experimental import multihost_utils  # noqa: E402  (after initialize)

gathered = multihost_utils.process_allgather(np.array([spec.process_id], dtype=np.int32))
print(
    json.dumps(
        {
            "process_id": spec.process_id,
            "num_processes": spec.num_processes,
            "coordinator": spec.coordinator_address,
            "scheduler": spec.scheduler,
            "sources": spec.sources,
            "gathered": [int(v) for v in np.asarray(gathered).ravel()],
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }
    ),
    flush=True,
)
kdist.shutdown()
