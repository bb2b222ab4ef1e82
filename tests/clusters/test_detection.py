"""Scheduler detection end to end: fixture environments through kdist's resolution,
and real loopback clusters configured only by torchrun- and Slurm-style variables."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

import pytest

import kdist
from helpers.support import (
    FIXTURES,
    PROGRAMS,
    SCHEDULER_VARIABLES,
    clean_env,
    free_port,
    run_processes,
    run_python,
)
from kdist import _core
from kdist._start import config as _config

SCHEDULERS = FIXTURES / "schedulers"


def load_fixture(name: str) -> dict[str, str]:
    """The NAME=VALUE lines of tests/fixtures/schedulers/<name>.env."""
    env: dict[str, str] = {}
    for line in (SCHEDULERS / f"{name}.env").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep and key, f"{name}.env: not NAME=VALUE: {line!r}"
        env[key] = value
    return env


@pytest.fixture
def use_fixture(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], dict[str, str]]:
    """Clears every variable a detector reads; returns a function that sets a fixture's."""
    for name in SCHEDULER_VARIABLES:
        monkeypatch.delenv(name, raising=False)

    def use(name: str) -> dict[str, str]:
        env = load_fixture(name)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        return env

    return use


# fixture -> (arguments of initialize, what it must resolve to)
RESOLVED: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "slurm_srun": (
        {},
        {
            "scheduler": "slurm",
            "job_addresses": ["gpu-a01:64504"],  # 61440 + 4242424 % 4096, as JAX
            "num_processes": 8,
            "process_id": 5,
            "sources": {
                "job_addresses": "slurm (SLURM_STEP_NODELIST, SLURM_JOB_ID)",
                "num_processes": "slurm (SLURM_STEP_NUM_TASKS)",
                "process_id": "slurm (SLURM_PROCID)",
            },
            "suggested_local_device_ids": [1],
        },
    ),
    "slurm_srun_hostlist": (
        {},
        {
            "scheduler": "slurm",
            "job_addresses": ["node007:65535"],
            "num_processes": 6,
            "process_id": 0,
            "suggested_local_device_ids": None,  # one task per node keeps every device
        },
    ),
    "slurm_requeued": (
        {},
        {
            "scheduler": "slurm",
            "job_addresses": ["localhost:61445"],  # 61440 + 5 % 4096
            "num_processes": 2,
            "process_id": 1,
            "restart_count": 1,
            "sources": {
                "num_processes": "slurm (SLURM_STEP_NUM_TASKS)",
                "process_id": "slurm (SLURM_PROCID)",
                "restart_count": "slurm (SLURM_RESTART_COUNT)",
            },
            "suggested_local_device_ids": [1],
        },
    ),
    "srun_pmi2": (
        {},
        {
            "scheduler": "slurm",
            "job_addresses": ["cn1:62344"],
            "num_processes": 4,
            "process_id": 2,
            "sources": {"process_id": "slurm (SLURM_PROCID)"},
            "suggested_local_device_ids": [0],
        },
    ),
    "srun_torchrun": (
        {},
        {
            "scheduler": "torchrun",
            "job_addresses": ["gpu-b1:29501"],  # MASTER_PORT is torchrun's agent store
            "num_processes": 8,
            "process_id": 6,
            "sources": {
                "job_addresses": (
                    "torchrun (MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE)"
                ),
                "num_processes": "torchrun (WORLD_SIZE)",
                "process_id": "torchrun (RANK)",
            },
            "suggested_local_device_ids": [2],
        },
    ),
    "torchrun": (
        {},
        {
            "scheduler": "torchrun",
            "job_addresses": ["127.0.0.1:44124"],
            "num_processes": 4,
            "process_id": 3,
            "suggested_local_device_ids": [3],
        },
    ),
    "kubeflow_pytorchjob": (
        {},
        {
            "scheduler": "torchrun",
            "job_addresses": ["resnet-master-0:23456"],
            "num_processes": 4,
            "process_id": 2,
            "sources": {"job_addresses": "torchrun (MASTER_ADDR, MASTER_PORT)"},
            "suggested_local_device_ids": None,
        },
    ),
    "openmpi4": (
        {},
        {
            "scheduler": "ompi",
            "job_addresses": ["10.96.0.1:62624"],
            "num_processes": 4,
            "process_id": 3,
            "sources": {
                "job_addresses": "ompi (OMPI_MCA_orte_hnp_uri)",
                "num_processes": "ompi (OMPI_COMM_WORLD_SIZE)",
                "process_id": "ompi (OMPI_COMM_WORLD_RANK)",
            },
            "suggested_local_device_ids": [1],
        },
    ),
    "mpich_hydra": (
        {"job_addresses": "node01:12345"},
        {
            "scheduler": "mpich",
            "num_processes": 4,
            "process_id": 2,
            "sources": {"num_processes": "mpich (PMI_SIZE)", "process_id": "mpich (PMI_RANK)"},
            "suggested_local_device_ids": [0],
        },
    ),
    "intel_mpi": (
        {"job_addresses": "node01:12345"},
        {
            "scheduler": "mpich",
            "num_processes": 2,
            "process_id": 1,
            "suggested_local_device_ids": None,  # CUDA_VISIBLE_DEVICES already binds the rank
            "local_devices_reason": 'CUDA_VISIBLE_DEVICES="1" already limits the devices this '
            "process sees",
        },
    ),
    "openmpi5": (
        {},
        {
            "scheduler": "ompi",
            "job_addresses": ["node01:62353"],  # 61440 + (12345 * 16 + 1) % 4096
            "num_processes": 4,
            "process_id": 1,
            "sources": {
                "job_addresses": "ompi (PMIX_NAMESPACE)",
                "num_processes": "ompi (OMPI_COMM_WORLD_SIZE)",
                "process_id": "ompi (OMPI_COMM_WORLD_RANK)",
            },
        },
    ),
    "kubernetes_jobset_multislice": (
        {},
        {
            "scheduler": "kubernetes",
            "job_addresses": ["js-slice-0-0.js:55527"],
            "num_processes": 4,
            "process_id": 3,  # job 1 x 2 pods per job + completion index 1
            "sources": {
                "job_addresses": "KERAS_DISTRIBUTION_JOB_ADDRESSES",
                "num_processes": "kubernetes (KDIST_K8S_GLOBAL_REPLICAS, "
                "KDIST_K8S_JOB_COMPLETIONS)",
                "process_id": "kubernetes (KDIST_K8S_JOB_GLOBAL_INDEX, "
                "KDIST_K8S_JOB_COMPLETIONS, JOB_COMPLETION_INDEX)",
            },
        },
    ),
    "kubeflow_jax_runtime": (
        {},
        {
            "scheduler": "kubernetes",  # recognised, but JAX's variables leave it nothing to fill
            "job_addresses": ["jax-job-node-0-0.jax-job:6666"],
            "num_processes": 2,
            "process_id": 1,
            "sources": {
                "job_addresses": "JAX_COORDINATOR_ADDRESS",
                "num_processes": "JAX_NUM_PROCESSES",
                "process_id": "JAX_PROCESS_ID",
            },
        },
    ),
    "tf_config": (
        {},
        {
            "scheduler": "tf_config",
            "job_addresses": [
                "trainer-chief-0.trainer:2222",
                "trainer-worker-0.trainer:2222",
                "trainer-worker-1.trainer:2222",
            ],
            "num_processes": 3,
            "process_id": 2,
            "sources": {
                "job_addresses": "tf_config (TF_CONFIG cluster)",
                "num_processes": "tf_config (TF_CONFIG cluster)",
                "process_id": "tf_config (TF_CONFIG task)",
            },
        },
    ),
    "kubernetes_indexed_job": (
        {},
        {
            "scheduler": "kubernetes",
            "job_addresses": ["train-0.train-svc:55527"],
            "num_processes": 4,
            "process_id": 2,
            "sources": {
                "job_addresses": "kubernetes (HOSTNAME, JOB_COMPLETION_INDEX, KDIST_K8S_SUBDOMAIN)",
                "num_processes": "KERAS_DISTRIBUTION_NUM_PROCESSES",
                "process_id": "kubernetes (JOB_COMPLETION_INDEX)",
            },
        },
    ),
    "kubernetes_jobset": (
        {},
        {
            "scheduler": "kubernetes",
            "job_addresses": ["js-workers-0-0.js:55527"],
            "num_processes": 4,
            "process_id": 3,
        },
    ),
}

