"""The only module that imports JAX, and only when one of its functions runs."""

from __future__ import annotations

import inspect
import math
import re
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any


def backend_started() -> bool:
    """Whether JAX's XLA backend is already up (so it is too late to initialize)."""
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    return bool(xla_bridge.backends_are_initialized())


def distributed_started() -> bool:
    """Whether jax.distributed is already initialized in this process."""
    if "jax" not in sys.modules:
        return False
    import jax

    if not hasattr(jax.distributed, "is_initialized"):
        # A JAX older than kdist supports (initialize_distributed refuses it):
        # answer from the state that is_initialized() reads in later versions.
        from jax._src import distributed

        return distributed.global_state.client is not None
    return bool(jax.distributed.is_initialized())


def jax_installed() -> bool:
    """Whether `import jax` would find JAX, found without importing it."""
    if sys.modules.get("jax") is not None:
        return True
    import importlib.util

    try:
        return importlib.util.find_spec("jax") is not None
    except (ImportError, ValueError):
        return False


class BackgroundImport:
    """Imports JAX on a helper thread while this process waits for the roll call.

    Importing JAX is the slowest step of starting a process (about a second);
    the roll call is mostly waiting. Overlapping them starts JAX as early as
    plain `jax.distributed.initialize` would. `join()` always waits for the
    thread, so none is left behind, whatever happened meanwhile.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        """Starts the import (once); does nothing when JAX is already imported."""
        if self._thread is not None or "jax" in sys.modules:
            return
        self._thread = threading.Thread(target=self._run, name="kdist-import-jax", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            import jax  # noqa: F401
        except BaseException as error:  # re-raised by raise_error() in the caller's thread
            self._error = error

    def join(self) -> None:
        """Waits for the import to end. A Ctrl-C meanwhile is held until then
        (the import cannot be stopped, and must not outlive the caller)."""
        if self._thread is None:
            return
        interrupted: KeyboardInterrupt | None = None
        while self._thread.is_alive():
            try:
                self._thread.join()
            except KeyboardInterrupt as error:
                interrupted = error
        self._thread = None
        if interrupted is not None:
            raise interrupted

    def raise_error(self) -> None:
        """Raises the import's exception, if it failed."""
        if self._error is not None:
            raise self._error


# The oldest JAX whose features kdist relies on; named in the error that refuses an older one.
# Which JAX is supported is decided by the features it has (check_jax_features), never by
# comparing this number.
OLDEST_SUPPORTED_JAX = "0.5.1"
# The newest JAX the suite runs (scripts/test.sh: everything, on Python 3.13 with the newest
# JAX the index offers; scripts/compat.sh: the compat tests at OLDEST_SUPPORTED_JAX and at the
# newest JAX for Python 3.11). `kdist doctor` says where the installed JAX stands against the
# two (tested_range). Raise it once the suite has passed at a newer JAX:
# tests/start/test_jax_features.py fails on one newer than this until then.
NEWEST_TESTED_JAX = "0.12.0.1"


