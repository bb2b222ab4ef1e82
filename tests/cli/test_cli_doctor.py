"""`kdist doctor` through real subprocesses, and its pieces in process."""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.support import ENVIRONMENT_SOURCES, KDIST_SCRIPT, clean_env, free_port
from kdist import _jax_backend
from kdist._cli import doctor_report as _doctor
from kdist._start import accelerators as _accelerators

DETECTOR_NAMES = [
    "torchrun",
    "ompi",
    "mpich",
    "skypilot",
    "slurm",
    "tf_config",
    "gke_tpu",
    "gce_tpu",
    "kubernetes",
]


def doctor(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kdist", "doctor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def doctor_json(*args: str, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    result = doctor("--json", *args, env=env)
    return result.returncode, json.loads(result.stdout)


@pytest.fixture
def listener() -> Iterator[int]:
    """A port on 127.0.0.1 with a listening socket (connections queue, never accepted)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


def test_good_configuration(listener: int) -> None:
    env = clean_env(
        2,
        KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{listener}",
        KERAS_DISTRIBUTION_NUM_PROCESSES="2",
        KERAS_DISTRIBUTION_PROCESS_ID="1",
        KDIST_INIT_TIMEOUT="30",
    )
    code, report = doctor_json(env=env)
    assert code == 0
    assert report["ok"] is True and report["error"] is None
    config = report["config"]
    assert config["coordinator_address"] == f"127.0.0.1:{listener}"
    assert (config["num_processes"], config["process_id"], config["timeout"]) == (2, 1, 30.0)
    assert config["sources"] == ENVIRONMENT_SOURCES
    assert report["scheduler"] is None
    assert [d["name"] for d in report["detectors"]] == DETECTOR_NAMES
    assert not any(d["present"] for d in report["detectors"])
    assert report["probe"]["status"] == "listening"
    assert report["probe"]["address"] == f"127.0.0.1:{listener}"
    assert report["devices"] is None
    assert set(report["accelerators"]) >= {"nvidia_gpus", "tpu_chips", "amd_kfd", "environment"}
    assert report["accelerators"]["environment"]["JAX_PLATFORMS"] == "cpu"

    text = doctor(env=env)
    assert text.returncode == 0
    assert "configuration: ok" in text.stdout
    assert "from KERAS_DISTRIBUTION_NUM_PROCESSES" in text.stdout
    assert f"coordinator 127.0.0.1:{listener}: listening" in text.stdout


def test_every_setting_shows_with_its_own_value_and_source() -> None:
    """Each setting from its own variable, to a value no other shares: a row that shows
    another setting's value or source stands out."""
    own = {
        "job_addresses": ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "127.0.0.1:1", "127.0.0.1:1"),
        "num_processes": ("KERAS_DISTRIBUTION_NUM_PROCESSES", "3", "3"),
        "process_id": ("KERAS_DISTRIBUTION_PROCESS_ID", "2", "2"),
        "timeout": ("KDIST_INIT_TIMEOUT", "77", "77 s"),
        "preflight": ("KDIST_ROLL_CALL", "off", "False"),
        "cluster_detection": ("KDIST_CLUSTER_DETECTION", "none", "none"),
        "local_device_ids": ("KDIST_LOCAL_DEVICE_IDS", "0,1", "[0, 1]"),
        "coordinator_bind_address": ("JAX_COORDINATOR_BIND_ADDRESS", "127.0.0.2:1", "127.0.0.2:1"),
        "collectives_address": ("KDIST_COLLECTIVES_ADDRESS", "127.0.0.3", "127.0.0.3"),
        "heartbeat_timeout": ("KDIST_HEARTBEAT_TIMEOUT", "91", "91 s"),
        "shutdown_timeout": ("KDIST_SHUTDOWN_TIMEOUT", "203", "203 s"),
        "unreachable_timeout": ("KDIST_UNREACHABLE_TIMEOUT", "13", "13 s"),
        "on_peer_failure": ("KDIST_ON_PEER_FAILURE", "ignore", "ignore"),
        "consistency": ("KDIST_CONSISTENCY", "strict", "strict"),
        "stop_signals": ("KDIST_STOP_SIGNALS", "SIGUSR1,SIGTERM", "SIGUSR1,SIGTERM"),
        "stall_timeout": ("KDIST_STALL_TIMEOUT", "45", "45 s"),
        "tls": ("KDIST_TLS", "off", "off"),
        "restart_count": ("KDIST_RESTART_COUNT", "4", "4"),
        "node_rank": ("KDIST_NODE_RANK", "1", "1"),
        "num_nodes": ("KDIST_NUM_NODES", "5", "5"),
        "local_process_id": ("KDIST_LOCAL_PROCESS_ID", "6", "6"),
        "job_id": ("KDIST_JOB_ID", "job-8", "job-8"),
    }
    env = clean_env(2, **{variable: value for variable, value, _ in own.values()})
    text = doctor("--no-probe", env=env)
    assert text.returncode == 0, text.stderr
    for name, (variable, _, shown) in own.items():
        row = re.compile(rf"^  {name} +{re.escape(shown)} +from {variable}$", re.MULTILINE)
        assert row.search(text.stdout), (name, text.stdout)
    code, report = doctor_json("--no-probe", env=env)
    assert code == 0
    assert report["config"]["sources"] == {
        **{name: variable for name, (variable, _, _) in own.items()},
        "collectives_interface": "default",
    }


def test_probe_of_a_closed_port_and_no_probe() -> None:
    port = free_port()
    env = clean_env(
        2,
        KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
        KERAS_DISTRIBUTION_NUM_PROCESSES="2",
        KERAS_DISTRIBUTION_PROCESS_ID="0",
    )
    code, report = doctor_json(env=env)
    assert code == 0
    assert report["probe"]["status"] == "refused"
    assert report["probe"]["advice"] == "the port is free for the coordinator"
    code, report = doctor_json("--no-probe", env=env)
    assert code == 0 and report["probe"] is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"KERAS_DISTRIBUTION_NUM_PROCESSES": "two", "KERAS_DISTRIBUTION_JOB_ADDRESSES": "h:1"},
            'KERAS_DISTRIBUTION_NUM_PROCESSES="two" (from the environment): is not an integer',
        ),
        ({}, "found no cluster configuration"),
        (
            {"SLURM_JOB_ID": "77", "SLURM_NTASKS": "4"},
            'scheduler detection (slurm): SLURM_JOB_ID="77" is set but SLURM_STEP_NODELIST',
        ),
    ],
)
def test_bad_configuration_exits_non_zero(settings: dict[str, str], message: str) -> None:
    env = clean_env(2, **settings)
    code, report = doctor_json(env=env)
    assert code == 1
    assert report["ok"] is False and report["config"] is None
    assert message in report["error"]
    assert report["probe"] is None
    text = doctor(env=env)
    assert text.returncode == 1
    assert "configuration: INVALID" in text.stdout
    assert message in text.stdout
    # --exit-zero (for launchers that stop every rank when one fails): the same report, 0.
    kept = doctor("--exit-zero", env=env)
    assert kept.returncode == 0
    assert kept.stdout == text.stdout


