"""set_distribution() and distribution(): the current Distribution.

The setting is process-wide: `set_distribution` in one thread is seen by every
thread (Keras keeps it per thread without saying so, so a data-loading thread
sees None). `Distribution.scope()` overrides it for the current thread only,
and nested scopes restore the outer value on exit.
"""

from __future__ import annotations

import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kdist._distribution import Distribution

_process_wide: Distribution | None = None
_thread_scopes = threading.local()  # .stack: list of Distributions entered by scope()


def set_distribution(value: Distribution | None) -> None:
    """Sets the process-wide current distribution.

    Args:
        value: a `kdist.Distribution` (`DataParallel`, `ModelParallel`, ...),
            or None to clear it.

    Raises:
        TypeError: `value` is neither a Distribution nor None.

    Example:
        >>> import kdist
        >>> kdist.set_distribution(None)
        >>> kdist.distribution() is None
        True
    """
    global _process_wide
    from kdist._distribution import Distribution

    if value is not None and not isinstance(value, Distribution):
        raise TypeError(
            "set_distribution() expects a kdist.Distribution (such as kdist.DataParallel or "
            f"kdist.ModelParallel) or None. Received: {value!r} of type {type(value).__name__}"
        )
    _process_wide = value


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


def push_scope(value: Distribution) -> None:
    """Makes `value` current for this thread until the matching `pop_scope()`."""
    stack = getattr(_thread_scopes, "stack", None)
    if stack is None:
        stack = _thread_scopes.stack = []
    stack.append(value)


def pop_scope(value: Distribution) -> None:
    """Ends the innermost scope of this thread, which must be `value`'s."""
    stack: list[Distribution] = _thread_scopes.stack
    if not stack or stack[-1] is not value:
        raise RuntimeError("Distribution scopes were exited out of order")
    stack.pop()
