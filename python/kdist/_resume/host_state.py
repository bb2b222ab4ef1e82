"""The host's random state, which Keras's data adapters draw from: Python's `random`
(a PyDataset's order with shuffle=True) and NumPy's global generator (NumPy arrays with
shuffle=True or "batch"), as JSON.

A backup made in the middle of an epoch keeps the state as it was when that epoch began,
before the epoch drew its order; one made at an epoch's end keeps the state then. Put
back when the resumed epoch begins, the epoch draws the same order again.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np


def capture() -> dict[str, object]:
    """This process's Python and NumPy random states."""
    version, internal, gauss = random.getstate()
    name, keys, position, has_gauss, cached = np.random.get_state(legacy=True)
    return {
        "python_random": [version, list(internal), gauss],
        "numpy_random": [
            str(name),
            [int(k) for k in keys],
            int(position),
            int(has_gauss),
            float(cached),
        ],
    }


def restore(state: Mapping[str, Any]) -> None:
    """Puts back what `capture` recorded."""
    version, internal, gauss = state["python_random"]
    random.setstate((int(version), tuple(int(n) for n in internal), gauss))
    name, keys, position, has_gauss, cached = state["numpy_random"]
    np.random.set_state(
        (str(name), np.array(keys, dtype=np.uint32), int(position), int(has_gauss), float(cached))
    )
