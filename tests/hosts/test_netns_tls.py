"""Every port of a job refuses a stranger (issue 57), on network-namespace hosts.

`kdist rendezvous serve` on host 1 (it trains nothing), `kdist launch --nodes 2` on hosts 2
and 3 with the job's token, and a stranger on host 4 without it. While the job runs (each
process waits for the test at two points: tests/programs/tls_job.py), the stranger tries:

- the roll call (process 0 holds the coordinator's port, waiting for process 1): a kdist
  process claiming process 1 without the token is refused there;
- JAX's coordination service on the same port once the job started: a plain gRPC call, and
  a TLS client without a certificate, with a stranger's, and with one of another attempt
  made from the right token, are all refused, while the control (this attempt's
  certificate, as every process of the job makes its own) is answered;
- the liveness hub's port: bytes that are not a join are dropped;
- the nodes' rendezvous: an agent with another token is refused;

and the job goes on: a collective and a Keras fit across the two hosts under mutual TLS
(JAX's own log says which credentials its server and clients use), every agent 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import netns
from helpers.support import PROGRAMS, Spawned, clean_env, json_objects

pytestmark = pytest.mark.multiprocess

_reason = netns.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

grpc = pytest.importorskip("grpc", reason="the plain gRPC stranger needs grpcio (the test extra)")

from kdist import _jax_backend  # noqa: E402

if not _jax_backend.mtls_supported()[0]:
    pytest.skip("this JAX has no mutual TLS (JAX 0.12 added it)", allow_module_level=True)

PORT = 29457
_BOUND = 180.0
_TOKEN = "the job's token, long enough"


def _wait_for(path: Path, agents: list[object], bound: float = _BOUND) -> str:
    deadline = time.monotonic() + bound
    while not path.exists():
        assert time.monotonic() < deadline, [a.stderr() for a in agents]  # type: ignore[attr-defined]
        time.sleep(0.05)
    return path.read_text()


def _stranger(
    host: netns.Host, argv: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        host.command(argv), env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_every_port_of_a_job_refuses_a_stranger_and_the_job_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    job = clean_env(
        1,
        KDIST_ROLL_CALL_TOKEN=_TOKEN,
        TLS_JOB_DIR=str(folder),
        TF_CPP_MIN_LOG_LEVEL="0",  # JAX's own INFO lines: which gRPC credentials it uses
    )
    stranger_env = clean_env(1)
    with netns.hosts(4) as hosts, Spawned(tmp_path) as spawned:
        rendezvous = f"{hosts[0].address}:{PORT}"
        serve = [
            sys.executable, "-m", "kdist", "rendezvous", "serve", "--host", hosts[0].address,
            "--port", str(PORT), "--nodes", "2", "--job-id", "t57", "--last-call", "2",
            "--join-timeout", "120",
        ]  # fmt: skip
        server = spawned.start(hosts[0].command(serve), job)
        assert server.wait_for_stderr("serving the nodes' rendezvous", _BOUND), server.stderr()
        agents = []
        for index in (1, 2):
            args = [
                sys.executable, "-m", "kdist", "launch", "--nodes", "2", "--rendezvous",
                rendezvous, "-n", "1", "--devices-per-process", "1", "--node-name",
                f"host{index}", "--job-id", "t57", "--join-timeout", "120", "--",
                sys.executable, str(PROGRAMS / "tls_job.py"),
            ]  # fmt: skip
            agents.append(spawned.start(hosts[index].command(args), job))

        # The roll call: process 0 holds the coordinator's port and waits for process 1.
        coordinator = _wait_for(folder / "coordinator", [server, *agents])
        intruder = _stranger(
            hosts[3],
            [sys.executable, str(PROGRAMS / "roll_call_report.py")],
            {
                **stranger_env,
                "KERAS_DISTRIBUTION_JOB_ADDRESSES": coordinator,
                "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
                "KERAS_DISTRIBUTION_PROCESS_ID": "1",
                "KDIST_INIT_TIMEOUT": "20",
            },
        )
        (folder / "roll-call-probed").touch()

        # The job started: JAX's service on the coordinator's port, the liveness hub.
        started = json.loads(_wait_for(folder / "started", [server, *agents]))
        given = {
            "coordinator": coordinator,
            "hub": started["hub_port"],
            "job_id": "t57",
            "num_processes": 2,
            "token": _TOKEN,
        }
        probes = _stranger(
            hosts[3],
            [sys.executable, str(PROGRAMS / "tls_stranger.py"), json.dumps(given)],
            stranger_env,
        )
        agent = [
            sys.executable, "-m", "kdist", "launch", "--nodes", "2", "--rendezvous", rendezvous,
            "-n", "1", "--node-name", "stranger", "--job-id", "t57", "--join-timeout", "30",
            "--", "true",
        ]  # fmt: skip
        stranger_agent = _stranger(
            hosts[3], agent, {**stranger_env, "KDIST_ROLL_CALL_TOKEN": "a stranger's token"}
        )
        (folder / "probed").touch()
        done = [a.finish(_BOUND) for a in agents]
        served = server.finish(_BOUND)

    # The stranger, refused everywhere.
    assert intruder.returncode != 0, intruder.stderr
    (refused,) = json_objects(intruder.stdout)
    assert refused["error"] == "RendezvousError", refused
    assert "set the same KDIST_ROLL_CALL_TOKEN in every process" in str(refused["message"])
    assert probes.returncode == 0, probes.stderr
    found = json.loads(probes.stdout)
    assert found["plain_grpc"].startswith("UNAVAILABLE"), found
    for probe in ("tls_without_certificate", "tls_stranger_certificate", "tls_other_attempt"):
        assert found[probe].startswith(("refused", "closed")), (probe, found)
    assert found["tls_this_attempt"] == "http2", found  # the control: the probe works
    assert found["hub"] == "closed", found
    assert stranger_agent.returncode == 1, stranger_agent.stderr
    assert "its token is not the rendezvous's" in stranger_agent.stderr

    # The job, undisturbed, under mutual TLS.
    assert served.returncode == 0, served.stderr
    for d in done:
        assert d.returncode == 0, d.stderr
    reports = [
        json.loads(line.split("TLS_JOB ", 1)[1])
        for d in done
        for line in d.stdout.splitlines()
        if "TLS_JOB " in line
    ]
    assert sorted(r["process_id"] for r in reports) == [0, 1]
    for report in reports:
        assert report["gathered"] == [0, 1]
        assert report["tls"] == 'on: kdist\'s certificates for attempt 0 of job "t57"'
        assert len(report["losses"]) == 2 and report["losses"][1] < report["losses"][0]
    assert started["tls"] == reports[0]["tls"]
    logs = "".join(d.stdout + d.stderr for d in done)
    assert logs.count('gRPC mTLS server credentials are used (peer_uri_prefix: "kdist://job-') == 1
    assert logs.count('gRPC mTLS client credentials are used (peer_uri_prefix: "kdist://job-') == 2
    assert "its token is not the rendezvous's" in served.stderr  # named on both sides
    for text in (*(d.stderr for d in done), served.stderr, probes.stdout):
        assert _TOKEN not in text
