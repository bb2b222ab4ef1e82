"""Keeping Keras's current distribution in step with kdist's.

`kdist.set_distribution()` and `Distribution.scope()` make Keras's current
distribution the view of kdist's. When Keras is imported after a distribution
was set, a one-shot import hook publishes it to Keras as soon as Keras has
loaded.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any, cast

from kdist import _state
from kdist._keras.loaded import keras_module, keras_on_jax
from kdist._keras.views import KdistDistribution, view_of_distribution

_lock = threading.Lock()
_watching_import = False


def _keras_or_watch(needed: bool) -> ModuleType | None:
    """Keras on its JAX backend, or None; when Keras is not imported yet and `needed`,
    arranges for kdist's current distribution to reach it once it is."""
    keras = keras_on_jax()
    if keras is None and needed and keras_module() is None:
        _watch_keras_import()
    return keras


def publish(distribution: KdistDistribution | None) -> None:
    """Makes Keras's current distribution (Keras keeps one per thread: this thread's) the
    view of `distribution`. Before Keras is imported, arranges for that to happen
    as soon as it is."""
    keras = _keras_or_watch(needed=distribution is not None)
    if keras is not None:
        keras.distribution.set_distribution(
            None if distribution is None else view_of_distribution(distribution)
        )


def enter_scope(distribution: KdistDistribution) -> tuple[bool, Any]:
    """Makes the view of `distribution` Keras's current one for this thread; returns
    what `exit_scope` needs to restore the previous one."""
    keras = _keras_or_watch(needed=True)
    if keras is None:
        return (False, None)
    previous = keras.distribution.distribution()
    keras.distribution.set_distribution(view_of_distribution(distribution))
    return (True, previous)


def exit_scope(token: tuple[bool, Any], current: KdistDistribution | None) -> None:
    """Restores Keras's distribution as `enter_scope` found it. When Keras was imported
    inside the scope, it gets kdist's `current` distribution instead."""
    entered, previous = token
    keras = keras_on_jax()
    if keras is None:
        return
    if entered:
        keras.distribution.set_distribution(previous)
    else:
        publish(current)


class _PublishAfterLoading(importlib.abc.Loader):
    """Runs Keras's own loader, then hands Keras kdist's current distribution."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        current = cast("KdistDistribution | None", _state.current())
        if current is None:
            return
        try:
            publish(current)
        except Exception as error:  # the program's import of Keras must not fail for this
            warnings.warn(
                f"kdist could not hand its current distribution {current!r} to Keras after "
                f"Keras was imported ({type(error).__name__}: {error}); call "
                "kdist.set_distribution() again after importing keras.",
                UserWarning,
                stacklevel=2,
            )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _KerasImportWatcher(importlib.abc.MetaPathFinder):
    """One-shot: finds the top-level `keras` module through the other finders and
    wraps its loader in `_PublishAfterLoading`."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "keras":
            return None
        _stop_watching(self)
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _PublishAfterLoading(spec.loader)
                return spec
        return None


def _watch_keras_import() -> None:
    global _watching_import
    with _lock:
        if _watching_import:
            return
        _watching_import = True
        sys.meta_path.insert(0, _KerasImportWatcher())


def _stop_watching(watcher: _KerasImportWatcher) -> None:
    global _watching_import
    with _lock:
        if watcher in sys.meta_path:
            sys.meta_path.remove(watcher)
        _watching_import = False
