"""Shared fixtures. Tests import the installed kdist, never python/ from the tree."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

IN_PROCESS_CPU_DEVICES = 8
# JAX's own job variables, which kdist also reads.
_JAX_JOB_VARIABLES = frozenset(
    {
        "JAX_COORDINATOR_ADDRESS",
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "JAX_LOCAL_DEVICE_IDS",
        "JAX_COORDINATOR_BIND_ADDRESS",
    }
)


@pytest.fixture(autouse=True)
def _no_cluster_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without KERAS_DISTRIBUTION_* / KDIST_* / JAX job settings."""
    import os

    for name in list(os.environ):
        if name.startswith(("KERAS_DISTRIBUTION_", "KDIST_")) or name in _JAX_JOB_VARIABLES:
            monkeypatch.delenv(name)


@pytest.fixture
def jax_cpu() -> Iterator[object]:
    """JAX on its CPU backend with 8 devices in this process (configured once,
    before the backend starts); kdist's state is reset after the test."""
    import jax
    from jax._src import xla_bridge

    if not xla_bridge.backends_are_initialized():
        jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_num_cpu_devices", IN_PROCESS_CPU_DEVICES)
    yield jax
    import kdist

    kdist.set_distribution(None)
    kdist.shutdown()


@pytest.fixture
def kdist_reset() -> Iterator[None]:
    """Leaves kdist uninitialized after the test."""
    yield
    import kdist

    kdist.set_distribution(None)
    kdist.shutdown()
