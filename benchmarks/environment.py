"""The environment every benchmark child runs in: JAX on CPU, Keras on JAX, no cluster settings."""

from __future__ import annotations

import os

_SETTING_PREFIXES = ("KERAS_DISTRIBUTION_", "KDIST_", "JAX_", "XLA_", "KERAS_BACKEND")


def child_env(cpu_devices: int = 1, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SETTING_PREFIXES)}
    env.update(
        JAX_PLATFORMS="cpu",
        JAX_NUM_CPU_DEVICES=str(cpu_devices),
        KERAS_BACKEND="jax",
        PYTHONDONTWRITEBYTECODE="1",
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    env.update(extra)
    return env
