"""This process's environment fingerprint: what must match across the job's processes.

Processes can agree on every setting of the job and still not be the same program: a
different jax on one host, a different `XLA_FLAGS`, an old copy of the script, one host with
fewer devices. Each process collects its fingerprint here, without importing JAX, Keras or
the compiled core, and sends it in its hello; process 0 compares them (the roll call) and
`kdist doctor` shows them.

Each entry says whether a difference must stop the job (`must_match`: it crashes or
silently corrupts it) or deserves a warning. `KDIST_CONSISTENCY` chooses what process 0 does
with each kind.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdist._start.accelerators import find_accelerators

# JAX_* variables that name this process, its place in the job or its diagnostics: they
# differ between processes of one healthy job, so they are left out of the comparison.
# Every other JAX_* variable (JAX_ENABLE_X64, JAX_DEFAULT_MATMUL_PRECISION, ...) can change
# what the program computes and is compared.
_PER_PROCESS_JAX_VARIABLES = frozenset(
    {
        "JAX_COORDINATOR_ADDRESS",
        "JAX_COORDINATOR_BIND_ADDRESS",
        "JAX_COORDINATOR_PORT",
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "JAX_LOCAL_DEVICE_IDS",
        # Each host's own files for JAX's mutual TLS (the "tls" entry compares the plan).
        "JAX_MTLS_CERT_FILE",
        "JAX_MTLS_KEY_FILE",
        "JAX_MTLS_CA_FILE",
        "JAX_COMPILATION_CACHE_DIR",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES",
        "JAX_LOGGING_LEVEL",
        "JAX_DEBUG_LOG_MODULES",
        "JAX_TRACEBACK_FILTERING",
        "JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS",
        "JAX_EXPLAIN_CACHE_MISSES",
        "JAX_LOG_COMPILES",
    }
)

# Distribution names of the packages whose versions are compared.
_PACKAGES = (("jax", True), ("jaxlib", True), ("keras", False), ("kdist", False))

_NOT_INSTALLED = "not installed"
# The entries that describe the program rather than its environment.
PROGRAM_ENTRIES = frozenset({"script", "arguments"})
# Longer values travel as their hash (kdist doctor shows them whole).
MAX_VALUE_BYTES = 256
_FORCED_CPU_COUNT = "--xla_force_host_platform_device_count="
_DIGIT_RUN = re.compile(r"[0-9]+")
# Arguments with more runs of digits than this are compared exactly (their digest): each
# run's code takes 9 bytes of the value, which must stay under MAX_VALUE_BYTES.
MAX_ARGUMENT_NUMBERS = 24


@dataclass(frozen=True)
class Entry:
    """One compared property of a process.

    Attributes:
        name: What it is, as messages name it: "jax", "XLA_FLAGS", "script".
        value: Its value in this process, as text ("0.10.2", "cpu", "not installed").
        must_match: Whether a difference between processes stops the job by default
            (it would crash or corrupt it); otherwise a difference is a warning.
    """

    name: str
    value: str
    must_match: bool


def _normalized(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def installed_versions(path: Sequence[str] | None = None) -> dict[str, str]:
    """Every distribution's version by normalized name, from the `<name>-<version>.dist-info`
    directories on `path` (default `sys.path`), the first one found winning as in import.

    It reads directory names only: `importlib.metadata` would cost tens of milliseconds
    to import, inside initialize().

    Example:
        >>> "kdist" in installed_versions()
        True
    """
    found: dict[str, str] = {}
    for entry in sys.path if path is None else path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            project, _, version = name[: -len(".dist-info")].partition("-")
            if version:
                found.setdefault(_normalized(project), version)
    return found


def installed_version(distribution: str) -> str | None:
    """The installed version of `distribution`, or None, without importing it.

    Example:
        >>> installed_version("no-such-distribution-kdist-test") is None
        True
    """
    return installed_versions().get(_normalized(distribution))


def package_version(distribution: str) -> str:
    """The installed version of `distribution`, or "not installed".

    Example:
        >>> package_version("no-such-distribution-kdist-test")
        'not installed'
    """
    return installed_version(distribution) or _NOT_INSTALLED


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def own_id_arguments(arguments: Sequence[str], process_id: int | None) -> str:
    """The arguments as the roll call compares them: their shape and their numbers, so that
    each process's own id in them (`--worker_id=3`, `--rank 3`, `log.3.txt`) is no
    difference, while any other difference is (the rule: `roll_call/own_id_arguments.h`
    in the core, which reads this value, and docs/configuration.md).

    "sha256:<shape> <code> ...": the shape is the digest of the arguments with every run of
    digits replaced by "#"; each run's code is "=<width>" when its number is `process_id`,
    else the first 8 hex digits of its SHA-256. Without a process id, without digits, or
    with more than MAX_ARGUMENT_NUMBERS runs: "sha256:<digest>" of the arguments, compared
    exactly.

    Example:
        >>> own_id_arguments(["--worker_id=3"], 3) == own_id_arguments(["--worker_id=0"], 0)
        True
        >>> own_id_arguments(["--lr=0.1"], 1) == own_id_arguments(["--lr=0.2"], 1)
        False
        >>> own_id_arguments([], 0)
        'none'
    """
    if not arguments:
        return "none"
    joined = "\0".join(arguments)
    runs = _DIGIT_RUN.findall(joined)
    if process_id is None or not runs or len(runs) > MAX_ARGUMENT_NUMBERS:
        return f"sha256:{_digest(joined.encode())}"
    own = str(process_id)
    codes = [
        f"={len(run)}" if (run.lstrip("0") or "0") == own else _digest(run.encode())[:8]
        for run in runs
    ]
    return f"sha256:{_digest(_DIGIT_RUN.sub('#', joined).encode())} {' '.join(codes)}"


def _script(argv: Sequence[str], process_id: int | None) -> tuple[str, str]:
    """The main script's content hash and its arguments (own_id_arguments), or why there is
    no script."""
    main = argv[0] if argv else ""
    arguments = own_id_arguments(argv[1:], process_id)
    if not main or main == "-c":
        return "no script file (python -c or interactive)", arguments
    try:
        return f"{Path(main).name} sha256:{_digest(Path(main).read_bytes())}", arguments
    except OSError:
        return f"{Path(main).name} (unreadable)", arguments


def _listed(value: str) -> list[str]:
    return [item for item in (part.strip() for part in value.split(",")) if item]


def _devices(
    environ: Mapping[str, str], dev_dir: Path, local_device_ids: Sequence[int] | None
) -> tuple[str, str]:
    """The device platform this process will use and how many devices, without JAX.

    The device nodes are read only where the variables leave the answer open (no
    JAX_PLATFORMS, or a GPU or TPU count without a visibility variable): this runs
    inside initialize(), and reading /dev costs about a millisecond.
    """
    requested = _listed(environ.get("JAX_PLATFORMS", "").lower())
    first = requested[0] if requested else ""
    found: dict[str, Any] | None = None

    def accelerators() -> dict[str, Any]:
        nonlocal found
        if found is None:
            found = find_accelerators(dev_dir=dev_dir, environ=environ)
        return found

    if first in ("cuda", "rocm", "gpu"):
        kind = "gpu"
    elif first:
        kind = first
    elif accelerators()["nvidia_gpus"] or accelerators()["amd_kfd"]:
        kind = "gpu"
    elif accelerators()["tpu_chips"]:
        kind = "tpu"
    else:
        kind = "cpu"

    count: int | str
    if local_device_ids is not None:
        count = len(local_device_ids)
    elif kind == "cpu":
        forced = [
            flag[len(_FORCED_CPU_COUNT) :]
            for flag in environ.get("XLA_FLAGS", "").split()
            if flag.startswith(_FORCED_CPU_COUNT)
        ]
        count = environ.get("JAX_NUM_CPU_DEVICES") or (forced[-1] if forced else "1")
    elif kind == "gpu":
        visible = environ.get("CUDA_VISIBLE_DEVICES", environ.get("HIP_VISIBLE_DEVICES"))
        if visible is not None:
            count = len(_listed(visible))
        else:
            count = len(accelerators()["nvidia_gpus"]) or len(accelerators()["render_nodes"])
    elif kind == "tpu":
        visible = environ.get("TPU_VISIBLE_CHIPS")
        count = len(_listed(visible)) if visible is not None else len(accelerators()["tpu_chips"])
    else:
        count = "unknown"
    return kind, str(count).strip()


def collect(
    environ: Mapping[str, str] | None = None,
    argv: Sequence[str] | None = None,
    *,
    local_device_ids: Sequence[int] | None = None,
    process_id: int | None = None,
    dev_dir: Path = Path("/dev"),
    tls: str | None = None,
) -> tuple[Entry, ...]:
    """This process's fingerprint, in the order messages list it.

    Args:
        environ: The environment snapshot. Defaults to None: `os.environ`.
        argv: The program's arguments. Defaults to None: `sys.argv`.
        local_device_ids: The devices this process was told to use (the resolved
            `local_device_ids`), when it was. Defaults to None: every device it sees.
        process_id: This process's id in the job, when known: its own id in its
            arguments is then no difference (own_id_arguments). Defaults to None: the
            arguments are compared exactly.
        dev_dir: Where device nodes live. Defaults to `/dev`.
        tls: What this process's start does about TLS for JAX's coordination service
            (`kdist._start.tls.Plan.fingerprint_value`), when known. Defaults to None:
            no "tls" entry. A difference stops the job (processes under different TLS
            cannot reach each other's JAX service).

    Returns:
        The entries: the versions of jax, jaxlib, keras, kdist and Python; the device
        platform and the number of local devices; the operating system and machine;
        `XLA_FLAGS`; the other `JAX_*` settings; TLS (when `tls` is given); the main
        script's hash and its arguments' shape and numbers (own_id_arguments).

    Example:
        >>> entries = collect({"JAX_PLATFORMS": "cpu", "JAX_NUM_CPU_DEVICES": "2"}, ["-c"])
        >>> [(e.name, e.value) for e in entries if e.name in ("device platform", "local devices")]
        [('device platform', 'cpu'), ('local devices', '2')]
    """
    environ = os.environ if environ is None else environ
    argv = sys.argv if argv is None else argv
    versions = installed_versions()
    entries = [Entry(name, versions.get(name, _NOT_INSTALLED), fatal) for name, fatal in _PACKAGES]
    entries.append(Entry("python", ".".join(map(str, sys.version_info[:3])), False))
    kind, count = _devices(environ, dev_dir, local_device_ids)
    entries.append(Entry("device platform", kind, True))
    entries.append(Entry("local devices", count, True))
    system = os.uname()
    entries.append(Entry("platform", f"{system.sysname} {system.machine}", False))
    entries.append(Entry("XLA_FLAGS", environ.get("XLA_FLAGS", "").strip() or "unset", False))
    settings = sorted(
        f"{name}={value}"
        for name, value in environ.items()
        if name.startswith("JAX_") and name not in _PER_PROCESS_JAX_VARIABLES
    )
    entries.append(Entry("JAX settings", " ".join(settings) or "none", False))
    if tls is not None:
        entries.append(Entry("tls", tls, True))
    script, arguments = _script(argv, process_id)
    entries.append(Entry("script", script, False))
    entries.append(Entry("arguments", arguments, False))
    return tuple(_shortened(entry) for entry in entries)


def _shortened(entry: Entry) -> Entry:
    """A value too long for a hello (and for a message) becomes its hash and length."""
    size = len(entry.value.encode())
    if size <= MAX_VALUE_BYTES:
        return entry
    digest = _digest(entry.value.encode())
    return Entry(entry.name, f"sha256:{digest} ({size} bytes)", entry.must_match)
