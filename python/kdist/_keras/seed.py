"""Keras's side of the job seed: the program's own seed, and `keras.utils.set_random_seed`."""

from __future__ import annotations

from kdist._keras.loaded import keras_module


def program_seed() -> int | None:
    """The seed the program set with `keras.utils.set_random_seed`, or None (also when
    Keras is not imported). Keras's own `initialize()` keeps such a seed."""
    if keras_module() is None:
        return None
    from keras.src.utils import rng_utils  # type: ignore[import-untyped]

    seed = rng_utils.get_random_seed()
    return seed if isinstance(seed, int) else None


def set_random_seed(seed: int) -> bool:
    """`keras.utils.set_random_seed(seed)` when Keras is imported (it seeds Python's
    `random`, NumPy, and resets Keras's global SeedGenerator); False when it is not."""
    keras = keras_module()
    if keras is None:
        return False
    keras.utils.set_random_seed(seed)
    return True
