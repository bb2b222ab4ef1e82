"""Helpers for tests that start real processes: fresh interpreters and loopback clusters.

Every process started here has a hard timeout and is killed, by its pid, when
the helper returns, whatever happened.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from kdist import _core
from kdist._core import free_port

# The folders tests name: the repository, tests/, the programs tests start as processes
# (tests/programs/), and the scheduler environments of tests/fixtures/.
TESTS = Path(__file__).resolve().parents[1]
REPOSITORY = TESTS.parent
PROGRAMS = TESTS / "programs"
FIXTURES = TESTS / "fixtures"
# Marks a test module that needs Keras: it skips, saying so, where Keras is not installed.
NEEDS_KERAS = pytest.mark.skipif(
    importlib.util.find_spec("keras") is None,
    reason="Keras is not installed, so kdist's Keras integration cannot be tested",
)
# Marks a test module of kdist.BackupAndRestore / kdist.load_backup: they store backups with
# Orbax, kdist's backup extra (scripts/test.sh installs it; the compat environments, which
# run only the `compat` tests, do not).
NEEDS_ORBAX = pytest.mark.skipif(
    importlib.util.find_spec("orbax") is None,
    reason='orbax-checkpoint is not installed (pip install "kdist[backup]"), so kdist\'s '
    "backups cannot be tested",
)
# The `kdist` console script installed next to this interpreter.
KDIST_SCRIPT = Path(sys.executable).parent / "kdist"
_SETTING_PREFIXES = ("KERAS_DISTRIBUTION_", "KDIST_", "JAX_", "XLA_")
# Variables a scheduler or the machine sets that change what kdist resolves: every
# one a cluster detector reads, and the accelerator visibility variables that change
# the local-device suggestion. (KDIST_COORDINATOR_PORT and JAX_COORDINATOR_PORT go
# with the KDIST_ and JAX_ prefixes.)
SCHEDULER_VARIABLES: frozenset[str] = frozenset(
    {name for detector in _core.cluster_detectors() for name in detector.variables}
    | {
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "CUDA_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "TPU_VISIBLE_CHIPS",
        "KDIST_COORDINATOR_PORT",
        "JAX_COORDINATOR_PORT",
        # JAX's own job variables, which kdist reads after KERAS_DISTRIBUTION_*.
        "JAX_COORDINATOR_ADDRESS",
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "JAX_LOCAL_DEVICE_IDS",
        "JAX_COORDINATOR_BIND_ADDRESS",
    }
)
# cluster_spec().sources of a process configured by the environment that
# run_cluster(), kdist.testing.run_job() and `kdist launch` set (KERAS_DISTRIBUTION_* and
# KDIST_INIT_TIMEOUT).
ENVIRONMENT_SOURCES = {
    "job_addresses": "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "num_processes": "KERAS_DISTRIBUTION_NUM_PROCESSES",
    "process_id": "KERAS_DISTRIBUTION_PROCESS_ID",
    "timeout": "KDIST_INIT_TIMEOUT",
    "preflight": "default",
    "cluster_detection": "default",
    "local_device_ids": "default",
    "coordinator_bind_address": "default",
    "collectives_address": "default",
    "collectives_interface": "default",
    "heartbeat_timeout": "default",
    "shutdown_timeout": "default",
    "unreachable_timeout": "default",
    "on_peer_failure": "default",
    "consistency": "default",
    "stop_signals": "default",
    "stall_timeout": "default",
    "restart_count": "default",
}


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie or a missing pid is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until_gone(pids: Sequence[int], timeout: float = 15) -> list[int]:
    """The pids still alive after `timeout` seconds (empty when all are gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        still = [pid for pid in pids if alive(pid)]
        if not still:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def has_ipv6_loopback() -> bool:
    """Whether this machine can bind ::1 (some containers have no IPv6)."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


def clean_env(devices: int = 2, **extra: str) -> dict[str, str]:
    """This environment without any kdist/Keras/JAX setting and without any variable
    a scheduler or the machine sets (SCHEDULER_VARIABLES), on JAX's CPU backend,
    plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_SETTING_PREFIXES) and k not in SCHEDULER_VARIABLES
    }
    env["JAX_PLATFORMS"] = "cpu"
    env["JAX_NUM_CPU_DEVICES"] = str(devices)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def json_objects(text: str) -> list[dict[str, object]]:
    """Every JSON object a process printed on one line of `text`, parsed. The process's C++
    threads write into its lines (Gloo's "[Gloo] Rank 0 is connected to 1 peer ranks..."
    note, itself written in pieces): before the object ("[Gloo] Rank 0 is connected to
    1{...}"), or after it, before print's newline. print's one write never splits an
    object, so each line's object is read from the first "{" at which one parses."""
    return [found for line in text.splitlines() if (found := object_in(line))]


def object_in(line: str) -> dict[str, object] | None:
    """The first JSON object in `line`, whatever text comes before or after it."""
    decoder = json.JSONDecoder()
    start = line.find("{")
    while start != -1:
        try:
            found = decoder.raw_decode(line, start)[0]
        except json.JSONDecodeError:
            found = None
        if isinstance(found, dict):
            return found
        start = line.find("{", start + 1)
    return None


@dataclass
class Finished:
    """What one process left behind."""

    args: Sequence[str]
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str
    seconds: float

    def json_lines(self) -> list[dict[str, object]]:
        """Every JSON object on stdout (json_objects: Gloo's notes written into a line
        are left out)."""
        return json_objects(self.stdout)

    def report(self) -> dict[str, object]:
        """The last JSON line on stdout (a worker's report)."""
        lines = self.json_lines()
        assert lines, f"no JSON report from {self.args}; stderr:\n{self.stderr[-3000:]}"
        return lines[-1]

    def describe(self) -> str:
        return (
            f"{' '.join(self.args)} -> {self.returncode} after {self.seconds:.1f} s\n"
            f"--- stdout\n{self.stdout[-2000:]}\n--- stderr\n{self.stderr[-4000:]}"
        )


