"""One version: pyproject.toml's, as `kdist --version` and `kdist.__version__` tell it,
read without importlib.metadata (which would cost `import kdist` tens of milliseconds)."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import kdist
from helpers.support import KDIST_SCRIPT, clean_env, run_python

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def project_version() -> str:
    version = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    assert isinstance(version, str)
    return version


def test_kdist_version_prints_pyproject_s_version() -> None:
    result = subprocess.run(
        [str(KDIST_SCRIPT), "--version"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"kdist {project_version()}\n"


def test_dunder_version_is_pyproject_s_version() -> None:
    assert kdist.__version__ == project_version()
    assert "__version__" in dir(kdist)


def test_neither_import_kdist_nor_its_version_imports_importlib_metadata() -> None:
    result = run_python(
        "import json, sys\n"
        "seen = {'before': 'importlib.metadata' in sys.modules}\n"
        "import kdist\n"
        "seen['import kdist'] = 'importlib.metadata' in sys.modules\n"
        "kdist.__version__\n"
        "seen['kdist.__version__'] = 'importlib.metadata' in sys.modules\n"
        "print(json.dumps(seen))\n"
    )
    assert result.returncode == 0, result.describe()
    assert json.loads(result.stdout) == {
        "before": False,
        "import kdist": False,
        "kdist.__version__": False,
    }
