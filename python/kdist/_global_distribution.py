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

import threading
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kdist._distribution import Distribution

_process_wide: Distribution | None = None
_thread_scopes = threading.local()  # .stack: list of Distributions entered by scope()


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
    global _process_wide
    from kdist import _keras_bridge
    from kdist._distribution import Distribution

    if value is not None and not isinstance(value, Distribution):
        converted = _keras_bridge.from_keras(value)
        if converted is None:
            raise TypeError(
                "set_distribution() expects a kdist.Distribution (such as kdist.DataParallel "
                "or kdist.ModelParallel), a keras.distribution.DataParallel or ModelParallel, "
                f"or None. Received: {value!r} of type {type(value).__name__}"
            )
        value = converted
    _process_wide = value
    _keras_bridge.publish(value)


def distribution() -> Distribution | None:
    """Returns the current distribution: the innermost `scope()` of this thread, else
    the process-wide one set by `set_distribution()`, else None.

    Example:
        >>> import kdist
        >>> kdist.distribution() is None
        True
    """
    stack: list[Distribution] | None = getattr(_thread_scopes, "stack", None)
    if stack:
        return stack[-1]
    return _process_wide


def push_scope(value: Distribution) -> tuple[bool, Any]:
    """Makes `value` current for this thread (and for Keras in this thread) until the
    matching `pop_scope()`, which takes the returned token."""
    from kdist import _keras_bridge

    stack = getattr(_thread_scopes, "stack", None)
    if stack is None:
        stack = _thread_scopes.stack = []
    stack.append(value)
    return _keras_bridge.enter_scope(value)


def pop_scope(value: Distribution, token: tuple[bool, Any]) -> None:
    """Ends the innermost scope of this thread, which must be `value`'s, and gives
    Keras back the distribution it had before."""
    from kdist import _keras_bridge

    stack: list[Distribution] = _thread_scopes.stack
    if not stack or stack[-1] is not value:
        raise RuntimeError("Distribution scopes were exited out of order")
    stack.pop()
    _keras_bridge.exit_scope(token, distribution())
