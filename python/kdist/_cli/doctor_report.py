"""`kdist doctor`'s report: what kdist.initialize() would do in this process, and what is
around it (the command line: doctor.py).

Nothing here imports JAX unless the devices are asked for (`--devices`): the
configuration comes from the compiled core, the accelerators from device
nodes and environment variables, the coordinator's state from one bounded TCP
connect.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from kdist import _core
from kdist._local_job.gpu_split import divisors, job_gpus, split_gpus
from kdist._local_job.warm import machine_report
from kdist._start import collectives, environment_fingerprint, tls
from kdist._start.accelerators import find_accelerators, tpu_chip_nodes
from kdist._start.environment_fingerprint import Entry as EnvironmentEntry

_PROBE_MEANING = {
    "listening": "a program accepts connections there",
    "refused": "nothing listens there",
    "timeout": "no answer before the timeout: a firewall drops the packets, or the host is down",
    "unresolved": "the host name does not resolve here; check it, or use an IP address",
    "unreachable": "the network cannot reach the host",
}


def _probe_advice(status: str, process_id: int) -> str:
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


@dataclass(frozen=True)
class Probe:
    """One TCP connect to the coordinator's address, and what it means."""

    address: str
    result: _core.ProbeResult

    @property
    def status(self) -> str:
        """One of "listening", "refused", "timeout", "unresolved" or "unreachable"."""
        return self.result.state.name

    @property
    def seconds(self) -> float:
        return round(self.result.seconds, 6)

    @property
    def detail(self) -> str:
        return self.result.detail or _PROBE_MEANING[self.status]


def probe_coordinator(address: str, timeout: float) -> Probe:
    """Tries one TCP connection to `address`, for at most `timeout` seconds (in the core).

    Args:
        address: "host:port" or "[IPv6]:port"; a host name is resolved.
        timeout: Seconds before giving up, name resolution included.

    Returns:
        The probe: its `status` ("listening", "refused", "timeout",
        "unresolved" or "unreachable"), `seconds` and `detail`.

    Raises:
        kdist.ConfigError: `address` is not a valid address.

    Example:
        >>> from kdist._cli.doctor_report import probe_coordinator
        >>> probe_coordinator("127.0.0.1:1", 1.0).status
        'refused'
    """
    return Probe(address, _core.probe_tcp(address, timeout))


@dataclass(frozen=True)
class Collectives:
    """The address this process's CPU collectives advertise, or why it has none."""

    chosen: collectives.CollectivesAddress | None
    error: str | None
    host_name: str
    host_name_addresses: list[str]

    def lines(self) -> list[str]:
        """What `render` prints of it."""
        if self.error is not None:
            return [f"collectives (JAX's CPU collectives, Gloo): cannot be chosen: {self.error}"]
        if self.chosen is None:
            return ["collectives (JAX's CPU collectives, Gloo): none (a single process)"]
        resolved = ", ".join(self.host_name_addresses) or "nothing"
        own = f"this host's name {self.host_name} resolves to {resolved}"
        if self.host_name_addresses and all(
            _core.is_loopback_address(a) for a in self.host_name_addresses
        ):
            own += " (loopback), which Gloo would advertise by itself"
        return [
            f"collectives (JAX's CPU collectives, Gloo): advertise {self.chosen.describe()}",
            f"  {own}",
        ]


def find_collectives(spec: _core.ClusterSpec, timeout: float) -> Collectives:
    """What `kdist.initialize()` would hand JAX's CPU collectives in this process (before
    the roll call, the route toward the configured coordinator address)."""
    from kdist._errors import KdistError

    name, addresses = collectives.host_name_addresses()
    toward = spec.coordinator_address or ""
    try:
        chosen = collectives.choose(spec, toward, timeout)
    except KdistError as failure:
        return Collectives(None, str(failure), name, addresses)
    return Collectives(chosen, None, name, addresses)


