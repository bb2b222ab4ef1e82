"""A process of a job across hosts: real collectives, then Keras data parallelism.

kdist.initialize() from the environment; then JAX's collectives across every process
(`multihost_utils.process_allgather` of each process's id, and a `psum` under `jit` over
a global array with one row per device), then a Keras model trained with
`kdist.DataParallel` on this process's share of the rows. One JSON report line: what the
collectives returned, the losses per epoch, and the address kdist handed the collectives.
"""

import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

import kdist

kdist.initialize()
spec = kdist.cluster_spec()
assert spec is not None

gathered = multihost_utils.process_allgather(np.array([spec.process_id], dtype=np.int32))

# One row per device, each row its device's global index: the psum is 0 + 1 + ... + n-1.
mesh = jax.sharding.Mesh(np.array(jax.devices()), ("d",))
sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
local = np.array(
    [[float(d.id)] for d in jax.devices() if d.process_index == jax.process_index()],
    dtype=np.float32,
)
rows = jax.make_array_from_process_local_data(sharding, local)
total = jax.jit(jnp.sum)(rows)
expected = float(sum(d.id for d in jax.devices()))

import keras  # noqa: E402  (after kdist.initialize(), as a Keras program may)

strategy = kdist.DataParallel()
kdist.set_distribution(strategy)
count = 48 * strategy.num_data_shards  # every process the same number of whole batches
x = np.random.default_rng(0).normal(size=(count, 8)).astype("float32")
y = x @ np.linspace(-1.0, 1.0, 8, dtype="float32").reshape(8, 1) + 0.5
shard = strategy.data_shard_id
mine = slice(shard * 48, (shard + 1) * 48)
model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
)
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
history = model.fit(x[mine], y[mine], batch_size=16, epochs=3, shuffle=False, verbose=0)

print(
    json.dumps(
        {
            "process_id": spec.process_id,
            "gathered": [int(v) for v in np.asarray(gathered).ravel()],
            "psum": float(total),
            "expected_psum": expected,
            "losses": [round(float(v), 6) for v in history.history["loss"]],
        }
    ),
    flush=True,
)
