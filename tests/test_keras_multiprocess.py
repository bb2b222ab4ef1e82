"""Keras 3 models trained across real processes started through kdist.

Two processes x two CPU devices on loopback, real jax.distributed, real Keras on its JAX
backend (tests/workers/keras_fit.py). Every process must end with the same losses and the
same replicated weights, which needs the job-wide seed that kdist.initialize() agrees on.
"""

from __future__ import annotations

from typing import Any

import pytest

from support import NEEDS_KERAS, run_cluster

pytestmark = [pytest.mark.multiprocess, pytest.mark.compat, NEEDS_KERAS]

# Seconds for a whole 2-process job: two Keras imports and compilations on two cores.
JOB_TIMEOUT = 240
USER_SEED = 20261130


def train(scenario: str, *extra: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    finished = run_cluster(
        "keras_fit.py",
        2,
        timeout=JOB_TIMEOUT,
        extra_env={
            "KERAS_BACKEND": "jax",
            "KERAS_HOME": "/tmp/kdist-test-keras-home",
            **(env or {}),
        },
        args=(scenario, *extra),
    )
    for process in finished:
        assert process.returncode == 0, process.describe()
    return [process.report() for process in finished]


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
