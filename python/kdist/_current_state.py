"""The state behind `kdist.distribution()`: a process-wide value and per-thread scopes.

Pure state with no kdist imports, so every layer above can read it:
`set_distribution()` (kdist._current) writes the process-wide value,
`Distribution.scope()` pushes and pops this thread's scopes, and the innermost
scope of a thread wins over the process-wide value.
"""

from __future__ import annotations

import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kdist._distribution import Distribution

_process_wide: Distribution | None = None
_thread_scopes = threading.local()  # .stack: list of Distributions entered by scope()


def current() -> Distribution | None:
    """The innermost `scope()` of this thread, else the process-wide distribution."""
    stack: list[Distribution] | None = getattr(_thread_scopes, "stack", None)
    if stack:
        return stack[-1]
    return _process_wide


def set_process_wide(value: Distribution | None) -> None:
    """Sets the distribution every thread sees outside its scopes."""
    global _process_wide
    _process_wide = value


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
