"""list_devices() / get_device_count() in one process with 8 CPU devices."""

from __future__ import annotations

import pytest

import kdist
from kdist import _devices

# Part of the fast subset the test command also runs at the oldest supported JAX and Keras.
pytestmark = pytest.mark.compat


def test_lists_keras_strings(jax_cpu: object) -> None:
    import jax

    expected = [f"cpu:{d.id}" for d in jax.devices()]
    assert kdist.list_devices() == expected
    assert len(expected) == 8
    assert kdist.list_devices("cpu") == expected
    assert kdist.list_devices("CPU") == expected
    assert kdist.get_device_count() == 8
    assert kdist.get_device_count("cpu") == 8


def test_returned_list_is_a_copy(jax_cpu: object) -> None:
    devices = kdist.list_devices()
    devices.append("cpu:999")
    devices[0] = "gpu:0"
    assert "cpu:999" not in kdist.list_devices()
    assert kdist.list_devices()[0] == "cpu:0"
    assert kdist.get_device_count() == 8


def test_lists_are_cached_until_initialize_or_shutdown(jax_cpu: object) -> None:
    kdist.list_devices()
    assert _devices._cache.get("") is not None
    kdist.initialize(num_processes=1)
    assert _devices._cache.get("") is None
    kdist.list_devices("cpu")
    assert _devices._cache.get("cpu") is not None
    kdist.shutdown()
    assert _devices._cache.get("cpu") is None


def test_unknown_device_type_lists_what_is_present(jax_cpu: object) -> None:
    with pytest.raises(
        kdist.ConfigError,
        match=r"device_type='gpu': JAX has no such devices here; present: cpu \(8 devices\)",
    ):
        kdist.list_devices("gpu")
    with pytest.raises(kdist.ConfigError, match="device_type='tpu'"):
        kdist.get_device_count("tpu")


def test_device_type_must_be_a_string(jax_cpu: object) -> None:
    with pytest.raises(TypeError, match=r"device_type=3: expected a string"):
        kdist.list_devices(3)  # type: ignore[arg-type]


# --- The cache itself ----------------------------------------------------------------------


def test_cache_stores_per_device_type() -> None:
    cache = _devices.DeviceCache()
    assert cache.get("") is None
    assert cache.put("", cache.generation, ["cpu:0", "cpu:1"])
    assert cache.put("gpu", cache.generation, ["gpu:0"])
    assert cache.get("") == ["cpu:0", "cpu:1"]
    assert cache.get("gpu") == ["gpu:0"]
    assert cache.get("tpu") is None
    assert cache.count("") == 2
    assert cache.count("tpu") is None


def test_cache_invalidate_forgets_everything() -> None:
    cache = _devices.DeviceCache()
    assert cache.put("", cache.generation, ["cpu:0"])
    cache.invalidate()
    assert cache.get("") is None
    assert cache.count("") is None


def test_cache_does_not_store_a_list_computed_across_an_invalidate() -> None:
    cache = _devices.DeviceCache()
    before = cache.generation
    cache.invalidate()  # initialize() ran while the caller asked JAX
    assert not cache.put("", before, ["cpu:0"])
    assert cache.get("") is None


def test_cache_returns_copies_and_keeps_none_of_the_caller_s_list() -> None:
    cache = _devices.DeviceCache()
    stored = ["cpu:0"]
    assert cache.put("", cache.generation, stored)
    stored.append("cpu:1")
    copy = cache.get("")
    assert copy == ["cpu:0"]
    assert copy is not None
    copy.append("cpu:99")
    assert cache.get("") == ["cpu:0"]
