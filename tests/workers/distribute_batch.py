"""A cluster member: DataParallel over every global device, this process's batch through
distribute_batch, a jitted sum of the global batch; one JSON report line."""

import json

import numpy as np

import kdist

kdist.initialize()

import jax  # noqa: E402  (after initialize: kdist must start JAX's distributed runtime first)
import jax.numpy as jnp  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

spec = kdist.cluster_spec()
assert spec is not None
dist = kdist.DataParallel()

# 2 rows per local device; values differ between processes.
rows = 2 * jax.local_device_count()
local = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) + 100.0 * (spec.process_id + 1)
batch = kdist.distribute_batch(local, dist)
total = jax.jit(jnp.sum)(batch)
# Weighs each row by its global index, so the order of the rows shows in the result.
weighted = jax.jit(lambda b: jnp.sum(b * jnp.arange(b.shape[0], dtype=b.dtype)[:, None]))(batch)
gathered = multihost_utils.process_allgather(batch, tiled=True)

print(
    json.dumps(
        {
            "process_id": spec.process_id,
            "local_batch": local.tolist(),
            "global_shape": list(batch.shape),
            "spec": [axis for axis in batch.sharding.spec],
            "is_fully_addressable": batch.is_fully_addressable,
            "total": float(total),
            "weighted": float(weighted),
            "gathered": np.asarray(gathered).tolist(),
            "mesh_devices": dist.device_mesh.devices.tolist(),
            "process_of_device": {f"{d.platform}:{d.id}": d.process_index for d in jax.devices()},
            "num_processes": dist.num_processes,
            "dist_process_id": dist.process_id,
            "num_model_replicas": dist.num_model_replicas,
            "num_data_shards": dist.num_data_shards,
            "data_shard_id": dist.data_shard_id,
        }
    ),
    flush=True,
)
kdist.shutdown()
