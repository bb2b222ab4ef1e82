"""The adapter that runs Keras's own distribution tests against kdist (a pytest plugin).

scripts/keras_upstream.sh takes two files out of the sdist of the installed Keras,
unmodified (keras/src/distribution/distribution_lib_test.py and
keras/src/backend/jax/distribution_lib_test.py), and runs them with this plugin
(`-p kdist_keras_upstream`, settings in tests/keras_upstream/pytest.ini):

    --serve=keras   Keras alone, as its own CI runs them: every test must pass (those
                    that need TensorFlow skip where it is not installed).
    --serve=kdist   the name `distribution_lib` in each test module is a module whose
                    public names (`keras.distribution`'s, and `Distribution`) are
                    kdist's; every other name is Keras's own. Keras itself is left
                    alone: its layers and trainers still ask Keras's current
                    distribution, which kdist's `scope()` keeps in step.

With --serve=kdist every test is one of three kinds:
- applies: it must pass;
- NOT_APPLICABLE: it patches or calls Keras internals (backend_dlib, the private
  `_process_id` / `_is_multi_process` of Keras's Distribution, Keras's module-level
  `list_devices`), so it says nothing about kdist: skipped, with the reason;
- DIFFERENCES: it fails on a difference docs/distribution.md documents: xfail
  (strict, with the exception it raises), with the reason.
A test that fails for any other reason fails the run, and so does a pin that no
longer matches a collected test (a new Keras version renamed or removed it).
The tests that use `tf.data` skip where TensorFlow is not installed (kdist's test
environment does not install it); the test modules import it at the top, so while
they are imported a stand-in module that fails on use takes its place.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

DISTRIBUTION_TESTS = "keras/src/distribution/distribution_lib_test.py"
JAX_TESTS = "keras/src/backend/jax/distribution_lib_test.py"

# The public names the served `distribution_lib` takes from kdist.
SERVED_NAMES = (
    "DataParallel",
    "DeviceMesh",
    "Distribution",
    "LayoutMap",
    "ModelParallel",
    "TensorLayout",
    "distribute_tensor",
    "distribution",
    "get_device_count",
    "initialize",
    "list_devices",
    "set_distribution",
)

_INTERNALS = "mocks Keras's backend distribution_lib (backend_dlib), which kdist does not use"


def _ids(path: str, cls: str, *names: str) -> list[str]:
    return [f"{path}::{cls}::{name}" for name in names]


# Tests that cannot apply to kdist, each with why.
NOT_APPLICABLE: dict[str, str] = {
    **dict.fromkeys(
        _ids(
            DISTRIBUTION_TESTS,
            "MultiProcessInitializeTest",
            "test_initialize_with_explicit_param",
            "test_initialize_with_env_vars",
            "test_init_with_nones",
        ),
        _INTERNALS + " (backend_dlib.initialize); kdist.initialize is tested in tests/",
    ),
    f"{DISTRIBUTION_TESTS}::DistributionTest::test_data_shard_id": (
        "patches the private Keras attribute `_process_id` on the distribution; kdist's "
        "data_shard_id reads the num_processes and process_id properties (pinned in "
        "tests/keras_models/test_keras_differential.py)"
    ),
    f"{DISTRIBUTION_TESTS}::DataParallelDistributionTest::test_create_with_list_devices": (
        "mocks the module-level list_devices that Keras's DataParallel calls; kdist's "
        "DataParallel asks kdist.list_devices()"
    ),
    **dict.fromkeys(
        [
            f"{DISTRIBUTION_TESTS}::DataParallelDistributionTest::test_num_model_replicas",
            f"{DISTRIBUTION_TESTS}::ModelParallelDistributionTest::test_num_model_replicas",
            f"{DISTRIBUTION_TESTS}::ModelParallelDistributionTest::test_num_processes_validation",
        ],
        _INTERNALS + " (backend_dlib.num_processes); kdist reads its own job spec",
    ),
    **dict.fromkeys(
        _ids(
            DISTRIBUTION_TESTS,
            "TfDatasetDistributionTest",
            "test_distribute_tf_dataset_multiple_replicas_per_process",
            "test_distribute_tf_dataset_error_not_divisible",
            "test_unsupported_dataset_type",
            "test_unknown_batch_size",
            "test_num_model_replicas_one",
        ),
        "patches the private Keras attributes `_is_multi_process` / `_process_id` to test "
        "Keras's tf.data sharding (distribute_dataset), which kdist does not provide",
    ),
    f"{DISTRIBUTION_TESTS}::DataShardingIntegrationTest::"
    "test_distribute_dataset_sharding_behavior": (
        "sets the private Keras attributes `_num_processes`, `_is_multi_process` and "
        "`_process_id` to test Keras's tf.data sharding, which kdist does not provide"
    ),
    **dict.fromkeys(
        _ids(
            JAX_TESTS,
            "JaxDistributionLibTest",
            "test_get_device_count",
            "test_device_conversion",
            "test_initialize_with_all_job_addresses",
            "test_initialize_validate_job_and_process",
            "test_initialize_with_coordinator_address",
            "test_processes",
            "test_to_backend_mesh",
            "test_to_backend_layout",
            "test_validation_for_device_mesh",
            "test_distribute_data_input",
        ),
        "calls Keras's backend distribution_lib (backend_dlib) directly, not a public name",
    ),
}


@dataclass(frozen=True)
class Difference:
    """A test that fails on a documented difference: the exception it fails with, and why."""

    raises: type[BaseException]
    reason: str


_TUPLES = (
    "DeviceMesh.axis_names is a tuple (Keras returns the list passed); docs/distribution.md "
    "'DeviceMesh.shape / axis_names'"
)
_NO_DATASET = (
    "kdist shards no dataset: Distribution.distribute_dataset is not provided; "
    "docs/distribution.md 'Distribution.distribute_dataset (tf.data)'"
)

DIFFERENCES: dict[str, Difference] = {
    f"{DISTRIBUTION_TESTS}::DeviceMeshTest::test_mesh_creation": Difference(
        AssertionError, _TUPLES
    ),
    f"{DISTRIBUTION_TESTS}::DataParallelDistributionTest::test_create_with_device_mesh": (
        Difference(AssertionError, _TUPLES)
    ),
    f"{DISTRIBUTION_TESTS}::DataParallelDistributionTest::test_create_with_devices": (
        Difference(AssertionError, _TUPLES)
    ),
    f"{DISTRIBUTION_TESTS}::DataParallelDistributionTest::test_distribute_dataset": (
        Difference(AttributeError, _NO_DATASET)
    ),
    f"{DISTRIBUTION_TESTS}::ModelParallelDistributionTest::test_distribute_dataset": (
        Difference(AttributeError, _NO_DATASET)
    ),
    f"{DISTRIBUTION_TESTS}::LayoutMapTest::test_add": Difference(
        AssertionError,
        "a list value such as ['a', 'b'] is accepted like a tuple (Keras documents lists and "
        "refuses them); docs/distribution.md 'List value in LayoutMap'",
    ),
}

# Tests that use tf.data: they skip where TensorFlow is not installed.
NEEDS_TENSORFLOW = frozenset(
    [
        f"{DISTRIBUTION_TESTS}::DataParallelDistributionTest::test_distribute_dataset",
        f"{DISTRIBUTION_TESTS}::ModelParallelDistributionTest::test_distribute_dataset",
        *_ids(
            DISTRIBUTION_TESTS,
            "TfDatasetDistributionTest",
            "test_distribute_tf_dataset_multiple_replicas_per_process",
            "test_distribute_tf_dataset_error_not_divisible",
            "test_unknown_batch_size",
            "test_num_model_replicas_one",
        ),
        f"{DISTRIBUTION_TESTS}::DataShardingIntegrationTest::"
        "test_distribute_dataset_sharding_behavior",
    ]
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--serve",
        choices=("kdist", "keras"),
        default="kdist",
        help="who serves keras.distribution's public names to Keras's tests (default: kdist)",
    )
    parser.addoption(
        "--unpinned",
        action="store_true",
        help="run every test as it is, without the pins (to count what fails, and why)",
    )


def pytest_configure(config: pytest.Config) -> None:
    # Keras itself first: the test files sit under a folder named keras/, which pytest's
    # importlib mode would otherwise take for the package.
    import keras
    import keras.src.distribution
    import keras.src.testing

    if keras.backend.backend() != "jax":
        raise pytest.UsageError(f"Keras runs on {keras.backend.backend()!r}; set KERAS_BACKEND=jax")
    config.stash[_SERVE] = config.getoption("serve")


_SERVE = pytest.StashKey[str]()
_HAS_TENSORFLOW = importlib.util.find_spec("tensorflow") is not None


class _TensorFlowAbsent(types.ModuleType):
    """Stands in for `tensorflow` while a test module is imported, where it is not
    installed: any use fails, saying so (the tests that use it are skipped)."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"tensorflow.{name}: TensorFlow is not installed here; the adapter skips the "
            "tests that use tf.data (tests/keras_upstream/kdist_keras_upstream.py)"
        )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    placed = isinstance(collector, pytest.Module) and not _HAS_TENSORFLOW
    placed = placed and "tensorflow" not in sys.modules
    if placed:
        sys.modules["tensorflow"] = _TensorFlowAbsent("tensorflow")
    try:
        return (yield)
    finally:
        if placed:
            del sys.modules["tensorflow"]


