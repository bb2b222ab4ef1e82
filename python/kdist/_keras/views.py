"""kdist objects as Keras sees them (views), and Keras distributions as plain parts.

A view is an object of Keras's own distribution classes (so every `isinstance`
check in Keras holds) whose answers come from the kdist object it presents: the
same `jax.sharding.Mesh`, the same `NamedSharding`s. The bridge reads kdist
distributions only through `KdistDistribution`, the protocol below, so it never
imports the distribution types (which sit above it and use it).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar, Protocol

from kdist._errors import ArgumentTypeError
from kdist._keras.loaded import keras_module, require_keras
from kdist._layouts.device_mesh import DeviceMesh
from kdist._layouts.tensor_layout import TensorLayout


class KdistDistribution(Protocol):
    """What the bridge reads of a kdist distribution (`kdist.Distribution` has it all)."""

    # The keras.distribution class Keras sees it as: "DataParallel", "ModelParallel",
    # or "Distribution" (Keras's base class).
    KERAS_CLASS: ClassVar[str]

    @property
    def device_mesh(self) -> DeviceMesh: ...
    @property
    def batch_dim_name(self) -> str | None: ...
    @property
    def num_processes(self) -> int: ...
    @property
    def process_id(self) -> int: ...
    @property
    def num_model_replicas(self) -> int: ...
    @property
    def auto_shard_dataset(self) -> bool: ...
    @auto_shard_dataset.setter
    def auto_shard_dataset(self, value: bool) -> None: ...
    def get_data_layout(self, data_shape: Sequence[int]) -> TensorLayout: ...
    def get_variable_layout(self, variable: Any) -> Any: ...
    def get_tensor_layout(self, path: str) -> TensorLayout | None: ...


_lock = threading.RLock()
# Keras view of each kdist object (DeviceMesh, TensorLayout, distribution), made once.
_views: weakref.WeakKeyDictionary[object, Any] = weakref.WeakKeyDictionary()
# The Keras distribution a kdist one was converted from: Keras gets its own object back.
_converted_from: weakref.WeakKeyDictionary[object, Any] = weakref.WeakKeyDictionary()
_classes: _ViewClasses | None = None  # for the keras module imported (made once)


class _ViewClasses:
    """The Keras subclasses that present kdist objects to Keras, made once per Keras."""

    def __init__(self, keras: ModuleType) -> None:
        kd = keras.distribution
        base = next(c for c in kd.DataParallel.__mro__ if c.__name__ == "Distribution")

        class KdistDeviceMesh(kd.DeviceMesh):  # type: ignore[misc, name-defined]
            """A kdist.DeviceMesh as Keras sees it: its shape, axis names, devices and
            the very same `jax.sharding.Mesh`."""

            def __init__(self, mesh: DeviceMesh) -> None:
                super().__init__(mesh.shape, list(mesh.axis_names), mesh.devices)
                self.kdist_mesh = mesh

            @property
            def backend_mesh(self) -> Any:
                return self.kdist_mesh.backend_mesh

        class KdistTensorLayout(kd.TensorLayout):  # type: ignore[misc, name-defined]
            """A kdist.TensorLayout as Keras sees it: its axes, its mesh's view, and the
            very same `jax.sharding.NamedSharding` (so a dimension split over several
            mesh axes, which Keras cannot express, still works)."""

            def __init__(self, layout: TensorLayout) -> None:
                super().__init__(layout.axes)  # no mesh here: Keras would reject tuple axes
                self.kdist_layout = layout

            @property
            def device_mesh(self) -> Any:
                mesh = self.kdist_layout.device_mesh
                return None if mesh is None else view_of_mesh(mesh)

            @property
            def backend_layout(self) -> Any:
                return self.kdist_layout.backend_layout

        class ViewOfKdist:
            """Keras's distribution API, answered by a kdist Distribution."""

            def __init__(self, source: KdistDistribution) -> None:
                base.__init__(self, view_of_mesh(source.device_mesh), source.batch_dim_name)
                self.kdist_distribution = source
                self._num_processes = source.num_processes
                self._process_id = source.process_id
                self._is_multi_process = source.num_processes > 1

            @property
            def auto_shard_dataset(self) -> bool:
                """False: kdist shards no dataset. Each process passes its own part of
                the global batch (Keras would otherwise demand a tf.data.Dataset)."""
                return False

            @auto_shard_dataset.setter
            def auto_shard_dataset(self, value: bool) -> None:
                self.kdist_distribution.auto_shard_dataset = value

            @property
            def num_model_replicas(self) -> int:
                return self.kdist_distribution.num_model_replicas

            def get_data_layout(self, data_shape: Sequence[int]) -> Any:
                return view_of_layout(self.kdist_distribution.get_data_layout(data_shape))

            def get_variable_layout(self, variable: Any) -> Any:
                return view_of_layout(self.kdist_distribution.get_variable_layout(variable))

            def get_tensor_layout(self, path: str) -> Any:
                return view_of_layout(self.kdist_distribution.get_tensor_layout(path))

            def distribute_dataset(self, dataset: Any) -> Any:
                """The dataset as it is: each process feeds its own part of the batch."""
                return dataset

            def __repr__(self) -> str:
                return f"<Keras view of {self.kdist_distribution!r}>"

        class DistributionView(ViewOfKdist, base):  # type: ignore[misc, valid-type]
            pass

        class DataParallelView(ViewOfKdist, kd.DataParallel):  # type: ignore[misc, name-defined]
            pass

        class ModelParallelView(ViewOfKdist, kd.ModelParallel):  # type: ignore[misc, name-defined]
            pass

        self.keras = keras
        self.base = base
        self.mesh = KdistDeviceMesh
        self.layout = KdistTensorLayout
        self.view = ViewOfKdist
        self.distribution = DistributionView
        self.data_parallel = DataParallelView
        self.model_parallel = ModelParallelView