def _release(version: str) -> tuple[int, ...] | None:
    """The release numbers a version starts with, without trailing zeros
    ("0.12.0.1rc1" -> (0, 12, 0, 1), "0.6.0" -> (0, 6)); None when it starts with none."""
    found = re.match(r"\d+(\.\d+)*", version)
    if found is None:
        return None
    numbers = [int(part) for part in found.group().split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def within_tested_range(version: str) -> bool:
    """Whether JAX `version` is one the suite runs: from OLDEST_SUPPORTED_JAX to
    NEWEST_TESTED_JAX (release numbers compared; JAX is not imported).

    Example:
        >>> within_tested_range(NEWEST_TESTED_JAX), within_tested_range("99.0")
        (True, False)
    """
    return tested_range(version).startswith("tested: ")


def tested_range(version: str) -> str:
    """Where JAX `version` stands against the versions the suite runs, in words:
    "tested: 0.5.1 to 0.12.0.1", "newer than the newest tested, 0.12.0.1" or "older than
    the oldest supported, 0.5.1" (release numbers compared; JAX is not imported).

    Example:
        >>> tested_range("99.0").startswith("newer than the newest tested, ")
        True
    """
    tested = f"tested: {OLDEST_SUPPORTED_JAX} to {NEWEST_TESTED_JAX}"
    found = _release(version)
    if found is None:
        return f"not a version number; {tested}"
    if found > (_release(NEWEST_TESTED_JAX) or ()):
        return f"newer than the newest tested, {NEWEST_TESTED_JAX}"
    if found < (_release(OLDEST_SUPPORTED_JAX) or ()):
        return f"older than the oldest supported, {OLDEST_SUPPORTED_JAX}"
    return tested


def check_jax_features(jax: Any) -> None:
    """Refuses a JAX that lacks what kdist needs to start a job, naming what is missing.

    kdist needs `jax.distributed.is_initialized` (added in JAX 0.5.1). JAX versions that
    have it also have the others kdist relies on: `cluster_detection_method="deactivate"`
    (0.4.36), `JAX_NUM_CPU_DEVICES` (0.5.0) and CPU computations across processes.

    Raises:
        RuntimeError: something is missing; the message says what and how to upgrade.
    """
    missing = []
    if not hasattr(jax.distributed, "is_initialized"):
        missing.append("jax.distributed.is_initialized")
    parameters = inspect.signature(jax.distributed.initialize).parameters
    for name in ("cluster_detection_method", "coordinator_bind_address"):
        if name not in parameters:
            missing.append(f"jax.distributed.initialize({name}=...)")
    if missing:
        raise RuntimeError(
            f"kdist.initialize() needs JAX {OLDEST_SUPPORTED_JAX} or later, but this Python "
            f"({sys.executable}) has JAX {getattr(jax, '__version__', 'unknown')}, which lacks "
            f"{', '.join(missing)}. Install a supported JAX on every host of the job "
            f'({sys.executable} -m pip install "jax>={OLDEST_SUPPORTED_JAX}").'
        )


def initialize_distributed(
    coordinator_address: str,
    num_processes: int,
    process_id: int,
    timeout_seconds: float,
    local_device_ids: list[int] | None = None,
    *,
    lifetime_timeouts: dict[str, int] | None = None,
    coordinator_bind_address: str | None = None,
    mtls: dict[str, Any] | None = None,
) -> None:
    """Calls jax.distributed.initialize with every value explicit, detection off.

    `local_device_ids=None` keeps every device the process sees (JAX would
    otherwise pick one per process by itself under Slurm and Open MPI).
    `lifetime_timeouts` maps JAX's keyword names ("heartbeat_timeout_seconds",
    "shutdown_timeout_seconds") to whole seconds; each is passed only when
    set, after checking that this JAX takes it (see `check_lifetime_keywords`).
    `coordinator_bind_address=None` lets process 0's service bind every
    interface on the coordinator's port. `mtls` maps JAX's mutual TLS keywords
    ("mtls_cert_file", "mtls_key_file", "mtls_ca_file", "mtls_peer_uri_prefix",
    "verify_secure_credentials") to their values (kdist._start.tls); None: JAX's own
    configuration decides.

    Raises:
        RuntimeError: this JAX lacks a feature kdist needs (see check_jax_features).
        kdist.ConfigError: `mtls` is given and this JAX has no mutual TLS.
    """
    import jax

    check_jax_features(jax)
    extra: dict[str, Any] = dict(lifetime_timeouts or {})
    check_lifetime_keywords(extra)
    if mtls:
        check_mtls_keywords(jax)
        extra.update(mtls)
    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=num_processes,
        process_id=process_id,
        local_device_ids=local_device_ids,
        cluster_detection_method="deactivate",
        initialization_timeout=max(1, math.ceil(timeout_seconds)),
        coordinator_bind_address=coordinator_bind_address,
        **extra,
    )


# --- Heartbeat and shutdown timeouts: detected by feature, not version --------------------


