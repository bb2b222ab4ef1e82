"""Distribution: the base class of kdist's distribution strategies."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, cast

from kdist import _jax_backend, _state
from kdist._keras import sync as keras_sync
from kdist._layouts.device_mesh import DeviceMesh, as_kdist_mesh
from kdist._layouts.tensor_layout import TensorLayout


class Distribution:
    """Base class of distribution strategies (exported, unlike Keras's).

    A Distribution says how model variables, input data and intermediate
    tensors are laid out on a device mesh. Subclasses (`DataParallel`,
    `ModelParallel`) implement `num_model_replicas` and the three
    `get_*_layout` methods.

    The number of processes and this process's id are read once, when the
    distribution is made: from `kdist.cluster_spec()` when kdist is
    initialized, else from JAX (`jax.process_count()`, `jax.process_index()`).

    Args:
        device_mesh: The `DeviceMesh` the layouts refer to (a
            `keras.distribution.DeviceMesh` is converted).
        batch_dim_name: Name of the mesh axis the batch dimension is split
            over; one of `device_mesh.axis_names`. Defaults to None.
        auto_shard_dataset: Keras's flag, kept for compatibility. kdist shards
            no dataset: in a multi-process job each process passes its own
            part of the global batch (`data_shard_id` says which), to Keras
            models too. Defaults to True.

    Raises:
        kdist.ArgumentTypeError: `device_mesh` is neither a kdist nor a Keras
            `DeviceMesh` (a TypeError and, as in Keras, a ValueError).
        TypeError: `batch_dim_name` is
            not a string, or `auto_shard_dataset` is not a bool.
        ValueError: `batch_dim_name` is not an axis of the mesh.

    Example:
        >>> import kdist
        >>> mesh = kdist.DeviceMesh((1,), ["batch"], devices=["cpu:0"])
        >>> class Replicated(kdist.Distribution):
        ...     num_model_replicas = 1
        >>> dist = Replicated(mesh, "batch")
        >>> with dist.scope():
        ...     kdist.distribution() is dist
        True
    """

    __module__ = "kdist"  # reprs, tracebacks and pickles say kdist.Distribution

    # The keras.distribution class Keras sees this distribution as (through the Keras
    # bridge): "DataParallel", "ModelParallel", or "Distribution" (Keras's base class).
    KERAS_CLASS: ClassVar[str] = "Distribution"

    def __init__(
        self,
        device_mesh: DeviceMesh | Any,
        batch_dim_name: str | None = None,
        auto_shard_dataset: bool = True,
    ) -> None:
        name = type(self).__name__
        device_mesh = as_kdist_mesh(device_mesh, name)
        if batch_dim_name is not None:
            if not isinstance(batch_dim_name, str):
                raise TypeError(
                    f"{name}: batch_dim_name must be a string (a mesh axis name) or None. "
                    f"Received: batch_dim_name={batch_dim_name!r} of type "
                    f"{type(batch_dim_name).__name__}"
                )
            if batch_dim_name not in device_mesh.axis_names:
                raise ValueError(
                    f"{name}: batch_dim_name must be one of the mesh's axis names "
                    f"{list(device_mesh.axis_names)}. Received: batch_dim_name={batch_dim_name!r}"
                )
        _check_bool(auto_shard_dataset, "auto_shard_dataset", name)
        self._device_mesh = device_mesh
        self._batch_dim_name = batch_dim_name
        self._auto_shard_dataset = auto_shard_dataset
        self._num_processes, self._process_id = _process_count_and_index()

    @property
    def device_mesh(self) -> DeviceMesh:
        """The `DeviceMesh` of this distribution."""
        return self._device_mesh

    @property
    def batch_dim_name(self) -> str | None:
        """The mesh axis the batch is split over, or None."""
        return self._batch_dim_name

    @property
    def auto_shard_dataset(self) -> bool:
        """Keras's flag, kept for compatibility: kdist shards no dataset (each process
        passes its own part of the global batch)."""
        return self._auto_shard_dataset

    @auto_shard_dataset.setter
    def auto_shard_dataset(self, value: bool) -> None:
        _check_bool(value, "auto_shard_dataset", type(self).__name__)
        self._auto_shard_dataset = value

    @property
    def num_processes(self) -> int:
        """Number of processes in the job."""
        return self._num_processes

    @property
    def process_id(self) -> int:
        """This process's index in the job."""
        return self._process_id

    @property
    def num_model_replicas(self) -> int:
        """Number of model replicas: how many ways the batch is split."""
        raise NotImplementedError(f"{type(self).__name__} does not define num_model_replicas")

    @property
    def num_data_shards(self) -> int:
        """Number of distinct shards the input data is split into across processes.

        One per process when each process holds whole replicas; one per
        replica when a replica spans several processes (those processes then
        read the same shard).
        """
        return min(self.num_model_replicas, self.num_processes)

    @property
    def data_shard_id(self) -> int:
        """Index of the data shard this process reads, in `[0, num_data_shards)`."""
        replicas, processes = self.num_model_replicas, self.num_processes
        if replicas >= processes:
            return self.process_id
        return self.process_id // (processes // replicas)

    def get_data_layout(self, data_shape: Sequence[int]) -> TensorLayout:
        """The layout of a batch: its first dimension split over the batch axis.

        Args:
            data_shape: The shape of the data, batch dimension first.

        Returns:
            A `TensorLayout` `(batch_dim_name, None, ...)` on this mesh.

        Raises:
            NotImplementedError: this distribution has no batch axis
                (`batch_dim_name` is None) and does not define its own.
            TypeError: `data_shape` is not a sequence.
            ValueError: `data_shape` is empty (no batch dimension).
        """
        if self.batch_dim_name is None:
            raise NotImplementedError(
                f"{type(self).__name__} has no batch_dim_name and does not define get_data_layout"
            )
        return _data_layout(self, data_shape)

    def get_variable_layout(self, variable: Any) -> TensorLayout:
        """The `TensorLayout` of a model variable."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_variable_layout")

    def get_tensor_layout(self, path: str) -> TensorLayout | None:
        """The `TensorLayout` of the intermediate tensor at `path`, or None."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_tensor_layout")

    @contextlib.contextmanager
    def scope(self) -> Iterator[Distribution]:
        """Makes this distribution current in this thread for the `with` block.

        Scopes nest: on exit the previous distribution is current again, even
        when the block raises. Other threads keep seeing the process-wide
        distribution of `kdist.set_distribution()`. When the program uses Keras
        (JAX backend), Keras models built or trained in the block are placed by
        this distribution too, as under Keras's own `Distribution.scope()`.

        Yields:
            This distribution.
        """
        _state.push_scope(self)
        keras_token = keras_sync.enter_scope(self)
        try:
            yield self
        finally:
            _state.pop_scope(self)
            keras_sync.exit_scope(keras_token, _current())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} device_mesh={self._device_mesh!r}>"