def test_detected_scheduler_and_local_devices() -> None:
    port = free_port()
    env = clean_env(
        2,
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        WORLD_SIZE="4",
        RANK="2",
        LOCAL_RANK="0",
        LOCAL_WORLD_SIZE="2",
        SLURM_JOB_ID="9",  # torchrun inside an allocation
    )
    code, report = doctor_json(env=env)
    assert code == 0, report
    assert report["scheduler"] == "torchrun"
    config = report["config"]
    assert config["sources"]["process_id"] == "torchrun (RANK)"
    assert config["suggested_local_device_ids"] == [0]
    assert config["local_device_ids"] is None
    by_name = {d["name"]: d for d in report["detectors"]}
    assert by_name["torchrun"]["values"]["process_id"] == {
        "value": "2",
        "variables": "RANK",
        "shown": 'RANK="2"',
    }
    assert by_name["slurm"]["present"] is True
    assert 'SLURM_JOB_ID="9" is set but' in by_name["slurm"]["error"]
    text = doctor("--no-probe", env=env).stdout
    assert "scheduler: torchrun" in text
    assert "local devices: suggested [0]" in text


def test_doctor_does_not_import_jax_unless_asked() -> None:
    code = (
        "import json, sys\n"
        "from kdist._cli.main import main\n"
        "status = main(sys.argv[1:])\n"
        "print(json.dumps({'status': status, 'jax': 'jax' in sys.modules}))\n"
    )
    env = clean_env(2, KERAS_DISTRIBUTION_NUM_PROCESSES="1")
    plain = subprocess.run(
        [sys.executable, "-c", code, "doctor", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    last = json.loads(plain.stdout.strip().splitlines()[-1])
    assert last == {"status": 0, "jax": False}, plain.stderr

    devices = subprocess.run(
        [sys.executable, "-c", code, "doctor", "--json", "--devices"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = devices.stdout.strip().splitlines()
    assert json.loads(lines[-1]) == {"status": 0, "jax": True}, devices.stderr
    report = json.loads("\n".join(lines[:-1]))
    assert report["devices"]["local_devices"] == ["cpu:0", "cpu:1"]
    assert report["devices"]["default_backend"] == "cpu"


def test_console_script_and_module_agree() -> None:
    env = clean_env(2, KERAS_DISTRIBUTION_NUM_PROCESSES="1")
    via_script = subprocess.run(
        [str(KDIST_SCRIPT), "doctor", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    via_module = doctor("--json", env=env)
    assert via_script.returncode == via_module.returncode == 0
    a, b = json.loads(via_script.stdout), json.loads(via_module.stdout)
    assert a["config"] == b["config"]


def test_find_accelerators_reads_device_nodes(tmp_path: Path) -> None:
    for name in ("nvidia0", "nvidia1", "nvidia10", "nvidiactl", "nvidia-uvm", "accel0", "kfd"):
        (tmp_path / name).touch()
    (tmp_path / "dri").mkdir()
    (tmp_path / "dri" / "renderD128").touch()
    found = _accelerators.find_accelerators(tmp_path, {"CUDA_VISIBLE_DEVICES": "1,0", "HOME": "/x"})
    assert found["nvidia_gpus"] == ["nvidia0", "nvidia1", "nvidia10"]
    assert found["tpu_chips"] == ["accel0"]
    assert found["amd_kfd"] is True
    assert found["render_nodes"] == ["renderD128"]
    assert found["environment"] == {"CUDA_VISIBLE_DEVICES": "1,0"}
    assert "NVIDIA GPUs: 3 (/dev/nvidia0, /dev/nvidia1, /dev/nvidia10)" in found["summary"]

    (tmp_path / "vfio").mkdir()
    (tmp_path / "vfio" / "0").touch()
    (tmp_path / "vfio" / "vfio").touch()
    empty = tmp_path / "none"
    empty.mkdir()
    (empty / "vfio").mkdir()
    (empty / "vfio" / "3").touch()
    tpu_vm = _accelerators.find_accelerators(empty, {})
    assert tpu_vm["tpu_chips"] == ["vfio/3"]
    assert _accelerators.find_accelerators(tmp_path / "missing", {})["summary"] == [
        "no accelerator device nodes: JAX will use the CPU"
    ]


def test_probe_is_bounded_when_nobody_answers() -> None:
    # A listener whose accept queue is full drops new connection attempts (Linux):
    # the connect gets no answer at all, as behind a firewall.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        fillers = []
        try:
            for _ in range(4):
                filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
                fillers.append(filler)
            result = _doctor.probe_coordinator(f"127.0.0.1:{port}", 0.5)
        finally:
            for filler in fillers:
                filler.close()
    assert result.status == "timeout", result
    assert result.seconds < 20  # bounded: a 0.5 s probe, not a hang
    assert result.detail.startswith("no answer before the timeout")


def test_probe_states_and_their_meaning() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        listening = _doctor.probe_coordinator(f"127.0.0.1:{port}", 2.0)
    assert (listening.status, listening.detail) == (
        "listening",
        "a program accepts connections there",
    )
    refused = _doctor.probe_coordinator(f"127.0.0.1:{port}", 2.0)
    assert (refused.status, refused.detail) == ("refused", "nothing listens there")


def test_the_probe_takes_addresses_as_the_core_parses_them() -> None:
    from kdist import ConfigError, _core

    address = _core.parse_address("[::1]:80")
    assert (address.host, address.port, address.kind, str(address)) == (
        "::1",
        80,
        _core.HostKind.ipv6,
        "[::1]:80",
    )
    address = _core.parse_address("node-1:1234")
    assert (address.host, address.port, address.kind) == ("node-1", 1234, _core.HostKind.host_name)
    with pytest.raises(ConfigError, match="has port 65536, which is out of range"):
        _doctor.probe_coordinator("127.0.0.1:65536", 0.5)


def test_doctor_shows_the_fingerprint_the_roll_call_compares() -> None:
    report = _doctor.collect(probe=False)
    names = [entry.name for entry in report.environment_fingerprint]
    assert names[:2] == ["jax", "jaxlib"] and "XLA_FLAGS" in names
    text = _doctor.render(report)
    assert (
        "environment fingerprint (the roll call compares it across processes; * must match):"
        in text
    )
    assert re.search(r"^  \* jax +\S", text, re.M), text
    as_json = _doctor.json_report(report)
    assert as_json["fingerprint"][0] == {
        "name": "jax",
        "value": report.environment_fingerprint[0].value,
        "must_match": True,
    }


def test_the_collectives_address_and_its_source_are_shown() -> None:
    """What JAX's CPU collectives will advertise, from the route toward the coordinator;
    a user's interface that does not exist is named."""
    env = clean_env(
        2,
        KERAS_DISTRIBUTION_JOB_ADDRESSES="127.0.0.1:1",
        KERAS_DISTRIBUTION_NUM_PROCESSES="2",
        KERAS_DISTRIBUTION_PROCESS_ID="1",
    )
    text = doctor(env=env)
    assert (
        "collectives (JAX's CPU collectives, Gloo): advertise 127.0.0.1 (the address this "
        "host reaches the coordinator 127.0.0.1:1 from)"
    ) in text.stdout, text.stdout
    assert f"this host's name {socket.gethostname()} resolves to " in text.stdout
    code, report = doctor_json(env={**env, "KDIST_COLLECTIVES_INTERFACE": "kdistnone0"})
    assert code == 0
    assert report["collectives"]["address"] is None
    assert report["collectives"]["error"].startswith(
        'KDIST_COLLECTIVES_INTERFACE="kdistnone0" (from the environment): this host has no '
        'network interface "kdistnone0"'
    )


def _with_jax(report: _doctor.Report, version: str) -> _doctor.Report:
    """`report` as it would be with JAX `version` installed (the version mocked)."""
    fingerprint = tuple(
        dataclasses.replace(entry, value=version) if entry.name == "jax" else entry
        for entry in report.environment_fingerprint
    )
    return dataclasses.replace(report, jax_version=version, environment_fingerprint=fingerprint)


OLDEST, NEWEST = _jax_backend.OLDEST_SUPPORTED_JAX, _jax_backend.NEWEST_TESTED_JAX


@pytest.mark.parametrize(
    ("version", "note"),
    [
        (NEWEST, f"tested: {OLDEST} to {NEWEST}"),
        (OLDEST, f"tested: {OLDEST} to {NEWEST}"),
        ("99.0.0", f"newer than the newest tested, {NEWEST}"),
        ("0.4.35", f"older than the oldest supported, {OLDEST}"),
    ],
    ids=["newest-tested", "oldest-tested", "newer", "older"],
)
def test_doctor_says_whether_the_jax_version_is_tested(version: str, note: str) -> None:
    report = _with_jax(_doctor.collect(probe=False), version)
    text = _doctor.render(report)
    assert text.startswith(f"kdist {report.kdist_version}, JAX {version} (not imported; {note})")
    assert re.search(rf"^  \* jax +{re.escape(version)} \({re.escape(note)}\)$", text, re.M), text
    assert re.search(r"^  \* jaxlib +\S+$", text, re.M), text  # only jax's row has the note
    assert _doctor.json_report(report)["jax_tested"] == note


def test_doctor_without_jax_has_no_tested_note() -> None:
    report = _with_jax(_doctor.collect(probe=False), "not installed")
    report = dataclasses.replace(report, jax_version=None)
    text = _doctor.render(report)
    assert text.startswith(f"kdist {report.kdist_version}, JAX not installed (not imported)\n")
    assert re.search(r"^  \* jax +not installed$", text, re.M), text
    assert _doctor.json_report(report)["jax_tested"] is None


def test_doctor_shows_the_tls_of_jax_s_service_and_a_refusal_before_the_start(
    tmp_path: Path,
) -> None:
    """With a token (and JAX 0.12): kdist's certificates, named with the job and attempt, and
    the plan in the fingerprint; a user's certificate file that cannot be read: the refusal
    initialize() would raise, exit status 1."""
    job = {
        "KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234",
        "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
        "KERAS_DISTRIBUTION_PROCESS_ID": "1",
        "KDIST_ROLL_CALL_TOKEN": "the job's token",
        "KDIST_JOB_ID": "t57",
    }
    text = doctor("--no-probe", env=clean_env(1, **job))
    assert text.returncode == 0, text.stderr
    assert re.search(r"^  tls +auto +from default$", text.stdout, re.MULTILINE), text.stdout
    if _jax_backend.mtls_supported()[0]:
        state = "on: kdist's certificates for attempt 0 of job \"t57\""
    else:
        state = "off: JAX "
    assert f"TLS of JAX's coordination service: {state}" in text.stdout
    code, report = doctor_json("--no-probe", env=clean_env(1, **job))
    assert code == 0 and report["tls"]["state"].startswith(state) and report["tls"]["error"] is None
    (entry,) = [e for e in report["fingerprint"] if e["name"] == "tls"]
    assert entry["must_match"] is True and entry["value"].startswith(state)
    assert "the job's token" not in text.stdout
    if not _jax_backend.mtls_supported()[0]:
        return  # JAX ignores jax_mtls_* settings: nothing to refuse
    missing = tmp_path / "missing.pem"
    mtls = {"JAX_MTLS_CERT_FILE": str(missing), "JAX_MTLS_KEY_FILE": str(missing)}
    refused = doctor("--no-probe", env=clean_env(1, **job, **mtls, JAX_MTLS_CA_FILE=str(missing)))
    assert refused.returncode == 1
    assert (
        f'TLS of JAX\'s coordination service: REFUSED: JAX_MTLS_CERT_FILE="{missing}" (from the '
        "environment) cannot be read by this process"
    ) in refused.stdout
