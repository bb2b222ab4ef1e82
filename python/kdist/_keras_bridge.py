"""The Keras bridge: kdist's distributions as Keras sees them, and Keras's seed.

The only module that touches Keras, and only once the program has imported it
(kdist never imports Keras itself, and works where Keras is not installed). It
sits below the distribution types: it reads kdist objects (their layouts, their
`KERAS_CLASS`) but never builds them; kdist._current builds the kdist
equivalent of a Keras distribution from `describe_keras_distribution`.

Keras (on its JAX backend) asks its current distribution for the layout of every
variable it creates, of every input batch and of the layer outputs it may
relayout. `kdist.set_distribution()` and `Distribution.scope()` make Keras's
current distribution a *view* of the kdist one: an object of Keras's own
distribution classes (so every `isinstance` check in Keras holds) whose layouts
are Keras `TensorLayout`s carrying kdist's `jax.sharding.NamedSharding`. The view
answers from the kdist distribution, so both always agree. When Keras is imported
after a distribution was set, a one-shot import hook publishes it to Keras as
soon as Keras has loaded.

Public Keras API is used throughout: `keras.distribution.*` classes (subclassed),
`keras.distribution.set_distribution` / `distribution`, `keras.utils.set_random_seed`
and `keras.backend.backend()`. Two things have no public API: the base class
`Distribution` (found through the public `DataParallel`'s MRO) and the program's
own seed, which `keras.src.utils.rng_utils.get_random_seed` reads as Keras's own
`initialize()` does. tests/test_keras_bridge.py pins both against the Keras
versions kdist supports.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kdist import _current_state
from kdist._errors import ArgumentTypeError
from kdist._tensor_layout import TensorLayout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kdist._device_mesh import DeviceMesh
    from kdist._distribution import Distribution

_lock = threading.RLock()
# Keras view of each kdist object (DeviceMesh, TensorLayout, Distribution), made once.
_views: weakref.WeakKeyDictionary[object, Any] = weakref.WeakKeyDictionary()
# The Keras distribution a kdist one was converted from: Keras gets its own object back.
_converted_from: weakref.WeakKeyDictionary[object, Any] = weakref.WeakKeyDictionary()
_classes: _ViewClasses | None = None  # for the keras module imported (made once)
_warned_backend: set[str] = set()
_watching_import = False


def keras_module() -> ModuleType | None:
    """Keras when the program has imported it (fully: not while it is still
    loading); else None. Never imports Keras."""
    keras = sys.modules.get("keras")
    if keras is None or not hasattr(keras, "distribution") or not hasattr(keras, "utils"):
        return None
    return keras


def _keras_on_jax() -> ModuleType | None:
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


# --- the job seed ------------------------------------------------------------------------


def program_seed() -> int | None:
    """The seed the program set with `keras.utils.set_random_seed`, or None (also when
    Keras is not imported). Keras's own `initialize()` keeps such a seed."""
    if keras_module() is None:
        return None
    from keras.src.utils import rng_utils  # type: ignore[import-untyped]

    seed = rng_utils.get_random_seed()
    return seed if isinstance(seed, int) else None


def set_random_seed(seed: int) -> bool:
    """`keras.utils.set_random_seed(seed)` when Keras is imported (it seeds Python's
    `random`, NumPy, and resets Keras's global SeedGenerator); False when it is not."""
    keras = keras_module()
    if keras is None:
        return False
    keras.utils.set_random_seed(seed)
    return True


# --- kdist -> Keras: views ------------------------------------------------------------------


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

            def __init__(self, source: Distribution) -> None:
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
    classes = _view_classes(_require_keras())
    return _cached(mesh, lambda: classes.mesh(mesh))


def view_of_layout(layout: Any) -> Any:
    """The Keras TensorLayout that presents a kdist TensorLayout; None, a Keras layout or
    a JAX sharding (a variable's own layout) pass through as they are."""
    if not isinstance(layout, TensorLayout):
        return layout
    classes = _view_classes(_require_keras())
    return _cached(layout, lambda: classes.layout(layout))


