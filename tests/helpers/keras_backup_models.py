"""The in-process resume tests' small Keras model (dropout, Adam), its data, a crash in the
middle of a fit, and the wait for backups still being written: shared by
tests/resume/test_backup_and_restore.py and test_backup_storage.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import kdist

SEED = 1234
EPOCHS = 3
ROWS, BATCH = 128, 8  # 16 batches per epoch


def data_parallel() -> Any:
    return kdist.DataParallel()


def build(
    keras: Any,
    distribution: Callable[[], Any] = data_parallel,
    units: int = 16,
    seed: int = SEED,
) -> Any:
    """A model with dropout (a seed generator) and Adam (an iteration counter and slots),
    placed by `distribution()`, with `seed` in force."""
    made = distribution()
    if isinstance(made, kdist.Distribution):
        kdist.set_distribution(made)
    else:
        keras.distribution.set_distribution(made)
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(units, activation="relu", name="dense_in"),
            keras.layers.Dropout(0.25),
            keras.layers.Dense(4, name="dense_out"),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    return model


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (
        rng.normal(size=(ROWS, 8)).astype("float32"),
        rng.normal(size=(ROWS, 4)).astype("float32"),
    )


class Crash(Exception):
    pass


def crash_after(keras: Any, batches: int) -> Any:
    class CrashAfter(keras.callbacks.Callback):  # type: ignore[misc, name-defined]
        """Raises after `batches` batches of this fit (a process that dies)."""

        def __init__(self) -> None:
            super().__init__()
            self.seen = 0

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.seen += 1
            if self.seen == batches:
                raise Crash(f"after {batches} batches")

    return CrashAfter()


def settled() -> None:
    """Waits for the saves in flight in this process (a crashed fit's last one goes on
    in the background until it is committed)."""
    from kdist._resume import background

    background.wait_all()
