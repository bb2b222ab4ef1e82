"""Jobs on loopback under TLS (issue 57): a job with a token runs JAX's coordination service
under mutual TLS with kdist's certificates (JAX's own log says so), and processes that
would not understand each other's TLS are stopped at the roll call, named.

The stranger's side, across hosts: tests/hosts/test_netns_tls.py.
"""

from __future__ import annotations

import pytest

import kdist
from helpers.support import PROGRAMS, clean_env, free_port, run_processes
from kdist import _jax_backend
from kdist.testing import run_job

pytestmark = pytest.mark.multiprocess

if not _jax_backend.mtls_supported()[0]:
    pytest.skip("this JAX has no mutual TLS (JAX 0.12 added it)", allow_module_level=True)


def _state() -> str:
    from jax.experimental import multihost_utils

    multihost_utils.sync_global_devices("under TLS")  # a barrier through JAX's service
    spec = kdist.cluster_spec()
    assert spec is not None
    return spec.tls_state


def test_a_job_with_a_token_runs_jax_s_service_under_mutual_tls(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # run_job gives the job a token; TF_CPP_MIN_LOG_LEVEL=0 shows JAX's own INFO lines.
    states = run_job(_state, num_processes=2, env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert len(set(states)) == 1
    assert states[0].startswith("on: kdist's certificates for attempt 0 of the job at 127.0.0.1:")
    err = capfd.readouterr().err
    assert (
        "[0] " in err
        and 'gRPC mTLS server credentials are used (peer_uri_prefix: "kdist://job-' in err
    )
    for process in (0, 1):
        assert any(
            line.startswith(f"[{process}] ") and "gRPC mTLS client credentials are used" in line
            for line in err.splitlines()
        ), err


def test_processes_with_different_tls_are_stopped_at_the_roll_call_named() -> None:
    port = free_port()
    envs = [
        clean_env(
            1,
            KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
            KERAS_DISTRIBUTION_NUM_PROCESSES="2",
            KERAS_DISTRIBUTION_PROCESS_ID=str(i),
            KDIST_INIT_TIMEOUT="30",
            KDIST_ROLL_CALL_TOKEN="the job's token",
            **({"KDIST_TLS": "off"} if i == 1 else {}),
        )
        for i in range(2)
    ]
    done = run_processes(
        [[__import__("sys").executable, str(PROGRAMS / "roll_call_report.py")]] * 2,
        envs,
        timeout=60,
    )
    for finished in done:
        assert finished.returncode == 1, finished.describe()
        (report,) = finished.json_lines()
        assert report["error"] == "RendezvousError"
        message = str(report["message"])
        assert "tls: \"on: kdist's certificates for attempt 0 of the job at 127.0.0.1:" in message
        assert '"off: KDIST_TLS=\\"off\\" (from the environment)" in process 1' in message or (
            "off: KDIST_TLS" in message
        ), message
