"""Real loopback clusters: N processes x 2 CPU devices, real jax.distributed."""

from __future__ import annotations

import pytest

from support import ENVIRONMENT_SOURCES, run_cluster

pytestmark = [pytest.mark.multiprocess, pytest.mark.compat]


@pytest.mark.parametrize("num_processes", [2, 4])
def test_every_process_sees_the_same_global_devices(num_processes: int) -> None:
    results = run_cluster("report_cluster.py", num_processes, devices_per_process=2, timeout=180)
    for result in results:
        assert result.returncode == 0, result.describe()
    reports = [r.report() for r in results]

    assert [r["process_id"] for r in reports] == list(range(num_processes))
    first = reports[0]["devices"]
    assert isinstance(first, list)
    assert len(first) == num_processes * 2
    assert len(set(first)) == len(first)
    assert all(isinstance(d, str) and d.startswith("cpu:") for d in first)
    for report in reports:
        assert report["devices"] == first
        assert report["device_count"] == num_processes * 2
        assert report["num_processes"] == num_processes
        assert report["fingerprint"] == reports[0]["fingerprint"]
        assert "kdist is already initialized" in str(report["second_call_error"])
        assert report["sources"] == {**ENVIRONMENT_SOURCES, "seed": "roll call: process 0's seed"}
        assert report["scheduler"] is None
