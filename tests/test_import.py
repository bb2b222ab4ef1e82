"""`import kdist` is cheap and JAX-free; the public surface is complete."""

from __future__ import annotations

import ast
import json
import sysconfig
from pathlib import Path

import kdist
from support import run_python


def test_tests_run_against_the_installed_package() -> None:
    site_packages = sysconfig.get_paths()["platlib"]
    assert kdist.__file__.startswith(site_packages), kdist.__file__


def kdist_imports(module: Path) -> set[str]:
    """The kdist modules `module` imports when it runs, at the top level or inside a
    function (not those under `if TYPE_CHECKING:`), by name: "_config", "_core", ..."""
    found: set[str] = set()
    pending: list[ast.AST] = [ast.parse(module.read_text())]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.ImportFrom):
            # "from . import _x" and "from ._x import y" are kdist's too.
            base = node.module or ""
            target = ("kdist." + base).rstrip(".") if node.level else base
            if target == "kdist":
                found.update(alias.name for alias in node.names if alias.name.startswith("_"))
            elif target.startswith("kdist."):
                found.add(target.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("kdist."))
        pending.extend(ast.iter_child_nodes(node))
    return found - {module.stem}


def test_the_package_s_modules_import_each_other_without_a_circle() -> None:
    """Every import among kdist's modules, lazy ones included, points one way."""
    package = Path(kdist.__file__).parent
    graph = {path.stem: kdist_imports(path) for path in package.glob("_*.py")}
    assert {"_current", "_distribution", "_keras_bridge"} <= set(graph)
    visiting: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        assert name not in visiting, f"import circle: {' -> '.join([*visiting, name])}"
        visiting.append(name)
        for imported in sorted(graph.get(name, set())):
            visit(imported)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_import_kdist_imports_neither_jax_nor_the_core() -> None:
    result = run_python(
        "import sys, json, kdist; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('jax', 'jaxlib', 'numpy', 'kdist'))))"
    )
    assert result.returncode == 0, result.describe()
    loaded = json.loads(result.stdout)
    assert loaded == ["kdist", "kdist._errors"]


def test_failed_validation_never_imports_jax() -> None:
    result = run_python(
        "import sys, kdist\n"
        "try:\n"
        "    kdist.initialize('10.0.0.1:99999', 2, 0)\n"
        "except kdist.ConfigError:\n"
        "    pass\n"
        "print('jax' in sys.modules)\n"
    )
    assert result.returncode == 0, result.describe()
    assert result.stdout.strip() == "False"


def test_every_public_name_resolves() -> None:
    for name in kdist.__all__:
        assert getattr(kdist, name) is not None, name
    assert set(kdist.__all__) <= set(dir(kdist))
    assert isinstance(kdist.__version__, str)


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        kdist.no_such_name  # noqa: B018
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("expected AttributeError")


def test_exception_tree() -> None:
    assert issubclass(kdist.ConfigError, kdist.KdistError)
    assert issubclass(kdist.ConfigError, ValueError)
    assert issubclass(kdist.PortInUseError, OSError)
    assert issubclass(kdist.CoordinatorUnreachableError, ConnectionError)
    assert issubclass(kdist.RendezvousError, RuntimeError)
    assert issubclass(kdist.RendezvousTimeoutError, kdist.RendezvousError)
    assert issubclass(kdist.RendezvousTimeoutError, TimeoutError)
    assert issubclass(kdist.InitializationOrderError, RuntimeError)
    for name in (
        "KdistError",
        "ConfigError",
        "PortInUseError",
        "CoordinatorUnreachableError",
        "RendezvousError",
        "RendezvousTimeoutError",
        "InitializationOrderError",
    ):
        assert name in kdist.__all__