def check_lifetime_keywords(wanted: dict[str, int]) -> None:
    """Raises ConfigError when this JAX's `jax.distributed.initialize` lacks a keyword
    of `wanted` (JAX's heartbeat and shutdown timeouts), naming the setting and what
    to do. Looks at the signature, not the version number."""
    if not wanted:
        return
    import inspect

    import jax

    try:
        accepted = set(inspect.signature(jax.distributed.initialize).parameters)
    except (TypeError, ValueError):
        return  # no signature to inspect: let JAX itself judge
    missing = sorted(name for name in wanted if name not in accepted)
    if missing:
        from kdist._errors import ConfigError

        settings = ", ".join(f"{name.removesuffix('_seconds')}={wanted[name]}" for name in missing)
        raise ConfigError(
            f"{settings} was set, but jax.distributed.initialize of the installed JAX "
            f"{jax.__version__} has no keyword {', '.join(missing)}. Expected a JAX that "
            "takes it; received one without it. Unset the setting (the "
            "argument, KDIST_HEARTBEAT_TIMEOUT or KDIST_SHUTDOWN_TIMEOUT) or upgrade JAX."
        )


# --- Mutual TLS for the coordination service (JAX 0.12): kdist._start.tls --------------------

# The first JAX whose jax.distributed.initialize takes the mtls_* keywords; named in messages.
MTLS_JAX = "0.12"
# JAX's options for its mutual TLS, as jax.config names them (the variables: upper case).
MTLS_OPTIONS = (
    "jax_mtls_cert_file",
    "jax_mtls_key_file",
    "jax_mtls_ca_file",
    "jax_mtls_peer_uri_prefix",
)
_MTLS_KEYWORDS = ("mtls_cert_file", "mtls_key_file", "mtls_ca_file", "mtls_peer_uri_prefix")


def mtls_supported() -> tuple[bool, str]:
    """(whether the installed JAX has mutual TLS for its coordination service, its version).

    When the program already imported JAX, the answer is the feature itself
    (`jax.distributed.initialize` takes `mtls_cert_file`); otherwise JAX is not imported
    (the start imports it later, beside the roll call) and its installed version says:
    MTLS_JAX or later.

    Example:
        >>> isinstance(mtls_supported()[0], bool)
        True
    """
    version = jax_version()
    if "jax" in sys.modules:
        import jax

        try:
            return _MTLS_KEYWORDS[0] in inspect.signature(
                jax.distributed.initialize
            ).parameters, version
        except (TypeError, ValueError):
            pass
    found = _release(version)
    return found is not None and found >= (_release(MTLS_JAX) or ()), version


def mtls_config() -> dict[str, str]:
    """JAX's mTLS options as its configuration holds them (a program may have set them with
    `jax.config.update`), by option name, those set only; empty when JAX is not imported
    (nothing could have set them but JAX's variables) or has no such options."""
    module = sys.modules.get("jax")
    if module is None:
        return {}
    found: dict[str, str] = {}
    for option in MTLS_OPTIONS:
        try:
            value = getattr(module.config, option)
        except AttributeError:
            continue
        if isinstance(value, str) and value:
            found[option] = value
    return found


def check_mtls_keywords(jax: Any) -> None:
    """Raises ConfigError when this JAX's `jax.distributed.initialize` has no mutual TLS
    (the mtls_* keywords, JAX 0.12), naming TLS and the version that has it. Looks at the
    signature, not the version number."""
    try:
        accepted = set(inspect.signature(jax.distributed.initialize).parameters)
    except (TypeError, ValueError):
        return  # no signature to inspect: let JAX itself judge
    if _MTLS_KEYWORDS[0] not in accepted:
        from kdist._errors import ConfigError

        raise ConfigError(
            f"TLS for JAX's coordination service was decided on, but jax.distributed.initialize "
            f"of the installed JAX {jax.__version__} has no mutual TLS (its mtls_* keywords "
            f"came with JAX {MTLS_JAX}). Install JAX {MTLS_JAX} or later on every host, or set "
            "KDIST_TLS=off."
        )


# --- JAX's CPU collectives (Gloo): the address they advertise ------------------------------
#
# JAX creates Gloo without an address, and Gloo then advertises the one the host's name
# resolves to (loopback on many hosts: kdist._start.collectives says why that breaks a job
# across hosts). jaxlib's make_gloo_tcp_collectives takes `hostname=` and `interface=`, and
# the CPU backend's factory takes `collectives=`; JAX passes neither. kdist registers the
# factory again with its own collectives, before the CPU backend exists.


