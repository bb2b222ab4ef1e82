"""This machine's accelerators, found from device nodes and variables without importing JAX.

`kdist doctor` shows them; the environment fingerprint (`environment_fingerprint.py`) counts the
devices a process will use from them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Variables that choose or limit the devices a process sees.
_DEVICE_VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "TPU_VISIBLE_CHIPS",
    "TPU_PROCESS_BOUNDS",
    "TPU_CHIPS_PER_PROCESS_BOUNDS",
    "JAX_PLATFORMS",
    "JAX_NUM_CPU_DEVICES",
    "XLA_FLAGS",
)


def _listing(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _numbered(names: list[str], prefix: str) -> list[str]:
    """The names that are `prefix` followed by a number ("nvidia0"), by number."""
    matched = [
        (int(number), name)
        for name in names
        if name.startswith(prefix)
        and (number := name[len(prefix) :]).isascii()
        and number.isdigit()
    ]
    return [name for _, name in sorted(matched)]


def tpu_chip_nodes(dev_dir: Path = Path("/dev")) -> list[str]:
    """This machine's TPU chips, from device nodes alone: two directory listings, no JAX.

    Args:
        dev_dir: Where device nodes live. Defaults to `/dev`.

    Returns:
        The chips' node names under `dev_dir`: "accel0", ... (TPU v4 and v5e), else
        "vfio/0", ... (TPU VMs that use VFIO); empty off a TPU machine.

    Example:
        >>> from pathlib import Path
        >>> from kdist._start.accelerators import tpu_chip_nodes
        >>> tpu_chip_nodes(Path("/nonexistent"))
        []
    """
    # Every start asks this: off a TPU machine it costs two stat calls, not a listing of
    # /dev (about 0.1 ms). A TPU VM's chips are numbered from 0.
    root = str(dev_dir)
    if os.path.exists(os.path.join(root, "accel0")):
        return _numbered(_listing(dev_dir), "accel")
    if not os.path.isdir(os.path.join(root, "vfio")):
        return []
    return [f"vfio/{n}" for n in _numbered(_listing(dev_dir / "vfio"), "")]


def find_accelerators(
    dev_dir: Path = Path("/dev"), environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Finds this machine's accelerators from device nodes and variables, without JAX.

    Args:
        dev_dir: Where device nodes live. Defaults to `/dev`.
        environ: The environment to read. Defaults to None: `os.environ`.

    Returns:
        A dict: "nvidia_gpus" (names of /dev/nvidiaN), "tpu_chips" (/dev/accelN,
        or /dev/vfio/N on TPU VMs that use VFIO), "amd_kfd" (whether /dev/kfd
        exists: ROCm GPUs), "render_nodes" (/dev/dri/renderDN), "environment"
        (the device-selecting variables that are set) and "summary" (lines
        for people).

    Example:
        >>> from kdist._start.accelerators import find_accelerators
        >>> sorted(find_accelerators())[:2]
        ['amd_kfd', 'environment']
    """
    environ = os.environ if environ is None else environ
    devices = _listing(dev_dir)
    nvidia = _numbered(devices, "nvidia")
    accel = _numbered(devices, "accel")
    vfio = _numbered(_listing(dev_dir / "vfio"), "")
    kfd = "kfd" in devices
    render = _numbered(_listing(dev_dir / "dri"), "renderD")
    variables = {name: environ[name] for name in _DEVICE_VARIABLES if name in environ}

    summary = []
    if nvidia:
        summary.append(f"NVIDIA GPUs: {len(nvidia)} ({', '.join('/dev/' + n for n in nvidia)})")
    if accel:
        summary.append(f"TPU chips: {len(accel)} ({', '.join('/dev/' + n for n in accel)})")
    elif vfio:
        summary.append(
            f"VFIO devices (TPU VMs): {len(vfio)} (/dev/vfio/{', /dev/vfio/'.join(vfio)})"
        )
    if kfd:
        summary.append(f"AMD ROCm: /dev/kfd, {len(render)} render node(s) in /dev/dri")
    if not summary:
        summary.append("no accelerator device nodes: JAX will use the CPU")
    summary.extend(f"{name}={value}" for name, value in variables.items())
    return {
        "nvidia_gpus": nvidia,
        "tpu_chips": accel or [f"vfio/{n}" for n in vfio],
        "amd_kfd": kfd,
        "render_nodes": render,
        "environment": variables,
        "summary": summary,
    }
