"""`kdist launch --nodes MIN:MAX --global-batch B` (issue 44): the batch is checked against
every node count at the start, before this machine joins anything."""

from __future__ import annotations

import os
import re
import signal
import socket
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


def test_a_straggler_of_an_older_attempt_is_refused_and_the_new_attempt_goes_on(
    tmp_path: Path,
) -> None:
    """A process of attempt 0 (process 1, with attempt 0's roll call token), SIGSTOPped
    before its roll call and woken once attempt 1's process 0 serves the coordinator port:
    process 0 refuses it (its token is another attempt's), it exits non-zero, and attempt
    1's two processes form their job and finish. The tokens are the agent's own
    (NodeSettings.attempt_token), as it gives them to each attempt's processes."""
    request = _core.NodeRequest()
    request.rendezvous = "127.0.0.1:1"
    request.job_id = "t44"
    request.token = "the job's token, 16 bytes or more"
    settings = _core.resolve_node_settings(request, {})
    port = _core.free_port()

    def env(process_id: int, attempt: int) -> dict[str, str]:
        return clean_env(
            1,
            KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
            KERAS_DISTRIBUTION_NUM_PROCESSES="2",
            KERAS_DISTRIBUTION_PROCESS_ID=str(process_id),
            KDIST_ROLL_CALL_TOKEN=settings.attempt_token(attempt),
            KDIST_RESTART_COUNT=str(attempt),
            KDIST_INIT_TIMEOUT="90",
        )

    program = [sys.executable, str(PROGRAMS / "node_job.py")]
    with Spawned(tmp_path) as spawned:
        straggler = spawned.start(program, env(1, 0))
        os.kill(straggler.pid, signal.SIGSTOP)
        first = spawned.start(program, env(0, 1))
        deadline = time.monotonic() + _BOUND
        while not _listening(port):  # attempt 1's process 0 serves the roll call
            assert time.monotonic() < deadline, first.stderr()
            assert first.proc.poll() is None, first.stderr()
            time.sleep(0.1)
        os.kill(straggler.pid, signal.SIGCONT)
        refused = straggler.finish(_BOUND)
        second = spawned.start(program, env(1, 1))
        done_first, done_second = first.finish(_BOUND), second.finish(_BOUND)
    assert refused.returncode not in (0, None), refused.stderr
    assert "KDIST_ROLL_CALL_TOKEN does not match" in refused.stderr, refused.stderr
    assert "NODE_JOB" not in refused.stdout
    for done in (done_first, done_second):
        assert done.returncode == 0, done.stderr
        assert "NODE_JOB" in done.stdout
        assert '"gathered": [0, 1]' in done.stdout


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0