@dataclass(frozen=True)
class Report:
    """Everything `kdist doctor` reports; `json_report` turns it into one JSON-ready dict."""

    kdist_version: str | None
    jax_version: str | None
    spec: _core.ClusterSpec | None  # None: the configuration is invalid (see `error`)
    error: str | None
    detectors: list[_core.DetectorReport]
    accelerators: dict[str, Any]
    # This process's environment fingerprint, as the roll call compares it: diff it
    # across hosts (run doctor under the launcher) when processes cannot work together.
    environment_fingerprint: tuple[EnvironmentEntry, ...]
    probe: Probe | None
    # What JAX's CPU collectives will advertise (looked up with the probe): the choice,
    # or why there is none; and what this host's name resolves to (Gloo's own choice).
    collectives: Collectives | None
    devices: dict[str, object] | None  # None: JAX was not asked
    # Warm starts on this machine: each running launcher's spares and whether its next
    # attempt starts warm; what a launcher started here would preload.
    warm: dict[str, Any] | None = None
    # What the start would do about TLS for JAX's coordination service
    # (kdist._start.tls.Plan.describe()), or why it would refuse to start (`tls_error`);
    # both None without a coordinator.
    tls_state: str | None = None
    tls_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.spec is not None and self.tls_error is None

    @property
    def scheduler(self) -> str | None:
        # None when the configuration is invalid: which detector would apply depends on
        # KDIST_CLUSTER_DETECTION, and the detectors list shows which are present.
        return None if self.spec is None else self.spec.scheduler


def collect(
    *, with_devices: bool = False, probe: bool = True, probe_timeout: float = 2.0
) -> Report:
    """Gathers everything `kdist doctor` reports.

    Args:
        with_devices: Whether to import JAX and list its devices. Defaults to
            False.
        probe: Whether to connect to the coordinator. Defaults to True.
        probe_timeout: Seconds the connection may take. Defaults to 2.

    Returns:
        The report (`json_report` makes it a JSON-ready dict, `render` text).

    Example:
        >>> from kdist._cli.doctor_report import collect
        >>> isinstance(collect(probe=False).ok, bool)
        True
    """
    from kdist import _jax_backend
    from kdist._errors import ConfigError
    from kdist._start import config

    environment = dict(os.environ)
    spec: _core.ClusterSpec | None = None
    error: str | None = None
    try:
        spec = config.resolve()
    except ConfigError as failure:
        error = str(failure)

    tls_plan: tls.Plan | None = None
    tls_error: str | None = None
    if spec is not None and spec.coordinator_address:
        try:
            tls_plan = tls.decide(spec, say=False)
        except ConfigError as failure:
            tls_error = str(failure)

    probed = None
    found = None
    if probe and spec is not None and spec.coordinator_address:
        probed = probe_coordinator(spec.coordinator_address, probe_timeout)
        found = find_collectives(spec, probe_timeout)

    devices: dict[str, object] | None = None
    if with_devices:
        try:
            devices = _jax_backend.device_report()
        except Exception as failure:  # JAX's own failures are reported, not raised
            devices = {"error": f"{type(failure).__name__}: {failure}"}
    return Report(
        kdist_version=environment_fingerprint.installed_version("kdist"),
        jax_version=_jax_backend.jax_version() if _jax_backend.jax_installed() else None,
        spec=spec,
        error=error,
        detectors=_core.detect_all(environment, tpu_chip_nodes()),
        accelerators=_with_gpu_split(find_accelerators(environ=environment), environment),
        # The script and arguments entries would describe kdist doctor itself.
        environment_fingerprint=tuple(
            entry
            for entry in environment_fingerprint.collect(
                environment,
                local_device_ids=spec.local_device_ids if spec else None,
                tls=tls_plan.fingerprint_value() if tls_plan else None,
            )
            if entry.name not in environment_fingerprint.PROGRAM_ENTRIES
        ),
        probe=probed,
        collectives=found,
        devices=devices,
        warm=machine_report(environment),
        tls_state=tls_plan.describe() if tls_plan else None,
        tls_error=tls_error,
    )


