"""kdist's pytest plugin: `@pytest.mark.kdist_job` runs a test in every process of a job.

Each test writes a small test file into a fresh folder and runs pytest on it in a
subprocess (the plugin comes in through kdist's `pytest11` entry point, as it does for
users), then reads the session's outcome and output.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.support import alive, clean_env

pytestmark = pytest.mark.multiprocess

# Seconds for a whole inner session: pytest's start, then one to a few jobs on two cores.
SESSION_TIMEOUT = 240

PASSING = """
import os

import pytest

import kdist


@pytest.mark.kdist_job(num_processes=2, devices_per_process=2)
def test_runs_in_every_process_with_kdist_initialized():
    spec = kdist.cluster_spec()
    assert spec.num_processes == 2 and kdist.get_device_count() == 4
    print(f"process {spec.process_id} ran the test", flush=True)


@pytest.mark.kdist_job(num_processes=3)
@pytest.mark.parametrize("value", [1, 2])
def test_parametrized_with_a_shared_tmp_path(value, tmp_path):
    me = kdist.cluster_spec().process_id
    (tmp_path / f"process-{me}-value-{value}").write_text(str(os.getpid()))


def test_an_unmarked_test_runs_here_as_usual():
    assert not kdist.is_initialized()
"""

FAILING = """
import threading

import pytest
from jax.experimental import multihost_utils

import kdist


@pytest.mark.kdist_job(num_processes=2)
def test_fails_in_process_1():
    me = kdist.cluster_spec().process_id
    print(f"process {me} checks its id", flush=True)
    multihost_utils.sync_global_devices("both printed")
    assert me == 0


@pytest.fixture
def lock():
    return threading.Lock()


@pytest.mark.kdist_job(num_processes=2)
def test_asks_for_a_fixture_that_cannot_travel(lock):
    pass


@pytest.mark.kdist_job(processes=2)
def test_with_a_misspelled_option():
    pass
"""

STOP_AT_FIRST = """
import pytest

import kdist


@pytest.mark.kdist_job(num_processes=2)
def test_first_fails():
    raise RuntimeError(f"failed in process {kdist.cluster_spec().process_id}")


@pytest.mark.kdist_job(num_processes=2)
def test_second_is_never_run():
    pass
"""

# Two jobs that must run at the same time: process 0 of each writes its job's coordinator
# port and waits for the other job's (they meet only if both jobs run side by side).
SIDE_BY_SIDE = """
import json
import os
import time
from pathlib import Path

import pytest

import kdist

MEETING = Path(os.environ["MEETING_FOLDER"])


def meet(name, other):
    spec = kdist.cluster_spec()
    if spec.process_id != 0:
        return
    port = spec.coordinator_address.rsplit(":", 1)[1]
    (MEETING / name).write_text(json.dumps({"port": port, "pid": os.getpid()}))
    deadline = time.monotonic() + 60
    while not (MEETING / other).exists():
        assert time.monotonic() < deadline, f"job {other} never ran beside job {name}"
        time.sleep(0.05)


@pytest.mark.kdist_job(num_processes=2)
def test_job_a():
    meet("a", "b")


@pytest.mark.kdist_job(num_processes=2)
def test_job_b():
    meet("b", "a")
"""


def run_pytest(
    folder: Path, source: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    (folder / "test_inner.py").write_text(textwrap.dedent(source))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--strict-markers",
            "-W",
            "error",
            "-rA",
            f"--basetemp={folder / 'basetemp'}",
            *args,
            "test_inner.py",
        ],
        cwd=folder,
        env=clean_env(**(env or {})),
        capture_output=True,
        text=True,
        timeout=SESSION_TIMEOUT,
    )


def outcome(result: subprocess.CompletedProcess[str]) -> str:
    """The session's last line, without its duration: "1 failed, 2 passed"."""
    last = result.stdout.strip().splitlines()[-1]
    return re.sub(r" in [\d.]+s.*$", "", last.strip("= "))


def test_the_marker_is_registered_and_documented(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "@pytest.mark.kdist_job(num_processes=2, devices_per_process=1, timeout=60, "
        "env=None): run the test in every process of a fresh kdist job on this machine"
    ) in result.stdout


