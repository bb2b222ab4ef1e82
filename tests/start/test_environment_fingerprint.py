"""The environment fingerprint a process sends in its hello (_start.environment_fingerprint)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from kdist._start import environment_fingerprint as _fingerprint


def _values(entries: tuple[_fingerprint.Entry, ...]) -> dict[str, str]:
    return {entry.name: entry.value for entry in entries}


def _no_devices(tmp_path: Path) -> Path:
    dev = tmp_path / "dev"
    dev.mkdir(exist_ok=True)
    return dev


def test_entries_come_in_a_fixed_order_with_their_policy(tmp_path: Path) -> None:
    entries = _fingerprint.collect({}, ["-c"], dev_dir=_no_devices(tmp_path))
    assert [(e.name, e.must_match) for e in entries] == [
        ("jax", True),
        ("jaxlib", True),
        ("keras", False),
        ("kdist", False),
        ("python", False),
        ("device platform", True),
        ("local devices", True),
        ("platform", False),
        ("XLA_FLAGS", False),
        ("JAX settings", False),
        ("script", False),
        ("arguments", False),
    ]


def test_versions_come_from_package_metadata_without_importing(tmp_path: Path) -> None:
    from importlib.metadata import version

    values = _values(_fingerprint.collect({}, ["-c"], dev_dir=_no_devices(tmp_path)))
    assert values["jax"] == version("jax")
    assert values["kdist"] == version("kdist")
    assert values["python"] == ".".join(map(str, sys.version_info[:3]))
    # In a fresh interpreter: collecting imports neither jax, keras nor importlib.metadata.
    code = (
        "import sys; from kdist._start import environment_fingerprint\n"
        "environment_fingerprint.collect()\n"
        "print(sorted(m for m in ('jax', 'keras', 'importlib.metadata') if m in sys.modules))"
    )
    fresh = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert fresh.stdout.strip() == "[]", fresh.stdout + fresh.stderr


def test_a_missing_package_reads_not_installed() -> None:
    assert _fingerprint.package_version("kdist-no-such-package") == "not installed"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, ("cpu", "1")),
        ({"JAX_NUM_CPU_DEVICES": "4"}, ("cpu", "4")),
        ({"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}, ("cpu", "3")),
        ({"JAX_PLATFORMS": "cuda", "CUDA_VISIBLE_DEVICES": "0,2,3"}, ("gpu", "3")),
        ({"JAX_PLATFORMS": "tpu", "TPU_VISIBLE_CHIPS": "0,1"}, ("tpu", "2")),
    ],
)
def test_devices_are_read_without_jax(
    tmp_path: Path, environ: dict[str, str], expected: tuple[str, str]
) -> None:
    values = _values(_fingerprint.collect(environ, ["-c"], dev_dir=_no_devices(tmp_path)))
    assert (values["device platform"], values["local devices"]) == expected


def test_gpus_are_counted_from_device_nodes(tmp_path: Path) -> None:
    dev = _no_devices(tmp_path)
    for index in range(7):
        (dev / f"nvidia{index}").touch()
    (dev / "nvidiactl").touch()
    values = _values(_fingerprint.collect({}, ["-c"], dev_dir=dev))
    assert (values["device platform"], values["local devices"]) == ("gpu", "7")


def test_local_device_ids_set_the_count(tmp_path: Path) -> None:
    entries = _fingerprint.collect(
        {"JAX_NUM_CPU_DEVICES": "8"}, ["-c"], local_device_ids=[0, 1], dev_dir=_no_devices(tmp_path)
    )
    assert _values(entries)["local devices"] == "2"


def test_jax_settings_leave_out_what_names_the_process(tmp_path: Path) -> None:
    environ = {
        "JAX_ENABLE_X64": "1",
        "JAX_PROCESS_ID": "3",
        "JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234",
        "JAX_DEFAULT_MATMUL_PRECISION": "highest",
        "XLA_FLAGS": " --xla_cpu_enable_fast_math=false ",
    }
    values = _values(_fingerprint.collect(environ, ["-c"], dev_dir=_no_devices(tmp_path)))
    assert values["JAX settings"] == "JAX_DEFAULT_MATMUL_PRECISION=highest JAX_ENABLE_X64=1"
    assert values["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false"
    assert (
        _values(_fingerprint.collect({}, ["-c"], dev_dir=_no_devices(tmp_path)))["XLA_FLAGS"]
        == "unset"
    )


def test_the_script_is_hashed_by_content_and_its_arguments_apart(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('v1')\n")
    dev = _no_devices(tmp_path)
    first = _values(_fingerprint.collect({}, [str(script), "--steps", "5"], dev_dir=dev))
    digest = hashlib.sha256(script.read_bytes()).hexdigest()[:16]
    assert first["script"] == f"train.py sha256:{digest}"

    script.write_text("print('v2')\n")
    second = _values(_fingerprint.collect({}, [str(script), "--steps", "5"], dev_dir=dev))
    assert second["script"] != first["script"]
    assert second["arguments"] == first["arguments"]

    third = _values(_fingerprint.collect({}, [str(script), "--steps", "6"], dev_dir=dev))
    assert third["arguments"] != first["arguments"]
    assert _values(_fingerprint.collect({}, ["-c"], dev_dir=dev))["script"].startswith(
        "no script file"
    )
