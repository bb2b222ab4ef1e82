"""TensorLayout: how a tensor's dimensions map onto a DeviceMesh (a `NamedSharding`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kdist import _jax_backend
from kdist._errors import ArgumentTypeError
from kdist._layouts.device_mesh import DeviceMesh, as_kdist_mesh

# One entry per tensor dimension: a mesh axis name, several (the dimension is split over
# their product, as in a jax PartitionSpec), or None (not split: replicated).
Axis = str | tuple[str, ...] | None


class TensorLayout:
    """How each dimension of a tensor is split over the axes of a `DeviceMesh`.

    The kdist counterpart of `keras.distribution.TensorLayout`, converted to
    a cached `jax.sharding.NamedSharding`. Axis names are checked against the
    mesh as soon as there is one.

    Args:
        axes: One entry per tensor dimension: a mesh axis name, None (that
            dimension is not split), or a tuple of axis names (split over
            several mesh axes, as in a `jax.sharding.PartitionSpec`; an
            extension over Keras). A mesh axis may appear once. Trailing
            dimensions without an entry are not split.
        device_mesh: The `DeviceMesh` the axes refer to (a
            `keras.distribution.DeviceMesh` is converted, as by
            `kdist.LayoutMap`). Defaults to None: set it later, once, through
            the `device_mesh` property (a `LayoutMap` does so for the layouts
            put into it).

    Raises:
        kdist.ArgumentTypeError: `axes` is not a sequence (a bare string is
            rejected: write `("model",)`), an entry is neither a string, a
            tuple of strings nor None, or `device_mesh` is not a `DeviceMesh`
            (a TypeError and a ValueError).
        ValueError: a mesh axis appears twice, or an axis name is not one of
            the mesh's (the message begins with Keras's "Invalid axis names
            for Layout.").

    Example:
        >>> import kdist
        >>> mesh = kdist.DeviceMesh((1,), ["model"], devices=["cpu:0"])
        >>> layout = kdist.TensorLayout((None, "model"), mesh)
        >>> layout.axes
        (None, 'model')
        >>> tuple(layout.backend_layout.spec)
        (None, 'model')
    """

    __module__ = "kdist"  # reprs, tracebacks and pickles say kdist.TensorLayout

    def __init__(self, axes: Sequence[Axis], device_mesh: Any = None) -> None:
        self._axes = _check_axes(axes)
        self._device_mesh: DeviceMesh | None = None
        self._backend_layout: Any = None
        if device_mesh is not None:
            self.device_mesh = device_mesh

    @property
    def axes(self) -> tuple[Axis, ...]:
        """The mesh axis (or axes, or None) of each tensor dimension."""
        return self._axes

    @property
    def device_mesh(self) -> DeviceMesh | None:
        """The `DeviceMesh` of this layout, or None while it is not set."""
        return self._device_mesh

    @device_mesh.setter
    def device_mesh(self, device_mesh: Any) -> None:
        """Sets the mesh, once; the axes are checked against its axis names.

        Args:
            device_mesh: A `kdist.DeviceMesh`, or a `keras.distribution.DeviceMesh`
                (converted: the same kdist mesh for one Keras mesh).

        Raises:
            kdist.ArgumentTypeError: `device_mesh` is neither (a TypeError and a
                ValueError).
            ValueError: the mesh is already set, or an axis is not one of the
                mesh's.
        """
        device_mesh = as_kdist_mesh(device_mesh, "TensorLayout")
        if self._device_mesh is not None:
            raise ValueError(
                "Cannot override device mesh value. TensorLayout: the mesh can be set once. "
                f"Existing value: {self._device_mesh!r}. Received: {device_mesh!r}"
            )
        unknown = sorted(
            {name for name in _axis_names_used(self._axes) if name not in device_mesh.axis_names}
        )
        if unknown:
            raise ValueError(
                f"Invalid axis names for Layout. TensorLayout: {unknown} are not axes of the "
                f"device mesh; valid axis names: {list(device_mesh.axis_names)}. "
                f"Received: axes={self._axes}"
            )
        self._device_mesh = device_mesh

    @property
    def backend_layout(self) -> Any:
        """The `jax.sharding.NamedSharding` of this layout, built on first use and cached.

        Raises:
            ValueError: the device mesh is not set yet.
        """
        if self._backend_layout is None:
            if self._device_mesh is None:
                raise ValueError(
                    "Cannot create sharding when device mesh is not set for TensorLayout. "
                    f"TensorLayout: axes={self._axes} have no device mesh yet. Pass "
                    "device_mesh= when making the layout, set layout.device_mesh, or put the "
                    "layout in a LayoutMap."
                )
            self._backend_layout = _jax_backend.named_sharding(
                self._device_mesh.backend_mesh, self._axes
            )
        return self._backend_layout

    def __repr__(self) -> str:
        return f"<TensorLayout axes={self._axes}, device_mesh={self._device_mesh!r}>"


def _axis_names_used(axes: tuple[Axis, ...]) -> list[str]:
    names: list[str] = []
    for entry in axes:
        if isinstance(entry, tuple):
            names.extend(entry)
        elif entry is not None:
            names.append(entry)
    return names


def _check_axes(axes: object) -> tuple[Axis, ...]:
    if isinstance(axes, (str, bytes)) or not isinstance(axes, Sequence):
        hint = f" (for one dimension write ({axes!r},))" if isinstance(axes, str) else ""
        raise ArgumentTypeError(
            "TensorLayout: axes must be a sequence with one mesh axis name, tuple of names, or "
            f"None per tensor dimension{hint}. Received: axes={axes!r} of type "
            f"{type(axes).__name__}"
        )
    checked: list[Axis] = []
    for entry in axes:
        if entry is None or isinstance(entry, str):
            checked.append(entry)
        elif isinstance(entry, (tuple, list)) and all(isinstance(n, str) for n in entry):
            checked.append(tuple(entry))
        else:
            raise ArgumentTypeError(
                "TensorLayout: each entry of axes must be a mesh axis name, a tuple of names, "
                f"or None. Received: axes={axes!r} (the entry {entry!r} is a "
                f"{type(entry).__name__})"
            )
    result = tuple(checked)
    used = _axis_names_used(result)
    repeated = sorted({name for name in used if used.count(name) > 1})
    if repeated:
        raise ValueError(
            f"TensorLayout: a mesh axis can split at most one tensor dimension, but {repeated} "
            f"appear more than once. Received: axes={axes!r}"
        )
    return result
