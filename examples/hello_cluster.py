"""Each process of a job: kdist.initialize(), then its id, the global devices and the init time.

Run it as a 2-process cluster on this machine, 2 CPU devices per process:

    kdist launch -n 2 --devices-per-process 2 -- python examples/hello_cluster.py

under any launcher kdist detects (srun, torchrun, mpirun, ...), or with the
KERAS_DISTRIBUTION_* variables set by hand. (`bash scripts/demo.sh` runs
examples/keras_train.py, the Keras example.)
"""

import time

import kdist

started = time.perf_counter()
kdist.initialize()  # configured by KERAS_DISTRIBUTION_* or a detected scheduler
seconds = time.perf_counter() - started

spec = kdist.cluster_spec()
assert spec is not None
print(
    f"process {spec.process_id} of {spec.num_processes}: initialize took {seconds:.3f} s; "
    f"global devices {kdist.list_devices()}",
    flush=True,
)
kdist.shutdown()
