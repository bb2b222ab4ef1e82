"""Figure 2: warm list_devices() / get_device_count() per-call time, 1 and 8 CPU devices."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.environment import child_env
from benchmarks.harness import Figure, Series

CHILD = Path(__file__).with_name("_device_listing_child.py")


def measure(runs: int) -> list[Figure]:
    figures = []
    for devices in (1, 8):
        out = subprocess.run(
            [sys.executable, str(CHILD), str(runs)],
            env=child_env(devices),
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        ).stdout
        samples: dict[str, list[float]] = json.loads(out.strip().splitlines()[-1])
        figures.append(
            Figure(
                f"list_devices_{devices}",
                f"Warm device queries, {devices} CPU device{'s' if devices > 1 else ''} (per call)",
                [Series(name, "µs", values) for name, values in samples.items()],
                baseline="keras list_devices()",
                notes=["Target: warm `kdist.list_devices()` (8 devices) ≤ 0.2× Keras's."]
                if devices == 8
                else [],
            )
        )
    return figures
