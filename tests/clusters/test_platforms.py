"""Platforms where JAX's own initialize() needs no values: Cloud TPU VMs (the GCE metadata
server), GKE TPU node pools, SkyPilot; and a GPU machine's devices split among `kdist
launch`'s processes.

Machines that do not exist here are made, not mocked: each "worker" of a Cloud TPU gets a
real HTTP metadata server on loopback (tests/helpers/metadata_server.py, reached through
GCE_METADATA_IP as JAX reaches the real one), TPU chips and GPUs are device nodes in a
private mount namespace (tests/helpers/fake_dev.py). No real TPU or GPU runs here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import kdist
from helpers import fake_dev
from helpers.metadata_server import MetadataServer
from helpers.support import PROGRAMS, SCHEDULER_VARIABLES, clean_env, free_port, run_processes
from kdist import _core
from kdist._start import config as _config
from kdist._start.accelerators import tpu_chip_nodes

NO_FAKE_DEV = fake_dev.available()
needs_fake_dev = pytest.mark.skipif(NO_FAKE_DEV is not None, reason=str(NO_FAKE_DEV))


def run_platform_job(
    per_process: Callable[[int], Mapping[str, str]],
    *,
    num_processes: int = 2,
    wrap: Callable[[list[str]], list[str]] = lambda command: command,
    extra: Mapping[str, str] | None = None,
) -> tuple[int, list[dict[str, Any]]]:
    """Runs tests/programs/platform_job.py as `num_processes` processes whose only
    configuration is the platform's (`per_process(i)`), on a free coordinator port given
    through KDIST_COORDINATOR_PORT; returns the port and each process's report."""
    port = free_port()
    commands, envs = [], []
    for i in range(num_processes):
        env = clean_env(2, KDIST_INIT_TIMEOUT="90", KDIST_COORDINATOR_PORT=str(port))
        env.update(extra or {})
        env.update(per_process(i))
        commands.append(wrap([sys.executable, str(PROGRAMS / "platform_job.py")]))
        envs.append(env)
    results = run_processes(commands, envs, timeout=150)
    for result in results:
        assert result.returncode == 0, result.describe()
    return port, [result.report() for result in results]


def check_job(reports: Sequence[dict[str, Any]], scheduler: str, coordinator: str) -> None:
    """Every process formed the same job, found by `scheduler`, and its collective ran."""
    assert [r["process_id"] for r in reports] == list(range(len(reports)))
    for report in reports:
        assert report["scheduler"] == scheduler
        assert report["num_processes"] == len(reports)
        assert report["coordinator"] == coordinator
        assert report["gathered"] == list(range(len(reports)))  # the real collective


def tpu_workers(endpoints: str, count: int = 2, tpu_env: str = "") -> list[MetadataServer]:
    return [
        MetadataServer(
            {
                "agent-worker-number": str(i),
                "worker-network-endpoints": endpoints,
                "tpu-env": tpu_env or "ACCELERATOR_TYPE: 'v4-16'\nTYPE: 'V4'\n",
            }
        )
        for i in range(count)
    ]


def close_all(servers: Sequence[MetadataServer]) -> None:
    for server in servers:
        server.close()


@pytest.mark.multiprocess
def test_a_single_slice_pod_old_format_with_the_detector_named() -> None:
    # This machine has no TPU chips: the named detector asks the metadata server anyway.
    servers = tpu_workers("t1v-n-a-w-0:uid0:127.0.0.1,t1v-n-a-w-1:uid1:127.0.0.1")
    try:
        port, reports = run_platform_job(
            lambda i: {"GCE_METADATA_IP": servers[i].address, "KDIST_CLUSTER_DETECTION": "gce_tpu"}
        )
    finally:
        close_all(servers)
    check_job(reports, "gce_tpu", f"127.0.0.1:{port}")
    for report in reports:
        assert report["sources"]["process_id"] == "gce_tpu (metadata agent-worker-number)"
        assert report["sources"]["num_processes"] == "gce_tpu (metadata worker-network-endpoints)"
        assert report["sources"]["job_addresses"] == (
            "gce_tpu (metadata worker-network-endpoints, KDIST_COORDINATOR_PORT)"
        )
    for server in servers:
        paths = {path for path, _ in server.requests}
        assert "/computeMetadata/v1/instance/attributes/agent-worker-number" in paths
        assert all(flavor == "Google" for _, flavor in server.requests)