def _gloo_parts() -> tuple[Any, Any] | str:
    """The CPU backend's registration and jaxlib's make_gloo_tcp_collectives, or why this
    JAX cannot be handed an address (its internals differ from 0.5.1 to 0.12's)."""
    import dataclasses

    from jax._src import xla_bridge

    registration: Any = getattr(xla_bridge, "_backend_factories", {}).get("cpu")
    factory = getattr(registration, "factory", None)
    if factory is None or not dataclasses.is_dataclass(registration):
        return "it has no CPU backend registration kdist knows"
    try:
        takes = set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        takes = set()
    if "collectives" not in takes:
        return "its CPU backend's factory takes no collectives"
    client = getattr(xla_bridge, "xla_client", None)
    module = getattr(xla_bridge, "_jax", None) or getattr(client, "_xla", None)
    make = getattr(module, "make_gloo_tcp_collectives", None)
    if make is None or "hostname" not in (make.__doc__ or ""):
        return "its make_gloo_tcp_collectives takes no hostname"
    return registration, make


def _uses_gloo() -> bool:
    """Whether JAX's CPU client will make Gloo collectives (its default; the user may
    choose MPI, or none, with jax_cpu_collectives_implementation)."""
    from jax._src import config, xla_bridge

    chosen = getattr(config, "cpu_collectives_implementation", None)
    value = chosen.value if chosen is not None else None
    if value is None:
        value = getattr(xla_bridge, "_DEFAULT_CPU_COLLECTIVES_IMPL", "gloo")
    return bool(value == "gloo")


def cpu_collectives_address_unsupported() -> str | None:
    """Why the installed JAX cannot be told the address its Gloo collectives advertise
    ("its CPU backend's factory takes no collectives"); None when it can, or when it
    uses no Gloo."""
    if not _uses_gloo():
        return None
    parts = _gloo_parts()
    return parts if isinstance(parts, str) else None


_replaced_cpu_registration: Any = None


def advertise_cpu_collectives(hostname: str | None, interface: str | None) -> bool:
    """Makes the CPU backend's Gloo collectives listen on, and advertise, `hostname`
    (an IP literal of this host) or `interface`'s address. Call after
    `initialize_distributed` and before the backend starts. Returns False (and changes
    nothing) when JAX uses no Gloo, cannot take an address, or its backend is up."""
    global _replaced_cpu_registration
    import dataclasses

    from jax._src import distributed, xla_bridge

    if not _uses_gloo() or xla_bridge.backends_are_initialized():
        return False
    parts = _gloo_parts()
    if isinstance(parts, str):
        return False
    registration, make = parts
    make_client = registration.factory

    def make_cpu_client() -> Any:
        collectives = make(
            distributed_client=distributed.global_state.client,
            hostname=hostname,
            interface=interface,
        )
        return make_client(collectives=collectives)

    if _replaced_cpu_registration is None:
        _replaced_cpu_registration = registration
    xla_bridge._backend_factories["cpu"] = dataclasses.replace(
        registration, factory=make_cpu_client
    )
    return True


def _restore_cpu_registration() -> None:
    """Puts JAX's own CPU backend factory back (after kdist.shutdown())."""
    global _replaced_cpu_registration
    if _replaced_cpu_registration is None:
        return
    from jax._src import xla_bridge

    xla_bridge._backend_factories["cpu"] = _replaced_cpu_registration
    _replaced_cpu_registration = None


def shutdown_distributed() -> None:
    """Shuts jax.distributed down if it runs; a no-op otherwise."""
    if "jax" not in sys.modules:
        return
    import jax

    jax.distributed.shutdown()  # type: ignore[no-untyped-call]
    _restore_cpu_registration()


def device_strings(device_type: str | None) -> list[str]:
    """Keras-style strings ("cpu:0", "gpu:3") of the global devices of a type.

    Raises:
        RuntimeError: JAX has no backend for `device_type`.
    """
    import jax

    return [device_label(d) for d in jax.devices(device_type)]


def platforms_present() -> dict[str, int]:
    """Each platform JAX can use here, with its global device count."""
    import jax
    from jax._src import xla_bridge

    counts: dict[str, int] = {}
    for platform in xla_bridge.backends():
        try:
            counts[platform] = len(jax.devices(platform))
        except RuntimeError:
            continue
    return counts


