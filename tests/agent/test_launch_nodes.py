"""`kdist launch --nodes` on loopback: several agents on this machine, each a real
`kdist launch` process, one of them serving the rendezvous (the first to bind it), with a
real JAX collective across the nodes' processes. No root needed (the network-namespace
hosts are not used here)."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from helpers.agents import agent_args, node_job_reports
from helpers.support import (
    PROGRAMS,
    Finished,
    Spawned,
    alive,
    clean_env,
    has_ipv6_loopback,
    wait_until_gone,
)
from kdist import _core

pytestmark = pytest.mark.multiprocess

_BOUND = 120.0  # every wait on an agent


def _agent(
    spawned: Spawned,
    port: int,
    name: str,
    *extra: str,
    nodes: str = "2",
    env: dict[str, str] | None = None,
    program: str = "node_job.py",
    rendezvous_host: str = "127.0.0.1",
):  # type: ignore[no-untyped-def]
    args = agent_args(
        f"{rendezvous_host}:{port}", name, "--grace", "5", *extra,
        nodes=nodes, program=str(PROGRAMS / program),
    )  # fmt: skip
    return spawned.start(args, env or clean_env(1))


def _two_nodes(tmp_path: Path, port: int, **options: str) -> tuple[Finished, Finished]:
    """Agent "b" (it serves the rendezvous), then agent "a", both with `options`, to
    their end (each must end with 0): (b, a)."""
    with Spawned(tmp_path) as spawned:
        b = _agent(spawned, port, "b", **options)
        assert b.wait_for_stderr("serving the nodes' rendezvous", _BOUND), b.stderr()
        a = _agent(spawned, port, "a", **options)
        done_b, done_a = b.finish(_BOUND), a.finish(_BOUND)
    assert done_a.returncode == 0, done_a.stderr
    assert done_b.returncode == 0, done_b.stderr
    return done_b, done_a


def _gathered(*done: Finished) -> list[dict[str, object]]:
    """The two processes' reports: ids 0 and 1, each of which gathered both ids."""
    reports = [r for d in done for r in node_job_reports(d.stdout)]
    assert sorted(r["process_id"] for r in reports) == [0, 1]  # type: ignore[type-var]
    assert all(r["gathered"] == [0, 1] for r in reports), reports
    return reports


def test_two_agents_form_a_job_in_either_order_and_run_a_collective(tmp_path: Path) -> None:
    done_b, done_a = _two_nodes(tmp_path, _core.free_port())
    for r in _gathered(done_a, done_b):
        variables = r["variables"]
        assert isinstance(variables, dict)
        assert variables["KDIST_NUM_NODES"] == "2"
        assert variables["KDIST_JOB_ID"] == "t43"
        assert variables["KDIST_RESTART_COUNT"] == "0"
        assert variables["KDIST_LOCAL_PROCESS_ID"] == "0"
        assert variables["KDIST_NODE_RANK"] == str(r["process_id"])
        assert str(variables["KERAS_DISTRIBUTION_JOB_ADDRESSES"]).startswith("127.0.0.1:")
        # cluster_spec() shows where the process sits, each value with its variable.
        assert r["place"] == {
            "node_rank": [r["process_id"], "KDIST_NODE_RANK"],
            "num_nodes": [2, "KDIST_NUM_NODES"],
            "local_process_id": [0, "KDIST_LOCAL_PROCESS_ID"],
            "job_id": ["t43", "KDIST_JOB_ID"],
        }
    # Each line's prefix is its process's job-wide id, on every machine.
    for done in (done_a, done_b):
        for line in done.stdout.splitlines():
            if "NODE_JOB " in line:
                assert line.startswith(f"[{node_job_reports(line)[0]['process_id']}] "), line
    assert "serving the nodes' rendezvous" in done_b.stderr
    assert "ended with status 0" in done_b.stderr  # the rendezvous's table of attempts