@pytest.mark.multiprocess
@needs_fake_dev
def test_a_single_slice_pod_new_format_under_auto_where_tpu_chips_show() -> None:
    # Each process runs in a mount namespace whose /dev holds accel0..3: "auto" asks.
    servers = tpu_workers("localhost,localhost")
    try:
        port, reports = run_platform_job(
            lambda i: {"GCE_METADATA_IP": servers[i].address, **fake_dev.dev_env(accel=4)},
            wrap=fake_dev.in_fake_dev,
        )
    finally:
        close_all(servers)
    check_job(reports, "gce_tpu", f"localhost:{port}")
    assert reports[1]["sources"]["process_id"] == "gce_tpu (metadata agent-worker-number)"


@pytest.mark.multiprocess
def test_multislice_values_from_tpu_env() -> None:
    # Two slices of one worker each: process id = slice id * 1 + 0.
    servers = [
        MetadataServer(
            {
                "agent-worker-number": "0",
                "worker-network-endpoints": f"10.9.{i}.2",  # each slice's own worker
                "tpu-env": "ACCELERATOR_TYPE: 'v5litepod-4'\n"
                "MEGASCALE_COORDINATOR_ADDRESS: '127.0.0.1:8080'\n"
                f"MEGASCALE_NUM_SLICES: '2'\nMEGASCALE_SLICE_ID: '{i}'\n",
            }
        )
        for i in range(2)
    ]
    try:
        port, reports = run_platform_job(
            lambda i: {"GCE_METADATA_IP": servers[i].address, "KDIST_CLUSTER_DETECTION": "gce_tpu"}
        )
    finally:
        close_all(servers)
    check_job(reports, "gce_tpu", f"127.0.0.1:{port}")
    sources = reports[1]["sources"]
    assert sources["process_id"] == (
        "gce_tpu (metadata agent-worker-number, metadata worker-network-endpoints, "
        "metadata tpu-env MEGASCALE_SLICE_ID)"
    )
    assert sources["num_processes"] == (
        "gce_tpu (metadata worker-network-endpoints, metadata tpu-env MEGASCALE_NUM_SLICES)"
    )
    assert sources["job_addresses"] == (
        "gce_tpu (metadata tpu-env MEGASCALE_COORDINATOR_ADDRESS, KDIST_COORDINATOR_PORT)"
    )


@pytest.mark.multiprocess
def test_gke_tpu_variables_under_auto() -> None:
    port, reports = run_platform_job(
        lambda i: {"TPU_WORKER_HOSTNAMES": "localhost,localhost", "TPU_WORKER_ID": str(i)}
    )
    check_job(reports, "gke_tpu", f"localhost:{port}")
    assert reports[0]["sources"]["process_id"] == "gke_tpu (TPU_WORKER_ID)"
    assert reports[0]["sources"]["num_processes"] == "gke_tpu (TPU_WORKER_HOSTNAMES)"


@pytest.mark.multiprocess
def test_skypilot_variables_under_auto() -> None:
    port, reports = run_platform_job(
        lambda i: {
            "SKYPILOT_NODE_IPS": "127.0.0.1\n127.0.0.1\n",
            "SKYPILOT_NODE_RANK": str(i),
            "SKYPILOT_NUM_NODES": "2",
        }
    )
    check_job(reports, "skypilot", f"127.0.0.1:{port}")
    assert reports[1]["sources"]["process_id"] == "skypilot (SKYPILOT_NODE_RANK)"
    assert reports[1]["sources"]["num_processes"] == "skypilot (SKYPILOT_NUM_NODES)"


@pytest.fixture
def no_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SCHEDULER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith(("KERAS_DISTRIBUTION_", "KDIST_")):
            monkeypatch.delenv(name)