def test_marked_tests_pass_in_every_process_with_their_arguments(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, PASSING, "-s")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    assert outcome(result) == "4 passed", result.stdout[-3000:]
    # -s: each process's lines come through as they are written, with their prefix.
    assert "[0] process 0 ran the test" in result.stdout
    assert "[1] process 1 ran the test" in result.stdout
    # One tmp_path per test (as pytest gives it), shared by the test's three processes.
    folders = [p for p in sorted((tmp_path / "basetemp").glob("test_param*")) if not p.is_symlink()]
    written = [sorted(p.name for p in folder.iterdir()) for folder in folders]
    assert written == [[f"process-{i}-value-{value}" for i in range(3)] for value in (1, 2)]


def test_a_failure_is_reported_once_with_the_failing_process_s_traceback(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, FAILING)
    assert result.returncode == 1, result.stdout[-5000:] + result.stderr[-3000:]
    assert outcome(result) == "3 failed", result.stdout[-3000:]
    out = result.stdout
    report = out[out.index("_ test_fails_in_process_1 _") :]
    report = report[: report.index("Captured stdout call")]
    assert report.count("failed first") == 1
    assert "process 1 of 2 failed first, in fn: AssertionError: assert 1 == 0" in report
    # The traceback from process 1, its assert rewritten as pytest rewrites it.
    assert re.search(r'File ".*test_inner\.py", line 15, in test_fails_in_process_1', report)
    assert "    assert me == 0\n" in report and "AssertionError: assert 1 == 0" in report
    # Each process's output, with its [id] prefix, in the test's captured output.
    captured = out[out.index("Captured stdout call") :]
    assert "[0] process 0 checks its id" in captured
    assert "[1] process 1 checks its id" in captured
    assert "[1] kdist: process 1 (host " in out  # its stderr: kdist's channel said it
    section = out[out.index("_ test_asks_for_a_fixture_that_cannot_travel _") :]
    assert section.split("\n", 2)[1].startswith(
        "@pytest.mark.kdist_job: run_job: fn's arguments cannot be pickled: "
    )
    section = out[out.index("_ test_with_a_misspelled_option _") :]
    assert section.split("\n", 2)[1] == (
        "@pytest.mark.kdist_job takes only the keyword arguments num_processes, "
        "devices_per_process, timeout, env; received processes=..."
    )


def test_dash_x_stops_at_the_first_failing_job(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, STOP_AT_FIRST, "-x")
    assert result.returncode == 1, result.stdout[-5000:] + result.stderr[-3000:]
    assert outcome(result) == "1 failed", result.stdout[-3000:]
    assert "process 0 of 2 failed first, in fn: RuntimeError: failed in process 0" in (
        result.stdout
    ) or "process 1 of 2 failed first, in fn: RuntimeError: failed in process 1" in (result.stdout)
    assert "stopping after 1 failures" in result.stdout
    assert "test_second_is_never_run" not in result.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("xdist") is None,
    reason="pytest-xdist is not installed (kdist's test extra brings it)",
)
def test_two_jobs_side_by_side_under_xdist_take_different_ports(tmp_path: Path) -> None:
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    result = run_pytest(tmp_path, SIDE_BY_SIDE, "-n", "2", env={"MEETING_FOLDER": str(meeting)})
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    assert outcome(result) == "2 passed", result.stdout[-3000:]
    assert "created: 2/2 workers" in result.stdout
    met = {name: json.loads((meeting / name).read_text()) for name in ("a", "b")}
    assert met["a"]["port"] != met["b"]["port"]
    assert not alive(met["a"]["pid"]) and not alive(met["b"]["pid"])


@pytest.mark.kdist_job(num_processes=2, devices_per_process=2)
@pytest.mark.parametrize("local_rows", [2])
def test_this_suite_s_own_marked_test_runs_in_every_process(local_rows: int) -> None:
    """The plugin as kdist's own suite uses it: this body runs in both processes."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import kdist

    spec = kdist.cluster_spec()
    assert spec is not None and spec.num_processes == 2
    local = np.full((local_rows * 2, 1), spec.process_id + 1, dtype=np.float32)
    batch = kdist.distribute_batch(local, kdist.DataParallel())
    assert batch.shape == (8, 1)
    assert float(jax.jit(jnp.sum)(batch)) == 4 * 1 + 4 * 2
