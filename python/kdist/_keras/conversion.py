"""Keras -> kdist: Keras meshes, layout maps and distributions as kdist's own.

The one conversion path. `kdist.set_distribution(keras_distribution)`,
`kdist.DataParallel(device_mesh=keras_mesh)`, `kdist.ModelParallel(layout_map=
keras_map)`, `kdist.LayoutMap(keras_mesh)` and `kdist.TensorLayout(axes, keras_mesh)`
all convert here, with the same rules:

- a Keras `DeviceMesh` becomes the kdist mesh of its shape, axis names and devices,
  checked as any kdist mesh is (the same kdist mesh each time for one Keras mesh, so
  the layouts of one Keras mesh share one kdist mesh); a kdist mesh made while Keras
  was loaded is a Keras mesh already and stays itself, and a view of a kdist mesh
  gives back the mesh it presents;
- a Keras `LayoutMap` becomes a kdist `LayoutMap` on its (converted) mesh with each
  key's axes, in order, as the map holds them when it is converted (later changes to
  the Keras map are not seen);
- a Keras `DataParallel` or `ModelParallel` becomes its kdist equivalent (built by
  `_distribution.current`, which sits above the bridge, from `KerasDistributionParts`);
  another kind of Keras distribution is refused with `kdist.ArgumentTypeError`.

The layout types sit below the bridge and may not import it, so they ask it through
`_state.keras_bridge()`, which `install()` registers (kdist/_keras/__init__.py calls it
when the bridge is loaded).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TypeVar

from kdist import _state
from kdist._errors import ArgumentTypeError
from kdist._keras.loaded import keras_module
from kdist._keras.views import KdistDistribution, keras_readable_mesh_class, view_classes
from kdist._layouts.device_mesh import DeviceMesh, as_kdist_mesh
from kdist._layouts.layout_map import LayoutMap

_T = TypeVar("_T")
_lock = threading.Lock()
# The kdist mesh each Keras mesh was converted to (one per Keras mesh).
_meshes: weakref.WeakKeyDictionary[object, DeviceMesh] = weakref.WeakKeyDictionary()


def kdist_mesh(value: object, where: str) -> DeviceMesh | None:
    """The kdist mesh equivalent to `value` when it is a `keras.distribution.DeviceMesh`
    (kdist's own mesh when `value` is one, or a view of one); None when it is not a
    Keras mesh (or Keras is not imported).

    Raises:
        ValueError: the Keras mesh does not make a valid kdist mesh (a device that
            does not exist, a repeated device or axis name); the message says
            where it came from.
    """
    if isinstance(value, DeviceMesh):
        return value
    keras = keras_module()
    if keras is None or not isinstance(value, keras.distribution.DeviceMesh):
        return None
    source = getattr(value, "kdist_mesh", None)  # a view of a kdist mesh
    if isinstance(source, DeviceMesh):
        return source
    with _lock:
        converted = _meshes.get(value)
    if converted is not None:
        return converted
    try:
        made = DeviceMesh(tuple(value.shape), list(value.axis_names), list(value.devices.flatten()))
    except ValueError as error:
        raise type(error)(
            f"{where}: the Keras DeviceMesh {value!r} converts to no kdist DeviceMesh: {error}"
        ) from error
    with _lock:
        return _meshes.setdefault(value, made)


def kdist_layout_map(value: object, where: str) -> LayoutMap | None:
    """The kdist LayoutMap equivalent to `value` when it is a `keras.distribution.LayoutMap`
    (kdist's own when `value` is one); None when it is not a Keras layout map.

    Raises:
        kdist.ArgumentTypeError: the Keras map has no DeviceMesh.
        ValueError: its mesh converts to no kdist mesh, or a key is not a valid
            regular expression (kdist checks keys when they are inserted).
    """
    if isinstance(value, LayoutMap):
        return value
    keras = keras_module()
    if keras is None or not isinstance(value, keras.distribution.LayoutMap):
        return None
    mesh = as_kdist_mesh(value.device_mesh, f"{where} (the Keras LayoutMap's mesh)")
    converted = LayoutMap(mesh)
    for key in value:
        converted[key] = tuple(value[key].axes)
    return converted


def backend_layout_of_keras_layout(value: object) -> object | None:
    """The JAX sharding of a `keras.distribution.TensorLayout` (Keras's own
    `backend_layout`, the kdist one for a view); None when `value` is not one."""
    keras = keras_module()
    if keras is None or not isinstance(value, keras.distribution.TensorLayout):
        return None
    sharding: object = value.backend_layout
    return sharding


@dataclass(frozen=True)
class KerasDistributionParts:
    """A `keras.distribution` DataParallel or ModelParallel, converted part by part."""

    device_mesh: DeviceMesh
    layout_map: LayoutMap | None  # ModelParallel's; None for DataParallel
    batch_dim_name: str | None
    auto_shard_dataset: bool


def describe_keras_distribution(value: object) -> KerasDistributionParts | KdistDistribution | None:
    """What `value` is made of, converted, when it is a Keras DataParallel or
    ModelParallel; the kdist distribution itself when `value` is a view of one; None
    when it is not a Keras distribution (or Keras is not imported).

    Raises:
        kdist.ArgumentTypeError: `value` is another kind of Keras distribution.
        ValueError: its mesh or layout map does not convert (see above).
    """
    keras = keras_module()
    if keras is None:
        return None
    classes = view_classes(keras)
    if isinstance(value, classes.view):
        source: KdistDistribution = value.kdist_distribution
        return source
    if not isinstance(value, classes.base):
        return None
    kd = keras.distribution
    if not isinstance(value, (kd.ModelParallel, kd.DataParallel)):
        raise ArgumentTypeError(
            "set_distribution: kdist converts keras.distribution.DataParallel and "
            f"ModelParallel, not a {type(value).__name__}. Received: {value!r}. Set it with "
            "keras.distribution.set_distribution() instead, or express it as a kdist "
            "Distribution subclass."
        )
    where = f"set_distribution (a Keras {type(value).__name__})"
    layout_map = None
    if isinstance(value, kd.ModelParallel):
        # No public accessor for the map; pinned by tests/keras_models/test_keras_bridge.py.
        layout_map = kdist_layout_map(value._layout_map, where)
        mesh = layout_map.device_mesh if layout_map is not None else None
    else:
        mesh = kdist_mesh(value.device_mesh, where)
    return KerasDistributionParts(
        device_mesh=as_kdist_mesh(mesh, where),
        layout_map=layout_map,
        batch_dim_name=value.batch_dim_name,
        auto_shard_dataset=bool(value.auto_shard_dataset),
    )


class _LayoutsBridge:
    """The bridge as the layout types see it (`_state.KerasBridge`)."""

    def mesh_class(self, cls: type[_T]) -> type[_T]:
        return keras_readable_mesh_class(cls)

    def kdist_mesh(self, value: object, where: str) -> object | None:
        return kdist_mesh(value, where)


def install() -> None:
    """Registers the bridge for the layout types to ask (`_state.keras_bridge()`)."""
    if not isinstance(_state.keras_bridge(), _LayoutsBridge):
        _state.set_keras_bridge(_LayoutsBridge())
