"""A training-like loop for the real-Slurm tests (tests/clusters/test_slurm.py), run as every task
of an srun step: kdist.initialize() from Slurm's variables alone, then steps with a
collective each, asking kdist.should_stop(step) every step.

The loop's result depends on every step being run exactly once: each step adds
step * (1 + 2 + ... + num_processes) to a total, through a process_allgather. At the
agreed stop step every process "saves" its state (the next step and the total) to its own
file, and a later run (a requeued job) resumes from it; a run that reaches the last step
writes the result. So an interrupted-and-resumed job ends with the same result as an
uninterrupted one, and a lost, repeated or disagreed step shows in it.

# A Keras version of this scenario: kdist.BackupAndRestore (being built on another
# branch) saves at the agreed step and resumes at the next batch. When it lands, a
# model.fit(..., callbacks=[kdist.BackupAndRestore(SLURM_TEST_DIR)]) worker goes here,
# run by the same tests (see KERAS_BACKUP_AND_RESTORE in tests/clusters/test_slurm.py).

Environment:
  SLURM_TEST_DIR    where the state files, the result and the event log go (shared)
  SLURM_TEST_MODE   "steps" (default): the loop above; "fail": process SLURM_TEST_WHO raises
                    at step 20; "report": print the resolved configuration and exit;
                    "collectives": print what a process_allgather and a jit psum over every
                    device of the job give, and exit
  SLURM_TEST_STEPS  the number of steps of the whole job (default 400)
  SLURM_TEST_STEP_SECONDS      each step's sleep in the job's first run (default 0.02)
  SLURM_TEST_RESUMED_STEP_SECONDS  ... in a restarted run (restart_count > 0; default 0.002)

Every event is one JSON line appended to SLURM_TEST_DIR/events-<process id>.jsonl:
{"event": "resumed" | "running" | "failing" | "stopped" | "finished" | "exited",
"process_id", "pid", "job_id", "restart_count", "restart_count_source", "step", "time",
...}; "exited" comes last, from an exit handler that runs after kdist's, so a process
killed by a signal has none.
"""

import atexit
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

STARTED = time.time()
MODE = os.environ.get("SLURM_TEST_MODE", "steps")
DIRECTORY = Path(os.environ.get("SLURM_TEST_DIR", "."))
STEPS = int(os.environ.get("SLURM_TEST_STEPS", "400"))
WHO = int(os.environ.get("SLURM_TEST_WHO", "1"))

import kdist  # noqa: E402

if MODE == "report":
    kdist.initialize()
    spec = kdist.cluster_spec()
    assert spec is not None
    import jax

    print(
        json.dumps(
            {
                "process_id": spec.process_id,
                "num_processes": spec.num_processes,
                "coordinator": spec.coordinator_address,
                "scheduler": spec.scheduler,
                "sources": dict(spec.sources),
                "restart_count": spec.restart_count,
                "devices": len(jax.devices()),
                "local_devices": len(jax.local_devices()),
                "slurm_procid": os.environ.get("SLURM_PROCID"),
                "job_id": os.environ.get("SLURM_JOB_ID"),
                "node": os.environ.get("SLURMD_NODENAME"),
            }
        ),
        flush=True,
    )
    sys.exit(0)

if MODE == "collectives":
    kdist.initialize()
    spec = kdist.cluster_spec()
    assert spec is not None
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, PartitionSpec

    try:
        from jax import shard_map  # type: ignore[attr-defined]
    except ImportError:  # before JAX 0.6
        from jax.experimental.shard_map import shard_map

    # Each process's id, gathered from every process (across the nodes).
    gathered = multihost_utils.process_allgather(np.array([spec.process_id]))
    # One value per device, 1 + its index in the job's device order; a psum over the
    # mesh of every device adds them all (an all-reduce across the processes).
    devices = jax.devices()
    mesh = Mesh(np.array(devices), ("d",))
    mine = [i + 1 for i, d in enumerate(devices) if d.process_index == jax.process_index()]
    local = np.array(mine, dtype=np.float32)
    x = multihost_utils.host_local_array_to_global_array(local, mesh, PartitionSpec("d"))
    summed = jax.jit(
        shard_map(
            lambda a: jax.lax.psum(jnp.sum(a), "d"),
            mesh=mesh,
            in_specs=PartitionSpec("d"),
            out_specs=PartitionSpec(),
        )
    )(x)
    print(
        json.dumps(
            {
                "process_id": spec.process_id,
                "node": os.environ.get("SLURMD_NODENAME"),
                "allgather": np.asarray(gathered).ravel().tolist(),
                "psum": float(np.asarray(summed.addressable_data(0))),
                "devices": len(devices),
            }
        ),
        flush=True,
    )
    sys.exit(0)

kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None
me, n = spec.process_id, spec.num_processes
# The last event, logged after kdist's own exit handlers (registered later, run earlier)
# have run: a process killed by a signal never logs it.
atexit.register(lambda: log("exited"))
restarted = spec.restart_count > 0
step_seconds = float(
    os.environ.get("SLURM_TEST_RESUMED_STEP_SECONDS", "0.002")
    if restarted
    else os.environ.get("SLURM_TEST_STEP_SECONDS", "0.02")
)

from jax.experimental import multihost_utils  # noqa: E402

state_file = DIRECTORY / f"state-{me}.json"
events = DIRECTORY / f"events-{me}.jsonl"


def log(event: str, **fields: object) -> None:
    record = {
        "event": event,
        "process_id": me,
        "pid": os.getpid(),
        "job_id": os.environ.get("SLURM_JOB_ID"),
        "restart_count": spec.restart_count,
        "restart_count_source": spec.sources["restart_count"],
        "time": time.time(),
        **fields,
    }
    with open(events, "a") as out:
        out.write(json.dumps(record) + "\n")


start, total = 0, 0
if state_file.exists():
    saved = json.loads(state_file.read_text())
    start, total = saved["next_step"], saved["total"]
    log("resumed", step=start, total=total)

stopped_at, stop_seen = None, None
for step in range(start, STEPS):
    if kdist.should_stop(step):
        stopped_at, stop_seen = step, time.time()
        break
    if MODE == "fail" and me == WHO and step == 20:
        log("failing", step=step)
        raise RuntimeError(f"injected failure at step {step}")
    gathered = multihost_utils.process_allgather(np.array([step * (me + 1)]))
    total += int(np.sum(gathered))
    if step == start + 5:
        log("running", step=step, started=STARTED)
    time.sleep(step_seconds)

if stopped_at is not None:
    # The agreed step: every process is here, at the same step. Save (a real checkpoint
    # takes a while: SLURM_TEST_SAVE_SECONDS), then leave.
    time.sleep(float(os.environ.get("SLURM_TEST_SAVE_SECONDS", "0")))
    state_file.write_text(json.dumps({"next_step": stopped_at, "total": total}))
    log("stopped", step=stopped_at, total=total, stop_seen=stop_seen)
else:
    state_file.unlink(missing_ok=True)
    (DIRECTORY / f"result-{me}.json").write_text(json.dumps({"total": total, "steps": STEPS}))
    log("finished", step=STEPS, total=total)
