"""The only module that imports JAX, and only when one of its functions runs."""

from __future__ import annotations

import math
import sys


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

    return bool(jax.distributed.is_initialized())


def initialize_distributed(
    coordinator_address: str, num_processes: int, process_id: int, timeout_seconds: float
) -> None:
    """Calls jax.distributed.initialize with every value explicit, detection off."""
    import jax

    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=num_processes,
        process_id=process_id,
        cluster_detection_method="deactivate",
        initialization_timeout=max(1, math.ceil(timeout_seconds)),
    )


def shutdown_distributed() -> None:
    """Shuts jax.distributed down if it runs; a no-op otherwise."""
    if "jax" not in sys.modules:
        return
    import jax

    jax.distributed.shutdown()  # type: ignore[no-untyped-call]


def device_strings(device_type: str | None) -> list[str]:
    """Keras-style strings ("cpu:0", "gpu:3") of the global devices of a type.

    Raises:
        RuntimeError: JAX has no backend for `device_type`.
    """
    import jax

    return [f"{d.platform}:{d.id}" for d in jax.devices(device_type)]


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


def jax_version() -> str:
    """The installed JAX version, read from package metadata (no JAX import)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jax")
    except PackageNotFoundError:
        return "unknown"


def process_count_and_index() -> tuple[int, int]:
    """(number of processes, this process's index) as JAX sees them."""
    import jax

    return jax.process_count(), jax.process_index()
