"""The roll call compares the processes' environments (real processes, real jax.distributed).

Each test makes one process differ for real: a jax whose metadata says another version
(a distribution record placed first on its PYTHONPATH: the process lies through its
package metadata, as an old install on one host would), another XLA_FLAGS, another copy
of the script. Nothing in the roll call is mocked.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from helpers.support import PROGRAMS, Finished, clean_env, free_port, run_processes

pytestmark = pytest.mark.multiprocess

SCRIPT = PROGRAMS / "roll_call_report.py"


def _env(process_id: int, port: int, **extra: str) -> dict[str, str]:
    return clean_env(
        2,
        KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
        KERAS_DISTRIBUTION_NUM_PROCESSES="2",
        KERAS_DISTRIBUTION_PROCESS_ID=str(process_id),
        KDIST_INIT_TIMEOUT="60",
        **extra,
    )


def _run(envs: list[dict[str, str]], scripts: list[Path] | None = None) -> list[Finished]:
    scripts = scripts or [SCRIPT] * len(envs)
    return run_processes([[sys.executable, str(s)] for s in scripts], envs, timeout=120)


def _fake_jax_metadata(directory: Path, version: str) -> Path:
    """A directory whose jax distribution record says `version` (no jax code in it)."""
    record = directory / f"jax-{version}.dist-info"
    record.mkdir(parents=True)
    (record / "METADATA").write_text(f"Metadata-Version: 2.1\nName: jax\nVersion: {version}\n")
    return directory


def test_a_different_jax_version_stops_every_process_with_one_table(tmp_path: Path) -> None:
    from importlib.metadata import version

    real = version("jax")
    fake = _fake_jax_metadata(tmp_path / "old-host", "0.0.1")
    port = free_port()
    results = _run([_env(0, port), _env(1, port, PYTHONPATH=str(fake))])
    for result in results:
        assert result.returncode == 1, result.describe()
        report = result.report()
        assert report["error"] == "RendezvousError", result.describe()
        message = str(report["message"])
        assert "the processes cannot work together" in message, message
        assert f'jax: "{real}" in process 0 on host ' in message, message
        assert '"0.0.1" in process 1 on host ' in message, message
        assert "Install the same jax and jaxlib" in message, message


def test_an_xla_flags_difference_warns_every_process_by_default() -> None:
    port = free_port()
    flags = "--xla_force_host_platform_device_count=2"
    results = _run([_env(0, port), _env(1, port, XLA_FLAGS=flags)])
    for result in results:
        assert result.returncode == 0, result.describe()
        assert result.report()["ok"] is True, result.describe()
        assert "UserWarning: the job's processes differ" in result.stderr, result.describe()
        assert (
            'XLA_FLAGS: "unset" in process 0 on host ' in result.stderr
            and f'"{flags}" in process 1 on host ' in result.stderr
        ), result.describe()


def test_an_xla_flags_difference_stops_the_job_under_strict() -> None:
    port = free_port()
    flags = "--xla_force_host_platform_device_count=2"
    results = _run(
        [
            _env(0, port, KDIST_CONSISTENCY="strict"),
            _env(1, port, KDIST_CONSISTENCY="strict", XLA_FLAGS=flags),
        ]
    )
    for result in results:
        assert result.returncode == 1, result.describe()
        report = result.report()
        assert report["error"] == "RendezvousError", result.describe()
        assert "cannot work together under KDIST_CONSISTENCY=strict" in str(report["message"])
        assert f'"{flags}" in process 1' in str(report["message"])


def test_processes_that_disagree_on_the_policy_are_told_so() -> None:
    port = free_port()
    results = _run([_env(0, port, KDIST_CONSISTENCY="strict"), _env(1, port)])
    for result in results:
        assert result.returncode == 1, result.describe()
        assert "configured differently" in str(result.report()["message"]), result.describe()


def test_another_copy_of_the_script_is_named(tmp_path: Path) -> None:
    copy = tmp_path / "other-host" / SCRIPT.name
    copy.parent.mkdir()
    shutil.copy(SCRIPT, copy)
    with copy.open("a") as script:
        script.write("# an older copy of the training script\n")
    port = free_port()
    results = _run([_env(0, port), _env(1, port)], scripts=[SCRIPT, copy])
    for result in results:
        assert result.returncode == 0, result.describe()
        assert "script: " in result.stderr, result.describe()
        assert f"{SCRIPT.name} sha256:" in result.stderr, result.describe()
        assert "in process 1 on host " in result.stderr, result.describe()


def test_off_compares_nothing_and_cluster_spec_says_what_was_compared(tmp_path: Path) -> None:
    fake = _fake_jax_metadata(tmp_path / "old-host", "0.0.1")
    port = free_port()
    envs = [
        _env(0, port, KDIST_CONSISTENCY="off"),
        _env(1, port, KDIST_CONSISTENCY="off", PYTHONPATH=str(fake)),
    ]
    for result in _run(envs):
        assert result.returncode == 0, result.describe()
        assert result.report()["compared"] == [], result.describe()
    port = free_port()
    for result in _run([_env(0, port), _env(1, port)]):
        assert result.returncode == 0, result.describe()
        names = [name for name, _ in result.report()["compared"]]  # type: ignore[union-attr]
        assert names[:2] == ["jax", "jaxlib"] and "XLA_FLAGS" in names, result.describe()


# --- each process's own id in its arguments (roll_call/own_id_arguments.h) --------------


def _run_with_arguments(
    arguments: list[str], num_processes: int = 2, **extra: str
) -> list[Finished]:
    """Process i runs the script with `arguments`, "{id}" replaced by i."""
    port = free_port()
    envs = [
        {**_env(i, port, **extra), "KERAS_DISTRIBUTION_NUM_PROCESSES": str(num_processes)}
        for i in range(num_processes)
    ]
    commands = [
        [sys.executable, str(SCRIPT), *(a.replace("{id}", str(i)) for a in arguments)]
        for i in range(num_processes)
    ]
    return run_processes(commands, envs, timeout=120)


@pytest.mark.parametrize(
    "arguments",
    [
        ["--worker_id={id}"],
        ["--rank", "{id}", "--steps=10"],
        ["--log-file", "out.{id}.log", "--lr=0.1"],
    ],
    ids=["flag value", "separate argument", "file name"],
)
def test_arguments_that_differ_only_by_each_processs_own_id_pass_silently_under_strict(
    arguments: list[str],
) -> None:
    for result in _run_with_arguments(arguments, KDIST_CONSISTENCY="strict"):
        assert result.returncode == 0, result.describe()
        assert result.report()["ok"] is True, result.describe()
        assert "the job's processes differ" not in result.stderr, result.describe()


def test_own_ids_in_three_processes_arguments_are_silent_by_default() -> None:
    # --lr=0.1 holds a "0" (process 0's id) and a "1" (process 1's) in every process:
    # the same text everywhere is no difference, whose id it happens to be.
    arguments = ["--multiprocess_test_worker_id={id}", "--lr=0.1", "shard-000{id}.tfrecord"]
    for result in _run_with_arguments(arguments, num_processes=3):
        assert result.returncode == 0, result.describe()
        assert "the job's processes differ" not in result.stderr, result.describe()


def test_another_value_in_one_process_is_reported_and_stopped_under_strict() -> None:
    port = free_port()
    commands = [
        [sys.executable, str(SCRIPT), "--worker_id=0", "--lr=0.1"],
        [sys.executable, str(SCRIPT), "--worker_id=1", "--lr=0.2"],
    ]
    warned = run_processes(commands, [_env(0, port), _env(1, port)], timeout=120)
    for result in warned:
        assert result.returncode == 0, result.describe()
        assert "UserWarning: the job's processes differ" in result.stderr, result.describe()
        assert "arguments: " in result.stderr and "in process 1 on host " in result.stderr
    port = free_port()
    strict = [_env(i, port, KDIST_CONSISTENCY="strict") for i in range(2)]
    for result in run_processes(commands, strict, timeout=120):
        assert result.returncode == 1, result.describe()
        message = str(result.report()["message"])
        assert "cannot work together under KDIST_CONSISTENCY=strict" in message, message
        assert "arguments: " in message, message
