"""Whether the program has imported Keras, and whether it runs on JAX.

Never imports Keras, except `import_keras`, for kdist's names that are Keras classes
themselves (`kdist.BackupAndRestore` is a `keras.callbacks.BackupAndRestore`): asking
for one of them is asking for Keras.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import ModuleType

_warned_backend: set[str] = set()


def keras_module() -> ModuleType | None:
    """Keras when the program has imported it (fully: not while it is still
    loading); else None. Never imports Keras."""
    keras = sys.modules.get("keras")
    if keras is None or not hasattr(keras, "distribution") or not hasattr(keras, "utils"):
        return None
    return keras


def keras_on_jax() -> ModuleType | None:
    """Keras when imported and running on its JAX backend. Warns once when it runs on
    another backend, which kdist's distributions cannot drive."""
    keras = keras_module()
    if keras is None:
        return None
    backend = str(keras.backend.backend())
    if backend == "jax":
        return keras
    if backend not in _warned_backend:
        _warned_backend.add(backend)
        warnings.warn(
            f"Keras runs on its {backend!r} backend, so kdist's distributions do not place its "
            "variables or batches (kdist drives Keras only on the JAX backend). Set "
            "KERAS_BACKEND=jax before importing keras.",
            UserWarning,
            stacklevel=4,
        )
    return None


def require_keras() -> ModuleType:
    """Keras, which the caller knows is imported.

    Raises:
        RuntimeError: it is not (a bug in the bridge's caller).
    """
    keras = keras_module()
    if keras is None:
        raise RuntimeError("the Keras bridge was used before Keras was imported")
    return keras


def import_keras(needed_by: str) -> ModuleType:
    """Keras on its JAX backend, imported now if the program has not imported it yet (with
    `KERAS_BACKEND` unset, it is set to "jax" first: kdist drives Keras only on JAX).

    Args:
        needed_by: The kdist name that needs Keras ("kdist.BackupAndRestore").

    Raises:
        ImportError: Keras is not installed (the message says how to install it).
        RuntimeError: Keras was imported on another backend than JAX.
    """
    if "keras" not in sys.modules:
        os.environ.setdefault("KERAS_BACKEND", "jax")
    try:
        keras = importlib.import_module("keras")
    except ImportError as error:
        raise ImportError(
            f"{needed_by} is a Keras callback and needs Keras 3 on its JAX backend: "
            f"pip install 'kdist[keras]' (or keras>=3.15). Importing keras failed: {error}"
        ) from error
    backend = str(keras.backend.backend())
    if backend != "jax":
        raise RuntimeError(
            f"{needed_by} needs Keras on its JAX backend, but Keras runs on its {backend!r} "
            "backend. Set KERAS_BACKEND=jax before importing keras."
        )
    return keras
