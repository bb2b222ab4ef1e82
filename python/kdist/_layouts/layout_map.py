"""LayoutMap: variable paths (exact keys or regular expressions) to TensorLayouts."""

from __future__ import annotations

import re
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any, TypeVar, overload

from kdist._errors import ArgumentTypeError
from kdist._layouts.device_mesh import DeviceMesh, as_kdist_mesh
from kdist._layouts.tensor_layout import Axis, TensorLayout

_Default = TypeVar("_Default")
_MISSING: Any = object()


class LayoutMap(MutableMapping[str, TensorLayout]):
    """An ordered mapping from variable paths to `TensorLayout`s; keys are regexes.

    The kdist counterpart of `keras.distribution.LayoutMap`. A lookup
    (`layout_map[path]`) returns the layout stored under `path` itself when
    there is one; otherwise the layout of the one key that, read as a
    regular expression, matches the whole path (`re.fullmatch`); None when no
    key matches; and raises ValueError when several do.

    Unlike Keras's, `path in layout_map` is True only when a lookup finds a
    layout, and `layout_map.get(path, default)` returns `default` when it
    does not. Keys are compiled when inserted, so a malformed regular
    expression is reported there. Iteration, `len`, `del`, `pop` and
    `keys()` work on the stored keys, in insertion order.

    Args:
        device_mesh: The `DeviceMesh` of the layouts. Layouts inserted
            without a mesh get this one. A `keras.distribution.DeviceMesh` is
            converted to the equivalent kdist mesh (the same one for one Keras
            mesh), as `kdist.set_distribution` converts Keras distributions.

    Raises:
        kdist.ArgumentTypeError: `device_mesh` is neither a kdist nor a Keras
            `DeviceMesh` (a TypeError and a ValueError).

    Example:
        >>> import kdist
        >>> mesh = kdist.DeviceMesh((1, 1), ["batch", "model"], devices=["cpu:0"])
        >>> layout_map = kdist.LayoutMap(mesh)
        >>> layout_map[".*dense.*kernel"] = (None, "model")
        >>> layout_map["dense_1/kernel"].axes
        (None, 'model')
        >>> layout_map["dense_1/bias"] is None
        True
        >>> "dense_1/bias" in layout_map
        False
    """

    __module__ = "kdist"  # reprs, tracebacks and pickles say kdist.LayoutMap

    def __init__(self, device_mesh: Any) -> None:
        self._device_mesh = as_kdist_mesh(device_mesh, "LayoutMap")
        self._layouts: dict[str, TensorLayout] = {}
        self._patterns: dict[str, re.Pattern[str]] = {}

    @property
    def device_mesh(self) -> DeviceMesh:
        """The `DeviceMesh` of this map."""
        return self._device_mesh

    def lookup(self, path: str) -> TensorLayout | None:
        """The layout for `path`: exact key first, else the one regex key that matches it.

        Args:
            path: A variable or tensor path, such as "dense_1/kernel".

        Returns:
            The layout, or None when no key matches.

        Raises:
            TypeError: `path` is not a string.
            ValueError: several keys match `path` (the message begins with
                Keras's "Path '<path>' matches multiple layout specification
                keys" and lists them).
        """
        if not isinstance(path, str):
            raise TypeError(
                "LayoutMap: a lookup key must be a string (a variable or tensor path). "
                f"Received: {path!r} of type {type(path).__name__}"
            )
        exact = self._layouts.get(path)
        if exact is not None:
            return exact
        matches = [key for key, pattern in self._patterns.items() if pattern.fullmatch(path)]
        if len(matches) > 1:
            raise ValueError(
                f"Path '{path}' matches multiple layout specification keys: {matches}. "
                "LayoutMap: make each path match at most one key (anchor or narrow the "
                "regular expressions)."
            )
        if matches:
            return self._layouts[matches[0]]
        return None

    def __getitem__(self, key: str) -> TensorLayout | None:  # type: ignore[override]
        """`lookup(key)`: None, not KeyError, when no key matches (as in Keras)."""
        return self.lookup(key)

    def __setitem__(self, key: str, layout: TensorLayout | Sequence[Axis]) -> None:
        """Stores `layout` under `key`.

        Args:
            key: An exact path or a regular expression (matched against whole
                paths). Each key may be stored once.
            layout: A `TensorLayout`, or a tuple or list of axes that becomes
                one. A layout without a mesh gets this map's mesh.

        Raises:
            TypeError: `key` is not a string. kdist.ArgumentTypeError (a
                TypeError and, as in Keras, a ValueError): `layout` is neither a
                `TensorLayout` nor a tuple or list of axes.
            ValueError: `key` is already stored ("<key> already exist", as
                Keras says), is not a valid regular expression, or the layout's
                axes are not the mesh's.
        """
        if not isinstance(key, str):
            raise TypeError(
                "LayoutMap: keys must be strings (paths or regular expressions). "
                f"Received: {key!r} of type {type(key).__name__}"
            )
        if key in self._layouts:
            raise ValueError(
                f"{key} already exist in the LayoutMap with value {self._layouts[key]!r}. "
                f"LayoutMap: each key may be set once; delete {key!r} first to replace it."
            )
        try:
            pattern = re.compile(key)
        except re.error as error:
            raise ValueError(
                f"LayoutMap: the key {key!r} is not a valid regular expression ({error}). "
                "Escape special characters with re.escape() to match a path literally."
            ) from None
        if isinstance(layout, (tuple, list)):
            layout = TensorLayout(layout)
        if not isinstance(layout, TensorLayout):
            raise ArgumentTypeError(
                f"{layout} should be a TensorLayout type, got {type(layout)}. LayoutMap: a "
                "value must be a kdist.TensorLayout, or a tuple or list of axes such as "
                f"(None, 'model'). Received: {layout!r} of type {type(layout).__name__} for "
                f"the key {key!r}"
            )
        if layout.device_mesh is None:
            layout.device_mesh = self._device_mesh
        self._layouts[key] = layout
        self._patterns[key] = pattern

    def __delitem__(self, key: str) -> None:
        """Removes the stored key `key` (exactly; no regex matching).

        Raises:
            KeyError: `key` is not stored.
        """
        del self._layouts[key]
        del self._patterns[key]

    def __contains__(self, key: object) -> bool:
        """Whether a lookup of `key` finds a layout (False for a non-string).

        Raises:
            ValueError: several keys match `key`.
        """
        if not isinstance(key, str):
            return False
        return self.lookup(key) is not None

    @overload
    def get(self, key: str, /) -> TensorLayout | None: ...
    @overload
    def get(self, key: str, /, default: _Default) -> TensorLayout | _Default: ...
    def get(self, key: str, /, default: Any = None) -> Any:
        """`lookup(key)`, or `default` when no key matches.

        Raises:
            ValueError: several keys match `key`.
        """
        found = self.lookup(key)
        return default if found is None else found

    def pop(self, key: str, /, default: Any = _MISSING) -> Any:
        """Removes the stored key `key` (exactly) and returns its layout, or `default`.

        Raises:
            KeyError: `key` is not stored and no default was given.
        """
        if key in self._layouts:
            layout = self._layouts[key]
            del self[key]
            return layout
        if default is _MISSING:
            raise KeyError(key)
        return default

    def setdefault(self, key: str, default: Any = None) -> Any:
        """`lookup(key)` when it finds a layout; else stores `default` under `key` and
        returns the stored layout."""
        found = self.lookup(key)
        if found is not None:
            return found
        self[key] = default
        return self._layouts[key]

    def __len__(self) -> int:
        return len(self._layouts)

    def __iter__(self) -> Iterator[str]:
        return iter(self._layouts)

    def __repr__(self) -> str:
        entries = ", ".join(f"{key!r}: {layout.axes}" for key, layout in self._layouts.items())
        return f"<LayoutMap device_mesh={self._device_mesh!r} {{{entries}}}>"
