"""kdist's one mutable state: the active job spec and the current distribution.

A leaf with no kdist imports, so that every wing can *ask* it instead of
importing the wing that writes it (Keras's `backend/common/global_state.py` is
the model): `_start.initialize` writes the spec and the distribution types read
it; `set_distribution()` (`_distribution.current`) writes the process-wide
distribution, `Distribution.scope()` pushes and pops this thread's scopes, and
the innermost scope of a thread wins over the process-wide value.

Values are stored as `object`: the state does not know the types it holds.
"""

from __future__ import annotations

import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kdist._core import ClusterSpec

_active_spec: ClusterSpec | None = None
_process_wide: object | None = None
_thread_scopes = threading.local()  # .stack: list of distributions entered by scope()


def active_spec() -> ClusterSpec | None:
    """The spec `kdist.initialize()` started this process with, or None."""
    return _active_spec


def set_active_spec(spec: ClusterSpec | None) -> None:
    """Records the spec of the job this process joined (None: it left)."""
    global _active_spec
    _active_spec = spec


def current() -> object | None:
    """The innermost `scope()` of this thread, else the process-wide distribution."""
    stack: list[object] | None = getattr(_thread_scopes, "stack", None)
    if stack:
        return stack[-1]
    return _process_wide


def set_process_wide(value: object | None) -> None:
    """Sets the distribution every thread sees outside its scopes."""
    global _process_wide
    _process_wide = value


def push_scope(value: object) -> None:
    """Makes `value` current for this thread until the matching `pop_scope()`."""
    stack = getattr(_thread_scopes, "stack", None)
    if stack is None:
        stack = _thread_scopes.stack = []
    stack.append(value)


def pop_scope(value: object) -> None:
    """Ends the innermost scope of this thread, which must be `value`'s."""
    stack: list[object] = _thread_scopes.stack
    if not stack or stack[-1] is not value:
        raise RuntimeError("Distribution scopes were exited out of order")
    stack.pop()
