"""kdist's one mutable state: the active job spec, the current distribution, and the
hook through which the layout types ask the Keras bridge.

A leaf with no kdist imports, so that every wing can *ask* it instead of
importing the wing that writes it (Keras's `backend/common/global_state.py` is
the model): `_start.initialize` writes the spec and the distribution types read
it; `set_distribution()` (`_distribution.current`) writes the process-wide
distribution, `Distribution.scope()` pushes and pops this thread's scopes, and
the innermost scope of a thread wins over the process-wide value.

The layout types (`_layouts`) sit below the Keras bridge (`_keras`) and may not
import it, yet a `DeviceMesh` must be a `keras.distribution.DeviceMesh` where Keras
is loaded, and a `LayoutMap` must take a Keras mesh. So the bridge, when it is
loaded (loading any room of `kdist._keras` does it, and `kdist.DeviceMesh` & co.
load it), registers itself here as a `KerasBridge`, and the layout types ask
`keras_bridge()`; None means no bridge is loaded, and the layout types then
work on their own (no Keras).

Values are stored as `object`: the state does not know the types it holds.
"""

from __future__ import annotations

import threading
from typing import Protocol, TypeVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kdist._core import ClusterSpec

_T = TypeVar("_T")


class KerasBridge(Protocol):
    """What the layout types ask the Keras bridge (`kdist._keras.conversion` answers)."""

    def mesh_class(self, cls: type[_T]) -> type[_T]:
        """The class a new `cls` (kdist's DeviceMesh or a subclass) is made of: a
        subclass of `cls` and of `keras.distribution.DeviceMesh` while Keras is
        loaded (whose `_kdist_made_from` attribute is `cls`), else `cls` itself."""
        ...

    def kdist_mesh(self, value: object, where: str) -> object | None:
        """The kdist DeviceMesh equivalent to `value` when it is a Keras DeviceMesh
        (the same one each time for one Keras mesh), else None."""
        ...


_active_spec: ClusterSpec | None = None
_process_wide: object | None = None
_thread_scopes = threading.local()  # .stack: list of distributions entered by scope()
_keras_bridge: KerasBridge | None = None


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


def keras_bridge() -> KerasBridge | None:
    """The Keras bridge, once it is loaded; else None."""
    return _keras_bridge


def set_keras_bridge(bridge: KerasBridge) -> None:
    """Registers the Keras bridge (done once, by `kdist._keras` when it is loaded)."""
    global _keras_bridge
    _keras_bridge = bridge
