"""Which GPUs each process of a job on this machine gets: the decision, apart from reading
the device nodes (kdist._start.accelerators does that; `kdist launch` and `kdist doctor`
bring the two together).

JAX processes on one host must each see their own GPUs. With G GPUs and N processes, each
process gets G/N of them, process i the i-th block, through CUDA_VISIBLE_DEVICES. The GPUs
are the user's own CUDA_VISIBLE_DEVICES list when it is set, else the NVIDIA device nodes
(/dev/nvidia0, /dev/nvidia1, ...: CUDA ordinals 0..G-1). N that does not divide G is
refused before any process starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


class GpuSplitError(ValueError):
    """N processes cannot share this machine's G GPUs evenly."""


@dataclass(frozen=True)
class Gpus:
    """The GPUs a job on this machine shares, and where that list came from."""

    ids: tuple[str, ...]  # what CUDA_VISIBLE_DEVICES will name: "0", "1" or the user's ids
    source: str  # "CUDA_VISIBLE_DEVICES" or "/dev/nvidia0-3"

    def describe(self) -> str:
        """ "4 GPUs (/dev/nvidia0-3)", "2 GPUs (CUDA_VISIBLE_DEVICES=2,3)"."""
        shown = self.source
        if self.source == CUDA_VISIBLE_DEVICES:
            shown = f"{CUDA_VISIBLE_DEVICES}={','.join(self.ids)}"
        return f"{len(self.ids)} GPU{'s' if len(self.ids) != 1 else ''} ({shown})"


def job_gpus(environ: Mapping[str, str], nvidia_nodes: Sequence[str]) -> Gpus | None:
    """The GPUs a job started from `environ` shares, or None when it uses none.

    Args:
        environ: The launcher's environment.
        nvidia_nodes: This machine's NVIDIA device nodes by number ("nvidia0", ...;
            kdist._start.accelerators.find_accelerators()["nvidia_gpus"]).

    Returns:
        The user's CUDA_VISIBLE_DEVICES list when it is set (empty: None), else one id
        per device node, "0" to "G-1"; None without GPUs, or when JAX_PLATFORMS leaves
        CUDA out (the processes will not use the GPUs).

    Example:
        >>> from kdist._local_job.gpu_split import job_gpus
        >>> job_gpus({}, ["nvidia0", "nvidia1"])
        Gpus(ids=('0', '1'), source='/dev/nvidia0-1')
    """
    platforms = environ.get("JAX_PLATFORMS", "").strip().lower()
    if platforms and not any(p.strip() in ("cuda", "gpu") for p in platforms.split(",")):
        return None
    user = environ.get(CUDA_VISIBLE_DEVICES)
    if user is not None:
        ids = tuple(part.strip() for part in user.split(",") if part.strip())
        return Gpus(ids, CUDA_VISIBLE_DEVICES) if ids else None
    if not nvidia_nodes:
        return None
    count = len(nvidia_nodes)
    source = f"/dev/nvidia0-{count - 1}" if count > 1 else "/dev/nvidia0"
    return Gpus(tuple(str(i) for i in range(count)), source)


def split_gpus(gpus: Gpus, num_processes: int) -> list[str]:
    """Each process's CUDA_VISIBLE_DEVICES: G/N GPUs each, process i the i-th block.

    Args:
        gpus: What `job_gpus` found.
        num_processes: N, the number of processes on this machine.

    Returns:
        N comma-separated lists, by process id.

    Raises:
        GpuSplitError: N does not divide G; the message names both and how to choose.

    Example:
        >>> from kdist._local_job.gpu_split import Gpus, split_gpus
        >>> split_gpus(Gpus(("0", "1", "2", "3"), "/dev/nvidia0-3"), 2)
        ['0,1', '2,3']
    """
    count = len(gpus.ids)
    if num_processes < 1 or count % num_processes != 0:
        choices = ", ".join(str(n) for n in divisors(count))
        raise GpuSplitError(
            f"-n {num_processes} processes cannot share this machine's {gpus.describe()} "
            f"evenly: expected a number of processes that divides {count} ({choices}), so "
            f"that each process gets its own GPUs. Choose -n among {choices}; or set "
            f"CUDA_VISIBLE_DEVICES to a multiple of {num_processes} GPUs; or pass "
            f"--devices-per-process K to run every process on JAX's CPU backend instead"
        )
    each = count // num_processes
    return [",".join(gpus.ids[i * each : (i + 1) * each]) for i in range(num_processes)]


def divisors(count: int) -> list[int]:
    """The numbers of processes that share `count` GPUs evenly.

    Example:
        >>> from kdist._local_job.gpu_split import divisors
        >>> divisors(4)
        [1, 2, 4]
    """
    return [n for n in range(1, count + 1) if count % n == 0]
