"""Keras 3 models trained across real processes started through kdist.

Two processes x two CPU devices on loopback, real jax.distributed, real Keras on its JAX
backend (`fit` below, run in each process by kdist.testing.run_job). Every process must
end with the same losses and the same replicated weights, which needs the job-wide seed
that kdist.initialize() agrees on. `fit` starts the job itself (run_job's
initialize=False): the scenarios differ in what comes before the start, and one starts
it with Keras alone. This module imports neither Keras nor JAX: each scenario decides
when they are imported.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from helpers.support import NEEDS_KERAS
from kdist.testing import run_job

pytestmark = [pytest.mark.multiprocess, pytest.mark.compat, NEEDS_KERAS]

# Seconds for a whole 2-process job: two Keras imports and compilations on two cores.
JOB_TIMEOUT = 240
USER_SEED = 20261130
SCENARIOS = ("keras_dp", "keras_dp_late", "kdist_set", "kdist_scope", "kdist_mp", "keras_reference")


def fit(scenario: str, user_seed: int | None) -> dict[str, Any]:
    """Trains a small Keras model (JAX backend) in this process of the job; its report.

    The scenarios differ only in how the job starts and which distribution places the
    model:

    - keras_dp:         kdist.initialize(), then Keras's own DataParallel
    - keras_dp_late:    the same, with Keras imported only after kdist.initialize()
    - kdist_set:        kdist.set_distribution(kdist.DataParallel())
    - kdist_scope:      with kdist.DataParallel().scope(): build and fit
    - kdist_mp:         kdist.ModelParallel with the Dense kernels split on "model"
    - keras_reference:  keras.distribution.initialize() and Keras's DataParallel (no kdist)

    With `user_seed`, the program calls keras.utils.set_random_seed(user_seed) first.
    Each process trains on its own half of one global data set.
    """
    import hashlib

    import jax
    import numpy as np

    late_import = scenario == "keras_dp_late"

    if not late_import:
        import keras

        if user_seed is not None:
            keras.utils.set_random_seed(user_seed)

    if scenario == "keras_reference":
        keras.distribution.initialize()
        keras_after_initialize = True
    else:
        import kdist

        kdist.initialize()
        keras_after_initialize = "keras" in sys.modules
        if late_import:
            import keras

    process_id, num_processes = jax.process_index(), jax.process_count()

    # One global data set; each process feeds its own contiguous half, batch by batch.
    rows = 32
    features = np.linspace(-1.0, 1.0, rows * 4, dtype="float32").reshape(rows, 4)
    targets = (features @ np.array([[0.5], [-1.0], [2.0], [0.25]], dtype="float32")) + 0.1
    mine = slice(process_id * rows // num_processes, (process_id + 1) * rows // num_processes)

    def build() -> Any:
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(8, activation="relu", name="dense_in"),
                keras.layers.Dense(1, name="dense_out"),
            ]
        )
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
        return model

    def train(model: Any) -> list[float]:
        """Trains, then evaluates (under the same distribution): the epoch losses, then
        the evaluation's loss."""
        history = model.fit(
            features[mine], targets[mine], batch_size=4, epochs=3, shuffle=False, verbose=0
        )
        evaluated = model.evaluate(features[mine], targets[mine], batch_size=4, verbose=0)
        return [float(loss) for loss in history.history["loss"]] + [float(evaluated)]

    keras_distribution_type = None

    def keras_view_of(strategy: Any) -> str:
        """Which public Keras class Keras's current distribution is, when it presents
        `strategy`."""
        current = keras.distribution.distribution()
        assert current.kdist_distribution is strategy, current
        for name in ("ModelParallel", "DataParallel"):
            if isinstance(current, getattr(keras.distribution, name)):
                return name
        return type(current).__name__

    if scenario in ("keras_dp", "keras_dp_late", "keras_reference"):
        keras.distribution.set_distribution(
            keras.distribution.DataParallel(auto_shard_dataset=False)
        )
        model = build()
        losses = train(model)
    elif scenario == "kdist_set":
        strategy = kdist.DataParallel()
        kdist.set_distribution(strategy)
        keras_distribution_type = keras_view_of(strategy)
        model = build()
        losses = train(model)
    elif scenario == "kdist_scope":
        with kdist.DataParallel().scope() as strategy:
            keras_distribution_type = keras_view_of(strategy)
            model = build()
            losses = train(model)
        assert keras.distribution.distribution() is None
    elif scenario == "kdist_mp":
        mesh = kdist.DeviceMesh((2, 2), ("batch", "model"))
        layout_map = kdist.LayoutMap(mesh)
        layout_map[".*/dense_in/kernel"] = (None, "model")
        layout_map[".*/dense_out/kernel"] = ("model", None)
        strategy = kdist.ModelParallel(layout_map=layout_map)
        kdist.set_distribution(strategy)
        keras_distribution_type = keras_view_of(strategy)
        model = build()
        losses = train(model)
    else:
        raise ValueError(f"unknown scenario {scenario!r}; expected one of {SCENARIOS}")

    *losses, evaluate_loss = losses
    kernel = model.get_layer("dense_in").kernel.value
    replicated = {}
    for variable in model.weights:
        value = variable.value
        if value.is_fully_replicated:
            replicated[variable.path] = hashlib.sha256(np.asarray(value).tobytes()).hexdigest()

    report: dict[str, Any] = {
        "process_id": process_id,
        "scenario": scenario,
        "losses": losses,
        "evaluate_loss": evaluate_loss,
        "replicated_weights": replicated,
        "kernel_devices": len(kernel.sharding.device_set),
        "kernel_spec": [str(axis) for axis in kernel.sharding.spec],
        "kernel_local_shards": [list(shard.data.shape) for shard in kernel.addressable_shards],
        "keras_after_initialize": keras_after_initialize,
        "keras_distribution_type": keras_distribution_type,
    }
    if scenario != "keras_reference":
        spec = kdist.cluster_spec()
        report["seed"] = spec.seed
        report["seed_source"] = spec.sources["seed"]
    return report


