"""Which JAX kdist accepts is decided by the features JAX has, not by its version number."""

from __future__ import annotations

import types
from typing import Any

import pytest

from kdist import _jax_backend


def fake_jax(*, is_initialized: bool, parameters: tuple[str, ...]) -> Any:
    """A stand-in for the `jax` module at the JAX boundary: only what the check reads."""
    namespace: dict[str, Any] = {}
    exec(f"def initialize({', '.join(f'{p}=None' for p in parameters)}): pass", namespace)
    distributed = types.SimpleNamespace(initialize=namespace["initialize"])
    if is_initialized:
        distributed.is_initialized = lambda: False
    return types.SimpleNamespace(__version__="0.0.test", distributed=distributed)


ALL = ("coordinator_address", "cluster_detection_method", "coordinator_bind_address")


def test_the_installed_jax_has_every_feature() -> None:
    import jax

    _jax_backend.check_jax_features(jax)


def test_a_jax_with_every_feature_passes_whatever_its_version() -> None:
    _jax_backend.check_jax_features(fake_jax(is_initialized=True, parameters=ALL))


@pytest.mark.parametrize(
    ("is_initialized", "parameters", "missing"),
    [
        (False, ALL, "jax.distributed.is_initialized"),
        (
            True,
            ("coordinator_address", "coordinator_bind_address"),
            "jax.distributed.initialize(cluster_detection_method=...)",
        ),
        (
            False,
            ("coordinator_address",),
            "jax.distributed.is_initialized, "
            "jax.distributed.initialize(cluster_detection_method=...), "
            "jax.distributed.initialize(coordinator_bind_address=...)",
        ),
    ],
)
def test_a_jax_without_a_feature_is_refused_naming_it(
    is_initialized: bool, parameters: tuple[str, ...], missing: str
) -> None:
    with pytest.raises(RuntimeError) as info:
        _jax_backend.check_jax_features(
            fake_jax(is_initialized=is_initialized, parameters=parameters)
        )
    message = str(info.value)
    assert f"JAX 0.0.test, which lacks {missing}. " in message
    assert f"needs JAX {_jax_backend.OLDEST_SUPPORTED_JAX} or later" in message
    assert f'pip install "jax>={_jax_backend.OLDEST_SUPPORTED_JAX}"' in message


def test_the_oldest_supported_jax_is_the_declared_floor() -> None:
    from importlib.metadata import requires

    declared = [r for r in requires("kdist") or [] if r.replace(" ", "").startswith("jax>=")]
    assert declared == [f"jax>={_jax_backend.OLDEST_SUPPORTED_JAX}"]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (_jax_backend.OLDEST_SUPPORTED_JAX, "tested"),
        (_jax_backend.NEWEST_TESTED_JAX, "tested"),
        ("0.10.2", "tested"),
        ("0.12.0", "tested"),
        ("0.5.1.0", "tested"),
        ("0.12.0.2", "newer"),
        ("0.13.0.dev20270101", "newer"),
        ("1.0", "newer"),
        ("0.5.0", "older"),
        ("0.4.38", "older"),
        ("unknown", "not a version"),
    ],
)
def test_tested_range_compares_release_numbers(version: str, expected: str) -> None:
    oldest, newest = _jax_backend.OLDEST_SUPPORTED_JAX, _jax_backend.NEWEST_TESTED_JAX
    notes = {
        "tested": f"tested: {oldest} to {newest}",
        "newer": f"newer than the newest tested, {newest}",
        "older": f"older than the oldest supported, {oldest}",
        "not a version": f"not a version number; tested: {oldest} to {newest}",
    }
    assert _jax_backend.tested_range(version) == notes[expected]


@pytest.mark.compat
def test_the_jax_this_suite_runs_is_within_the_tested_range() -> None:
    """The suite runs the newest JAX the index offers (scripts/test.sh) and the oldest
    supported (scripts/compat.sh): one newer than NEWEST_TESTED_JAX means the constant, and
    what kdist doctor tells users, is behind the runs."""
    installed = _jax_backend.jax_version()
    assert _jax_backend.tested_range(installed).startswith("tested: "), (
        f"this suite runs JAX {installed}, outside kdist's tested range "
        f"{_jax_backend.OLDEST_SUPPORTED_JAX} to {_jax_backend.NEWEST_TESTED_JAX}: once the whole "
        "suite (scripts/test.sh) passes with it, raise NEWEST_TESTED_JAX in "
        "python/kdist/_jax_backend.py and the version tables (README.md, docs/configuration.md)"
    )
