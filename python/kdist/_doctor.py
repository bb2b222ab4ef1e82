"""`kdist doctor`: what kdist.initialize() would do in this process, and what is around it.

Nothing here imports JAX unless the devices are asked for (`--devices`): the
configuration comes from the compiled core, the accelerators from device
nodes and environment variables, the coordinator's state from one bounded TCP
connect.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
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

_PROBE_MEANING = {
    "listening": "a program accepts connections there",
    "refused": "nothing listens there",
    "timeout": "no answer before the timeout: a firewall drops the packets, or the host is down",
    "unresolved": "the host name does not resolve here; check it, or use an IP address",
    "unreachable": "the network cannot reach the host",
}


def _numbered(directory: Path, pattern: str) -> list[str]:
    """Names in `directory` matching `pattern` (a regex with one number group), by number."""
    regex = re.compile(pattern)
    try:
        names = [entry.name for entry in directory.iterdir()]
    except OSError:
        return []
    matched = [(int(m.group(1)), name) for name in names if (m := regex.fullmatch(name))]
    return [name for _, name in sorted(matched)]


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
        >>> from kdist._doctor import find_accelerators
        >>> sorted(find_accelerators())[:2]
        ['amd_kfd', 'environment']
    """
    environ = os.environ if environ is None else environ
    nvidia = _numbered(dev_dir, r"nvidia(\d+)")
    accel = _numbered(dev_dir, r"accel(\d+)")
    vfio = _numbered(dev_dir / "vfio", r"(\d+)")
    kfd = (dev_dir / "kfd").exists()
    render = _numbered(dev_dir / "dri", r"renderD(\d+)")
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


def split_address(address: str) -> tuple[str, int]:
    """("host", port) of a "host:port" or "[v6]:port" address as the core writes it."""
    host, _, port = address.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def probe_coordinator(address: str, timeout: float) -> dict[str, Any]:
    """Tries one TCP connection to `address`, for at most `timeout` seconds.

    Args:
        address: "host:port" or "[IPv6]:port".
        timeout: Seconds before giving up (name resolution included only as
            far as the system resolver honours it).

    Returns:
        A dict with "address", "status" ("listening", "refused", "timeout",
        "unresolved" or "unreachable"), "seconds" and "detail".

    Example:
        >>> from kdist._doctor import probe_coordinator
        >>> probe_coordinator("127.0.0.1:1", 1.0)["status"]
        'refused'
    """
    host, port = split_address(address)
    started = time.monotonic()
    detail = ""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            status = "listening"
    except ConnectionRefusedError:
        status = "refused"
    except TimeoutError:
        status = "timeout"
    except socket.gaierror as error:
        status, detail = "unresolved", str(error)
    except OSError as error:  # no route, network down, ...
        status = "unreachable"
        detail = os.strerror(error.errno) if error.errno else str(error)
    return {
        "address": address,
        "status": status,
        "seconds": round(time.monotonic() - started, 6),
        "detail": detail or _PROBE_MEANING[status],
    }


def _probe_advice(status: str, process_id: int | None) -> str:
    coordinator = process_id == 0
    if status == "listening":
        return (
            "if the job is not running yet and this process is the coordinator, another program "
            "holds this port and the coordinator will fail to bind it"
            if coordinator
            else "the coordinator (or another program) is up on this port"
        )
    if status == "refused":
        return (
            "the port is free for the coordinator"
            if coordinator
            else "the coordinator has not started yet (the other processes wait for it), or "
            "the address is wrong"
        )
    return "the other processes will not reach the coordinator until this is fixed"


def _spec_dict(spec: Any) -> dict[str, Any]:
    return {
        "job_addresses": list(spec.job_addresses),
        "coordinator_address": spec.coordinator_address,
        "num_processes": spec.num_processes,
        "process_id": spec.process_id,
        "timeout": spec.timeout,
        "preflight": spec.preflight,
        "cluster_detection": spec.cluster_detection,
        "scheduler": spec.scheduler,
        "local_device_ids": spec.local_device_ids,
        "suggested_local_device_ids": spec.suggested_local_device_ids,
        "local_devices_reason": spec.local_devices_reason,
        "local_devices_suggestion_applied": spec.local_devices_suggestion_applied,
        "coordinator_bind_address": spec.coordinator_bind_address,
        "fingerprint": spec.fingerprint,
        "sources": dict(spec.sources),
    }


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def collect(
    *, with_devices: bool = False, probe: bool = True, probe_timeout: float = 2.0
) -> dict[str, Any]:
    """Gathers everything `kdist doctor` reports, as one JSON-ready dict.

    Args:
        with_devices: Whether to import JAX and list its devices. Defaults to
            False.
        probe: Whether to connect to the coordinator. Defaults to True.
        probe_timeout: Seconds the connection may take. Defaults to 2.

    Returns:
        A dict with "ok", "error", "config", "scheduler", "detectors",
        "accelerators", "probe", "devices", "kdist_version", "jax_version".

    Example:
        >>> from kdist._doctor import collect
        >>> isinstance(collect(probe=False)["ok"], bool)
        True
    """
    from kdist import _config, _core, _jax_backend
    from kdist._errors import ConfigError

    environment = dict(os.environ)
    report: dict[str, Any] = {
        "kdist_version": _version("kdist"),
        "jax_version": _jax_backend.jax_version() if _jax_backend.jax_installed() else None,
        "ok": True,
        "error": None,
        "config": None,
    }
    try:
        spec = _config.resolve()
        report["config"] = _spec_dict(spec)
    except ConfigError as error:
        report["ok"] = False
        report["error"] = str(error)

    detectors = _core.detect_all(environment)
    for entry, info in zip(detectors, _core.cluster_detectors(), strict=True):
        entry["summary"] = info["summary"]
        entry["presence"] = info["presence"]
    report["detectors"] = detectors
    # None when the configuration is invalid: which detector would apply depends on
    # KDIST_CLUSTER_DETECTION, and the detectors list shows which are present.
    report["scheduler"] = None if report["config"] is None else report["config"]["scheduler"]
    report["accelerators"] = find_accelerators(environ=environment)

    report["probe"] = None
    config = report["config"]
    if probe and config is not None and config["coordinator_address"]:
        result = probe_coordinator(config["coordinator_address"], probe_timeout)
        result["advice"] = _probe_advice(result["status"], config["process_id"])
        report["probe"] = result

    report["devices"] = None
    if with_devices:
        from kdist import _jax_backend

        try:
            report["devices"] = _jax_backend.device_report()
        except Exception as error:  # JAX's own failures are reported, not raised
            report["devices"] = {"error": f"{type(error).__name__}: {error}"}
    return report


