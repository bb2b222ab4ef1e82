"""The job-wide random seed: chosen by process 0, applied in every process.

Keras's `initialize()` agrees on a seed across processes (a sum over every
process's CPU devices) and then calls `keras.utils.set_random_seed`, because
every process must draw the same initial weights: JAX refuses a model whose
replicated variables differ between processes. Keras draws its default seeds
(initializers, its global SeedGenerator) from Python's `random`, and programs
draw from NumPy's global generator; `set_random_seed` seeds both.

kdist agrees on the seed without a collective: process 0 chooses it and the
roll call's "go" carries it (no extra round trip); without the roll call it
travels through one key of JAX's key-value store. Every process then seeds
Keras when the program imported it, else Python's `random` and NumPy (what
Keras's default seeding draws from, so Keras imported later agrees too).
A seed the program set itself with `keras.utils.set_random_seed` is kept, as
Keras keeps it.
"""

from __future__ import annotations

import random
import secrets
import warnings

from kdist._keras import seed as keras_seed

# The key of the seed in JAX's key-value store (when the roll call is off).
KEY_VALUE_STORE_KEY = "kdist/job_seed"
_SEED_RANGE = 2**32  # Keras's seeds are uint32 (as its initialize_rng makes them)
# The seed kdist last gave Keras: Keras then reports it as set, but it is not the program's.
_applied_to_keras: int | None = None


def _program_seed() -> int | None:
    """The seed the program itself set with keras.utils.set_random_seed, if any."""
    seed = keras_seed.program_seed()
    return None if seed is None or seed == _applied_to_keras else seed


def choose() -> int:
    """Process 0's choice of the job seed: the program's own Keras seed, else a fresh one."""
    own = _program_seed()
    return own if own is not None else secrets.randbelow(_SEED_RANGE)


def apply(seed: int, source: str, process_id: int) -> tuple[int, str]:
    """Seeds this process with the job seed, unless the program set its own.

    Returns:
        (seed in force, its source): the program's own seed when it set one
        with `keras.utils.set_random_seed`, else `(seed, source)`.
    """
    global _applied_to_keras
    own = _program_seed()
    if own is not None:
        if own != seed:
            warnings.warn(
                f"process {process_id} keeps the seed {own} that it set with "
                f"keras.utils.set_random_seed, while the job's seed is {seed} ({source}). "
                "Processes with different seeds draw different initial weights, which JAX "
                "refuses for replicated variables. Set the same seed in every process, or "
                "none and let kdist.initialize() agree on one.",
                UserWarning,
                stacklevel=3,
            )
        return own, "keras.utils.set_random_seed (the program's own, kept)"
    if keras_seed.set_random_seed(seed):
        _applied_to_keras = seed
    else:
        import numpy as np

        random.seed(seed)
        np.random.seed(seed)
    return seed, source
