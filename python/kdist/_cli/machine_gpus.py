"""This machine's GPUs, each of its processes its own block: the command line reads the
device nodes (kdist._start.accelerators) and the split is kdist._local_job.gpu_split's;
`kdist launch` decides it once, with or without --nodes, before any process starts."""

from __future__ import annotations

import os

from kdist._local_job.gpu_split import job_gpus, split_gpus

EXIT_USAGE = 2  # as argparse: refused before any process starts


def gpus_per_process(num_processes: int, devices_per_process: int | None) -> tuple[str, ...] | None:
    """Each process's CUDA_VISIBLE_DEVICES on this machine, or None: no GPUs, or the
    processes run on JAX's CPU backend. GpuSplitError when they cannot share them evenly."""
    if devices_per_process is not None:
        return None
    from kdist._start.accelerators import find_accelerators

    gpus = job_gpus(os.environ, find_accelerators()["nvidia_gpus"])
    return None if gpus is None else tuple(split_gpus(gpus, num_processes))
