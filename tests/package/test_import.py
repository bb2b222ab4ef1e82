"""`import kdist` is cheap and JAX-free; the public surface is complete."""

from __future__ import annotations

import ast
import json
import sys
import sysconfig
from pathlib import Path

import import_graph
import pytest

import kdist
from helpers.support import clean_env, run_python


def test_tests_run_against_the_installed_package() -> None:
    site_packages = sysconfig.get_paths()["platlib"]
    assert kdist.__file__.startswith(site_packages), kdist.__file__


# The wings of the house (docs/architecture.md) and what each may import. Shared leaves sit at the
# bottom; the CLI at the top; `_start` and `_distribution` never import each other;
# nothing imports `_resume` but the lazy name table of `__init__`.
LEAVES = frozenset(
    {"_errors", "_log", "_state", "_jax_backend", "_devices", "_version", "_progress"}
)
WINGS = (
    "_together",
    "_start",
    "_layouts",
    "_keras",
    "_distribution",
    "_resume",
    "_local_job",
    "_agent",
    "_cli",
    "testing",
)
MAY_IMPORT = {
    "leaves": {"leaves"},
    "_layouts": {"leaves", "_layouts"},
    "_keras": {"leaves", "_layouts", "_keras"},
    # What keeps the job together after the start: below the start, which hands it the
    # channel; it asks nothing of any other wing.
    "_together": {"leaves", "_together"},
    "_start": {"leaves", "_keras", "_together", "_start"},
    "_distribution": {"leaves", "_layouts", "_keras", "_distribution"},
    "_resume": {"leaves", "_together", "_keras", "_layouts", "_distribution", "_resume"},
    # N processes on this machine: `kdist launch` and `kdist.testing` share it.
    "_local_job": {"leaves", "_local_job"},
    # One machine's agent of a job across machines (`kdist launch --nodes`): this machine's
    # processes of each attempt are a `_local_job`.
    "_agent": {"leaves", "_local_job", "_agent"},
    "_cli": {
        "leaves",
        "_start",
        "_layouts",
        "_keras",
        "_distribution",
        "_local_job",
        "_agent",
        "_cli",
    },
    # The public test tool: a job of processes, each started by kdist.initialize();
    # nothing imports it (`import kdist` does not), and it never imports the CLI.
    "testing": {"leaves", "_local_job", "_together", "_start", "testing"},
    "__init__": {"leaves", "_together", "_start", "_layouts", "_keras", "_distribution", "_resume"},
    "__main__": {"_cli"},
}
# Public names that are Keras classes: resolving one imports Keras, so they are resolved
# in a fresh interpreter (this one keeps Keras unloaded until a Keras test loads it).
KERAS_CLASSES = ("BackupAndRestore",)


def wing_of(module: str) -> str:
    """ "leaves", a wing's name ("_start"), "__init__" or "__main__"."""
    top = module.split(".", maxsplit=1)[0]
    return "leaves" if top in LEAVES else top


@pytest.fixture(scope="module")
def graph() -> import_graph.ImportGraph:
    return import_graph.read(Path(kdist.__file__).parent)


def test_the_package_is_built_of_its_wings(graph: import_graph.ImportGraph) -> None:
    for module in graph.modules:
        assert wing_of(module) in MAY_IMPORT, f"{module} is in no wing and is not a leaf"
    for wing in WINGS:
        assert wing in graph.modules, f"the wing {wing}/ is missing"
    assert {"_start.initialize", "_distribution.current", "_keras.sync"} <= set(graph.modules)


def test_only_the_lazy_name_table_imports_the_resume_wing(graph: import_graph.ImportGraph) -> None:
    importers = {
        a.source
        for a in graph.arrows
        if wing_of(a.target) == "_resume" and wing_of(a.source) != "_resume"
    }
    assert importers == {"__init__"}
    kinds = {
        a.kind for a in graph.arrows if a.source == "__init__" and wing_of(a.target) == "_resume"
    }
    assert kinds <= {import_graph.LAZY, import_graph.TYPING}, kinds


def test_the_package_s_modules_import_each_other_without_a_circle(
    graph: import_graph.ImportGraph,
) -> None:
    """Every import among kdist's modules, lazy and type-only ones included, points down."""
    assert graph.circles() == []
    assert graph.arrows_back_up() == []


@pytest.mark.parametrize("wing", sorted(MAY_IMPORT))
def test_each_wing_imports_only_what_it_may(graph: import_graph.ImportGraph, wing: str) -> None:
    """Per folder: leaves import leaves; `_start` and `_distribution` never import each
    other; nothing imports `_cli` but itself and `__main__`."""
    modules = [m for m in graph.modules if wing_of(m) == wing]
    assert modules, wing
    wrong = [
        f"{a.source} -> {a.target} ({a.kind})"
        for a in graph.arrows
        if a.source in modules and wing_of(a.target) not in MAY_IMPORT[wing]
    ]
    assert wrong == []