def _with_gpu_split(accelerators: dict[str, Any], environment: dict[str, str]) -> dict[str, Any]:
    """The accelerators, with "gpu_split": what `kdist launch -n N` gives each process
    (kdist._local_job.gpu_split) for every N that divides the GPUs, or None without GPUs."""
    gpus = job_gpus(environment, accelerators["nvidia_gpus"])
    if gpus is None:
        return {**accelerators, "gpu_split": None}
    per_process = {str(n): split_gpus(gpus, n) for n in divisors(len(gpus.ids))}
    split = {"gpus": list(gpus.ids), "source": gpus.source, "per_process": per_process}
    lines = [
        f"kdist launch -n N gives process i the i-th block of the {gpus.describe()} "
        "(CUDA_VISIBLE_DEVICES):"
    ]
    for n, blocks in per_process.items():
        shown = ", ".join(f"{i}: {ids}" for i, ids in enumerate(blocks))
        lines.append(f"  -n {n}: {shown}")
    lines.append(f"  other N are refused (they do not divide {len(gpus.ids)})")
    return {**accelerators, "gpu_split": split, "summary": accelerators["summary"] + lines}


def json_report(report: Report) -> dict[str, Any]:
    """The report as one JSON-ready dict: what `kdist doctor --json` prints.

    Args:
        report: What `collect` returned.

    Returns:
        A dict with "kdist_version", "jax_version", "jax_tested" (where that version
        stands against those the suite runs), "ok", "error", "config",
        "detectors", "scheduler", "accelerators", "probe", "collectives", "tls" (the
        TLS state of JAX's coordination service, or why the start would refuse; None
        without a coordinator), "devices" and "warm" (kdist._local_job.warm.machine_report).

    Example:
        >>> from kdist._cli.doctor_report import collect, json_report
        >>> sorted(json_report(collect(probe=False)))[:3]
        ['accelerators', 'collectives', 'config']
    """
    spec = report.spec
    config = (
        None
        if spec is None
        else {
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
            "collectives_address": spec.collectives_address,
            "collectives_interface": spec.collectives_interface,
            "heartbeat_timeout": spec.heartbeat_timeout,
            "shutdown_timeout": spec.shutdown_timeout,
            "unreachable_timeout": spec.unreachable_timeout,
            "on_peer_failure": spec.on_peer_failure,
            "consistency": spec.consistency,
            "stop_signals": list(spec.stop_signals),
            "stall_timeout": spec.stall_timeout,
            "tls": spec.tls,
            "restart_count": spec.restart_count,
            "node_rank": spec.node_rank,
            "num_nodes": spec.num_nodes,
            "local_process_id": spec.local_process_id,
            "job_id": spec.job_id,
            "max_reforms": spec.max_reforms,
            "reform_window": spec.reform_window,
            "fingerprint": spec.fingerprint,
            "sources": dict(spec.sources),
        }
    )
    detectors = []
    for entry in report.detectors:
        detection = entry.detection
        detectors.append(
            {
                "name": entry.name,
                "present": entry.present,
                "error": entry.error,
                "values": {
                    name: {"value": v.text, "variables": v.variables, "shown": v.shown}
                    for name, v in (detection.values if detection else [])
                },
                "hints": dict(detection.hints) if detection else {},
                "summary": entry.detector.summary,
                "presence": entry.detector.presence,
            }
        )
    probe = report.probe
    return {
        "kdist_version": report.kdist_version,
        "jax_version": report.jax_version,
        "jax_tested": _jax_tested(report.jax_version),
        "ok": report.ok,
        "error": report.error,
        "config": config,
        "detectors": detectors,
        "scheduler": report.scheduler,
        "accelerators": report.accelerators,
        "fingerprint": [
            {"name": e.name, "value": e.value, "must_match": e.must_match}
            for e in report.environment_fingerprint
        ],
        "probe": None
        if probe is None or spec is None
        else {
            "address": probe.address,
            "status": probe.status,
            "seconds": probe.seconds,
            "detail": probe.detail,
            "advice": _probe_advice(probe.status, spec.process_id),
        },
        "collectives": _collectives_json(report.collectives),
        "tls": None
        if report.tls_state is None and report.tls_error is None
        else {"state": report.tls_state, "error": report.tls_error},
        "devices": report.devices,
        "warm": report.warm,
    }


