"""`kdist launch --nodes` across three network-namespace hosts (host names resolving to
loopback, as on Debian): one agent per host, the same command everywhere, the token
required off loopback, a real JAX collective across the hosts."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

from helpers import netns
from helpers.agents import agent_args, node_job_reports
from helpers.support import Spawned, clean_env, wait_until_gone

pytestmark = pytest.mark.multiprocess

_reason = netns.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

PORT = 29431
_BOUND = 180.0


def test_three_hosts_form_with_the_rendezvous_host_last_and_run_a_collective(
    tmp_path: Path,
) -> None:
    with netns.hosts(3) as hosts, Spawned(tmp_path) as spawned:
        rendezvous = f"{hosts[0].address}:{PORT}"
        env = clean_env(1, KDIST_ROLL_CALL_TOKEN="nodes-token-0123456789")
        agents = {}
        for index in (2, 1, 0):  # the rendezvous's host last
            args = agent_args(rendezvous, f"host{index}", "--join-timeout", "120", nodes="3")
            if index == 0:  # the others wait for the rendezvous, saying so
                assert agents[2].wait_for_stderr("waiting for the nodes' rendezvous", _BOUND)
            agents[index] = spawned.start(hosts[index].command(args), env)
        done = {i: a.finish(_BOUND) for i, a in agents.items()}
    for i, d in done.items():
        assert d.returncode == 0, f"host{i}: {d.stderr}"
    assert "serving the nodes' rendezvous" in done[0].stderr
    assert "waiting for the nodes' rendezvous" in done[2].stderr  # it started first
    by_host = {i: node_job_reports(d.stdout) for i, d in done.items()}
    assert by_host[0][0]["process_id"] == 0  # node 0: the rendezvous's host
    for reports in by_host.values():
        (report,) = reports
        assert report["gathered"] == [0, 1, 2]
        variables = report["variables"]
        assert isinstance(variables, dict)
        # The coordinator is node 0's IP, never a host name.
        assert variables["KERAS_DISTRIBUTION_JOB_ADDRESSES"].startswith(f"{hosts[0].address}:")
        assert variables["KDIST_NUM_NODES"] == "3"
    for d in done.values():
        assert "nodes-token" not in d.stderr


def test_an_agent_without_a_token_refuses_to_start_off_loopback(tmp_path: Path) -> None:
    with netns.hosts(1) as hosts, Spawned(tmp_path) as spawned:
        args = [
            sys.executable, "-m", "kdist", "launch", "--nodes", "1",
            "--rendezvous", f"{hosts[0].address}:{PORT}", "-n", "1", "--", "true",
        ]  # fmt: skip
        done = spawned.start(hosts[0].command(args), clean_env(1)).finish(60)
    assert done.returncode == 2, done.stderr
    assert "needs a token" in done.stderr


def test_the_rendezvous_host_vanishing_ends_the_other_agent_with_69(tmp_path: Path) -> None:
    with netns.hosts(2) as hosts, Spawned(tmp_path) as spawned:
        rendezvous = f"{hosts[0].address}:{PORT}"
        env = clean_env(1, KDIST_ROLL_CALL_TOKEN="nodes-token-0123456789", NODE_JOB_SLEEP="600")
        agents = []
        for index in (0, 1):
            args = agent_args(
                rendezvous, f"host{index}", "--grace", "5", "--join-timeout", "60"
            )
            agents.append(spawned.start(hosts[index].command(args), env))
        deadline = time.monotonic() + _BOUND  # until both processes ran their collective
        while not all("NODE_JOB" in a.stdout() for a in agents):
            assert time.monotonic() < deadline, [a.stderr() for a in agents]
            time.sleep(0.1)
        hosts[0].set_link(False)  # no FIN, no RST: the host is gone
        started = time.monotonic()
        done = agents[1].finish(_BOUND)
        elapsed = time.monotonic() - started
    print(f"link cut -> the other agent's exit 69: {elapsed:.1f} s")  # docs' figure (-s)
    assert done.returncode == 69, done.stderr
    assert "lost the nodes' rendezvous" in done.stderr
    assert elapsed < _BOUND
    pids = [int(p) for p in re.findall(r"\(pids (\d+)\)", done.stderr)]
    assert pids and not wait_until_gone(pids, 30)  # nothing of it left running
