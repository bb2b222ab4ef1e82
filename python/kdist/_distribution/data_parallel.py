"""DataParallel: the batch split over every device, the variables replicated."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from kdist._distribution.distribution import (
    Distribution,
    _own_layout,
    _variable_shape,
)
from kdist._errors import ArgumentTypeError
from kdist._keras import conversion as keras_conversion
from kdist._layouts.device_mesh import DeviceMesh, _flatten_devices
from kdist._layouts.tensor_layout import TensorLayout

TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np

DEFAULT_BATCH_DIM_NAME = "batch"


class DataParallel(Distribution):
    """Data parallelism: the batch is split over the devices, variables are replicated.

    The mesh comes from, in order of precedence: `device_mesh`, `devices`
    (a 1-D mesh with the axis "batch"), or every device of
    `kdist.list_devices()` (likewise). The batch is split over the mesh's
    first axis.

    Args:
        device_mesh: A `DeviceMesh`, normally 1-D. With more dimensions the
            first is the batch axis and a `UserWarning` says so. A
            `keras.distribution.DeviceMesh` is converted (the same kdist mesh
            for one Keras mesh), as by `kdist.set_distribution`. Defaults to
            None.
        devices: Devices (strings such as "cpu:0" or `jax.Device`) for a 1-D
            mesh; nested sequences are flattened. Ignored, with a
            `UserWarning`, when `device_mesh` is given. Defaults to None.
        auto_shard_dataset: Keras's flag, kept for compatibility. kdist shards
            no dataset: in a multi-process job each process passes its own
            part of the global batch (`data_shard_id` says which), to Keras
            models too. Defaults to True.

    Raises:
        kdist.ArgumentTypeError: `device_mesh` is neither a kdist nor a Keras
            `DeviceMesh`, or `devices` has the wrong type (a TypeError and, as
            in Keras, a ValueError).
        ValueError: `devices` is empty, or names a device that does not exist
            or one twice.

    Example:
        >>> import kdist
        >>> dist = kdist.DataParallel(devices=["cpu:0"])
        >>> dist.device_mesh.axis_names, dist.batch_dim_name
        (('batch',), 'batch')
        >>> dist.get_data_layout((16, 3)).axes
        ('batch', None)
    """

    __module__ = "kdist"  # reprs, tracebacks and pickles say kdist.DataParallel

    KERAS_CLASS = "DataParallel"

    def __init__(
        self,
        device_mesh: DeviceMesh | Any = None,
        devices: Sequence[Any] | np.ndarray | None = None,
        auto_shard_dataset: bool = True,
    ) -> None:
        if device_mesh is not None:
            given = device_mesh
            device_mesh = keras_conversion.kdist_mesh(given, "DataParallel")
            if device_mesh is None:
                raise ArgumentTypeError(
                    "Expect `mesh` to be an instance of `DeviceMesh`. DataParallel: "
                    "device_mesh must be a kdist.DeviceMesh or a keras.distribution.DeviceMesh "
                    f"(or None). Received: device_mesh={given!r} of type {type(given).__name__}"
                )
            if devices is not None:
                warnings.warn(
                    "DataParallel: both device_mesh and devices were given; devices is ignored "
                    "and the mesh's devices are used.",
                    UserWarning,
                    stacklevel=2,
                )
            if len(device_mesh.shape) != 1:
                warnings.warn(
                    "DataParallel expects a 1-D device mesh, but received one with "
                    f"{len(device_mesh.shape)} dimensions (shape={device_mesh.shape}, "
                    f"axis_names={device_mesh.axis_names}). The batch is split over the first "
                    f"axis, {device_mesh.axis_names[0]!r}, and replicated over the others.",
                    UserWarning,
                    stacklevel=2,
                )
            mesh = device_mesh
        else:
            if devices is None:
                from kdist._devices import list_devices

                devices = list_devices()
            flat = _flat_devices(devices)
            mesh = DeviceMesh((len(flat),), [DEFAULT_BATCH_DIM_NAME], flat)
        super().__init__(mesh, mesh.axis_names[0], auto_shard_dataset)

    @property
    def num_model_replicas(self) -> int:
        """Number of model replicas: the size of the batch axis (all devices of a 1-D mesh)."""
        return self.device_mesh.shape[0]

    def get_variable_layout(self, variable: Any) -> Any:
        """The variable's own layout (`variable._layout`, as Keras sets it), else replicated.

        Args:
            variable: A variable with a `shape` (a `keras.Variable`, a
                `jax.Array`, ...).

        Returns:
            The variable's own layout, or a `TensorLayout` of `None`s.

        Raises:
            TypeError: `variable` has no shape.
        """
        own = _own_layout(variable)
        if own is not None:
            return own
        shape = _variable_shape(variable, "DataParallel.get_variable_layout")
        return TensorLayout([None] * len(shape), self.device_mesh)

    def get_tensor_layout(self, path: str) -> None:
        """None: data parallelism does not lay out intermediate tensors."""
        return None


def _flat_devices(devices: object) -> list[Any]:
    flat = _flatten_devices(devices, "DataParallel")
    if not flat:
        raise ValueError(
            "DataParallel: devices must not be empty; pass the devices to use, or None for "
            f"every device of kdist.list_devices(). Received: devices={devices!r}"
        )
    return flat