@pytest.mark.skipif(not has_ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_a_rendezvous_on_ipv6_loopback_forms_the_job(tmp_path: Path) -> None:
    """`--rendezvous [::1]:PORT`: the agents meet over IPv6, the coordinator is node 0's
    IPv6 address (bracketed in KERAS_DISTRIBUTION_JOB_ADDRESSES), and JAX's service and the
    collective run there."""
    port = _core.free_port()
    done_b, done_a = _two_nodes(tmp_path, port, rendezvous_host="[::1]")
    assert f"serving the nodes' rendezvous on [::1]:{port}" in done_b.stderr
    for r in _gathered(done_a, done_b):
        variables = r["variables"]
        assert isinstance(variables, dict)
        assert str(variables["KERAS_DISTRIBUTION_JOB_ADDRESSES"]).startswith("[::1]:")


def test_min_nodes_form_the_job_after_the_last_call(tmp_path: Path) -> None:
    """--nodes 2:3 with two agents: no third comes, so the job forms with two once none
    joined for --last-call (2 s), and runs with them."""
    done_b, done_a = _two_nodes(tmp_path, _core.free_port(), nodes="2:3")
    assert "the job forms when 3 have joined or none joins for 2 s more" in done_a.stderr
    assert all(r["num_processes"] == 2 for r in _gathered(done_a, done_b))


def test_too_few_nodes_exit_75_naming_who_joined(tmp_path: Path) -> None:
    port = _core.free_port()
    with Spawned(tmp_path) as spawned:
        a = _agent(spawned, port, "a", "--join-timeout", "3")
        done = a.finish(_BOUND)
    assert done.returncode == 75, done.stderr
    assert "1 of 2 nodes joined (a at 127.0.0.1)" in done.stderr
    assert "NODE_JOB" not in done.stdout  # nothing ran


def test_a_wrong_token_is_refused_and_the_job_runs_on(tmp_path: Path) -> None:
    port = _core.free_port()
    good = clean_env(1, KDIST_ROLL_CALL_TOKEN="right-token", NODE_JOB_SLEEP="3")
    bad = clean_env(1, KDIST_ROLL_CALL_TOKEN="wrong-token")
    with Spawned(tmp_path) as spawned:
        a = _agent(spawned, port, "a", env=good)
        assert a.wait_for_stderr("serving the nodes' rendezvous", _BOUND), a.stderr()
        intruder = _agent(spawned, port, "x", env=bad)
        refused = intruder.finish(_BOUND)
        b = _agent(spawned, port, "b", env=good)
        done_a, done_b = a.finish(_BOUND), b.finish(_BOUND)
    assert refused.returncode == 1, refused.stderr
    assert "its token is not the rendezvous's" in refused.stderr
    assert "its token is not the rendezvous's" in done_a.stderr  # both sides name it
    for text in (refused.stderr, done_a.stderr, done_b.stderr):
        assert "right-token" not in text and "wrong-token" not in text
    assert done_a.returncode == 0, done_a.stderr
    assert done_b.returncode == 0, done_b.stderr


def test_a_mismatched_environment_and_a_duplicate_name_are_refused_and_the_job_runs_on(
    tmp_path: Path,
) -> None:
    """An agent whose processes would see 2 local devices (--devices-per-process 2; the
    job's see 1) is refused at admission for its environment, naming the difference whole
    (the processes' devices are compared, not the agent's own: issue 60), while the first
    node waits; then, while the job runs, a second live agent named "a" is refused naming
    both addresses. Both exit 1, and the job forms, runs and ends with 0, undisturbed."""
    port = _core.free_port()
    running = clean_env(1, NODE_JOB_SLEEP="6")
    with Spawned(tmp_path) as spawned:
        a = _agent(spawned, port, "a", env=running)
        assert a.wait_for_stderr("serving the nodes' rendezvous", _BOUND), a.stderr()
        other = _agent(spawned, port, "c", "--devices-per-process", "2").finish(_BOUND)
        b = _agent(spawned, port, "b", env=running)
        assert a.wait_for_stderr("attempt 0: node 0 of 2", _BOUND), a.stderr()
        twin = _agent(spawned, port, "a", env=clean_env(1)).finish(_BOUND)
        done_a, done_b = a.finish(_BOUND), b.finish(_BOUND)
    assert other.returncode == 1, other.stderr
    assert "its environment cannot work with the job's nodes" in other.stderr
    assert re.search(r"local devices\b.*\b2\b", other.stderr), other.stderr  # the whole row
    assert re.search(r"local devices\b.*\b1\b", other.stderr), other.stderr
    assert twin.returncode == 1, twin.stderr
    assert "node name a is already held by the live agent at 127.0.0.1" in twin.stderr
    for done in (other, twin):
        assert "NODE_JOB" not in done.stdout  # nothing ran there
    assert done_a.returncode == 0, done_a.stderr
    assert done_b.returncode == 0, done_b.stderr
    assert "attempt 1" not in done_a.stderr  # the job was not disturbed


def test_a_failure_is_named_by_every_agent_and_the_same_failure_twice_ends_it(
    tmp_path: Path,
) -> None:
    port = _core.free_port()
    env = clean_env(1, NODE_JOB_FAIL="1")
    with Spawned(tmp_path) as spawned:
        a = _agent(spawned, port, "a", "--max-restarts", "3", env=env)
        assert a.wait_for_stderr("serving the nodes' rendezvous", _BOUND), a.stderr()
        b = _agent(spawned, port, "b", "--max-restarts", "3", env=env)
        done_a, done_b = a.finish(_BOUND * 2), b.finish(_BOUND * 2)
    for done in (done_a, done_b):
        assert done.returncode == 1, done.stderr
        assert "the job's first failure: process 1 (node b" in done.stderr
        assert "ValueError: node job failed on purpose" in done.stderr
        assert "at the same point" in done.stderr
    assert "attempt 1: node" in done_a.stderr  # restarted once, on the same nodes
    assert "attempt 2: node" not in done_a.stderr
    # Each attempt's processes share a roll call token of their own: none from attempt 0
    # could join attempt 1.
    tokens: dict[str, set[object]] = {}
    for r in node_job_reports(done_a.stdout) + node_job_reports(done_b.stdout):
        variables = r["variables"]
        assert isinstance(variables, dict)
        tokens.setdefault(str(variables["KDIST_RESTART_COUNT"]), set()).add(r["token"])
    assert sorted(tokens) == ["0", "1"], tokens
    assert all(len(shared) == 1 for shared in tokens.values()), tokens
    assert tokens["0"] != tokens["1"], tokens


def _pids(agent_stderr: str) -> list[int]:
    """The pids of an attempt's processes, from the agent's "attempt N: node ..." line."""
    found = re.search(r"attempt \d+: node \d+ of \d+ .*?\(pids ([0-9, ]+)\)", agent_stderr)
    assert found, agent_stderr
    return [int(pid) for pid in found.group(1).split(", ")]


def test_agents_that_lose_the_rendezvous_after_the_job_formed_stop_their_processes_and_exit_69(
    tmp_path: Path,
) -> None:
    """`kdist rendezvous serve` on a machine that trains nothing, killed once both
    processes have run their collective (the job has formed) and sleep: no training
    process dies with it, so the liveness channel has nothing to end; each agent must stop
    its own processes because it lost the rendezvous, and leave with 69."""
    port = _core.free_port()
    serve = [
        sys.executable, "-m", "kdist", "rendezvous", "serve", "--host", "127.0.0.1",
        "--port", str(port), "--nodes", "2", "--job-id", "t43", "--last-call", "2",
    ]  # fmt: skip
    env = clean_env(1, NODE_JOB_SLEEP="600")
    pids: list[int] = []
    try:
        with Spawned(tmp_path) as spawned:
            server = spawned.start(serve, clean_env(1))
            assert server.wait_for_stderr("serving the nodes' rendezvous", _BOUND), server.stderr()
            agents = [_agent(spawned, port, name, env=env) for name in ("a", "b")]
            deadline = time.monotonic() + _BOUND
            for agent in agents:  # its process ran the collective: the job has formed
                while not node_job_reports(agent.stdout()):
                    assert agent.proc.poll() is None, agent.stderr()
                    assert time.monotonic() < deadline, agent.stderr()
                    time.sleep(0.05)
                pids += _pids(agent.stderr())
            assert len(pids) == 2 and all(alive(pid) for pid in pids), pids
            server.kill()  # SIGKILL, by its pid
            done = [agent.finish(_BOUND) for agent in agents]
        for finished in done:
            assert finished.returncode == 69, finished.stderr
            assert (
                "lost the nodes' rendezvous: this machine's processes were stopped; leaving "
                "with status 69"
            ) in finished.stderr, finished.stderr
        assert wait_until_gone(pids, timeout=10) == [], pids  # they sleep 600 s otherwise
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_rendezvous_auto_reads_the_slurm_allocation(tmp_path: Path) -> None:
    # A one-node "allocation" whose first host is localhost: the agent serves and runs it.
    env = clean_env(1, SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="localhost")
    args = [
        sys.executable, "-m", "kdist", "launch", "--nodes", "1", "--rendezvous", "auto",
        "-n", "2", "--devices-per-process", "1", "--",
        sys.executable, str(PROGRAMS / "node_job.py"),
    ]  # fmt: skip
    with Spawned(tmp_path) as spawned:
        done = spawned.start(args, env).finish(_BOUND)
    assert done.returncode == 0, done.stderr
    assert re.search(r"--rendezvous auto: localhost:\d+ \(the scheduler's first host\), "
                     r"job id '4242'", done.stderr), done.stderr
    assert sorted(r["process_id"] for r in node_job_reports(done.stdout)) == [0, 1]  # type: ignore[type-var]


def test_rendezvous_auto_without_a_scheduler_says_what_to_give(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "kdist", "launch", "--nodes", "1", "--rendezvous", "auto",
            "-n", "1", "--", "true"]  # fmt: skip
    with Spawned(tmp_path) as spawned:
        done = spawned.start(args, clean_env(1)).finish(_BOUND)
    assert done.returncode == 2, done.stderr
    assert "give --rendezvous HOST:PORT" in done.stderr


def test_rendezvous_serve_forms_a_job_on_a_machine_that_trains_nothing(tmp_path: Path) -> None:
    port = _core.free_port()
    serve = [
        sys.executable, "-m", "kdist", "rendezvous", "serve", "--host", "127.0.0.1",
        "--port", str(port), "--nodes", "2", "--job-id", "t43", "--last-call", "2",
    ]  # fmt: skip
    with Spawned(tmp_path) as spawned:
        server = spawned.start(serve, clean_env(1))
        assert server.wait_for_stderr("serving the nodes' rendezvous", _BOUND), server.stderr()
        a = _agent(spawned, port, "a")
        b = _agent(spawned, port, "b")
        done_a, done_b, done = a.finish(_BOUND), b.finish(_BOUND), server.finish(_BOUND)
    assert done.returncode == 0, done.stderr
    assert done_a.returncode == 0 and done_b.returncode == 0, done_a.stderr + done_b.stderr
    assert "not this machine's" not in done_a.stderr  # the port was taken: the server's
    reports = node_job_reports(done_a.stdout) + node_job_reports(done_b.stdout)
    assert sorted(r["process_id"] for r in reports) == [0, 1]  # type: ignore[type-var]
    assert "its attempts:" in done.stderr
