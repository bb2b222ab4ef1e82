"""2-process jobs of tests/programs/keras_backup.py (kdist.BackupAndRestore on a small Keras
model, real jax.distributed on loopback), shared by the resume tests: start them, wait for
them, compare what they trained."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from helpers.support import PROGRAMS, Finished, Running, Spawned, clean_env, free_port

SCRIPT = str(PROGRAMS / "keras_backup.py")
JOB_SECONDS = 240  # bounds every wait; nothing is timed against it
SEED = "20261201"  # the program's own seed, for the reference and the first attempts


def start_job(
    spawned: Spawned,
    env: Mapping[str, str],
    prefix: Sequence[str] = (),
    *,
    num_processes: int = 2,
    devices: int = 2,
) -> list[Running]:
    """The job's processes, started (each after `prefix`: nsenter, setpriv)."""
    port = free_port()
    job = []
    for pid in range(num_processes):
        settings = {
            "KERAS_DISTRIBUTION_JOB_ADDRESSES": f"127.0.0.1:{port}",
            "KERAS_DISTRIBUTION_NUM_PROCESSES": str(num_processes),
            "KERAS_DISTRIBUTION_PROCESS_ID": str(pid),
            "KDIST_INIT_TIMEOUT": str(JOB_SECONDS // 2),
            "KERAS_BACKEND": "jax",
            "KERAS_HOME": "/tmp/kdist-test-keras-home",
            **env,  # the test's own win (KERAS_HOME where another user can write)
        }
        process_env = clean_env(devices, **settings)
        job.append(spawned.start([*prefix, sys.executable, SCRIPT], process_env))
    return job


def finish(job: list[Running]) -> list[Finished]:
    return [process.finish(JOB_SECONDS) for process in job]


def run_job(
    directory: Path, env: Mapping[str, str], prefix: Sequence[str] = (), **kwargs: Any
) -> list[Finished]:
    """A whole job, to its end (its processes' output kept in `directory`)."""
    directory.mkdir(parents=True, exist_ok=True)
    with Spawned(directory) as spawned:
        return finish(start_job(spawned, env, prefix, **kwargs))


def wait_until(job: list[Running], done: Any, what: str) -> None:
    """Until `done()`, while every process runs, at most JOB_SECONDS."""
    deadline = time.monotonic() + JOB_SECONDS
    while not done():
        for process in job:
            assert process.proc.poll() is None, f"ended before {what}:\n{process.stderr()}"
        assert time.monotonic() < deadline, f"no {what} within {JOB_SECONDS} s"
        time.sleep(0.005)


def assert_same_training_state(expected: dict[str, Any], got: dict[str, Any]) -> None:
    """Every weight and every optimizer variable (gathered across processes), bit for bit."""
    for part in ("weights", "optimizer"):
        assert list(expected[part]) == list(got[part])
        for name, values in expected[part].items():
            np.testing.assert_array_equal(np.array(got[part][name]), np.array(values), name)
