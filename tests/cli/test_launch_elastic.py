"""`kdist launch --nodes MIN:MAX --global-batch B` (issue 44): the batch is checked against
every node count at the start, before this machine joins anything."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.support import PROGRAMS, Spawned, clean_env, wait_until_gone
from kdist import _core

_BOUND = 120.0  # every wait on an agent


def _launch(*args: str) -> subprocess.CompletedProcess[str]:
    # Port 9 on loopback: nothing listens; a refused check never gets as far as joining.
    return subprocess.run(
        [sys.executable, "-m", "kdist", "launch", *args, "--", sys.executable, "-c", "pass"],
        env=clean_env(1),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_global_batch_that_some_node_count_cannot_split_is_refused_naming_it() -> None:
    done = _launch(
        "--nodes", "2:3", "--rendezvous", "127.0.0.1:9", "-n", "2", "--global-batch", "8",
        "--join-timeout", "5",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "refused before joining: --global-batch 8" in done.stderr
    assert "at 3 nodes (6 processes) of --nodes 2:3 with -n 2" in done.stderr
    assert "such as 12" in done.stderr
    assert "rendezvous" not in done.stderr.split("refused before joining")[0]


def test_a_global_batch_every_node_count_splits_goes_on_to_join() -> None:
    done = _launch(
        "--nodes", "2:3", "--rendezvous", "127.0.0.1:9", "-n", "2", "--global-batch", "12",
        "--join-timeout", "1",
    )  # fmt: skip
    assert "--global-batch" not in done.stderr, done.stderr
    assert done.returncode != 2, done.stderr  # it went on, and waited for MIN machines


@pytest.mark.multiprocess
def test_sigterm_to_every_agent_stops_the_job_with_143_everywhere(tmp_path: Path) -> None:
    port = _core.free_port()
    env = clean_env(1, NODE_JOB_SLEEP="600")
    with Spawned(tmp_path) as spawned:
        agents = [
            spawned.start(
                [
                    sys.executable,
                    "-m",
                    "kdist",
                    "launch",
                    "--nodes",
                    "2",
                    "--rendezvous",
                    f"127.0.0.1:{port}",
                    "-n",
                    "1",
                    "--devices-per-process",
                    "1",
                    "--node-name",
                    name,
                    "--last-call",
                    "2",
                    "--grace",
                    "10",
                    "--",
                    sys.executable,
                    str(PROGRAMS / "node_job.py"),
                ],
                env,
            )
            for name in ("a", "b")
        ]
        deadline = time.monotonic() + _BOUND  # until both processes ran their collective
        while not all("NODE_JOB" in a.stdout() for a in agents):
            assert time.monotonic() < deadline, [a.stderr() for a in agents]
            time.sleep(0.1)
        for agent in agents:  # scancel, a pod deleted: every machine drained at once
            agent.proc.send_signal(signal.SIGTERM)
        done = [a.finish(_BOUND) for a in agents]
    for d in done:
        assert d.returncode == 143, d.stderr
        assert "this machine is drained" in d.stderr
    pids = [int(p) for d in done for p in re.findall(r"\(pids (\d+)\)", d.stderr)]
    assert len(pids) == 2 and not wait_until_gone(pids, 30)  # nothing of the job left