def test_the_architecture_page_s_wing_table_says_what_may_import_holds() -> None:
    """docs/architecture.md's table of the Python wings gives, in its last column, what each
    wing may import: the same sets as MAY_IMPORT (the wing itself aside)."""
    import re

    from helpers.support import REPOSITORY

    page = (REPOSITORY / "docs" / "architecture.md").read_text()
    table = page.split("### The wings and their import rules", 1)[1].split("\n\n", 2)[1]
    documented = {}
    for row in table.splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        wing = cells[0].strip("`").rstrip("/")
        allowed = set(re.findall(r"`(_?\w+)`", cells[-1].split("(")[0]))
        allowed |= {"leaves"} if re.match(r"leaves\b", cells[-1]) else set()
        documented[wing] = allowed
    expected = {wing: set(MAY_IMPORT[wing]) - {wing} for wing in ("leaves", *WINGS)}
    expected["leaves"] = {"leaves"}
    assert documented == expected


def _imports_of(path: Path, package: str) -> bool:
    """Whether the module at `path` imports `package` (any import statement)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == package for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package:
            return True
    return False


def test_only_the_jax_backend_imports_jax_and_only_the_keras_wing_imports_keras() -> None:
    package = Path(kdist.__file__).parent
    modules = {
        import_graph.module_name(package, path): path for path in sorted(package.rglob("*.py"))
    }
    assert [m for m, p in modules.items() if _imports_of(p, "jax")] == ["_jax_backend"]
    keras = [m for m, p in modules.items() if _imports_of(p, "keras")]
    assert keras and all(wing_of(m) == "_keras" for m in keras), keras


def test_only_the_certificates_module_imports_cryptography() -> None:
    """X.509 (the `tls` extra) is one module's, imported only when kdist makes or checks
    certificates."""
    package = Path(kdist.__file__).parent
    modules = {
        import_graph.module_name(package, path): path for path in sorted(package.rglob("*.py"))
    }
    assert [m for m, p in modules.items() if _imports_of(p, "cryptography")] == [
        "_start.certificates"
    ]


def test_a_start_without_tls_never_imports_cryptography() -> None:
    """`import kdist`, a single process's start, and a job's TLS plan where it is off (no
    token) or needs no certificate of kdist's load no `cryptography`."""
    result = run_python(
        "import sys, json, kdist\n"
        "loaded = {'import': 'cryptography' in sys.modules}\n"
        "kdist.initialize(num_processes=1)\n"
        "kdist.shutdown()\n"
        "loaded['single'] = 'cryptography' in sys.modules\n"
        "from kdist._start import config, tls\n"
        "plan = tls.decide(config.resolve('10.0.0.1:1234', 2, 1))\n"
        "loaded['no token'] = 'cryptography' in sys.modules\n"
        "print(json.dumps({'loaded': loaded, 'plan': plan.describe()}))\n"
    )
    assert result.returncode == 0, result.describe()
    report = result.report()
    assert report["loaded"] == {"import": False, "single": False, "no token": False}
    assert str(report["plan"]).startswith("off: ")


def test_import_kdist_imports_neither_jax_nor_the_core() -> None:
    result = run_python(
        "import sys, json, kdist; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('jax', 'jaxlib', 'numpy', 'kdist'))))"
    )
    assert result.returncode == 0, result.describe()
    loaded = json.loads(result.stdout)
    assert loaded == ["kdist", "kdist._errors"]


def test_kdist_testing_is_loaded_only_when_imported_by_name() -> None:
    """Neither `import kdist` nor any public name loads kdist.testing; importing it loads
    neither JAX nor the compiled core (pytest imports its plugin in every session)."""
    result = run_python(
        "import sys, json, kdist\n"
        "names = dir(kdist)\n"
        "untouched = 'kdist.testing' not in sys.modules and 'testing' not in names\n"
        "import kdist.testing, kdist.testing.plugin\n"
        "print(json.dumps({'untouched': untouched, 'loaded': sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('jax', 'jaxlib', 'numpy') or m == 'kdist._core')}))\n"
    )
    assert result.returncode == 0, result.describe()
    assert json.loads(result.stdout) == {"untouched": True, "loaded": []}
    assert all(not name.startswith("testing") for name in kdist.__all__)


