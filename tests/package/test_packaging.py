"""The wheel: what it holds, its tags, and an abi3 build for CPython >= 3.12."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import bench_module

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel scripts/test.sh installed, or one built now."""
    given = os.environ.get("KDIST_TEST_WHEEL")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out),
            str(REPO),
        ],
        check=True,
        timeout=600,
    )
    return next(out.glob("kdist-*.whl"))


def test_wheel_holds_the_package_the_core_its_stubs_and_py_typed(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "kdist/__init__.py",
        "kdist/_core.pyi",
        "kdist/_version.py",
        "kdist/py.typed",
        "kdist/_jax_backend.py",
    ):
        assert expected in names, f"{expected} missing from {wheel.name}"
    cores = [n for n in names if n.startswith("kdist/_core.") and n.endswith(".so")]
    assert len(cores) == 1, cores
    assert not any(n.endswith((".cc", ".h")) for n in names)


def test_wheel_declares_the_pytest_plugin_and_ships_kdist_testing(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    entry_points = next(n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt"))
    assert "[pytest11]\nkdist = kdist.testing.plugin\n" in archive.read(entry_points).decode()
    assert {"kdist/testing/__init__.py", "kdist/testing/plugin.py"} <= set(archive.namelist())


def test_the_bench_module_ships_only_in_wheels_built_for_tests(wheel: Path) -> None:
    """Users' wheels hold no kdist._core_bench; a wheel built with KDIST_BENCH_MODULE=ON
    (KDIST_TEST_BENCH_MODULE=1) holds it with its generated stub."""
    names = set(zipfile.ZipFile(wheel).namelist())
    bench = sorted(n for n in names if n.startswith("kdist/_core_bench."))
    if bench_module.expected():
        assert len(bench) == 2 and "kdist/_core_bench.pyi" in bench, (
            f"expected kdist/_core_bench.<suffix>.so and kdist/_core_bench.pyi in {wheel.name} "
            f"(KDIST_TEST_BENCH_MODULE=1), received {bench}"
        )
    else:
        assert bench == [], (
            f"expected no kdist._core_bench in {wheel.name} (a user's wheel), received {bench}; "
            "it belongs behind -DKDIST_BENCH_MODULE=ON"
        )


def test_wheel_for_this_python_is_a_regular_cpython_wheel(wheel: Path) -> None:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    if sys.version_info >= (3, 12):
        assert "-cp312-abi3-" in wheel.name, wheel.name
    else:
        assert f"-{tag}-{tag}-" in wheel.name, wheel.name


def test_generated_stub_describes_the_core(wheel: Path) -> None:
    stub = zipfile.ZipFile(wheel).read("kdist/_core.pyi").decode()
    assert "class ClusterSpec" in stub
    assert "def resolve(" in stub
    assert "def run_worker(" in stub and ") -> WorkerResult:" in stub
    assert "Any" not in stub and "dict[str, Any]" not in stub


def _python312() -> str | None:
    """A working CPython 3.12 interpreter (pyenv shims that refuse to run don't count)."""
    candidates = [shutil.which("python3.12"), "/usr/bin/python3.12"]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    for candidate in candidates:
        if not candidate or not Path(candidate).exists():
            continue
        check = [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"]
        if subprocess.run(check, capture_output=True, timeout=30).returncode == 0:
            return candidate
    return None


PYTHON312 = _python312()


@pytest.mark.skipif(PYTHON312 is None, reason="no working python3.12 on this machine")
def test_cpython_312_gets_an_abi3_wheel_that_imports(tmp_path: Path) -> None:
    python312 = PYTHON312
    assert python312 is not None
    given = os.environ.get("KDIST_TEST_ABI3_WHEEL")  # scripts/test.sh builds it once
    if given:
        abi3 = Path(given)
    else:
        wheelhouse = tmp_path / "wheelhouse"
        build = subprocess.run(
            [
                python312,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--wheel-dir",
                str(wheelhouse),
                str(REPO),
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert build.returncode == 0, build.stderr[-3000:]
        (abi3,) = wheelhouse.glob("kdist-*.whl")
    assert "-cp312-abi3-" in abi3.name, abi3.name
    assert any(n.endswith(".abi3.so") for n in zipfile.ZipFile(abi3).namelist())

    venv = tmp_path / "venv312"
    subprocess.run([python312, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "--quiet", "--no-deps", str(abi3)],
        check=True,
        timeout=300,
    )
    probe = subprocess.run(
        [
            str(venv / "bin/python"),
            "-c",
            "import kdist\n"
            "from kdist._start import config as _config\n"
            "spec = _config.resolve('[::1]:8476', 2, 1)\n"
            "print(spec.coordinator_address, spec.num_processes, spec.sources['process_id'])\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ.get("PATH", "")},
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["[::1]:8476", "2", "argument"]