def train(scenario: str, *extra: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return run_job(
        fit,
        scenario,
        int(extra[0]) if extra else None,
        num_processes=2,
        devices_per_process=2,
        timeout=JOB_TIMEOUT,
        env={
            "KERAS_BACKEND": "jax",
            "KERAS_HOME": "/tmp/kdist-test-keras-home",
            **(env or {}),
        },
        initialize=False,
    )


def assert_one_model(reports: list[dict[str, Any]]) -> None:
    """Both processes trained one model: same losses, same replicated weights."""
    first, second = reports
    assert len(first["losses"]) == 3
    assert first["losses"] == second["losses"]
    assert first["evaluate_loss"] == second["evaluate_loss"]
    assert first["replicated_weights"] == second["replicated_weights"]
    assert first["replicated_weights"], "no replicated variable was reported"


def assert_data_parallel(reports: list[dict[str, Any]]) -> None:
    """Variables replicated over all four devices of the job."""
    assert_one_model(reports)
    for report in reports:
        assert report["kernel_devices"] == 4
        assert report["kernel_spec"] == ["None", "None"]
        assert "sequential/dense_in/kernel" in report["replicated_weights"]


def assert_job_seed(reports: list[dict[str, Any]], source: str) -> None:
    assert reports[0]["seed"] == reports[1]["seed"]
    assert {report["seed_source"] for report in reports} == {source}


def test_kdist_initialize_is_a_drop_in_for_keras_data_parallel() -> None:
    reports = train("keras_dp")
    assert_data_parallel(reports)
    assert_job_seed(reports, "roll call: process 0's seed")


def test_keras_imported_after_initialize_draws_the_same_weights() -> None:
    reports = train("keras_dp_late")
    assert_data_parallel(reports)
    assert_job_seed(reports, "roll call: process 0's seed")
    assert [report["keras_after_initialize"] for report in reports] == [False, False]


def test_without_the_roll_call_the_seed_travels_in_jax_key_value_store() -> None:
    reports = train("keras_dp", env={"KDIST_PREFLIGHT": "0"})
    assert_data_parallel(reports)
    assert_job_seed(reports, "key-value store: process 0's seed")


def test_kdist_set_distribution_places_keras_variables() -> None:
    reports = train("kdist_set")
    assert_data_parallel(reports)
    assert {report["keras_distribution_type"] for report in reports} == {"DataParallel"}


def test_kdist_scope_places_keras_variables() -> None:
    reports = train("kdist_scope")
    assert_data_parallel(reports)
    assert {report["keras_distribution_type"] for report in reports} == {"DataParallel"}


def test_kdist_model_parallel_splits_the_kernel_across_processes() -> None:
    reports = train("kdist_mp")
    assert_one_model(reports)
    assert {report["keras_distribution_type"] for report in reports} == {"ModelParallel"}
    for report in reports:
        assert report["kernel_devices"] == 4
        assert report["kernel_spec"] == ["None", "model"]
        # dense_in/kernel is (4, 8): each device holds half of its columns.
        assert report["kernel_local_shards"] == [[4, 4], [4, 4]]
        assert "sequential/dense_in/kernel" not in report["replicated_weights"]
        assert "sequential/dense_in/bias" in report["replicated_weights"]


def test_same_seed_and_data_give_keras_s_own_losses() -> None:
    """With the program's own seed, a model under kdist trains exactly as under
    keras.distribution.initialize() and Keras's DataParallel (both run here)."""
    keras_side = train("keras_reference", str(USER_SEED))
    kdist_side = train("kdist_set", str(USER_SEED))
    assert_one_model(keras_side)
    assert_one_model(kdist_side)
    assert kdist_side[0]["losses"] == keras_side[0]["losses"]
    assert kdist_side[0]["replicated_weights"] == keras_side[0]["replicated_weights"]
    assert {report["seed"] for report in kdist_side} == {USER_SEED}
    assert {report["seed_source"] for report in kdist_side} == {
        "keras.utils.set_random_seed (the program's own, kept)"
    }