def _served_module(keras_module: types.ModuleType) -> types.ModuleType:
    """`keras_module` with the public names served by kdist."""
    import kdist

    served = types.ModuleType(f"{keras_module.__name__} (public names served by kdist)")
    for name in SERVED_NAMES:
        setattr(served, name, getattr(kdist, name))
    served.initialize = _loopback_only(kdist.initialize)  # type: ignore[attr-defined]
    served.__getattr__ = lambda name: getattr(keras_module, name)  # type: ignore[method-assign]
    return served


def _loopback_only(initialize: Callable[..., Any]) -> Callable[..., Any]:
    """kdist.initialize for the tests, which never start a job: it refuses to run unless
    every job address (given, or in the environment) is on loopback and one process is
    asked for, so that no test can send traffic off the machine or wait for peers."""

    def guarded(
        job_addresses: str | None = None, num_processes: int | None = None, *args: Any, **kw: Any
    ) -> Any:
        import os

        addresses = job_addresses or os.environ.get("KERAS_DISTRIBUTION_JOB_ADDRESSES", "")
        count = num_processes or int(os.environ.get("KERAS_DISTRIBUTION_NUM_PROCESSES", "1"))
        for address in filter(None, addresses.split(",")):
            host = address.rpartition(":")[0].strip("[]")
            if host not in ("127.0.0.1", "localhost", "::1"):
                raise RuntimeError(f"the adapter refuses to initialize toward {address!r}")
        if count != 1:
            raise RuntimeError(f"the adapter refuses to start a job of {count} processes")
        return initialize(job_addresses, num_processes, *args, **kw)

    return guarded


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    serve = config.stash[_SERVE]
    collected = {item.nodeid for item in items}
    stale = sorted((set(NOT_APPLICABLE) | set(DIFFERENCES) | NEEDS_TENSORFLOW) - collected)
    if stale:
        raise pytest.UsageError(f"pinned tests that were not collected: {stale}")
    patched: set[int] = set()
    for item in items:
        if not _HAS_TENSORFLOW and item.nodeid in NEEDS_TENSORFLOW:
            item.add_marker(pytest.mark.skip(reason="uses tf.data; TensorFlow is not installed"))
            continue
        if serve != "kdist":
            continue
        module = item.module  # type: ignore[attr-defined]
        if id(module) not in patched and hasattr(module, "distribution_lib"):
            module.distribution_lib = _served_module(module.distribution_lib)
            patched.add(id(module))
        if config.getoption("unpinned"):
            continue
        if item.nodeid in NOT_APPLICABLE:
            item.add_marker(
                pytest.mark.skip(reason=f"not applicable: {NOT_APPLICABLE[item.nodeid]}")
            )
        elif item.nodeid in DIFFERENCES:
            difference = DIFFERENCES[item.nodeid]
            item.add_marker(
                pytest.mark.xfail(
                    reason=f"documented difference: {difference.reason}",
                    raises=difference.raises,
                    strict=True,
                )
            )


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Each test leaves no distribution behind, kdist's or Keras's."""
    if item.config.stash[_SERVE] == "kdist":
        import kdist

        kdist.set_distribution(None)
    import keras

    keras.distribution.set_distribution(None)
