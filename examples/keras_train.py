"""Each process of a job trains one Keras model with data parallelism, through kdist.

Run it as a 2-process cluster on this machine, 2 CPU devices per process:

    kdist launch -n 2 --devices-per-process 2 -- python examples/keras_train.py

or with `bash scripts/demo.sh`. The program is a keras.distribution program with
two lines changed: `kdist.initialize()` instead of `keras.distribution.initialize()`
(the processes agree on one seed, so they draw the same initial weights), and
`kdist.set_distribution(kdist.DataParallel())` instead of Keras's. Each process
feeds its own half of the data; every process prints the same losses.

`kdist.BackupAndRestore` makes it resumable: stopped by SIGTERM (to any of its processes),
every process saves at the same step and exits 143; run again (`kdist launch --max-restarts
1` does it), it resumes at the next batch, and the epochs it runs have the losses of a run
never stopped. The backup goes to $KDIST_EXAMPLE_BACKUP_DIR (default: build/keras_train_backup
in this repository) and is removed when training ends. KDIST_EXAMPLE_STEP_SECONDS slows
every batch down, so that a stop lands in the middle of training (README.md).
"""

import os
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras
import numpy as np

import kdist

started = time.perf_counter()
kdist.initialize()  # configured by KERAS_DISTRIBUTION_*, a detected scheduler, or kdist launch
initialize_seconds = time.perf_counter() - started
spec = kdist.cluster_spec()
assert spec is not None

strategy = kdist.DataParallel()  # the batch split over every device of the job
kdist.set_distribution(strategy)

# A regression problem; this process's share of each global batch is its own rows.
rows = 256
x = np.random.default_rng(0).normal(size=(rows, 8)).astype("float32")
y = x @ np.linspace(-1.0, 1.0, 8, dtype="float32").reshape(8, 1) + 0.5
shard = strategy.data_shard_id
mine = slice(
    shard * rows // strategy.num_data_shards, (shard + 1) * rows // strategy.num_data_shards
)

model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)]
)
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
default_dir = Path(__file__).resolve().parents[1] / "build" / "keras_train_backup"
backup = kdist.BackupAndRestore(os.environ.get("KDIST_EXAMPLE_BACKUP_DIR", default_dir))
pause = float(os.environ.get("KDIST_EXAMPLE_STEP_SECONDS", "0"))
slow = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: time.sleep(pause))
history = model.fit(
    x[mine], y[mine], batch_size=16, epochs=5, shuffle=False, verbose=0, callbacks=[backup, slow]
)

losses = ", ".join(f"{loss:.5f}" for loss in history.history["loss"])
if backup.stopped_step is None:  # else stopped by a signal: saved, and the process exits 143
    print(
        f"process {spec.process_id} of {spec.num_processes}: initialize took "
        f"{initialize_seconds:.3f} s; seed {spec.seed} ({spec.sources['seed']}); "
        f"{kdist.get_device_count()} devices; losses per epoch [{losses}]",
        flush=True,
    )