def device_report() -> dict[str, object]:
    """JAX's view of this process's devices (imports JAX and starts its backend)."""
    import jax

    return {
        "jax_version": jax.__version__,
        "default_backend": jax.default_backend(),
        "platforms": platforms_present(),
        "local_devices": [device_label(d) for d in jax.local_devices()],
    }


def jax_version() -> str:
    """The installed JAX version, read from package metadata (no JAX import).

    Looks for the `jax-VERSION.dist-info` folder next to the package first (a
    few milliseconds), and asks importlib.metadata (tens of milliseconds)
    only when that is ambiguous.
    """
    module = sys.modules.get("jax")
    if module is not None and isinstance(getattr(module, "__version__", None), str):
        return str(module.__version__)
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("jax")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        site = os.path.dirname(next(iter(spec.submodule_search_locations)))
        try:
            found = [
                name[len("jax-") : -len(".dist-info")]
                for name in os.listdir(site)
                if name.startswith("jax-") and name.endswith(".dist-info")
            ]
        except OSError:
            found = []
        if len(found) == 1:
            return found[0]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jax")
    except PackageNotFoundError:
        return "unknown"


def process_count_and_index() -> tuple[int, int]:
    """(number of processes, this process's index) as JAX sees them."""
    import jax

    return jax.process_count(), jax.process_index()


# --- Distribution types (_layouts/, _distribution/placement.py) --------------------------
#
# The functions below that only inspect a value answer False without importing JAX when JAX
# is not loaded: a value cannot be a JAX object before JAX is imported.


def is_device(value: object) -> bool:
    """Whether `value` is a `jax.Device`."""
    if "jax" not in sys.modules:
        return False
    import jax

    return isinstance(value, jax.Device)


def device_label(device: Any) -> str:
    """The Keras string of a `jax.Device`: "cpu:0", "gpu:3"."""
    return f"{device.platform}:{device.id}"


def devices_by_label(labels: Sequence[str]) -> list[Any]:
    """The global `jax.Device` of each Keras device string, in order.

    Raises:
        ValueError: a label names no device JAX has (it says which, and what exists).
    """
    import jax

    found: dict[str, Any] = {}
    for platform in sorted({label.partition(":")[0] for label in labels}):
        for device in jax.devices(platform):
            found[device_label(device)] = device
    missing = [label for label in labels if label not in found]
    if missing:
        raise ValueError(
            f"Devices {missing} are not among JAX's devices ({sorted(found)}). The job's "
            "devices changed since the DeviceMesh was made (initialize or shutdown ran in "
            "between): make the DeviceMesh again."
        )
    return [found[label] for label in labels]


def make_mesh(devices: Any, axis_names: tuple[str, ...]) -> Any:
    """A `jax.sharding.Mesh` of `devices` (an array of `jax.Device` in mesh shape)."""
    import jax

    return jax.sharding.Mesh(devices, axis_names)


def named_sharding(mesh: Any, axes: tuple[str | tuple[str, ...] | None, ...]) -> Any:
    """A `jax.sharding.NamedSharding` of `mesh` with the PartitionSpec `axes`."""
    import jax

    spec = jax.sharding.PartitionSpec(*axes)  # type: ignore[no-untyped-call]
    return jax.sharding.NamedSharding(mesh, spec)


def is_sharding(value: object) -> bool:
    """Whether `value` is a `jax.sharding.Sharding`."""
    if "jax" not in sys.modules:
        return False
    import jax

    return isinstance(value, jax.sharding.Sharding)


def _format_class() -> type | None:
    """JAX's `jax.experimental.layout.Format` (a sharding with a device-local layout),
    named `Layout` before JAX renamed it (0.6); None when this JAX has neither."""
    from jax.experimental import layout

    found = getattr(layout, "Format", None)
    if found is None:
        older = getattr(layout, "Layout", None)
        found = older if hasattr(older, "device_local_layout") else None
    return found if isinstance(found, type) else None


def is_format(value: object) -> bool:
    """Whether `value` is a `jax.experimental.layout.Format` (Keras's "JAX layout")."""
    if "jax" not in sys.modules:
        return False
    cls = _format_class()
    return cls is not None and isinstance(value, cls)


def is_tracer(value: object) -> bool:
    """Whether `value` is a tracer, i.e. we are inside `jax.jit` (or another transform)."""
    if "jax" not in sys.modules:
        return False
    import jax

    return isinstance(value, jax.core.Tracer)


