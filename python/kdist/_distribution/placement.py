"""distribute_tensor() and distribute_batch(): put values on devices as a layout says."""

from __future__ import annotations

from typing import Any

from kdist import _jax_backend
from kdist._distribution.distribution import Distribution, _current
from kdist._keras import conversion as keras_conversion
from kdist._layouts.tensor_layout import TensorLayout


def distribute_tensor(tensor: Any, layout: Any) -> Any:
    """Lays `tensor` out as `layout` says, eagerly or inside `jax.jit`.

    Inside a traced function it adds a sharding constraint
    (`jax.lax.with_sharding_constraint`). Eagerly it returns `tensor`
    itself when it is a `jax.Array` already laid out that way, else
    `jax.device_put(tensor, sharding)`.

    Args:
        tensor: A `jax.Array`, a tracer, or anything `jax.device_put`
            accepts (a numpy array, a Python scalar).
        layout: What Keras's `distribute_tensor` takes: a `kdist.TensorLayout`
            (with its mesh set), a `keras.distribution.TensorLayout`, a
            `jax.sharding.Sharding`, or a `jax.experimental.layout.Format`
            (a sharding with a device-local layout).

    Returns:
        The laid-out value.

    Raises:
        TypeError: `layout` is none of those.
        ValueError: the layout's mesh is not set, or does not fit the tensor.

    Example:
        >>> import kdist, numpy as np
        >>> mesh = kdist.DeviceMesh((1,), ["batch"], devices=["cpu:0"])
        >>> x = kdist.distribute_tensor(np.ones((4, 2)), kdist.TensorLayout(("batch", None), mesh))
        >>> tuple(x.sharding.spec)
        ('batch', None)
    """
    sharding = _sharding_of(layout, "distribute_tensor", accepts_format=True)
    if _jax_backend.is_tracer(tensor):
        return _jax_backend.with_sharding_constraint(tensor, sharding)
    if _jax_backend.has_sharding(tensor, sharding):
        return tensor
    return _jax_backend.device_put(tensor, sharding)


def distribute_batch(per_process_batch: Any, layout_or_distribution: Any = None) -> Any:
    """Builds the global batch from the part this process loaded (beyond Keras's API).

    In a multi-process job each process loads its own slice of the global
    batch; every process calls this with its slice (all of the same shape),
    and gets the same global `jax.Array`, whose first dimension is the sum
    of the processes' (`jax.make_array_from_process_local_data`). With one
    process the global batch is the local one. Every leaf of a pytree
    (tuple, dict, ...) is laid out on its own.

    Args:
        per_process_batch: This process's batch: an array, or a pytree of
            arrays, batch dimension first.
        layout_or_distribution: A `kdist.Distribution` (its
            `get_data_layout` is used for each leaf), a `kdist.TensorLayout`
            or a `jax.sharding.Sharding`. Defaults to None: the current
            `kdist.distribution()`.

    Returns:
        The global batch, with the structure of `per_process_batch`.

    Raises:
        TypeError: `layout_or_distribution` has the wrong type.
        ValueError: it is None and no distribution is set, or the local
            batch does not fit the layout (JAX's message).

    Example:
        >>> import kdist, numpy as np
        >>> dist = kdist.DataParallel(devices=["cpu:0"])
        >>> batch = kdist.distribute_batch(np.ones((4, 2)), dist)
        >>> batch.shape, tuple(batch.sharding.spec)
        ((4, 2), ('batch', None))
    """
    target = layout_or_distribution
    if target is None:
        target = _current()
        if target is None:
            raise ValueError(
                "distribute_batch: no layout or distribution was given and none is set. Pass "
                "one, call kdist.set_distribution(), or call this inside distribution.scope()."
            )
    if isinstance(target, Distribution):
        dist = target

        def place(leaf: Any) -> Any:
            layout = dist.get_data_layout(tuple(_shape_of(leaf)))
            return _jax_backend.array_from_process_local_data(layout.backend_layout, leaf)

        return _jax_backend.tree_map(place, per_process_batch)

    sharding = _sharding_of(target, "distribute_batch", accepts_distribution=True)
    return _jax_backend.tree_map(
        lambda leaf: _jax_backend.array_from_process_local_data(sharding, leaf),
        per_process_batch,
    )


def _shape_of(leaf: Any) -> tuple[int, ...]:
    shape = getattr(leaf, "shape", None)
    if shape is None:
        raise TypeError(
            "distribute_batch: every leaf of the batch must be an array with a shape (numpy or "
            f"jax). Received a leaf {leaf!r} of type {type(leaf).__name__}"
        )
    return tuple(shape)


def _sharding_of(
    layout: Any, where: str, *, accepts_distribution: bool = False, accepts_format: bool = False
) -> Any:
    """The JAX sharding (or, where `accepts_format`, the Format) a layout stands for."""
    if isinstance(layout, TensorLayout):
        return layout.backend_layout
    if _jax_backend.is_sharding(layout) or (accepts_format and _jax_backend.is_format(layout)):
        return layout
    keras_layout = keras_conversion.backend_layout_of_keras_layout(layout)
    if keras_layout is not None:
        return keras_layout
    kinds = [
        *(["a kdist.Distribution"] if accepts_distribution else []),
        "a kdist.TensorLayout",
        "a keras.distribution.TensorLayout",
        "a jax.sharding.Sharding",
        *(["a jax.experimental.layout.Format"] if accepts_format else []),
    ]
    expected = f"{', '.join(kinds[:-1])} or {kinds[-1]}"
    raise TypeError(
        f"{where}: expected {expected}. Received: {layout!r} of type {type(layout).__name__}"
    )