def _collectives_json(found: Collectives | None) -> dict[str, Any] | None:
    if found is None:
        return None
    chosen = found.chosen
    return {
        "address": chosen.address if chosen else None,
        "interface": chosen.interface if chosen else None,
        "source": chosen.source if chosen else None,
        "error": found.error,
        "host_name": found.host_name,
        "host_name_addresses": found.host_name_addresses,
    }


def _jax_tested(version: str | None) -> str | None:
    """Where the installed JAX stands against the versions the suite runs; None without JAX."""
    from kdist import _jax_backend

    return None if version is None else _jax_backend.tested_range(version)


def _node_place_rows(spec: _core.ClusterSpec) -> list[tuple[str, str]]:
    """Where this process sits among the machines of a `kdist launch --nodes` job: a row
    for each value the agent set (cluster_spec().sources has those only)."""
    values = {
        "node_rank": spec.node_rank,
        "num_nodes": spec.num_nodes,
        "local_process_id": spec.local_process_id,
        "job_id": spec.job_id,
        "max_reforms": spec.max_reforms,
        "reform_window": f"{spec.reform_window:g} s",
    }
    return [(name, str(value)) for name, value in values.items() if name in spec.sources]


def _mtls_rows(spec: _core.ClusterSpec) -> list[tuple[str, str]]:
    """The user's own mTLS settings in JAX's variables: a row for each one set."""
    values = {
        "mtls_cert_file": spec.mtls_cert_file,
        "mtls_key_file": spec.mtls_key_file,
        "mtls_ca_file": spec.mtls_ca_file,
        "mtls_peer_uri_prefix": spec.mtls_peer_uri_prefix,
    }
    return [(name, value) for name, value in values.items() if value is not None]


def _tls_line(report: Report, spec: _core.ClusterSpec) -> str:
    """What the start would do about TLS for JAX's coordination service."""
    if report.tls_error is not None:
        return f"TLS of JAX's coordination service: REFUSED: {report.tls_error}"
    if report.tls_state is None or not spec.coordinator_address:
        return "TLS of JAX's coordination service: none (a single process: no service)"
    return f"TLS of JAX's coordination service: {report.tls_state}"


def _format_ids(ids: list[int] | None) -> str:
    return "all visible devices" if ids is None else "[" + ", ".join(str(i) for i in ids) + "]"


