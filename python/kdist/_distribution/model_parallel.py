"""ModelParallel: variables split as a LayoutMap says, the batch over one mesh axis."""

from __future__ import annotations

from typing import Any

from kdist._distribution.distribution import (
    Distribution,
    _own_layout,
    _variable_shape,
)
from kdist._errors import ArgumentTypeError
from kdist._keras import conversion as keras_conversion
from kdist._layouts.device_mesh import DeviceMesh, as_kdist_mesh
from kdist._layouts.layout_map import LayoutMap
from kdist._layouts.tensor_layout import TensorLayout


class ModelParallel(Distribution):
    """Model parallelism: variables are split as a `LayoutMap` says.

    The mesh is the layout map's. The batch is split over `batch_dim_name`
    (the mesh's first axis by default) and replicated over the other axes;
    each variable gets its own layout if it carries one, else the layout
    map's match for `variable.path`, else it is replicated.

    Args:
        layout_map: The `LayoutMap` from variable paths to layouts. A
            `keras.distribution.LayoutMap` (such as KerasHub's
            `Backbone.get_layout_map(mesh)` returns) is converted, as
            `kdist.set_distribution` converts a Keras `ModelParallel`: its
            entries as they are now, on its mesh (the same kdist mesh when it
            is one).
        batch_dim_name: The mesh axis the batch is split over. Defaults to
            None: the mesh's first axis.
        auto_shard_dataset: Keras's flag, kept for compatibility. kdist shards
            no dataset: in a multi-process job each process passes its own
            part of the global batch (`data_shard_id` says which), to Keras
            models too. Defaults to True.
        device_mesh: Accepted for code written for older Keras versions; it
            must be the layout map's mesh (a Keras mesh is converted first).
            Defaults to None.

    Raises:
        ValueError: `layout_map` is missing; `batch_dim_name` is not an axis
            of the mesh; `device_mesh` is not the layout map's mesh; or in a
            job with more processes than model replicas, the process count is
            not a multiple of the replica count. Each message begins with
            Keras's sentence where Keras has one.
        kdist.ArgumentTypeError: `layout_map` is neither a kdist nor a Keras
            `LayoutMap` (a TypeError and, as in Keras, a ValueError).

    Example:
        >>> import kdist
        >>> mesh = kdist.DeviceMesh((1, 1), ["batch", "model"], devices=["cpu:0"])
        >>> layout_map = kdist.LayoutMap(mesh)
        >>> layout_map[".*kernel"] = (None, "model")
        >>> dist = kdist.ModelParallel(layout_map=layout_map)
        >>> dist.batch_dim_name, dist.get_tensor_layout("dense/kernel").axes
        ('batch', (None, 'model'))
    """

    __module__ = "kdist"  # reprs, tracebacks and pickles say kdist.ModelParallel

    KERAS_CLASS = "ModelParallel"

    def __init__(
        self,
        *,
        layout_map: LayoutMap | Any = None,
        batch_dim_name: str | None = None,
        auto_shard_dataset: bool = True,
        device_mesh: DeviceMesh | Any = None,
    ) -> None:
        if layout_map is None:
            raise ValueError(
                "You must specify a layout_map argument. ModelParallel: a kdist.LayoutMap or "
                "a keras.distribution.LayoutMap; its mesh is the distribution's. "
                "Received: layout_map=None"
            )
        given = layout_map
        layout_map = keras_conversion.kdist_layout_map(given, "ModelParallel")
        if layout_map is None:
            raise ArgumentTypeError(
                "Argument `layout_map` must be a `LayoutMap` instance. ModelParallel: a "
                "kdist.LayoutMap or a keras.distribution.LayoutMap. "
                f"Received: layout_map={given!r} of type {type(given).__name__}"
            )
        mesh = layout_map.device_mesh
        if device_mesh is not None:
            device_mesh = as_kdist_mesh(device_mesh, "ModelParallel")
        if device_mesh is not None and device_mesh is not mesh:
            raise ValueError(
                "ModelParallel: the distribution's mesh is the layout map's; device_mesh, when "
                f"given, must be that same mesh. Received: device_mesh={device_mesh!r}, "
                f"layout_map.device_mesh={mesh!r}"
            )
        if batch_dim_name is None:
            batch_dim_name = mesh.axis_names[0]
        super().__init__(mesh, batch_dim_name, auto_shard_dataset)
        self._layout_map = layout_map

        processes, replicas = self.num_processes, self.num_model_replicas
        if processes > replicas and processes % replicas != 0:
            raise ValueError(
                "If `num_processes` is greater than `num_model_replicas`, `num_processes` "
                "must be divisible by `num_model_replicas`. ModelParallel: each replica spans "
                f"whole processes. Got num_processes={processes}, "
                f"num_model_replicas={replicas} (the size of the mesh axis "
                f"{batch_dim_name!r}). Change the mesh shape or the number of processes."
            )

    @property
    def layout_map(self) -> LayoutMap:
        """The `LayoutMap` of this distribution."""
        return self._layout_map

    @property
    def num_model_replicas(self) -> int:
        """Number of model replicas: the size of the batch axis of the mesh."""
        mesh = self.device_mesh
        return mesh.shape[mesh.axis_names.index(self.batch_dim_name)]

    def get_variable_layout(self, variable: Any) -> Any:
        """The variable's own layout, else the layout map's for `variable.path`, else
        replicated.

        Args:
            variable: A variable with `shape` and `path` (a `keras.Variable`,
                or any object with those attributes).

        Returns:
            A `TensorLayout` (or the variable's own layout object).

        Raises:
            TypeError: `variable` has no shape, or no string `path`.
            ValueError: several layout map keys match the path.
        """
        own = _own_layout(variable)
        if own is not None:
            return own
        path = getattr(variable, "path", None)
        if not isinstance(path, str):
            raise TypeError(
                "ModelParallel.get_variable_layout: expected a variable with a string path "
                f"(such as a keras.Variable). Received: {variable!r} of type "
                f"{type(variable).__name__}"
            )
        layout = self._layout_map.lookup(path)
        if layout is not None:
            return layout
        shape = _variable_shape(variable, "ModelParallel.get_variable_layout")
        return TensorLayout([None] * len(shape), self.device_mesh)

    def get_tensor_layout(self, path: str) -> TensorLayout | None:
        """The layout map's layout for the intermediate tensor at `path`, or None.

        Raises:
            ValueError: several layout map keys match the path.
        """
        return self._layout_map.lookup(path)
