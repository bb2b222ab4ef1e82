"""Distribution: the base class of kdist's distribution strategies."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kdist import _global_distribution, _jax_backend

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Distribution:
    """Base class of distribution strategies (exported, unlike Keras's).

    A Distribution says how model variables, input data and intermediate
    tensors are laid out on a device mesh. Subclasses (`DataParallel`,
    `ModelParallel`) implement the three `get_*_layout` methods.

    Args:
        device_mesh: The `DeviceMesh` the layouts refer to.
        batch_dim_name: Name of the mesh axis the batch dimension is split
            over. Defaults to None.
        auto_shard_dataset: Whether datasets are sharded across processes
            automatically. Defaults to True.
    """

    def __init__(
        self,
        device_mesh: Any,
        batch_dim_name: str | None = None,
        auto_shard_dataset: bool = True,
    ) -> None:
        self._device_mesh = device_mesh
        self._batch_dim_name = batch_dim_name
        self._auto_shard_dataset = auto_shard_dataset
        self._num_processes, self._process_id = _jax_backend.process_count_and_index()

    @property
    def device_mesh(self) -> Any:
        """The `DeviceMesh` of this distribution."""
        return self._device_mesh

    @property
    def batch_dim_name(self) -> str | None:
        """The mesh axis the batch is split over, or None."""
        return self._batch_dim_name

    @property
    def auto_shard_dataset(self) -> bool:
        """Whether datasets are sharded across processes automatically."""
        return self._auto_shard_dataset

    @auto_shard_dataset.setter
    def auto_shard_dataset(self, value: bool) -> None:
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
        """Number of model replicas (data-parallel groups)."""
        raise NotImplementedError(f"{type(self).__name__} does not define num_model_replicas")

    @property
    def num_data_shards(self) -> int:
        """Number of distinct shards the input data is split into across processes."""
        return min(self.num_model_replicas, self.num_processes)

    @property
    def data_shard_id(self) -> int:
        """Index of the data shard this process reads."""
        replicas = self.num_model_replicas
        if replicas >= self.num_processes:
            return self._process_id
        return self._process_id // (self.num_processes // replicas)

    def get_data_layout(self, data_shape: tuple[int, ...] | list[int]) -> Any:
        """The `TensorLayout` of input data of this shape."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_data_layout")

    def get_variable_layout(self, variable: Any) -> Any:
        """The `TensorLayout` of a model variable."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_variable_layout")

    def get_tensor_layout(self, path: str) -> Any:
        """The `TensorLayout` of the intermediate tensor at `path`, or None."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_tensor_layout")

    @contextlib.contextmanager
    def scope(self) -> Iterator[Distribution]:
        """Makes this distribution current in this thread for the `with` block.

        Scopes nest: on exit the previous distribution is current again, even
        when the block raises.
        """
        _global_distribution.push_scope(self)
        try:
            yield self
        finally:
            _global_distribution.pop_scope(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} device_mesh={self._device_mesh}>"