def _current() -> Distribution | None:
    """The current distribution (only Distributions are ever stored in the state)."""
    return cast("Distribution | None", _state.current())


def _process_count_and_index() -> tuple[int, int]:
    """kdist's initialized spec when there is one, else what JAX says."""
    spec = _state.active_spec()
    if spec is not None:
        return int(spec.num_processes), int(spec.process_id)
    return _jax_backend.process_count_and_index()


def _check_bool(value: object, name: str, where: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(
            f"{where}: {name} must be True or False. Received: {name}={value!r} of type "
            f"{type(value).__name__}"
        )


def _data_layout(distribution: Distribution, data_shape: Sequence[int]) -> TensorLayout:
    """The batch dimension (the first) split over the batch axis; the others whole."""
    name = type(distribution).__name__
    if isinstance(data_shape, (str, bytes)) or not isinstance(data_shape, Sequence):
        raise TypeError(
            f"{name}.get_data_layout: data_shape must be a sequence of integers such as "
            f"(batch, features). Received: data_shape={data_shape!r} of type "
            f"{type(data_shape).__name__}"
        )
    if len(data_shape) == 0:
        raise ValueError(
            f"{name}.get_data_layout: data_shape needs a first (batch) dimension to split. "
            f"Received: data_shape={tuple(data_shape)!r}"
        )
    axes: list[str | None] = [None] * len(data_shape)
    axes[0] = distribution.batch_dim_name
    return TensorLayout(axes, distribution.device_mesh)


def _variable_shape(variable: Any, where: str) -> tuple[int, ...]:
    shape = getattr(variable, "shape", None)
    if shape is None:
        raise TypeError(
            f"{where}: expected a variable with a shape (such as a keras.Variable or a "
            f"jax.Array). Received: {variable!r} of type {type(variable).__name__}"
        )
    return tuple(shape)


def _own_layout(variable: Any) -> Any:
    """The layout a (Keras) variable carries itself, or None."""
    return getattr(variable, "_layout", None)
