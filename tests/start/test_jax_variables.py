"""JAX's own variables (JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID,
JAX_LOCAL_DEVICE_IDS, JAX_COORDINATOR_BIND_ADDRESS): read after KERAS_DISTRIBUTION_*,
each with its provenance, and the bind address honoured by the roll call and by JAX."""

from __future__ import annotations

import socket
import sys

import pytest

import kdist
from helpers.support import PROGRAMS, clean_env, free_port, run_processes
from kdist._start import config as _config

JAX_JOB = {
    "job_addresses": "JAX_COORDINATOR_ADDRESS",
    "num_processes": "JAX_NUM_PROCESSES",
    "process_id": "JAX_PROCESS_ID",
}


@pytest.fixture
def no_job_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers.support import SCHEDULER_VARIABLES

    for name in SCHEDULER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name in (
        "KERAS_DISTRIBUTION_JOB_ADDRESSES",
        "KERAS_DISTRIBUTION_NUM_PROCESSES",
        "KERAS_DISTRIBUTION_PROCESS_ID",
        "KDIST_LOCAL_DEVICE_IDS",
    ):
        monkeypatch.delenv(name, raising=False)


def test_jax_variables_configure_the_job(
    no_job_variables: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "3")
    monkeypatch.setenv("JAX_PROCESS_ID", "2")
    monkeypatch.setenv("JAX_LOCAL_DEVICE_IDS", "0,1")
    spec = _config.resolve()
    assert (spec.coordinator_address, spec.num_processes, spec.process_id) == (
        "10.0.0.5:7000",
        3,
        2,
    )
    assert spec.local_device_ids == [0, 1]
    assert {key: spec.sources[key] for key in JAX_JOB} == JAX_JOB
    assert spec.sources["local_device_ids"] == "JAX_LOCAL_DEVICE_IDS"
    assert spec.coordinator_bind_address is None
    assert spec.sources["coordinator_bind_address"] == "default"


def test_keras_variables_come_before_jax_ones(
    no_job_variables: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "3")
    monkeypatch.setenv("JAX_PROCESS_ID", "2")
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "4")
    spec = _config.resolve(process_id=1)
    assert spec.sources["job_addresses"] == "JAX_COORDINATOR_ADDRESS"
    assert (spec.num_processes, spec.sources["num_processes"]) == (
        4,
        "KERAS_DISTRIBUTION_NUM_PROCESSES",
    )
    assert (spec.process_id, spec.sources["process_id"]) == (1, "argument")


def test_a_bad_jax_variable_is_named(
    no_job_variables: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "10.0.0.5:7000")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    monkeypatch.setenv("JAX_PROCESS_ID", "0")
    monkeypatch.setenv("JAX_COORDINATOR_BIND_ADDRESS", "node01:7000")
    with pytest.raises(
        kdist.ConfigError,
        match=r'JAX_COORDINATOR_BIND_ADDRESS="node01:7000" \(from the environment\): names a '
        "host, not an IP address",
    ):
        _config.resolve()


def test_kdist_all_contradicts_jax_local_device_ids(
    no_job_variables: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAX_LOCAL_DEVICE_IDS", "1")
    monkeypatch.setenv("KDIST_LOCAL_DEVICE_IDS", "all")
    with pytest.raises(
        kdist.ConfigError,
        match=r'KDIST_LOCAL_DEVICE_IDS="all" \(from the environment\) contradicts '
        r'JAX_LOCAL_DEVICE_IDS="1"',
    ):
        _config.resolve("127.0.0.1:1", 2, 0)


def _jax_env(process_id: int, port: int, **extra: str) -> dict[str, str]:
    settings = {
        "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}",
        "JAX_NUM_PROCESSES": "2",
        "JAX_PROCESS_ID": str(process_id),
        "KDIST_INIT_TIMEOUT": "60",
    }
    return clean_env(2, **{**settings, **extra})


@pytest.mark.multiprocess
@pytest.mark.compat
def test_a_real_cluster_configured_by_jax_variables_alone() -> None:
    port = free_port()
    commands = [[sys.executable, str(PROGRAMS / "report_cluster.py")]] * 2
    results = run_processes(commands, [_jax_env(i, port) for i in range(2)], timeout=120)
    for result in results:
        assert result.returncode == 0, result.describe()
    reports = [r.report() for r in results]
    assert [r["process_id"] for r in reports] == [0, 1]
    for report in reports:
        assert report["coordinator"] == f"127.0.0.1:{port}"
        assert report["device_count"] == 4
        sources = report["sources"]
        assert isinstance(sources, dict)
        assert {key: sources[key] for key in JAX_JOB} == JAX_JOB


def _holder(host: str, port: int) -> socket.socket:
    """A live listener on one loopback address only."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, port))
    sock.listen(1)
    return sock


@pytest.mark.multiprocess
def test_the_bind_address_is_where_process_0_binds() -> None:
    """Another program holds the coordinator's port on 127.0.0.2 only. Binding every
    interface (the default) then fails; binding 127.0.0.1 only, as
    JAX_COORDINATOR_BIND_ADDRESS says, works for the roll call and for JAX's service."""
    port = free_port()
    with _holder("127.0.0.2", port):
        commands = [[sys.executable, str(PROGRAMS / "report_cluster.py")]] * 2
        bind = {"JAX_COORDINATOR_BIND_ADDRESS": f"127.0.0.1:{port}"}
        results = run_processes(
            commands, [_jax_env(i, port, **bind) for i in range(2)], timeout=120
        )
        for result in results:
            assert result.returncode == 0, result.describe()
        for report in (r.report() for r in results):
            sources = report["sources"]
            assert isinstance(sources, dict)
            assert sources["coordinator_bind_address"] == "JAX_COORDINATOR_BIND_ADDRESS"

        # Without it process 0 binds every interface, and finds the port taken at once.
        default = run_processes(
            commands[:1], [_jax_env(0, port, KDIST_INIT_TIMEOUT="20")], timeout=60
        )[0]
        assert default.returncode != 0, default.describe()
        assert "PortInUseError" in default.stderr, default.describe()
        assert f"process 0 cannot use coordinator port {port}" in default.stderr
