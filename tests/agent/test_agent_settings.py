"""The agent's settings are resolved once, in the core, with the processes' own rules: a
window every process would refuse is refused by the agent before any process starts, in
the processes' words; `kdist rendezvous serve` keeps the window the job sets."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

import pytest

from helpers.support import Spawned, clean_env, run_python
from kdist import _core

pytestmark = pytest.mark.multiprocess

_BOUND = 60.0


def test_a_window_the_processes_would_refuse_is_refused_before_any_process_starts(
    tmp_path: Path,
) -> None:
    env = clean_env(1, KDIST_UNREACHABLE_TIMEOUT="0.5")
    marker = tmp_path / "started"
    port = _core.free_port()
    args = [
        sys.executable, "-m", "kdist", "launch", "--nodes", "1",
        "--rendezvous", f"127.0.0.1:{port}", "-n", "1", "--",
        sys.executable, "-c", f"open({str(marker)!r}, 'w')",
    ]  # fmt: skip
    with Spawned(tmp_path) as spawned:
        done = spawned.start(args, env).finish(_BOUND)
    assert done.returncode == 2, done.stderr
    assert not marker.exists()  # no process started
    assert "serving the nodes' rendezvous" not in done.stderr  # nor the rendezvous
    # What a process of the job would say of the same variable.
    process = run_python(
        "import kdist\n"
        "try:\n"
        "    kdist.initialize(job_addresses='127.0.0.1:1', num_processes=1, process_id=0)\n"
        "except kdist.ConfigError as error:\n"
        "    print(error)\n",
        env=env,
    )
    said = process.stdout.strip()
    assert said.startswith('KDIST_UNREACHABLE_TIMEOUT="0.5" (from the environment)'), said
    assert said in done.stderr, done.stderr


def _keepalive_seconds(port: int) -> float:
    """Seconds until the keepalive timer of the server's side of a connection to `port`
    fires: /proc/net/tcp's timer ("tr" 2 is keepalive) in clock ticks."""
    ticks = os.sysconf("SC_CLK_TCK")
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, timer = fields[1], fields[3], fields[5]
        if int(local.split(":")[1], 16) == port and state == "01":
            kind, when = timer.split(":")
            assert kind == "02", line  # the keepalive timer
            return int(when, 16) / ticks
    raise AssertionError(f"no established connection on port {port}")


@pytest.mark.parametrize(("window", "most"), [(None, 5.0), ("3", 1.0)])
def test_the_jobs_unreachable_window_reaches_rendezvous_serves_keepalive(
    tmp_path: Path, window: str | None, most: float
) -> None:
    """With KDIST_UNREACHABLE_TIMEOUT=3 the rendezvous probes a silent agent after 1 s
    (a quarter of the window, whole seconds), not after the default window's 5 s; and it
    says which window it keeps, with its source."""
    port = _core.free_port()
    env = clean_env(1, **({"KDIST_UNREACHABLE_TIMEOUT": window} if window else {}))
    args = [
        sys.executable, "-m", "kdist", "rendezvous", "serve", "--host", "127.0.0.1",
        "--port", str(port), "--nodes", "2", "--join-timeout", "30",
    ]  # fmt: skip
    with Spawned(tmp_path) as spawned:
        serve = spawned.start(args, env)
        assert serve.wait_for_stderr("serving the nodes' rendezvous", _BOUND), serve.stderr()
        said = (
            "after 3 s without an answer, KDIST_UNREACHABLE_TIMEOUT"
            if window
            else "after 20 s without an answer, default"
        )
        assert said in serve.stderr(), serve.stderr()
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            time.sleep(0.2)
            timer = _keepalive_seconds(port)
        serve.kill()
    assert most - 1.0 < timer <= most, timer