def _format_ids(ids: list[int] | None) -> str:
    return "all visible devices" if ids is None else "[" + ", ".join(str(i) for i in ids) + "]"


def render(report: Mapping[str, Any]) -> str:
    """The report as text for people.

    Args:
        report: What `collect` returned.

    Returns:
        Several lines of text, ending with a newline.
    """
    jax_version = report["jax_version"] or "not installed"
    jax_state = "imported" if report["devices"] is not None else "not imported"
    lines = [f"kdist {report['kdist_version']}, JAX {jax_version} ({jax_state})", ""]
    config = report["config"]
    if config is None:
        lines.append("configuration: INVALID")
        lines.extend("  " + line for line in str(report["error"]).splitlines())
    else:
        lines.append("configuration: ok")
        sources = config["sources"]
        rows = [
            ("job_addresses", ",".join(config["job_addresses"]) or "(none)"),
            ("num_processes", str(config["num_processes"])),
            ("process_id", str(config["process_id"])),
            ("timeout", f"{config['timeout']:g} s"),
            ("preflight", str(config["preflight"])),
            ("cluster_detection", config["cluster_detection"]),
            ("local_device_ids", _format_ids(config["local_device_ids"])),
        ]
        if config.get("coordinator_bind_address"):
            rows.append(("coordinator_bind_address", str(config["coordinator_bind_address"])))
        width = max(len(str(value)) for _, value in rows)
        for name, value in rows:
            lines.append(f"  {name:<18} {value:<{width}}  from {sources[name]}")
        lines.append(f"  {'fingerprint':<18} {config['fingerprint']}")
    lines.append("")

    lines.append(f"scheduler: {report['scheduler'] or 'none detected'}")
    for entry in report["detectors"]:
        if entry["error"]:
            state = "present, but: " + entry["error"]
        elif entry["present"]:
            values = ", ".join(
                f"{name}={value['value']} ({value['variables']})"
                for name, value in entry["values"].items()
            )
            state = "present: " + (values or "no values")
            for name, hint in entry["hints"].items():
                state += f"; no {name}: {hint}"
        else:
            state = f"not present (looks for {entry['presence']})"
        lines.append(f"  {entry['name']:<11} {state}")
    if config is not None:
        suggested = config["suggested_local_device_ids"]
        hint = (
            " (KDIST_LOCAL_DEVICE_IDS=auto applies the suggestion)"
            if suggested is not None and not config["local_devices_suggestion_applied"]
            else ""
        )
        lines.append(
            f"  local devices: suggested {_format_ids(suggested)} "
            f"({config['local_devices_reason']}); "
            f"using {_format_ids(config['local_device_ids'])}{hint}"
        )
    lines.append("")

    lines.append("accelerators (without importing JAX):")
    lines.extend("  " + line for line in report["accelerators"]["summary"])
    lines.append("")

    probe = report["probe"]
    if probe is not None:
        lines.append(
            f"coordinator {probe['address']}: {probe['status']} after {probe['seconds']:.3f} s "
            f"({probe['detail']})"
        )
        lines.append(f"  {probe['advice']}")
    elif config is not None and not config["coordinator_address"]:
        lines.append("coordinator: none (a single process)")
    else:
        lines.append("coordinator: not probed")

    devices = report["devices"]
    if devices is not None:
        lines.append("")
        if "error" in devices:
            lines.append(f"JAX devices: failed: {devices['error']}")
        else:
            lines.append(
                f"JAX devices (default backend {devices['default_backend']}): "
                + ", ".join(devices["local_devices"])
            )
    return "\n".join(lines) + "\n"


def run(
    *,
    as_json: bool = False,
    with_devices: bool = False,
    probe: bool = True,
    probe_timeout: float = 2.0,
    exit_zero: bool = False,
) -> int:
    """Runs `kdist doctor`: prints the report and returns the exit status.

    Args:
        as_json: Print one JSON object instead of text. Defaults to False.
        with_devices: Import JAX and list its devices. Defaults to False.
        probe: Connect to the coordinator. Defaults to True.
        probe_timeout: Seconds the connection may take. Defaults to 2.
        exit_zero: Return 0 even for an invalid configuration (under a launcher
            that stops every rank when one exits non-zero). Defaults to False.

    Returns:
        0 when the configuration is valid (or `exit_zero`), 1 when it is not.

    Example:
        >>> from kdist import _doctor
        >>> _doctor.run(as_json=True, probe=False) in (0, 1)  # doctest: +SKIP
        True
    """
    report = collect(with_devices=with_devices, probe=probe, probe_timeout=probe_timeout)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        sys.stdout.write(render(report))
    sys.stdout.flush()
    return 0 if report["ok"] or exit_zero else 1