# fixture -> (arguments of initialize, the ConfigError message must match)
REJECTED: dict[str, tuple[dict[str, Any], str]] = {
    "slurm_salloc_shell": (
        {},
        re.escape(
            'scheduler detection (slurm): SLURM_JOB_ID="4242425" is set but SLURM_STEP_NODELIST, '
            "SLURM_PROCID and SLURM_STEP_NUM_TASKS are not: this process runs inside a Slurm "
            "allocation"
        ),
    ),
    "slurm_sbatch_script": (
        {},
        "SLURM_STEP_NODELIST and SLURM_STEP_NUM_TASKS are not: .*Start every process with srun",
    ),
    "slurm_bad_nodelist": (
        {},
        re.escape("SLURM_STEP_NODELIST=\"gpu-a[01-02\" has an unclosed '[' at byte 5"),
    ),
    "torchrun_partial": (
        {},
        re.escape(
            'scheduler detection (torchrun): WORLD_SIZE="2" and RANK="1" are set but MASTER_ADDR '
            "and MASTER_PORT are not."
        ),
    ),
    "openmpi4_partial": ({}, "OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK are not"),
    "openmpi5_dvm": (
        {},
        re.escape('OMPI_COMM_WORLD_SIZE="4" (detected: ompi) needs the coordinator\'s address')
        + ".*"
        + re.escape("Open MPI 5 (PRRTE) does not publish the address of mpirun's host")
        + ".*"
        + re.escape('PMIX_NAMESPACE="prte-node01-4242@2" is not in mpirun\'s form'),
    ),
    "mpich_hydra": (
        {},
        re.escape("MPICH's and Intel MPI's mpiexec (Hydra) do not publish a coordinator address"),
    ),
    "intel_mpi": ({}, re.escape("mpiexec -genv KERAS_DISTRIBUTION_JOB_ADDRESSES")),
    "tf_config_parameter_server": ({}, re.escape('has cluster.ps: kdist runs the "chief"')),
    "tf_config_malformed": ({}, "is not valid JSON: expected a string key but found"),
    "kubernetes_no_count": (
        {},
        re.escape(
            "Kubernetes does not publish the size of an Indexed Job in the pod's environment; set "
            "KERAS_DISTRIBUTION_NUM_PROCESSES"
        ),
    ),
}


