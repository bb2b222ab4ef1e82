"""A kdist cluster across three network namespaces (three "hosts" on one bridge)."""

from __future__ import annotations

import sys

import pytest

import netns
from support import WORKERS, clean_env, run_processes

pytestmark = pytest.mark.multiprocess

_reason = netns.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

PORT = 8476


def cluster_commands(
    hosts: list[netns.Host], coordinator: str, timeout: float
) -> tuple[list[list[str]], list[dict[str, str]]]:
    commands, envs = [], []
    for pid, host in enumerate(hosts):
        commands.append(host.command([sys.executable, str(WORKERS / "report_cluster.py")]))
        envs.append(
            clean_env(
                2,
                KERAS_DISTRIBUTION_JOB_ADDRESSES=coordinator,
                KERAS_DISTRIBUTION_NUM_PROCESSES=str(len(hosts)),
                KERAS_DISTRIBUTION_PROCESS_ID=str(pid),
                KDIST_INIT_TIMEOUT=str(timeout),
            )
        )
    return commands, envs


def test_cluster_across_three_hosts() -> None:
    with netns.hosts(3) as hosts:
        commands, envs = cluster_commands(hosts, f"{hosts[0].address}:{PORT}", 60)
        results = run_processes(commands, envs, timeout=120)
    for result in results:
        assert result.returncode == 0, result.describe()
    reports = [r.report() for r in results]
    assert [r["process_id"] for r in reports] == [0, 1, 2]
    devices = reports[0]["devices"]
    assert isinstance(devices, list) and len(devices) == 6
    assert all(r["devices"] == devices for r in reports)
    assert all(r["coordinator"] == f"{hosts[0].address}:{PORT}" for r in reports)
