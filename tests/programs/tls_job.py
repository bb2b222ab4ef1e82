"""A process of tests/hosts/test_netns_tls.py's job, whose stranger probes each of the
job's ports while it runs: a collective and a Keras fit under JAX's mutual TLS.

TLS_JOB_DIR is a folder the test watches and writes (the hosts share the file system):
process 0 writes `coordinator` (its job address) and starts its roll call, which the other
processes join only once the test wrote `roll-call-probed`; after the start and a collective,
process 0 writes `started` (JSON: the liveness hub's port, its TLS state); every process
then waits for `probed` (each wait bounded by TLS_JOB_WAIT seconds), trains a Keras model
across the processes and prints one JSON line: what the collective gathered, its TLS
state, the losses.
"""

import json
import os
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")

FOLDER = Path(os.environ["TLS_JOB_DIR"])
WAIT_SECONDS = float(os.environ.get("TLS_JOB_WAIT", "120"))
PROCESS_ID = int(os.environ["KERAS_DISTRIBUTION_PROCESS_ID"])


def wait_for(name: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not (FOLDER / name).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{FOLDER / name} did not appear within {WAIT_SECONDS} s")
        time.sleep(0.05)


def publish(name: str, text: str) -> None:
    (FOLDER / f".{name}").write_text(text)
    (FOLDER / f".{name}").rename(FOLDER / name)


if PROCESS_ID == 0:
    publish("coordinator", os.environ["KERAS_DISTRIBUTION_JOB_ADDRESSES"])
else:
    wait_for("roll-call-probed")

import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

import kdist  # noqa: E402
from kdist._together import leaving  # noqa: E402

kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None
gathered = multihost_utils.process_allgather(np.array([spec.process_id], dtype=np.int32))
if PROCESS_ID == 0:
    installed = leaving._installed
    assert installed is not None
    publish("started", json.dumps({"hub_port": installed.channel.port, "tls": spec.tls_state}))
wait_for("probed")

import keras  # noqa: E402

strategy = kdist.DataParallel()
kdist.set_distribution(strategy)
count = 32 * strategy.num_data_shards
x = np.random.default_rng(0).normal(size=(count, 8)).astype("float32")
y = x @ np.linspace(-1.0, 1.0, 8, dtype="float32").reshape(8, 1) + 0.5
mine = slice(strategy.data_shard_id * 32, (strategy.data_shard_id + 1) * 32)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
history = model.fit(x[mine], y[mine], batch_size=16, epochs=2, shuffle=False, verbose=0)
print(
    "TLS_JOB "
    + json.dumps(
        {
            "process_id": spec.process_id,
            "gathered": [int(v) for v in np.asarray(gathered).ravel()],
            "tls": spec.tls_state,
            "losses": [float(v) for v in history.history["loss"]],
        }
    ),
    flush=True,
)