def test_every_fixture_has_an_expectation() -> None:
    files = {path.stem for path in SCHEDULERS.glob("*.env")}
    assert files == set(RESOLVED) | set(REJECTED)


@pytest.mark.parametrize("name", sorted(RESOLVED))
def test_fixture_resolves(name: str, use_fixture: Callable[[str], dict[str, str]]) -> None:
    arguments, expected = RESOLVED[name]
    use_fixture(name)
    spec = _config.resolve(**arguments)
    for key, want in expected.items():
        if key == "sources":
            for setting, source in want.items():
                assert spec.sources[setting] == source, (name, setting)
        else:
            assert getattr(spec, key) == want, (name, key)
    # Local devices are suggested, never applied without KDIST_LOCAL_DEVICE_IDS.
    assert spec.local_device_ids is None
    assert spec.local_devices_suggestion_applied is False
    assert spec.sources["local_device_ids"] == "default"


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_fixture_is_rejected_before_anything_starts(
    name: str, use_fixture: Callable[[str], dict[str, str]], kdist_reset: None
) -> None:
    arguments, message = REJECTED[name]
    use_fixture(name)
    with pytest.raises(kdist.ConfigError, match=message):
        kdist.initialize(**arguments)
    assert not kdist.is_initialized()


def test_explicit_settings_win_over_the_scheduler(
    use_fixture: Callable[[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fixture("slurm_srun")
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "5")  # agrees with SLURM_PROCID
    spec = _config.resolve(job_addresses="10.0.0.9:7000")  # kdist's own coordinator
    assert spec.job_addresses == ["10.0.0.9:7000"]
    assert spec.process_id == 5
    assert spec.sources["job_addresses"] == "argument"
    assert spec.sources["process_id"] == "KERAS_DISTRIBUTION_PROCESS_ID"
    assert spec.sources["num_processes"] == "slurm (SLURM_STEP_NUM_TASKS)"
    # Settings that describe the whole job take nothing from Slurm, so Slurm's other
    # count and id are not compared (a launcher inside a job step: kdist launch).
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "7")
    spec = _config.resolve(job_addresses="127.0.0.1:7000", num_processes=12)
    assert (spec.num_processes, spec.process_id) == (12, 7)
    assert spec.scheduler == "slurm"


CONTRADICTION_ADVICE = (
    "the scheduler that started it, so its processes would never form one job. To use "
    "slurm's values, {remedy}; to describe a job of your own instead, give job_addresses, "
    "num_processes and process_id all explicitly (slurm's are then not used)"
)


def test_a_count_that_contradicts_the_scheduler_is_an_error_naming_both(
    use_fixture: Callable[[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch, kdist_reset: None
) -> None:
    use_fixture("slurm_srun")  # srun of 8 tasks, task 5
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "3")
    message = (
        'KERAS_DISTRIBUTION_NUM_PROCESSES="3" (from the environment) contradicts '
        'SLURM_STEP_NUM_TASKS="8" (detected: slurm): this process takes its other settings '
        "(job_addresses, process_id) from slurm, "
        + CONTRADICTION_ADVICE.format(remedy="unset KERAS_DISTRIBUTION_NUM_PROCESSES")
    )
    with pytest.raises(kdist.ConfigError, match=re.escape(message) + "$"):
        kdist.initialize()
    assert not kdist.is_initialized()
    monkeypatch.delenv("KERAS_DISTRIBUTION_NUM_PROCESSES")
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape('num_processes=16 (argument) contradicts SLURM_STEP_NUM_TASKS="8"')
        + ".*"
        + re.escape("To use slurm's values, do not pass num_processes;"),
    ):
        _config.resolve(num_processes=16)
    # The same count is no contradiction.
    assert _config.resolve(num_processes=8).sources["num_processes"] == "argument"


def test_a_process_id_that_contradicts_the_scheduler_is_an_error_naming_both(
    use_fixture: Callable[[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fixture("slurm_srun")
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "0")  # another task's id
    message = (
        'KERAS_DISTRIBUTION_PROCESS_ID="0" (from the environment) contradicts '
        'SLURM_PROCID="5" (detected: slurm): this process takes its other settings '
        "(job_addresses, num_processes) from slurm, "
        + CONTRADICTION_ADVICE.format(remedy="unset KERAS_DISTRIBUTION_PROCESS_ID")
    )
    with pytest.raises(kdist.ConfigError, match=re.escape(message) + "$"):
        _config.resolve()
    # kdist doctor says the same, and exits 1.
    from kdist._cli import doctor_report as doctor

    report = doctor.collect(probe=False)
    assert not report.ok and report.error == message


def test_other_schedulers_are_held_to_the_same_rule(
    use_fixture: Callable[[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fixture("torchrun")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            'JAX_NUM_PROCESSES="2" (from the environment) contradicts WORLD_SIZE="4" '
            "(detected: torchrun)"
        ),
    ):
        _config.resolve()


def test_the_restart_count_comes_from_kdist_then_the_scheduler_then_zero(
    use_fixture: Callable[[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _config.resolve(num_processes=1)
    assert (spec.restart_count, spec.sources["restart_count"]) == (0, "default")
    use_fixture("slurm_srun")  # a first run: Slurm sets no restart count
    assert _config.resolve().sources["restart_count"] == "default"
    use_fixture("slurm_requeued")
    spec = _config.resolve()
    assert (spec.restart_count, spec.sources["restart_count"]) == (
        1,
        "slurm (SLURM_RESTART_COUNT)",
    )
    monkeypatch.setenv("KDIST_RESTART_COUNT", "4")
    spec = _config.resolve()
    assert (spec.restart_count, spec.sources["restart_count"]) == (4, "KDIST_RESTART_COUNT")
    monkeypatch.setenv("KDIST_RESTART_COUNT", "-1")
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            'KDIST_RESTART_COUNT="-1" (from the environment): expected a non-negative integer '
            "(how many times the job was started again)"
        ),
    ):
        _config.resolve()
    monkeypatch.delenv("KDIST_RESTART_COUNT")
    use_fixture("torchrun")
    for name in ("SLURM_JOB_ID", "SLURM_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "2")
    spec = _config.resolve()
    assert (spec.restart_count, spec.sources["restart_count"]) == (
        2,
        "torchrun (TORCHELASTIC_RESTART_COUNT)",
    )


def test_a_broken_scheduler_environment_does_not_block_an_explicit_job(
    use_fixture: Callable[[str], dict[str, str]],
) -> None:
    use_fixture("slurm_salloc_shell")
    spec = _config.resolve("127.0.0.1:1234", 2, 1)
    assert spec.scheduler is None
    assert _config.resolve(num_processes=1).num_processes == 1


def test_detection_modes(
    use_fixture: Callable[[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fixture("srun_torchrun")
    assert _config.resolve().scheduler == "torchrun"
    spec = _config.resolve(cluster_detection="slurm")
    assert spec.scheduler == "slurm"
    assert spec.num_processes == 2  # the torchrun agents, as Slurm sees them
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            'cluster_detection="ompi" (argument): the ompi detector found none of its variables'
        ),
    ):
        _config.resolve(cluster_detection="ompi")
    monkeypatch.setenv("KDIST_CLUSTER_DETECTION", "none")
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            'scheduler detection is off: KDIST_CLUSTER_DETECTION="none" (from the environment)'
        ),
    ):
        _config.resolve()
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            'expected one of "auto", "none", "torchrun", "ompi", "mpich", "skypilot", "slurm", '
            '"tf_config", "gke_tpu", "gce_tpu", "kubernetes"'
        ),
    ):
        _config.resolve(cluster_detection="pbs")
    assert _core.cluster_detection_modes()[2:] == [d.name for d in _core.cluster_detectors()]


def test_nothing_configured_mentions_detection(
    use_fixture: Callable[[str], dict[str, str]],
) -> None:
    with pytest.raises(
        kdist.ConfigError,
        match='none was found; cluster_detection="auto" '
        r"\(default\) looked for torchrun, ompi, mpich, skypilot, slurm, tf_config, "
        "gke_tpu, gce_tpu, kubernetes",
    ):
        _config.resolve()


def test_local_device_ids_follow_the_setting(
    use_fixture: Callable[[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fixture("slurm_srun")
    spec = _config.resolve()
    assert spec.suggested_local_device_ids == [1]
    assert spec.local_devices_reason == (
        'one device per process, chosen by local rank (SLURM_LOCALID="1" of '
        'SLURM_STEP_TASKS_PER_NODE="4(x2)")'
    )
    monkeypatch.setenv("KDIST_LOCAL_DEVICE_IDS", "auto")
    spec = _config.resolve()
    assert spec.local_device_ids == [1]
    assert spec.local_devices_suggestion_applied is True
    assert spec.sources["local_device_ids"] == "slurm (SLURM_LOCALID)"
    monkeypatch.setenv("KDIST_LOCAL_DEVICE_IDS", "0,2")
    assert _config.resolve().local_device_ids == [0, 2]
    monkeypatch.setenv("KDIST_LOCAL_DEVICE_IDS", "first")
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            'KDIST_LOCAL_DEVICE_IDS="first" (from the environment): has "first", which is not a '
            "device id"
        ),
    ):
        _config.resolve()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.setenv("KDIST_LOCAL_DEVICE_IDS", "auto")
    spec = _config.resolve()
    assert spec.local_device_ids is None
    assert spec.suggested_local_device_ids is None


def test_coordinator_port_override(
    use_fixture: Callable[[str], dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_fixture("slurm_srun")
    monkeypatch.setenv("KDIST_COORDINATOR_PORT", "12345")
    spec = _config.resolve()
    assert spec.job_addresses == ["gpu-a01:12345"]
    assert spec.sources["job_addresses"] == "slurm (SLURM_STEP_NODELIST, KDIST_COORDINATOR_PORT)"
    monkeypatch.setenv("KDIST_COORDINATOR_PORT", "99999")
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            'scheduler detection (slurm): KDIST_COORDINATOR_PORT="99999" is out of range; '
            "expected a port in 1..65535"
        ),
    ):
        _config.resolve()


# ---------------------------------------------------------------- real clusters


def _scheduler_env(style: str, process_id: int, port: int) -> dict[str, str]:
    if style == "torchrun":
        variables = {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "WORLD_SIZE": "2",
            "RANK": str(process_id),
            "LOCAL_RANK": str(process_id),
            "LOCAL_WORLD_SIZE": "2",
        }
    else:
        variables = {
            "SLURM_JOB_ID": "31337",
            "SLURM_STEP_ID": "0",
            "SLURM_STEP_NODELIST": "localhost",
            "SLURM_STEP_NUM_NODES": "1",
            "SLURM_STEP_NUM_TASKS": "2",
            "SLURM_STEP_TASKS_PER_NODE": "2",
            "SLURM_NTASKS": "2",
            "SLURM_PROCID": str(process_id),
            "SLURM_LOCALID": str(process_id),
            "SLURM_NODEID": "0",
            "KDIST_COORDINATOR_PORT": str(port),
        }
    return clean_env(2, KDIST_INIT_TIMEOUT="60", **variables)


@pytest.mark.multiprocess
@pytest.mark.parametrize("style", ["torchrun", "slurm"])
def test_a_real_cluster_configured_by_a_scheduler_alone(style: str) -> None:
    port = free_port()
    commands = [[sys.executable, str(PROGRAMS / "report_cluster.py")]] * 2
    envs = [_scheduler_env(style, i, port) for i in range(2)]
    results = run_processes(commands, envs, timeout=120)
    for result in results:
        assert result.returncode == 0, result.describe()
    reports = [r.report() for r in results]
    assert [r["process_id"] for r in reports] == [0, 1]
    assert reports[0]["devices"] == reports[1]["devices"]
    assert len(reports[0]["devices"]) == 4
    for report in reports:
        assert report["scheduler"] == style
        # torchrun: MASTER_ADDR's value; slurm: the step's node list's (only) host.
        host = "127.0.0.1" if style == "torchrun" else "localhost"
        assert report["coordinator"] == f"{host}:{port}"
        assert report["local_device_ids"] is None
        variable = "RANK" if style == "torchrun" else "SLURM_PROCID"
        assert report["sources"]["process_id"] == f"{style} ({variable})"


def test_process_0_names_the_hosts_of_missing_slurm_tasks() -> None:
    # A 6-task step over three nodes (Slurm's default block distribution): process 0
    # alone arrives, and says on which nodes the missing tasks were to run.
    env = clean_env(
        2,
        KDIST_INIT_TIMEOUT="1",
        SLURM_JOB_ID="31338",
        SLURM_STEP_ID="0",
        SLURM_STEP_NODELIST="localhost,gpu-b[07-08]",
        SLURM_STEP_NUM_NODES="3",
        SLURM_STEP_NUM_TASKS="6",
        SLURM_STEP_TASKS_PER_NODE="2(x3)",
        SLURM_NTASKS="6",
        SLURM_PROCID="0",
        SLURM_LOCALID="0",
        SLURM_NODEID="0",
        KDIST_COORDINATOR_PORT=str(free_port()),
    )
    result = run_python(
        "import kdist\n"
        "try:\n"
        "    kdist.initialize()\n"
        "except kdist.RendezvousTimeoutError as error:\n"
        "    print(error)\n",
        env=env,
    )
    assert result.returncode == 0, result.describe()
    assert "missing process ids [1-5] on hosts gpu-b[07-08],localhost." in result.stdout, (
        result.describe()
    )