def with_sharding_constraint(value: Any, sharding: Any) -> Any:
    """`jax.lax.with_sharding_constraint` (inside a traced function)."""
    import jax

    return jax.lax.with_sharding_constraint(value, sharding)  # type: ignore[no-untyped-call]


def has_sharding(value: object, sharding: Any) -> bool:
    """Whether `value` is a `jax.Array` already laid out as `sharding` (a
    `jax.sharding.Sharding`, or a `Format`: its sharding, and its device-local layout
    when it names one)."""
    if "jax" not in sys.modules:
        return False
    import jax

    if not isinstance(value, jax.Array):
        return False
    if is_format(sharding):
        wanted = getattr(sharding, "sharding", None)
        if wanted is None or not value.sharding.is_equivalent_to(wanted, value.ndim):
            return False
        local = getattr(sharding, "layout", getattr(sharding, "device_local_layout", None))
        return local is None or getattr(value, "format", None) == sharding
    return bool(value.sharding.is_equivalent_to(sharding, value.ndim))


def device_put(value: Any, sharding: Any) -> Any:
    """`jax.device_put(value, sharding)`."""
    import jax

    return jax.device_put(value, sharding)


def array_from_process_local_data(sharding: Any, local_data: Any) -> Any:
    """The global `jax.Array` whose part on this process's devices is `local_data`."""
    import jax

    return jax.make_array_from_process_local_data(  # type: ignore[no-untyped-call]
        sharding, local_data
    )


def tree_map(function: Callable[[Any], Any], tree: Any) -> Any:
    """`jax.tree.map(function, tree)`."""
    import jax

    return jax.tree.map(function, tree)


def key_value_set(key: str, value: str) -> None:
    """Stores `value` under `key` in jax.distributed's key-value store (process 0's service)."""
    from jax._src import distributed

    client = distributed.global_state.client
    if client is None:
        raise RuntimeError("jax.distributed is not initialized")
    client.key_value_set(key, value)


def key_value_get(key: str, timeout_seconds: float) -> str:
    """The value under `key` in jax.distributed's key-value store, waiting for it
    up to `timeout_seconds`."""
    from jax._src import distributed

    client = distributed.global_state.client
    if client is None:
        raise RuntimeError("jax.distributed is not initialized")
    return str(client.blocking_key_value_get(key, max(1, int(timeout_seconds * 1000))))


def local_device_count() -> int:
    """The number of this process's own devices (of the default type)."""
    import jax

    return int(jax.local_device_count())


# --- Backups (_resume/) --------------------------------------------------------------------


def job_devices() -> list[tuple[int, int, str]]:
    """(id, process index, platform) of every device of the job, in JAX's order."""
    import jax

    return [(int(d.id), int(d.process_index), str(d.platform)) for d in jax.devices()]


def numpy_dtype(name: str) -> Any:
    """The NumPy dtype JAX calls `name` ("float32", "bfloat16", ...)."""
    import jax.numpy as jnp

    return jnp.dtype(name)


def array_from_device_values(shape: tuple[int, ...], sharding: Any, values: Sequence[Any]) -> Any:
    """The global `jax.Array` of `shape` laid out by `sharding`, from one NumPy value per
    addressable device of `sharding`, in the order of its
    `addressable_devices_indices_map(shape)`."""
    import jax

    devices = list(sharding.addressable_devices_indices_map(shape))
    placed = [jax.device_put(value, device) for value, device in zip(values, devices, strict=True)]
    return jax.make_array_from_single_device_arrays(shape, sharding, placed)


def abstract_array(shape: tuple[int, ...], dtype: Any, sharding: Any) -> Any:
    """A `jax.ShapeDtypeStruct` of `shape` and `dtype`, laid out by `sharding` (what a
    restore is asked to fill)."""
    import jax

    # Untyped in JAX's annotations (its constructor has none): called as Any.
    shape_dtype_struct: Any = jax.ShapeDtypeStruct
    return shape_dtype_struct(tuple(shape), dtype, sharding=sharding)


def array_type() -> type:
    """`jax.Array`, the type Orbax's handler of arrays is registered for (_resume/arrays.py)."""
    import jax

    return jax.Array
