"""Shared fixtures. Tests import the installed kdist, never python/ from the tree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

IN_PROCESS_CPU_DEVICES = 8


def pytest_configure(config: pytest.Config) -> None:
    """Processes the tests start must take Ctrl-C (SIGINT) as a terminal would give it.

    A process started with SIGINT ignored (by nohup, or as a background job of a
    non-interactive shell: how CI runners and `cmd &` start things) passes SIG_IGN
    on to every child it executes, and Python keeps it: os.kill(pid, SIGINT) then does
    nothing (a worker once "ignored SIGINT for 10 s" in a full run). A caught
    handler is reset to the default at exec, so installing Python's own handler here
    gives every child the default disposition, however pytest was started.
    """
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _no_cluster_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without kdist's own settings (KDIST_*) and without any variable
    that names a job (kdist._local_job.environment: KERAS_DISTRIBUTION_*, JAX's, every
    scheduler detector's), as the processes kdist starts do."""
    import os

    from kdist._local_job.environment import job_variables, names_a_job

    names = job_variables()
    for name in list(os.environ):
        if name.startswith("KDIST_") or names_a_job(name, names):
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
def keras_on_jax(jax_cpu: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """Keras on its JAX backend, over this process's 8 CPU devices (`jax_cpu`); Keras's
    and kdist's distributions are cleared afterwards.

    KERAS_BACKEND and KERAS_HOME only matter at keras's first import (which also keeps
    keras from writing ~/.keras); later tests reuse the imported module.
    """
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    import keras

    if keras.backend.backend() != "jax":
        pytest.fail(f"keras was imported earlier with the {keras.backend.backend()} backend")
    yield keras
    keras.distribution.set_distribution(None)


@pytest.fixture
def kdist_reset() -> Iterator[None]:
    """Leaves kdist uninitialized after the test."""
    yield
    import kdist

    kdist.set_distribution(None)
    kdist.shutdown()
