"""Hello, cluster: every process joins the job and says what it sees.

Run it as two processes with two CPU devices each, on this machine:

    kdist launch -n 2 --devices-per-process 2 -- python examples/hello_cluster.py

or under any launcher kdist detects (`srun`, `torchrun`, `mpirun`, ...), or
with the KERAS_DISTRIBUTION_* variables set by hand.
"""

import time

import kdist

started = time.perf_counter()
kdist.initialize()
seconds = time.perf_counter() - started

spec = kdist.cluster_spec()
assert spec is not None
print(
    f"process {spec.process_id} of {spec.num_processes}: initialize() took {seconds:.3f} s "
    f"(coordinator {spec.coordinator_address}, scheduler {spec.scheduler or 'none'})"
)
print(f"process {spec.process_id}: devices {kdist.list_devices()}")
kdist.shutdown()