def test_the_start_loads_no_layout_and_a_layout_name_registers_the_bridge() -> None:
    """`_start/` (its seed included) loads no `_layouts` module: importing the Keras bridge
    registers nothing. The first public name of the layouts registers the bridge."""
    result = run_python(
        "import sys, json, kdist\n"
        "from kdist import _state\n"
        "kdist.initialize, kdist.should_stop, kdist.barrier\n"
        "import kdist._start.seed\n"
        "before = sorted(m for m in sys.modules if m.startswith(('kdist._layouts', "
        "'kdist._keras.conversion')))\n"
        "registered_before = _state.keras_bridge() is not None\n"
        "kdist.DeviceMesh\n"
        "print(json.dumps({'before': before, 'registered_before': registered_before, "
        "'registered_after': _state.keras_bridge() is not None}))\n"
    )
    assert result.returncode == 0, result.describe()
    assert json.loads(result.stdout) == {
        "before": [],
        "registered_before": False,
        "registered_after": True,
    }


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
        if name not in KERAS_CLASSES:
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


def test_a_keras_class_of_kdist_imports_keras_only_when_it_is_used(tmp_path: Path) -> None:
    env = {k: v for k, v in clean_env().items() if k != "KERAS_BACKEND"}
    env["KERAS_HOME"] = str(tmp_path)  # no keras.json naming another backend
    result = run_python(
        "import sys, json, kdist\n"
        "before = 'keras' in sys.modules\n"
        f"classes = [getattr(kdist, name) for name in {KERAS_CLASSES!r}]\n"
        "import keras\n"
        "print(json.dumps({'before': before, 'backend': keras.backend.backend(), 'names': "
        "[f'{c.__module__}.{c.__qualname__}' for c in classes], 'reprs': [str(c) for c in "
        "classes], 'keras': [issubclass(c, keras.callbacks.Callback) for c in classes]}))\n",
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.describe()
    loaded = json.loads(result.stdout)
    assert loaded["before"] is False
    assert loaded["backend"] == "jax"  # KERAS_BACKEND unset: kdist asks for JAX's
    assert loaded["names"] == [f"kdist.{name}" for name in KERAS_CLASSES]
    assert loaded["reprs"] == [f"<class 'kdist.{name}'>" for name in KERAS_CLASSES]
    assert loaded["keras"] == [True] * len(KERAS_CLASSES)


def test_every_public_class_is_named_as_users_import_it() -> None:
    classes = [
        name
        for name in kdist.__all__
        if name not in KERAS_CLASSES and isinstance(getattr(kdist, name), type)
    ]
    assert {"ConfigError", "DeviceMesh", "ModelParallel"} <= set(classes)
    for name in classes:
        cls = getattr(kdist, name)
        assert f"{cls.__module__}.{cls.__qualname__}" == f"kdist.{name}"
        if name == "DeviceMesh" and "keras" in sys.modules:
            # While Keras is loaded (an earlier test loaded it here), the plain class says
            # why Keras code refuses its meshes (keras_models/test_keras_bridge.py pins the words).
            assert str(cls).startswith("<class 'kdist.DeviceMesh' (made before Keras"), cls
        else:
            assert str(cls) == f"<class 'kdist.{name}'>"


def test_a_traceback_names_the_exception_as_users_import_it() -> None:
    result = run_python("import kdist\nkdist.initialize('10.0.0.1:99999', 2, 0)\n")
    assert result.returncode == 1, result.describe()
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("kdist.ConfigError: "), result.describe()
    assert "_errors" not in result.stderr


def test_exception_tree() -> None:
    assert issubclass(kdist.ConfigError, kdist.KdistError)
    assert issubclass(kdist.ConfigError, ValueError)
    assert issubclass(kdist.PortInUseError, OSError)
    assert issubclass(kdist.CoordinatorUnreachableError, ConnectionError)
    assert issubclass(kdist.RendezvousError, RuntimeError)
    assert issubclass(kdist.RendezvousTimeoutError, kdist.RendezvousError)
    assert issubclass(kdist.RendezvousTimeoutError, TimeoutError)
    assert issubclass(kdist.InitializationOrderError, RuntimeError)
    assert issubclass(kdist.BackupStorageError, kdist.KdistError)
    assert issubclass(kdist.BackupStorageError, OSError)
    assert kdist.BackupStorageError.__module__ == "kdist"
    for name in (
        "KdistError",
        "ConfigError",
        "PortInUseError",
        "CoordinatorUnreachableError",
        "RendezvousError",
        "RendezvousTimeoutError",
        "InitializationOrderError",
        "BackupStorageError",
    ):
        assert name in kdist.__all__


def test_load_backup_loads_neither_keras_nor_orbax_nor_jax_until_it_reads() -> None:
    """`kdist.load_backup` is a plain function: resolving it imports none of them (Orbax
    is imported when a backup is read; the model brings Keras and JAX)."""
    result = run_python(
        "import sys, json, kdist\n"
        "kdist.load_backup\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'keras', 'orbax', 'tensorstore', 'jax', 'numpy'})))\n"
    )
    assert result.returncode == 0, result.describe()
    assert json.loads(result.stdout) == []
    assert "load_backup" in kdist.__all__ and "load_backup" in dir(kdist)
