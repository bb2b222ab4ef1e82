"""The environment of each process of a job on this machine."""

from __future__ import annotations

from collections.abc import Mapping


def child_environment(
    base: Mapping[str, str],
    *,
    process_id: int,
    num_processes: int,
    port: int,
    devices_per_process: int | None,
) -> dict[str, str]:
    """The environment of process `process_id` of a job on this machine.

    Args:
        base: The starting environment (the launcher's own).
        process_id: The process's id in `[0, num_processes)`.
        num_processes: The number of processes.
        port: The coordinator's port on 127.0.0.1.
        devices_per_process: When set, JAX's CPU backend with this many
            devices (JAX_PLATFORMS=cpu, JAX_NUM_CPU_DEVICES).

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
    env["KERAS_DISTRIBUTION_JOB_ADDRESSES"] = f"127.0.0.1:{port}"
    env["KERAS_DISTRIBUTION_NUM_PROCESSES"] = str(num_processes)
    env["KERAS_DISTRIBUTION_PROCESS_ID"] = str(process_id)
    if devices_per_process is not None:
        env["JAX_PLATFORMS"] = "cpu"
        env["JAX_NUM_CPU_DEVICES"] = str(devices_per_process)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
