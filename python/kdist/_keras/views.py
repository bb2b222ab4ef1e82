"""kdist objects as Keras sees them: Keras-readable meshes, and views.

A kdist `DeviceMesh` made while Keras is loaded is itself a
`keras.distribution.DeviceMesh`: `DeviceMesh.__new__` asks the bridge (through
`_state`) for the class, and `keras_readable_mesh_class` makes it, once per
kdist class: a subclass of the kdist class first (its answers win) and of
Keras's. Keras's own `DeviceMesh.__init__` never runs on it; Keras reads a mesh
only through `shape`, `axis_names`, `devices` and `backend_mesh`, which kdist's
class answers (with the very same `jax.sharding.Mesh`).

A view is an object of Keras's own distribution classes (so every `isinstance`
check in Keras holds) whose answers come from the kdist object it presents: the
same `jax.sharding.Mesh`, the same `NamedSharding`s. A mesh made before Keras
was imported gets a view too. The bridge reads kdist distributions only
through `KdistDistribution`, the protocol below, so it never imports the
distribution types (which sit above it and use it).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from types import ModuleType
from typing import Any, ClassVar, Protocol, TypeVar, cast

from kdist._keras.loaded import keras_module, require_keras
from kdist._layouts.device_mesh import _MADE_FROM, DeviceMesh
from kdist._layouts.tensor_layout import TensorLayout

_T = TypeVar("_T")


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
_classes: ViewClasses | None = None  # for the keras module imported (made once)
# The Keras-readable subclass of each kdist mesh class, per Keras DeviceMesh class.
_readable: dict[tuple[type, type], type] = {}


def keras_readable_mesh_class(cls: type[_T]) -> type[_T]:
    """The class a new `cls` mesh is made of: while Keras is loaded, a subclass of
    `cls` and of `keras.distribution.DeviceMesh` (made once, named as `cls`, with
    `cls` in its `_kdist_made_from`); else `cls`. Never imports Keras."""
    keras = keras_module()
    if keras is None:
        return cls
    keras_mesh: type = keras.distribution.DeviceMesh
    if issubclass(cls, keras_mesh):
        return cls
    with _lock:
        made = _readable.get((cls, keras_mesh))
        if made is None:
            namespace = {
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__doc__": cls.__doc__,
                _MADE_FROM: cls,
            }
            metaclass: type = type(cls)  # kdist's mesh metaclass (see DeviceMesh)
            made = _readable[(cls, keras_mesh)] = metaclass(
                cls.__name__, (cls, keras_mesh), namespace
            )
    return cast("type[_T]", made)


class ViewClasses:
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


def view_classes(keras: ModuleType) -> ViewClasses:
    """The view classes for the `keras` module imported (made once per Keras)."""
    global _classes
    with _lock:
        if _classes is None or _classes.keras is not keras:
            _classes = ViewClasses(keras)
        return _classes


def _cached(source: object, make: Any) -> Any:
    with _lock:
        view = _views.get(source)
        if view is None:
            view = _views[source] = make()
        return view


def view_of_mesh(mesh: DeviceMesh) -> Any:
    """The Keras DeviceMesh that presents `mesh`: `mesh` itself when it was made while
    Keras was loaded (it is one), else a view (one per mesh)."""
    keras = require_keras()
    if isinstance(mesh, keras.distribution.DeviceMesh):
        return mesh
    classes = view_classes(keras)
    return _cached(mesh, lambda: classes.mesh(mesh))


def view_of_layout(layout: Any) -> Any:
    """The Keras TensorLayout that presents a kdist TensorLayout; None, a Keras layout or
    a JAX sharding (a variable's own layout) pass through as they are."""
    if not isinstance(layout, TensorLayout):
        return layout
    classes = view_classes(require_keras())
    return _cached(layout, lambda: classes.layout(layout))


def view_of_distribution(distribution: KdistDistribution) -> Any:
    """What Keras's current distribution is while `distribution` is kdist's: the Keras
    object it was converted from, else a Keras view of it (one per distribution), of the
    Keras class its `KERAS_CLASS` names."""
    original = _converted_from.get(distribution)
    if original is not None:
        return original
    classes = view_classes(require_keras())
    kind = {
        "ModelParallel": classes.model_parallel,
        "DataParallel": classes.data_parallel,
    }.get(type(distribution).KERAS_CLASS, classes.distribution)
    return _cached(distribution, lambda: kind(distribution))


def remember_original(converted: KdistDistribution, original: object) -> None:
    """Keras gets `original` back (its own object) while `converted` is kdist's."""
    with _lock:
        _converted_from[converted] = original
