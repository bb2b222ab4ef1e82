"""distribute_batch on a real loopback cluster: 2 processes x 2 CPU devices, real
kdist.initialize(), a DataParallel over all 4 global devices."""

from __future__ import annotations

import numpy as np
import pytest

from support import run_cluster

pytestmark = pytest.mark.multiprocess


def test_each_process_contributes_its_local_batch_to_one_global_batch() -> None:
    results = run_cluster("distribute_batch.py", 2, devices_per_process=2, timeout=180)
    for result in results:
        assert result.returncode == 0, result.describe()
    reports = [r.report() for r in results]
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
