"""distribute_batch on a real loopback cluster: 2 processes x 2 CPU devices, real
kdist.initialize(), a DataParallel over all 4 global devices."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kdist
from kdist.testing import run_job

pytestmark = pytest.mark.multiprocess


def sum_one_global_batch() -> dict[str, Any]:
    """DataParallel over every global device, this process's batch through
    distribute_batch, a jitted sum of the global batch; what each process sees."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

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
    return {
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


def test_each_process_contributes_its_local_batch_to_one_global_batch() -> None:
    reports = run_job(sum_one_global_batch, num_processes=2, devices_per_process=2, timeout=180)
    assert [r["process_id"] for r in reports] == [0, 1]

    # The global batch holds each process's rows where the mesh puts its devices.
    mesh = reports[0]["mesh_devices"]
    owner = reports[0]["process_of_device"]
    assert isinstance(mesh, list) and isinstance(owner, dict)
    assert len(mesh) == 4 and sorted(owner[d] for d in mesh) == [0, 0, 1, 1]
    process_order = list(dict.fromkeys(owner[d] for d in mesh))
    local = [np.array(r["local_batch"], dtype=np.float32) for r in reports]
    assert not np.array_equal(local[0], local[1])
    expected = np.concatenate([local[p] for p in process_order])
    weights = np.arange(expected.shape[0], dtype=np.float32)[:, None]

    for report in reports:
        assert report["mesh_devices"] == mesh
        assert report["global_shape"] == [8, 3]
        assert report["spec"] == ["batch", None]
        assert report["is_fully_addressable"] is False
        np.testing.assert_array_equal(np.array(report["gathered"]), expected)
        assert report["total"] == float(expected.sum())
        assert report["weighted"] == float((expected * weights).sum())
        assert report["num_processes"] == 2
        assert report["dist_process_id"] == report["process_id"]
        assert report["num_model_replicas"] == 4
        assert report["num_data_shards"] == 2
        assert report["data_shard_id"] == report["process_id"]
    assert reports[0]["total"] == reports[1]["total"]
