"""The environment of each process of a job on this machine."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


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
    where = f"[{host}]" if ":" in host else host
    env["KERAS_DISTRIBUTION_JOB_ADDRESSES"] = f"{where}:{port}"
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
        "KDIST_NODE_RANK",
        "KDIST_NUM_NODES",
        "KDIST_LOCAL_PROCESS_ID",
        "KDIST_JOB_ID",
        "KDIST_VERDICT_FILE",
    }
)


def environments(base: Mapping[str, str], job_variables: Iterable[str]) -> dict[str, str]:
    """`base` without the variables that name a job, so that a job started from inside
    another one (a test under `kdist launch`, an agent under Slurm) is not taken for it.

    Args:
        base: The starting environment (the starter's own).
        job_variables: JAX's and every scheduler detector's variables
            (`kdist._core.jax_job_variables()`).

    Returns:
        A new dict: `base` less KERAS_DISTRIBUTION_*, JAX_COORDINATOR_*, the KDIST_*
        job variables (KDIST_JOB_VARIABLES) and `job_variables`.

    Example:
        >>> from kdist._local_job.environment import environments
        >>> environments({"KERAS_DISTRIBUTION_PROCESS_ID": "1", "KDIST_NODE_RANK": "0",
        ...               "SLURM_PROCID": "3", "HOME": "/root"}, {"SLURM_PROCID"})
        {'HOME': '/root'}
    """
    cleared = set(job_variables) | KDIST_JOB_VARIABLES
    return {
        name: value
        for name, value in base.items()
        if not name.startswith(("KERAS_DISTRIBUTION_", "JAX_COORDINATOR_")) and name not in cleared
    }
