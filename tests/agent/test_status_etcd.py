"""`kdist status --rendezvous etcd://...` (issue 55): the job's book is found through etcd's
election key, as an agent finds it, and asked for its state; once the job ended, its final
state is read from the mark its last holder left in etcd. One agent, a command that waits
for the test's word (no JAX), a real etcd on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import etcd_cluster
from helpers.support import Spawned, clean_env

_reason = etcd_cluster.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

_BOUND = 60.0


def test_status_finds_an_etcd_jobs_holder_reads_its_end_and_names_a_job_etcd_does_not_hold(
    tmp_path: Path,
) -> None:
    env = clean_env(1, KDIST_ROLL_CALL_TOKEN="status-etcd-test-token-0123456789")
    folder = tmp_path / "etcd"
    folder.mkdir()
    with etcd_cluster.loopback_member(folder, etcd_cluster.free_port_pair()) as cluster:
        rendezvous = f"{cluster.endpoints()}/kdist-status-test"

        def status(job: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "kdist", "status", "--rendezvous", rendezvous,
                 "--job-id", job, "--json", "--timeout", "5"],
                env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip

        go = tmp_path / "go"
        wait_for_go = (
            f"import os, time\nfor _ in range(1200):\n    if os.path.exists({str(go)!r}): break\n"
            "    time.sleep(0.05)"
        )
        with Spawned(tmp_path) as spawned:
            agent = spawned.start(
                [sys.executable, "-m", "kdist", "launch", "--nodes", "1", "--rendezvous",
                 rendezvous, "--job-id", "t55e", "-n", "1", "--last-call", "0.1",
                 "--", sys.executable, "-c", wait_for_go],
                env,
            )  # fmt: skip
            deadline = time.monotonic() + _BOUND
            while True:
                done = status("t55e")
                if done.returncode == 0 and json.loads(done.stdout)["state"] == "running":
                    break
                assert agent.proc.poll() is None, agent.stderr()
                assert time.monotonic() < deadline, (done.stderr, agent.stderr())
                time.sleep(0.5)
            answer = json.loads(done.stdout)
            assert answer["job_id"] == "t55e" and answer["attempt"] == 0
            assert answer["processes"] == 1 and len(answer["nodes"]) == 1
            absent = status("no-such-job")
            assert absent.returncode == 1, absent.stderr
            assert "no agent holds job 'no-such-job'" in absent.stderr, absent.stderr
            assert cluster.members[0].client_address in absent.stderr
            go.touch()  # the job ends: its holder forgets its keys, leaving a mark of its end
            assert agent.finish(_BOUND).returncode == 0, agent.stderr()
            ended = status("t55e")
            assert ended.returncode == 0, ended.stderr
            final = json.loads(ended.stdout)
            assert final["state"] == "finished" and final["exit_status"] == 0, final
            assert final["job_id"] == "t55e" and final["attempts"], final
