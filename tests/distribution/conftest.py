"""Fixtures of the distribution wing's tests."""

from __future__ import annotations

from typing import Any

import pytest

import kdist


@pytest.fixture
def mesh_2x4(jax_cpu: Any) -> kdist.DeviceMesh:
    """A 2 x 4 mesh ("batch", "model") of this process's 8 CPU devices."""
    return kdist.DeviceMesh((2, 4), ["batch", "model"])


@pytest.fixture
def layout_map(mesh_2x4: kdist.DeviceMesh) -> kdist.LayoutMap:
    """Dense kernels and biases split over "model", a conv kernel's last dimension too."""
    layout_map = kdist.LayoutMap(mesh_2x4)
    layout_map[".*dense.*kernel"] = (None, "model")
    layout_map[".*dense.*bias"] = ("model",)
    layout_map[".*conv2d.*kernel"] = (None, None, None, "model")
    return layout_map
