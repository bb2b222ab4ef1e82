"""Every `Example:` in the package runs in the suite, and passes: each module's docstring
examples (private wings included), run in one fresh interpreter; and every public name
has one."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.doctests import run_examples
from helpers.support import clean_env

# An example may start a job (kdist.testing.run_job): processes, like a multiprocess test.
pytestmark = pytest.mark.multiprocess

_EVERY_MODULE = """
import importlib, pkgutil, kdist

def objects():
    for info in pkgutil.walk_packages(kdist.__path__, "kdist."):
        # __main__ runs the command line; _core is compiled (its stub has no examples).
        if info.name == "kdist.__main__" or info.name.startswith("kdist._core"):
            continue
        module = importlib.import_module(info.name)
        yield module, info.name, module
"""

_PUBLIC_NAMES = """
import kdist

def objects():
    for name in kdist.__all__:
        obj = getattr(kdist, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue  # the exceptions: their docs are the tree's, not examples
        yield obj, name, False
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return clean_env(8, KERAS_BACKEND="jax", KERAS_HOME=str(tmp_path / "keras_home"))


def test_every_modules_examples_run_and_pass(tmp_path: Path) -> None:
    failed, attempted, _, result = run_examples(_EVERY_MODULE, env=_env(tmp_path), timeout=300)
    assert failed == 0, result.describe()
    assert attempted > 100, attempted  # the package has about 150; a broken finder finds none


def test_every_public_name_has_an_example_that_runs(tmp_path: Path) -> None:
    failed, attempted, empty, result = run_examples(_PUBLIC_NAMES, env=_env(tmp_path), timeout=300)
    assert failed == 0, result.describe()
    assert empty == [], f"public names without an Example: {empty}"
    assert attempted > 0
