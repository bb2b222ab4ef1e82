"""Runs inside one process with N CPU devices: warm per-call times of the device queries.

Prints one JSON object: contender -> list of counted per-call microseconds.
"""

from __future__ import annotations

import json
import sys
import timeit

import jax
import keras

import kdist

runs = int(sys.argv[1])
calls = {
    "kdist.list_devices()": kdist.list_devices,
    "keras list_devices()": keras.distribution.list_devices,
    "jax.devices()": jax.devices,
    "kdist.get_device_count()": kdist.get_device_count,
    "keras get_device_count()": keras.distribution.get_device_count,
}
for call in calls.values():  # warm: backend up, caches filled
    call()

loops = 2000
samples: dict[str, list[float]] = {name: [] for name in calls}
for round_index in range(1 + runs):
    for name, call in calls.items():
        seconds = timeit.timeit(call, number=loops)
        if round_index > 0:
            samples[name].append(seconds / loops * 1e6)
print(json.dumps(samples))
