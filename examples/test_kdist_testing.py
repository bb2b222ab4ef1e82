"""Multi-process code tested with pytest on one machine: the examples of docs/testing.md.

    python -m pytest examples/test_kdist_testing.py

Each test starts a real job of 4 (or 2) processes on JAX's CPU backend, in seconds.
"""

import numpy as np
import pytest

import kdist
from kdist.testing import run_job


def global_sum(rows_per_device: int) -> float:
    """One process's part: its own rows, one global batch over every device, a jitted sum."""
    import jax
    import jax.numpy as jnp

    me = kdist.cluster_spec().process_id
    rows = rows_per_device * jax.local_device_count()
    local = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) + 100 * me
    batch = kdist.distribute_batch(local, kdist.DataParallel())  # rows x 4 processes
    return float(jax.jit(jnp.sum)(batch))


def test_a_sharded_sum_over_4_processes_matches_numpy():
    totals = run_job(global_sum, 2, num_processes=4, devices_per_process=2)
    local = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)  # 2 rows x 2 devices
    expected = sum(float((local + 100 * me).sum()) for me in range(4))
    assert totals == [expected] * 4  # every process computed the whole sum


@pytest.mark.kdist_job(num_processes=4, devices_per_process=2)
def test_every_process_sees_the_whole_global_batch():
    import jax

    me = kdist.cluster_spec().process_id
    local = np.full((2 * jax.local_device_count(), 3), me, dtype=np.float32)
    batch = kdist.distribute_batch(local, kdist.DataParallel())
    assert batch.shape == (16, 3)
    assert float(jax.jit(lambda b: b.sum())(batch)) == 12 * (0 + 1 + 2 + 3)


def train(epochs: int) -> list[float]:
    """One process's part of a Keras fit: DataParallel, its own half of the data."""
    import keras

    kdist.set_distribution(kdist.DataParallel())
    spec = kdist.cluster_spec()
    x = np.linspace(-1.0, 1.0, 32 * 4, dtype="float32").reshape(32, 4)
    y = x @ np.array([[0.5], [-1.0], [2.0], [0.25]], dtype="float32")
    half = slice(spec.process_id * 16, (spec.process_id + 1) * 16)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    history = model.fit(x[half], y[half], batch_size=4, epochs=epochs, shuffle=False, verbose=0)
    return history.history["loss"]


def test_keras_fit_on_2_processes_gives_both_the_same_losses():
    losses = run_job(
        train,
        3,
        num_processes=2,
        devices_per_process=2,
        timeout=240,
        env={"KERAS_BACKEND": "jax"},
    )
    assert losses[0] == losses[1]  # one model, trained by both processes together
    assert losses[0][-1] < losses[0][0]