def run_processes(
    commands: Sequence[Sequence[str]],
    envs: Sequence[Mapping[str, str]],
    *,
    timeout: float,
    start_delays: Sequence[float] | None = None,
) -> list[Finished]:
    """Starts every command (after its delay), waits for all until `timeout`, kills the rest."""
    delays = list(start_delays or [0.0] * len(commands))
    order = sorted(range(len(commands)), key=lambda i: delays[i])
    procs: dict[int, subprocess.Popen[str]] = {}
    started: dict[int, float] = {}
    begin = time.monotonic()
    try:
        for i in order:
            pause = begin + delays[i] - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            started[i] = time.monotonic()
            procs[i] = subprocess.Popen(
                list(commands[i]),
                env=dict(envs[i]),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        results: dict[int, Finished] = {}
        deadline = begin + timeout
        for i in range(len(commands)):
            proc = procs[i]
            try:
                out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
                code: int | None = proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate(timeout=10)
                code = None
            results[i] = Finished(commands[i], code, out, err, time.monotonic() - started[i])
        return [results[i] for i in range(len(commands))]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def run_python(code: str, *, env: Mapping[str, str] | None = None, timeout: float = 60) -> Finished:
    """Runs `code` in a fresh interpreter (so JAX and kdist start from nothing)."""
    return run_processes(
        [[sys.executable, "-c", code]], [env if env is not None else clean_env()], timeout=timeout
    )[0]


def run_cluster(
    script: str,
    num_processes: int,
    *,
    devices_per_process: int = 2,
    timeout: float = 120,
    port: int | None = None,
    extra_env: Mapping[str, str] | None = None,
    per_process_env: Sequence[Mapping[str, str]] | None = None,
    start_delays: Sequence[float] | None = None,
    args: Sequence[str] = (),
) -> list[Finished]:
    """Runs tests/programs/`script` as a loopback cluster configured through the
    KERAS_DISTRIBUTION_* variables, one process per id. A port chosen here can be taken by
    another test's process between free_port() and process 0's bind (tests run side by
    side): when process 0 says so (PortInUseError), the job runs once more on a new
    port, as kdist.testing.run_job does."""
    options = {
        "devices_per_process": devices_per_process, "timeout": timeout,
        "extra_env": extra_env, "per_process_env": per_process_env,
        "start_delays": start_delays, "args": args,
    }  # fmt: skip
    if port is not None:
        return _run_cluster_on(script, num_processes, port, **options)  # type: ignore[arg-type]
    for _ in range(2):
        results = _run_cluster_on(script, num_processes, free_port(), **options)  # type: ignore[arg-type]
        if "PortInUseError" not in results[0].stderr:
            break
    return results


def _run_cluster_on(
    script: str,
    num_processes: int,
    port: int,
    *,
    devices_per_process: int,
    timeout: float,
    extra_env: Mapping[str, str] | None,
    per_process_env: Sequence[Mapping[str, str]] | None,
    start_delays: Sequence[float] | None,
    args: Sequence[str],
) -> list[Finished]:
    commands, envs = [], []
    for pid in range(num_processes):
        env = clean_env(
            devices_per_process,
            KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
            KERAS_DISTRIBUTION_NUM_PROCESSES=str(num_processes),
            KERAS_DISTRIBUTION_PROCESS_ID=str(pid),
            KDIST_INIT_TIMEOUT=str(int(timeout * 0.8)),
        )
        env.update(extra_env or {})
        if per_process_env:
            env.update(per_process_env[pid])
        commands.append([sys.executable, str(PROGRAMS / script), *args])
        envs.append(env)
    return run_processes(commands, envs, timeout=timeout, start_delays=start_delays)


class Running:
    """One process started by `Spawned`, its output going to files."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str], output: Path) -> None:
        self.args = list(args)
        self._out = output.with_suffix(".out")
        self._err = output.with_suffix(".err")
        self.started = time.monotonic()
        with open(self._out, "wb") as out, open(self._err, "wb") as err:
            self.proc = subprocess.Popen(self.args, env=dict(env), stdout=out, stderr=err)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        return self._err.read_text(errors="replace")

    def stdout(self) -> str:
        return self._out.read_text(errors="replace")

    def wait_for_stderr(self, text: str, timeout: float) -> bool:
        """Whether `text` appears in stderr within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr():
                return True
            if self.proc.poll() is not None:
                return text in self.stderr()
            time.sleep(0.02)
        return False

    def finish(self, timeout: float) -> Finished:
        """Waits up to `timeout` seconds, kills the process if it is still running."""
        code: int | None
        try:
            code = self.proc.wait(timeout=max(0.1, timeout))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            code = None
        return Finished(
            self.args,
            code,
            self._out.read_text(errors="replace"),
            self.stderr(),
            time.monotonic() - self.started,
        )

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


class Spawned:
    """Starts processes one at a time (for tests that act between starts);
    every one still running when the block ends is killed by its pid."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._running: list[Running] = []

    def start(self, args: Sequence[str], env: Mapping[str, str]) -> Running:
        running = Running(args, env, self._directory / f"process-{len(self._running)}")
        self._running.append(running)
        return running

    def __enter__(self) -> Spawned:
        return self

    def __exit__(self, *exc: object) -> None:
        for running in self._running:
            running.kill()
