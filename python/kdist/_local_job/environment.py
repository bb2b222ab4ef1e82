"""The environment of each process of a job on this machine.

A job kdist starts (`kdist launch`, `kdist.testing.run_job`, the per-machine agent) gives
its processes its own job variables; whatever names another job in the starter's own
environment (a Slurm step's, mpirun's, torchrun's, JAX's, an outer kdist job's) is cleared
first, in one place: `environments()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def host_port(host: str, port: int) -> str:
    """HOST:PORT as addresses are written, an IPv6 host in brackets.

    Example:
        >>> from kdist._local_job.environment import host_port
        >>> host_port("10.0.0.1", 80), host_port("::1", 80)
        ('10.0.0.1:80', '[::1]:80')
    """
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def child_environment(
    base: Mapping[str, str],
    *,
    process_id: int,
    num_processes: int,
    port: int,
    devices_per_process: int | None,
    host: str = "127.0.0.1",
) -> dict[str, str]:
    """The environment of process `process_id` of a job on this machine.

    Args:
        base: The starting environment (the launcher's own).
        process_id: The process's id in `[0, num_processes)`.
        num_processes: The number of processes.
        port: The coordinator's port.
        devices_per_process: When set, JAX's CPU backend with this many
            devices (JAX_PLATFORMS=cpu, JAX_NUM_CPU_DEVICES).
        host: The coordinator's IP. Defaults to 127.0.0.1 (one machine).

    Returns:
        A new dict: `base` with the KERAS_DISTRIBUTION_* variables set, and
        PYTHONUNBUFFERED=1 unless `base` sets it (so lines arrive as written).

    Example:
        >>> from kdist._local_job.environment import child_environment
        >>> env = child_environment({}, process_id=1, num_processes=2, port=1234,
        ...                         devices_per_process=None)
        >>> env["KERAS_DISTRIBUTION_JOB_ADDRESSES"], env["KERAS_DISTRIBUTION_PROCESS_ID"]
        ('127.0.0.1:1234', '1')
    """
    env = dict(base)
    env["KERAS_DISTRIBUTION_JOB_ADDRESSES"] = host_port(host, port)
    env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = str(num_processes)
    env["KERAS_DISTRIBUTION_PROCESS_ID"] = str(process_id)
    if devices_per_process is not None:
        env["JAX_PLATFORMS"] = "cpu"
        env["JAX_NUM_CPU_DEVICES"] = str(devices_per_process)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


# The kdist variables that belong to one job (set by its starter), never inherited by another.
KDIST_JOB_VARIABLES = frozenset(
    {
        "KDIST_RESTART_COUNT",
        "KDIST_PREVIOUS_NUM_PROCESSES",
        "KDIST_NODE_RANK",
        "KDIST_NUM_NODES",
        "KDIST_LOCAL_PROCESS_ID",
        "KDIST_JOB_ID",
        "KDIST_VERDICT_FILE",
        "KDIST_RUN_ID",
    }
)


# Variables a detector reads that name no job: the machine's own, kept.
_NOT_JOB_VARIABLES = frozenset({"HOSTNAME"})


def job_variables() -> frozenset[str]:
    """The variables that name a job besides KERAS_DISTRIBUTION_*: JAX's job variables and
    every scheduler detector's (the core's lists), the machine's own name aside.

    Example:
        >>> from kdist._local_job.environment import job_variables
        >>> {"SLURM_PROCID", "JAX_PROCESS_ID", "OMPI_COMM_WORLD_RANK"} <= job_variables()
        True
        >>> "HOSTNAME" in job_variables()
        False
    """
    from kdist import _core

    names = {name for detector in _core.cluster_detectors() for name in detector.variables}
    names.update(_core.jax_job_variables())
    return frozenset(names - _NOT_JOB_VARIABLES)


def names_a_job(name: str, job_variable_names: Iterable[str]) -> bool:
    """Whether the variable `name` says which job a process belongs to (so a process of a
    job kdist starts must not inherit it): KERAS_DISTRIBUTION_*, JAX_COORDINATOR_*, the
    kdist variables a starter sets per job (KDIST_JOB_VARIABLES), or one of
    `job_variable_names` (job_variables())."""
    return (
        name.startswith(("KERAS_DISTRIBUTION_", "JAX_COORDINATOR_"))
        or name in KDIST_JOB_VARIABLES
        or name in job_variable_names
    )


def without_job_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without the variables that name a job (names_a_job).

    Example:
        >>> from kdist._local_job.environment import without_job_variables
        >>> without_job_variables({"SLURM_PROCID": "3", "PATH": "/bin",
        ...                        "KERAS_DISTRIBUTION_PROCESS_ID": "3"})
        {'PATH': '/bin'}
    """
    names = job_variables()
    return {name: value for name, value in environ.items() if not names_a_job(name, names)}


def environments(
    base: Mapping[str, str],
    *,
    num_processes: int,
    port: int,
    devices_per_process: int | None,
) -> list[dict[str, str]]:
    """Every process's environment of a job of `num_processes` on this machine: `base`
    without the variables that name another job (without_job_variables), then each
    process's own (child_environment).

    Example:
        >>> from kdist._local_job.environment import environments
        >>> envs = environments({"SLURM_PROCID": "5"}, num_processes=2, port=1234,
        ...                     devices_per_process=None)
        >>> [e["KERAS_DISTRIBUTION_PROCESS_ID"] for e in envs], "SLURM_PROCID" in envs[1]
        (['0', '1'], False)
    """
    inherited = without_job_variables(base)
    return [
        child_environment(
            inherited,
            process_id=i,
            num_processes=num_processes,
            port=port,
            devices_per_process=devices_per_process,
        )
        for i in range(num_processes)
    ]
