"""Real loopback clusters: N processes x 2 CPU devices, real jax.distributed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helpers.support import ENVIRONMENT_SOURCES
from kdist.testing import run_job
from programs.report_cluster import what_this_process_sees

pytestmark = [pytest.mark.multiprocess, pytest.mark.compat]

JOB_TIMEOUT = 180


@pytest.mark.parametrize("num_processes", [2, 4])
def test_every_process_sees_the_same_global_devices(num_processes: int) -> None:
    reports = run_job(
        what_this_process_sees,
        num_processes=num_processes,
        devices_per_process=2,
        timeout=JOB_TIMEOUT,
    )

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
    assert_one_job_seed(reports)


def assert_one_job_seed(reports: list[dict[str, Any]]) -> None:
    """Every process has the job's seed in force, not its own: the same value, and the
    same draws from the generators it seeds."""
    assert len({report["seed"] for report in reports}) == 1, reports
    assert isinstance(reports[0]["seed"], int)
    assert len({json.dumps(report["draws"]) for report in reports}) == 1, reports


def test_without_the_roll_call_every_process_has_process_0_s_seed() -> None:
    reports = run_job(
        what_this_process_sees,
        num_processes=3,
        devices_per_process=2,
        timeout=JOB_TIMEOUT,
        env={"KDIST_ROLL_CALL": "off"},
    )
    assert {str(r["sources"]["seed"]) for r in reports} == {"key-value store: process 0's seed"}
    assert_one_job_seed(reports)
