"""Each process of a job: kdist.initialize(), then its id, the global devices and the init time.

Run it as a 2-process loopback cluster with `bash scripts/demo.sh`.
"""

import time

import kdist

started = time.perf_counter()
kdist.initialize()  # configured by KERAS_DISTRIBUTION_* in the environment
seconds = time.perf_counter() - started

spec = kdist.cluster_spec()
assert spec is not None
print(
    f"process {spec.process_id} of {spec.num_processes}: initialize took {seconds:.3f} s; "
    f"global devices {kdist.list_devices()}",
    flush=True,
)
kdist.shutdown()
