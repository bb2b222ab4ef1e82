"""set_distribution() and distribution(): the current Distribution.

The setting is process-wide: `set_distribution` in one thread is seen by every
thread (Keras keeps it per thread without saying so, so a data-loading thread
sees None). `Distribution.scope()` overrides it for the current thread only,
and nested scopes restore the outer value on exit.

When the program uses Keras (on JAX), every change is mirrored into Keras's own
current distribution through the Keras bridge, so Keras models are placed by
kdist's layouts (Keras keeps its copy per thread: the thread that made the change).
"""

from __future__ import annotations

from typing import cast

from kdist import _state
from kdist._distribution.data_parallel import DataParallel
from kdist._distribution.distribution import Distribution, _current
from kdist._distribution.model_parallel import ModelParallel
from kdist._keras import conversion as keras_conversion
from kdist._keras import sync as keras_sync
from kdist._keras import views as keras_views


def set_distribution(value: Distribution | None) -> None:
    """Sets the process-wide current distribution, for kdist and for Keras.

    When the program uses Keras on its JAX backend (imported before or after
    this call), Keras's current distribution becomes an equivalent Keras
    object (`keras.distribution.distribution()`), so every variable a Keras
    model creates is placed by `value`'s layouts and `model.fit` / `evaluate` /
    `predict` run sharded, as with `keras.distribution.set_distribution`.
    kdist does not shard datasets: in a multi-process job each process passes
    its own part of the global batch to `fit()` (NumPy arrays or a dataset it
    sharded itself; `value.data_shard_id` says which part). kdist never
    imports Keras.

    Args:
        value: a `kdist.Distribution` (`DataParallel`, `ModelParallel`, ...),
            a `keras.distribution.DataParallel` or `ModelParallel` (converted
            to the kdist equivalent; Keras keeps the object you passed), or
            None to clear it.

    Raises:
        TypeError: `value` is neither a Distribution nor None.
        kdist.ArgumentTypeError: `value` is a Keras distribution of another
            kind, which kdist cannot convert.

    Example:
        >>> import kdist
        >>> kdist.set_distribution(None)
        >>> kdist.distribution() is None
        True
    """
    if value is not None and not isinstance(value, Distribution):
        converted = _from_keras(value)
        if converted is None:
            raise TypeError(
                "set_distribution() expects a kdist.Distribution (such as kdist.DataParallel "
                "or kdist.ModelParallel), a keras.distribution.DataParallel or ModelParallel, "
                f"or None. Received: {value!r} of type {type(value).__name__}"
            )
        value = converted
    _state.set_process_wide(value)
    keras_sync.publish(value)


def distribution() -> Distribution | None:
    """Returns the current distribution: the innermost `scope()` of this thread, else
    the process-wide one set by `set_distribution()`, else None.

    Example:
        >>> import kdist
        >>> kdist.distribution() is None
        True
    """
    return _current()


def _from_keras(value: object) -> Distribution | None:
    """The kdist equivalent of a `keras.distribution` DataParallel or ModelParallel
    (Keras keeps `value` itself); None when `value` is not a Keras distribution."""
    parts = keras_conversion.describe_keras_distribution(value)
    if parts is None:
        return None
    if not isinstance(parts, keras_conversion.KerasDistributionParts):
        # A Keras view of a kdist distribution: the bridge hands back its source.
        return cast("Distribution", parts)
    converted: Distribution
    if parts.layout_map is not None:
        converted = ModelParallel(
            layout_map=parts.layout_map,
            batch_dim_name=parts.batch_dim_name,
            auto_shard_dataset=parts.auto_shard_dataset,
        )
    else:
        converted = DataParallel(
            device_mesh=parts.device_mesh, auto_shard_dataset=parts.auto_shard_dataset
        )
    keras_views.remember_original(converted, value)
    return converted