def view_of_distribution(distribution: Distribution) -> Any:
    """What Keras's current distribution is while `distribution` is kdist's: the Keras
    object it was converted from, else a Keras view of it (one per distribution), of the
    Keras class its `KERAS_CLASS` names."""
    original = _converted_from.get(distribution)
    if original is not None:
        return original
    classes = _view_classes(_require_keras())
    kind = {
        "ModelParallel": classes.model_parallel,
        "DataParallel": classes.data_parallel,
    }.get(type(distribution).KERAS_CLASS, classes.distribution)
    return _cached(distribution, lambda: kind(distribution))


def _require_keras() -> ModuleType:
    keras = keras_module()
    if keras is None:
        raise RuntimeError("the Keras bridge was used before Keras was imported")
    return keras


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


def describe_keras_distribution(value: object) -> KerasDistributionParts | Distribution | None:
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
        source: Distribution = value.kdist_distribution
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


def remember_original(converted: Distribution, original: object) -> None:
    """Keras gets `original` back (its own object) while `converted` is kdist's."""
    with _lock:
        _converted_from[converted] = original


# --- keeping Keras's current distribution in step with kdist's ----------------------------


def _keras_or_watch(needed: bool) -> ModuleType | None:
    """Keras on its JAX backend, or None; when Keras is not imported yet and `needed`,
    arranges for kdist's current distribution to reach it once it is."""
    keras = _keras_on_jax()
    if keras is None and needed and keras_module() is None:
        _watch_keras_import()
    return keras


def publish(distribution: Distribution | None) -> None:
    """Makes Keras's current distribution (Keras keeps one per thread: this thread's) the
    view of `distribution`. Before Keras is imported, arranges for that to happen
    as soon as it is."""
    keras = _keras_or_watch(needed=distribution is not None)
    if keras is not None:
        keras.distribution.set_distribution(
            None if distribution is None else view_of_distribution(distribution)
        )


def enter_scope(distribution: Distribution) -> tuple[bool, Any]:
    """Makes the view of `distribution` Keras's current one for this thread; returns
    what `exit_scope` needs to restore the previous one."""
    keras = _keras_or_watch(needed=True)
    if keras is None:
        return (False, None)
    previous = keras.distribution.distribution()
    keras.distribution.set_distribution(view_of_distribution(distribution))
    return (True, previous)


def exit_scope(token: tuple[bool, Any], current: Distribution | None) -> None:
    """Restores Keras's distribution as `enter_scope` found it. When Keras was imported
    inside the scope, it gets kdist's `current` distribution instead."""
    entered, previous = token
    keras = _keras_on_jax()
    if keras is None:
        return
    if entered:
        keras.distribution.set_distribution(previous)
    else:
        publish(current)


class _PublishAfterLoading(importlib.abc.Loader):
    """Runs Keras's own loader, then hands Keras kdist's current distribution."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        current = _current_state.current()
        if current is None:
            return
        try:
            publish(current)
        except Exception as error:  # the program's import of Keras must not fail for this
            warnings.warn(
                f"kdist could not hand its current distribution {current!r} to Keras after "
                f"Keras was imported ({type(error).__name__}: {error}); call "
                "kdist.set_distribution() again after importing keras.",
                UserWarning,
                stacklevel=2,
            )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _KerasImportWatcher(importlib.abc.MetaPathFinder):
    """One-shot: finds the top-level `keras` module through the other finders and
    wraps its loader in `_PublishAfterLoading`."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "keras":
            return None
        _stop_watching(self)
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _PublishAfterLoading(spec.loader)
                return spec
        return None


def _watch_keras_import() -> None:
    global _watching_import
    with _lock:
        if _watching_import:
            return
        _watching_import = True
        sys.meta_path.insert(0, _KerasImportWatcher())


def _stop_watching(watcher: _KerasImportWatcher) -> None:
    global _watching_import
    with _lock:
        if watcher in sys.meta_path:
            sys.meta_path.remove(watcher)
        _watching_import = False