@pytest.mark.usefixtures("no_scheduler")
def test_auto_sends_no_request_to_a_metadata_server_off_a_tpu_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if tpu_chip_nodes():
        pytest.skip("this machine has TPU chips: auto asks its metadata server")
    with MetadataServer(
        {"agent-worker-number": "0", "worker-network-endpoints": "localhost"}
    ) as server:
        monkeypatch.setenv("GCE_METADATA_IP", server.address)
        with pytest.raises(kdist.ConfigError, match="found no cluster configuration"):
            _config.resolve()
        _config.resolve(job_addresses="127.0.0.1:1234", num_processes=2, process_id=1)
        reports = _core.detect_all(dict(os.environ), tpu_chip_nodes())
        assert not [r.name for r in reports if r.present]
        doctor = subprocess.run(
            [sys.executable, "-m", "kdist", "doctor", "--json", "--no-probe", "--exit-zero"],
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert doctor.returncode == 0, doctor.stderr
        detectors = {d["name"]: d for d in json.loads(doctor.stdout)["detectors"]}
        assert not detectors["gce_tpu"]["present"]
        assert server.requests == []
        # The same server does answer when the detector is named: the test can fail.
        spec = _config.resolve(cluster_detection="gce_tpu")
        assert spec.scheduler == "gce_tpu"
        assert len(server.requests) == 3  # agent-worker-number, worker-network-endpoints, tpu-env


@pytest.mark.usefixtures("no_scheduler")
def test_a_metadata_server_that_never_answers_is_a_named_config_error_within_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with MetadataServer(silent=True) as server:
        monkeypatch.setenv("GCE_METADATA_IP", server.address)
        monkeypatch.setenv("KDIST_CLUSTER_DETECTION", "gce_tpu")
        started = time.monotonic()
        expected = (
            r"scheduler detection \(gce_tpu\): the GCE metadata server at "
            rf"\"{re.escape(server.address)}\" \(GCE_METADATA_IP\) did not give the instance "
            r"attribute \"agent-worker-number\" in 3 attempts of at most 3 s each \(10 s in "
            r"all\)"
        )
        with pytest.raises(kdist.ConfigError, match=expected):
            kdist.initialize()
        elapsed = time.monotonic() - started
        assert len(server.requests) == 3
    assert elapsed < 40, elapsed  # the bound is 10 s; generous for a loaded machine


# --- the GPU split of kdist launch --------------------------------------------------------

_SHOW = (
    "import os; print('id=' + os.environ['KERAS_DISTRIBUTION_PROCESS_ID'] + ' cuda=' + "
    "os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>'))"
)


def launch_in_fake_dev(
    args: Sequence[str], *, nvidia: int = 4, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in clean_env().items() if k not in ("JAX_PLATFORMS", "JAX_NUM_CPU_DEVICES")
    }
    env.update(fake_dev.dev_env(nvidia=nvidia))
    env.update(extra)
    command = [sys.executable, "-m", "kdist", "launch", *args]
    return subprocess.run(
        fake_dev.in_fake_dev(command), env=env, capture_output=True, text=True, timeout=120
    )


def each_process_sees(result: subprocess.CompletedProcess[str]) -> dict[int, str]:
    assert result.returncode == 0, result.stdout + result.stderr
    seen = re.findall(r"id=(\d+) cuda=(\S+)", result.stdout)
    return {int(i): cuda for i, cuda in seen}


@needs_fake_dev
@pytest.mark.parametrize(("n", "expected"), [(2, ["0,1", "2,3"]), (4, ["0", "1", "2", "3"])])
def test_launch_gives_each_process_its_block_of_the_gpus(n: int, expected: list[str]) -> None:
    result = launch_in_fake_dev(["-n", str(n), "--", sys.executable, "-c", _SHOW])
    assert each_process_sees(result) == dict(enumerate(expected))
    assert "GPUs (CUDA_VISIBLE_DEVICES): process 0: " + expected[0] in result.stderr


@needs_fake_dev
def test_launch_splits_the_users_own_list() -> None:
    result = launch_in_fake_dev(
        ["-n", "2", "--", sys.executable, "-c", _SHOW], CUDA_VISIBLE_DEVICES="3,1,0,2"
    )
    assert each_process_sees(result) == {0: "3,1", 1: "0,2"}


@needs_fake_dev
def test_launch_refuses_n_that_does_not_divide_the_gpus(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    result = launch_in_fake_dev(["-n", "3", "--", "touch", str(marker)])
    assert result.returncode == 2, result.stderr
    assert "refused before starting any process" in result.stderr
    assert "-n 3 processes cannot share this machine's 4 GPUs (/dev/nvidia0-3)" in result.stderr
    assert "Choose -n among 1, 2, 4" in result.stderr
    assert not marker.exists()


@needs_fake_dev
def test_devices_per_process_keeps_its_cpu_meaning() -> None:
    result = launch_in_fake_dev(
        ["-n", "3", "--devices-per-process", "1", "--", sys.executable, "-c", _SHOW]
    )
    assert each_process_sees(result) == {0: "<unset>", 1: "<unset>", 2: "<unset>"}


@needs_fake_dev
def test_doctor_says_which_gpus_each_process_gets() -> None:
    env = {k: v for k, v in clean_env().items() if k != "JAX_PLATFORMS"}
    env.update(fake_dev.dev_env(nvidia=4))
    command = [sys.executable, "-m", "kdist", "doctor", "--json", "--no-probe", "--exit-zero"]
    result = subprocess.run(
        fake_dev.in_fake_dev(command), env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    split = json.loads(result.stdout)["accelerators"]["gpu_split"]
    assert split["source"] == "/dev/nvidia0-3"
    assert split["per_process"]["2"] == ["0,1", "2,3"]
    assert sorted(split["per_process"]) == ["1", "2", "4"]
    text = subprocess.run(
        fake_dev.in_fake_dev(
            [sys.executable, "-m", "kdist", "doctor", "--no-probe", "--exit-zero"]
        ),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "  -n 2: 0: 0,1, 1: 2,3" in text.stdout


# --- kdist against JAX's own cluster classes ---------------------------------------------

# name -> (metadata attributes or None, environment): the same environment for both.
JAX_CASES: dict[str, tuple[dict[str, str] | None, dict[str, str]]] = {
    # Process 1 of test_a_single_slice_pod_old_format_with_the_detector_named.
    "gce_tpu the 2-process job's, old format": (
        {
            "agent-worker-number": "1",
            "worker-network-endpoints": "t1v-n-a-w-0:uid0:127.0.0.1,t1v-n-a-w-1:uid1:127.0.0.1",
            "tpu-env": "ACCELERATOR_TYPE: 'v4-16'\nTYPE: 'V4'\n",
        },
        {"JAX_COORDINATOR_PORT": "45678"},
    ),
    # Process 1 of test_multislice_values_from_tpu_env.
    "gce_tpu the 2-process job's, multislice": (
        {
            "agent-worker-number": "0",
            "worker-network-endpoints": "10.9.1.2",
            "tpu-env": "ACCELERATOR_TYPE: 'v5litepod-4'\n"
            "MEGASCALE_COORDINATOR_ADDRESS: '127.0.0.1:8080'\n"
            "MEGASCALE_NUM_SLICES: '2'\nMEGASCALE_SLICE_ID: '1'\n",
        },
        {},
    ),
    "gce_tpu single slice, new format": (
        {
            "agent-worker-number": "1",
            "worker-network-endpoints": "10.0.0.2,10.0.0.3,10.0.0.4",
            "tpu-env": "ACCELERATOR_TYPE: 'v4-24'\n",
        },
        {},
    ),
    "gce_tpu single slice, old format": (
        {
            "agent-worker-number": "1",
            "worker-network-endpoints": "w-0:uid0:10.0.0.2,w-1:uid1:10.0.0.3",
            "tpu-env": "ACCELERATOR_TYPE: 'v4-16'\n",
        },
        {"JAX_COORDINATOR_PORT": "9876"},
    ),
    "gce_tpu multislice from tpu-env": (
        {
            "agent-worker-number": "1",
            "worker-network-endpoints": "10.0.1.2,10.0.1.3",
            "tpu-env": "MEGASCALE_COORDINATOR_ADDRESS: '10.0.0.2:8080'\n"
            "MEGASCALE_NUM_SLICES: '2'\nMEGASCALE_SLICE_ID: '1'\n",
        },
        {},
    ),
    "gke_tpu multislice JobSet": (
        None,
        {
            "TPU_WORKER_HOSTNAMES": "10.1.0.1,10.1.0.2,10.1.0.3,10.1.0.4",
            "TPU_WORKER_ID": "2",
            "MEGASCALE_COORDINATOR_ADDRESS": "10.1.9.9",
            "MEGASCALE_NUM_SLICES": "2",
            "MEGASCALE_SLICE_ID": "1",
        },
    ),
    "gke_tpu process addresses": (
        None,
        {
            "TPU_PROCESS_ADDRESSES": "10.2.0.1:8476,10.2.0.2:8476",
            "TPU_WORKER_ID": "1",
            "MEGASCALE_COORDINATOR_ADDRESS": "10.2.0.1",
            "MEGASCALE_NUM_SLICES": "1",
            "MEGASCALE_SLICE_ID": "0",
            "JAX_COORDINATOR_PORT": "7777",
        },
    ),
}


def jax_and_kdist(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[int, int, str], tuple[int, int, str]]:
    """(process id, count, coordinator) as JAX's cluster class computes it, and as kdist
    resolves it, in the same environment (and against the same metadata server)."""
    from jax._src.clusters import cloud_tpu_cluster

    attributes, env = JAX_CASES[case]
    detector = "gce_tpu" if attributes is not None else "gke_tpu"
    cluster = (
        cloud_tpu_cluster.GceTpuCluster
        if attributes is not None
        else cloud_tpu_cluster.GkeTpuCluster
    )
    server = MetadataServer(attributes or {})
    try:
        monkeypatch.setenv("GCE_METADATA_IP", server.address)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        theirs = (
            cluster.get_process_id(),
            cluster.get_process_count(),
            cluster.get_coordinator_address(
                timeout_secs=5, override_coordinator_port=os.environ.get("JAX_COORDINATOR_PORT")
            ),
        )
        spec = _config.resolve(cluster_detection=detector)
        ours = (spec.process_id, spec.num_processes, str(spec.coordinator_address))
    finally:
        server.close()
    return theirs, ours


@pytest.mark.usefixtures("no_scheduler")
# JAX's get_tpu_env_value_from_metadata calls re.split(':', line, 1) (Python 3.13 warns).
@pytest.mark.filterwarnings("ignore:'maxsplit' is passed as positional argument:DeprecationWarning")
@pytest.mark.parametrize("case", sorted(JAX_CASES))
def test_kdist_computes_what_jax_cluster_classes_compute(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("requests")  # JAX's GceTpuCluster reads the metadata with it
    theirs, ours = jax_and_kdist(case, monkeypatch)
    print(f"{case}: JAX {theirs}, kdist {ours}")
    assert ours == theirs


# --- kdist doctor on each platform ---------------------------------------------------------


def doctor_on(env: Mapping[str, str]) -> tuple[dict[str, Any], str]:
    """`kdist doctor --json` and its text, in `env` (on top of a clean environment)."""
    full = clean_env(2, **env)
    runs = []
    for extra in (["--json"], []):
        result = subprocess.run(
            [sys.executable, "-m", "kdist", "doctor", "--no-probe", "--exit-zero", *extra],
            env=full,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        runs.append(result.stdout)
    return json.loads(runs[0]), runs[1]


def test_doctor_names_the_platform_and_every_values_source() -> None:
    with MetadataServer(
        {"agent-worker-number": "1", "worker-network-endpoints": "10.0.0.2,10.0.0.3"}
    ) as server:
        report, text = doctor_on(
            {"GCE_METADATA_IP": server.address, "KDIST_CLUSTER_DETECTION": "gce_tpu"}
        )
    assert report["scheduler"] == "gce_tpu"
    assert "scheduler: gce_tpu" in text
    assert "from gce_tpu (metadata agent-worker-number)" in text
    assert "from gce_tpu (metadata worker-network-endpoints)" in text
    report, text = doctor_on({"TPU_WORKER_HOSTNAMES": "h0,h1", "TPU_WORKER_ID": "1"})
    assert report["scheduler"] == "gke_tpu"
    assert "from gke_tpu (TPU_WORKER_ID)" in text
    assert "from gke_tpu (TPU_WORKER_HOSTNAMES)" in text
    report, text = doctor_on(
        {
            "SKYPILOT_NODE_IPS": "10.0.0.5\n10.0.0.6",
            "SKYPILOT_NODE_RANK": "0",
            "SKYPILOT_NUM_NODES": "2",
        }
    )
    assert report["scheduler"] == "skypilot"
    assert "from skypilot (SKYPILOT_NODE_RANK)" in text
    assert report["config"]["coordinator_address"] == "10.0.0.5:8482"
    assert "from skypilot (SKYPILOT_NODE_IPS)" in text


@needs_fake_dev
def test_launch_with_nodes_gives_each_process_of_this_machine_its_block_of_the_gpus(
    tmp_path: Path,
) -> None:
    """kdist launch --nodes: one machine of a job across machines splits its own GPUs among
    its own processes, as without --nodes (a 1-node job on loopback, no token needed)."""
    rendezvous = f"127.0.0.1:{free_port()}"
    show = ["--", sys.executable, "-c", _SHOW]
    result = launch_in_fake_dev(["--nodes", "1", "--rendezvous", rendezvous, "-n", "2", *show])
    assert each_process_sees(result) == {0: "0,1", 1: "2,3"}
    marker = tmp_path / "started"
    refused = launch_in_fake_dev(
        ["--nodes", "1", "--rendezvous", rendezvous, "-n", "3", "--", "touch", str(marker)]
    )
    assert refused.returncode == 2, refused.stderr
    assert "-n 3 processes cannot share this machine's 4 GPUs (/dev/nvidia0-3)" in refused.stderr
    assert not marker.exists()