def render(report: Report) -> str:
    """The report as text for people.

    Args:
        report: What `collect` returned.

    Returns:
        Several lines of text, ending with a newline.
    """
    jax_version = report.jax_version or "not installed"
    jax_state = "imported" if report.devices is not None else "not imported"
    jax_tested = _jax_tested(report.jax_version)
    if jax_tested is not None:
        jax_state += f"; {jax_tested}"
    lines = [f"kdist {report.kdist_version}, JAX {jax_version} ({jax_state})", ""]
    spec = report.spec
    if spec is None:
        lines.append("configuration: INVALID")
        lines.extend("  " + line for line in str(report.error).splitlines())
    else:
        lines.append("configuration: ok")
        sources = spec.sources
        rows = [
            ("job_addresses", ",".join(spec.job_addresses) or "(none)"),
            ("num_processes", str(spec.num_processes)),
            ("process_id", str(spec.process_id)),
            ("timeout", f"{spec.timeout:g} s"),
            ("preflight", str(spec.preflight)),
            ("cluster_detection", spec.cluster_detection),
            ("local_device_ids", _format_ids(spec.local_device_ids)),
            ("coordinator_bind_address", spec.coordinator_bind_address or "(every interface)"),
            (
                "collectives_address",
                spec.collectives_address or "(the address this host reaches the coordinator from)",
            ),
            ("collectives_interface", spec.collectives_interface or "(none)"),
            ("heartbeat_timeout", f"{spec.heartbeat_timeout} s"),
            ("shutdown_timeout", f"{spec.shutdown_timeout} s"),
            ("unreachable_timeout", f"{spec.unreachable_timeout:g} s"),
            ("on_peer_failure", spec.on_peer_failure),
            ("consistency", spec.consistency),
            ("stop_signals", ",".join(spec.stop_signals) or "none"),
            ("stall_timeout", "off" if spec.stall_timeout is None else f"{spec.stall_timeout:g} s"),
            ("tls", spec.tls),
            *_mtls_rows(spec),
            ("restart_count", str(spec.restart_count)),
            *_node_place_rows(spec),
        ]
        names = max(len(name) for name, _ in rows)
        width = max(len(value) for _, value in rows)
        for name, value in rows:
            lines.append(f"  {name:<{names}} {value:<{width}}  from {sources.get(name, 'default')}")
        # The digest of the settings every process must share (not the environment
        # fingerprint below).
        lines.append(f"  {'config digest':<{names}} {spec.fingerprint}")
        lines.append("")
        lines.append(_tls_line(report, spec))
    lines.append("")

    lines.append(f"scheduler: {report.scheduler or 'none detected'}")
    for entry in report.detectors:
        detection = entry.detection
        if entry.error:
            state = "present, but: " + entry.error
        elif detection is not None:
            values = ", ".join(
                f"{name}={value.text} ({value.variables})" for name, value in detection.values
            )
            state = "present: " + (values or "no values")
            for name, hint in detection.hints:
                state += f"; no {name}: {hint}"
        else:
            state = f"not present (looks for {entry.detector.presence})"
        lines.append(f"  {entry.name:<11} {state}")
    if spec is not None:
        suggested = spec.suggested_local_device_ids
        hint = (
            " (KDIST_LOCAL_DEVICE_IDS=auto applies the suggestion)"
            if suggested is not None and not spec.local_devices_suggestion_applied
            else ""
        )
        lines.append(
            f"  local devices: suggested {_format_ids(suggested)} "
            f"({spec.local_devices_reason}); "
            f"using {_format_ids(spec.local_device_ids)}{hint}"
        )
    lines.append("")

    if report.warm is not None:
        lines.append("warm start (kdist launch's spare interpreters):")
        lines.extend("  " + line for line in report.warm["summary"])
        lines.append("")

    lines.append("accelerators (without importing JAX):")
    lines.extend("  " + line for line in report.accelerators["summary"])
    lines.append("")

    lines.append(
        "environment fingerprint (the roll call compares it across processes; * must match):"
    )
    width = max(len(e.name) for e in report.environment_fingerprint)
    for e in report.environment_fingerprint:
        # The jax row also says whether the suite runs that version (it is not compared).
        tested = _jax_tested(e.value) if e.name == "jax" and e.value != "not installed" else None
        note = f" ({tested})" if tested else ""
        lines.append(f"  {'*' if e.must_match else ' '} {e.name:<{width}}  {e.value}{note}")
    lines.append("")

    probe = report.probe
    if probe is not None and spec is not None:
        lines.append(
            f"coordinator {probe.address}: {probe.status} after {probe.seconds:.3f} s "
            f"({probe.detail})"
        )
        lines.append(f"  {_probe_advice(probe.status, spec.process_id)}")
    elif spec is not None and not spec.coordinator_address:
        lines.append("coordinator: none (a single process)")
    else:
        lines.append("coordinator: not probed")
    if report.collectives is not None:
        lines.extend(report.collectives.lines())

    devices = report.devices
    if devices is not None:
        lines.append("")
        if "error" in devices:
            lines.append(f"JAX devices: failed: {devices['error']}")
        else:
            local = devices["local_devices"]
            assert isinstance(local, list)
            lines.append(
                f"JAX devices (default backend {devices['default_backend']}): "
                + ", ".join(str(d) for d in local)
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
        >>> from kdist._cli import doctor_report
        >>> doctor_report.run(as_json=True, probe=False) in (0, 1)  # doctest: +SKIP
        True
    """
    report = collect(with_devices=with_devices, probe=probe, probe_timeout=probe_timeout)
    if as_json:
        sys.stdout.write(json.dumps(json_report(report), indent=2) + "\n")
    else:
        sys.stdout.write(render(report))
    sys.stdout.flush()
    return 0 if report.ok or exit_zero else 1