def _view_classes(keras: ModuleType) -> _ViewClasses:
    global _classes
    with _lock:
        if _classes is None or _classes.keras is not keras:
            _classes = _ViewClasses(keras)
        return _classes


def _cached(source: object, make: Any) -> Any:
    with _lock:
        view = _views.get(source)
        if view is None:
            view = _views[source] = make()
        return view


def view_of_mesh(mesh: DeviceMesh) -> Any:
    """The Keras DeviceMesh that presents `mesh` (one per mesh)."""
    classes = _view_classes(require_keras())
    return _cached(mesh, lambda: classes.mesh(mesh))


def view_of_layout(layout: Any) -> Any:
    """The Keras TensorLayout that presents a kdist TensorLayout; None, a Keras layout or
    a JAX sharding (a variable's own layout) pass through as they are."""
    if not isinstance(layout, TensorLayout):
        return layout
    classes = _view_classes(require_keras())
    return _cached(layout, lambda: classes.layout(layout))


def view_of_distribution(distribution: KdistDistribution) -> Any:
    """What Keras's current distribution is while `distribution` is kdist's: the Keras
    object it was converted from, else a Keras view of it (one per distribution), of the
    Keras class its `KERAS_CLASS` names."""
    original = _converted_from.get(distribution)
    if original is not None:
        return original
    classes = _view_classes(require_keras())
    kind = {
        "ModelParallel": classes.model_parallel,
        "DataParallel": classes.data_parallel,
    }.get(type(distribution).KERAS_CLASS, classes.distribution)
    return _cached(distribution, lambda: kind(distribution))


# --- Keras -> kdist: what a Keras distribution is made of ---------------------------------


@dataclass(frozen=True)
class KerasDistributionParts:
    """A `keras.distribution` DataParallel or ModelParallel, as plain values."""

    mesh_shape: tuple[int, ...]
    axis_names: list[str]
    devices: list[Any]  # device strings or jax.Device objects, in row-major order
    batch_dim_name: str | None
    auto_shard_dataset: bool
    layouts: list[tuple[str, tuple[Any, ...]]] | None  # ModelParallel's layout map; else None


def describe_keras_distribution(value: object) -> KerasDistributionParts | KdistDistribution | None:
    """What `value` is made of when it is a Keras DataParallel or ModelParallel; the kdist
    distribution itself when `value` is a view of one; None when it is not a Keras
    distribution (or Keras is not imported).

    Raises:
        kdist.ArgumentTypeError: `value` is another kind of Keras distribution.
    """
    keras = keras_module()
    if keras is None:
        return None
    classes = _view_classes(keras)
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
    mesh = value.device_mesh
    layouts = None
    if isinstance(value, kd.ModelParallel):
        keras_map = value._layout_map  # no public accessor; pinned by a test
        layouts = [(key, tuple(keras_map[key].axes)) for key in keras_map]
    return KerasDistributionParts(
        mesh_shape=tuple(mesh.shape),
        axis_names=list(mesh.axis_names),
        devices=list(mesh.devices.flatten()),
        batch_dim_name=value.batch_dim_name,
        auto_shard_dataset=bool(value.auto_shard_dataset),
        layouts=layouts,
    )


def remember_original(converted: KdistDistribution, original: object) -> None:
    """Keras gets `original` back (its own object) while `converted` is kdist's."""
    with _lock:
        _converted_from[converted] = original
