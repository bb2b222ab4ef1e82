"""No machine is a single point of failure (issue 53): `kdist launch --nodes MIN:MAX
--rendezvous etcd://...` on three network-namespace hosts, each running one member of a
real three-member etcd cluster (Debian's etcd-server; tests/helpers/etcd_cluster.py), shared
by every test of this module (each test is a job of its own id).

- Process 0's machine cut mid-training (it also held the job's book and an etcd member):
  the two others restore the book from etcd, form the next attempt at once with a new node 0
  and a new coordinator, and finish the Keras job from the last backup at 2 processes.
- A minority host cut: it never trains alone (exit 69 naming the endpoints, its processes
  gone, no later attempt on it) although MIN is 1; the majority goes on.
- One etcd member down: no effect. etcd unreachable at start: named, bounded, 69.
- Two jobs on one etcd never meet; a wrong token is refused at the book.

Between tests, the only processes left in the hosts' namespaces are etcd's members.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import etcd_cluster, netns
from helpers.agents import NODE_JOB, agent_args, node_job_reports
from helpers.support import PROGRAMS, Running, Spawned, clean_env, json_objects

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]

_reason = netns.unavailable_reason() or etcd_cluster.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

_BOUND = 300.0  # bounds every wait; nothing is timed against it
_WINDOW = "3"  # KDIST_UNREACHABLE_TIMEOUT: the leases', the rendezvous's and the processes'
TOKEN = "etcd-test-token-0123456789"
KERAS = str(PROGRAMS / "keras_backup.py")
EPOCHS = 3
STEPS_PER_EPOCH = 16
SAVE_FREQ = 4


@dataclass
class Place:
    hosts: list[netns.Host]
    cluster: etcd_cluster.EtcdCluster


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Place]:
    folder = tmp_path_factory.mktemp("etcd")
    with netns.hosts(3) as hosts, etcd_cluster.cluster_on(hosts, folder) as cluster:
        yield Place(hosts, cluster)


@pytest.fixture
def hosts(place: Place) -> Iterator[list[netns.Host]]:
    """The hosts, every link up and every member running again after the test, which
    must leave nothing of its own running in any namespace."""
    yield place.hosts
    for host in place.hosts:
        host.set_link(True)
    ended = place.cluster.running_pids()
    for i, member in enumerate(place.cluster.members):
        if member.process is None or member.process.pid not in ended:
            place.cluster.start_member(i)
    place.cluster.wait_healthy()
    deadline = time.monotonic() + netns.LEFT_RUNNING_SECONDS
    while True:
        members = place.cluster.running_pids()
        left = {h.namespace: sorted(set(h.pids()) - members) for h in place.hosts}
        left = {name: pids for name, pids in left.items() if pids}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not left, f"still running in the hosts' namespaces after the test: {left}"


def _agent(place: Place, index: int, job: str, program: str, *extra: str,
           nodes: str = "1:3", rendezvous: str | None = None) -> list[str]:  # fmt: skip
    return place.hosts[index].command(
        agent_args(
            rendezvous or place.cluster.endpoints(), f"host{index}", "--grace", "10",
            "--join-timeout", "120", *extra,
            nodes=nodes, job_id=job, last_call="10", program=program,
        )
    )  # fmt: skip


def _env(**extra: str) -> dict[str, str]:
    return clean_env(
        1,
        KDIST_ROLL_CALL_TOKEN=TOKEN,
        KDIST_UNREACHABLE_TIMEOUT=_WINDOW,
        KDIST_INIT_TIMEOUT="120",
        PYTHONFAULTHANDLER="1",  # a crash in an agent shows where
        **extra,
    )


def _keras_env(backup_dir: Path) -> dict[str, str]:
    return _env(
        KERAS_BACKEND="jax",
        KERAS_HOME="/tmp/kdist-test-keras-home",
        BACKUP_DIR=str(backup_dir),
        BACKUP_SAVE_FREQ=str(SAVE_FREQ),
        BACKUP_EPOCHS=str(EPOCHS),
        BACKUP_STEP_SLEEP="0.2",
    )


def _node_zero(agents: list[Running], attempt: int = 0) -> int:
    """Which agent runs node 0 of `attempt` (the first to hold the job's book)."""
    deadline = time.monotonic() + _BOUND
    while True:
        for i, agent in enumerate(agents):
            if f"attempt {attempt}: node 0 of " in agent.stderr():
                return i
        for agent in agents:
            assert agent.proc.poll() is None, f"an agent ended early:\n{agent.stderr()}"
        assert time.monotonic() < deadline, [a.stderr() for a in agents]
        time.sleep(0.1)


def _wait_for(agent: Running, text: str, others: list[Running], stream: str = "stdout") -> None:
    deadline = time.monotonic() + _BOUND
    while text not in (agent.stdout() if stream == "stdout" else agent.stderr()):
        for a in others:
            assert a.proc.poll() is None, f"an agent ended early:\n{a.stderr()}"
        assert time.monotonic() < deadline, f"no {text!r} within {_BOUND} s:\n{agent.stderr()}"
        time.sleep(0.1)


def test_process_0s_machine_cut_mid_training_the_two_others_finish_from_the_last_backup(
    place: Place, hosts: list[netns.Host], tmp_path: Path
) -> None:
    backup_dir = tmp_path / "backup"
    logs = tmp_path / "logs"
    with Spawned(tmp_path) as spawned:
        agents = [
            spawned.start(
                _agent(place, i, "keras-0", KERAS, "--log-dir", str(logs / f"host{i}")),
                _keras_env(backup_dir),
            )
            for i in range(3)
        ]
        zero = _node_zero(agents)  # process 0, its coordinator and (first) the job's book
        # Mid-training, after a committed backup: the cut lands between two saves.
        _wait_for(agents[zero], f"step {2 * SAVE_FREQ + 2}\n", agents)
        hosts[zero].set_link(False)  # no FIN, no RST; its etcd member is cut off too
        done = [a.finish(_BOUND) for a in agents]
    survivors = [i for i in range(3) if i != zero]
    table = next(
        json.loads(path.read_text())
        for path in logs.glob("host*/attempts.json")
        if path.parent.name != f"host{zero}"
    )
    # The survivors keep their order of attempt 0: the first of them is the new node 0.
    order = [int(name[4:]) for name in table["attempts"][0]["nodes"] if name != f"host{zero}"]
    for i in survivors:
        assert done[i].returncode == 0, f"host{i}: {done[i].stderr}"
    cut = done[zero]
    assert cut.returncode == 69, cut.stderr
    assert "never trains alone" in cut.stderr, cut.stderr
    assert "attempt 1" not in cut.stderr, cut.stderr  # no later attempt on it
    # The book moved: one survivor took it over from etcd, the other came back to it.
    assert any("restored from etcd" in done[i].stderr for i in survivors), done[survivors[0]].stderr
    assert f"node lost: node host{zero}" in done[survivors[0]].stderr
    for rank, i in enumerate(order):  # a new node 0 and coordinator among the survivors
        assert f"attempt 1: node {rank} of 2 (host{i})" in done[i].stderr, done[i].stderr
    assert table["exit_status"] == 0
    lost, finished = table["attempts"]
    assert lost["nodes"][0] == f"host{zero}" and lost["processes"] == 3, lost
    assert lost["ended"].startswith(f"node lost: node host{zero}") and not lost["counted"], lost
    assert finished["nodes"] == [f"host{i}" for i in order], finished
    assert finished["ended"] == "finished", finished
    assert lost["ended_seconds"] <= finished["started_seconds"], table
    assert lost["ended_seconds"] - lost["started_seconds"] > 5, table  # attempt 0 trained
    for rank, i in enumerate(order):
        final = [r for r in json_objects(done[i].stdout) if "restart_count" in r][-1]
        assert final["error"] is None, final
        assert final["restart_count"] == 1, final
        assert final["num_processes"] == 2, final
        assert final["previous_num_processes"] == 3, final
        assert final["process_id"] == rank, final
        restored = final["restored_step"]
        assert isinstance(restored, int) and restored >= SAVE_FREQ, final
        assert restored % SAVE_FREQ == 0, final
        assert final["iterations_at_start"] == restored, final
        assert final["iterations"] == EPOCHS * STEPS_PER_EPOCH, final


def test_a_minority_host_cut_never_trains_alone_and_the_majority_goes_on(
    place: Place, hosts: list[netns.Host], tmp_path: Path
) -> None:
    env = _env(NODE_JOB_SLEEP="8")
    with Spawned(tmp_path) as spawned:
        agents = [spawned.start(_agent(place, i, "minority", NODE_JOB), env) for i in range(3)]
        zero = _node_zero(agents)
        other = (zero + 1) % 3  # neither the book's machine nor process 0's
        _wait_for(agents[other], "NODE_JOB", agents)
        hosts[other].set_link(False)
        done = [a.finish(_BOUND) for a in agents]
    cut = done[other]
    assert cut.returncode == 69, cut.stderr
    assert "no answer from a majority of etcd (http://" in cut.stderr, cut.stderr
    assert "never trains alone" in cut.stderr, cut.stderr
    assert "attempt 1" not in cut.stderr, cut.stderr  # although --nodes 1:3 would allow one
    for i in range(3):
        if i != other:
            assert done[i].returncode == 0, f"host{i}: {done[i].stderr}"
            finals = [r for r in node_job_reports(done[i].stdout) if r["num_processes"] == 2]
            assert finals, done[i].stdout  # attempt 1 at 2 processes
    assert f"node lost: node host{other}" in done[zero].stderr


def test_one_etcd_member_down_changes_nothing(
    place: Place, hosts: list[netns.Host], tmp_path: Path
) -> None:
    place.cluster.stop_member(2)
    with Spawned(tmp_path) as spawned:
        agents = [
            spawned.start(_agent(place, i, "member-down", NODE_JOB, nodes="3"), _env())
            for i in range(3)
        ]
        done = [a.finish(_BOUND) for a in agents]
    for i in range(3):
        assert done[i].returncode == 0, f"host{i}: {done[i].stderr}"
        (report,) = node_job_reports(done[i].stdout)
        assert report["num_processes"] == 3 and report["gathered"] == [0, 1, 2], report


def test_etcd_unreachable_at_start_is_named_within_the_window(
    place: Place, hosts: list[netns.Host], tmp_path: Path
) -> None:
    nowhere = f"etcd://{hosts[1].address}:2999,{hosts[2].address}:2999"
    started = time.monotonic()
    with Spawned(tmp_path) as spawned:
        agent = spawned.start(_agent(place, 0, "nowhere", NODE_JOB, rendezvous=nowhere), _env())
        done = agent.finish(_BOUND)
    took = time.monotonic() - started
    assert done.returncode == 69, done.stderr
    endpoints = f"http://{hosts[1].address}:2999, http://{hosts[2].address}:2999"
    assert f"etcd at {endpoints} did not answer within 3 s" in done.stderr, done.stderr
    assert took < _BOUND, took  # bounded by the window, not the join timeout (120 s)
    assert "Traceback" not in done.stderr


def test_two_jobs_share_one_etcd_without_meeting(
    place: Place, hosts: list[netns.Host], tmp_path: Path
) -> None:
    with Spawned(tmp_path) as spawned:
        first = [
            spawned.start(_agent(place, i, "job-a", NODE_JOB, nodes="2"), _env()) for i in (0, 1)
        ]
        second = [
            spawned.start(_agent(place, i, "job-b", NODE_JOB, nodes="2"), _env()) for i in (1, 2)
        ]
        done = [a.finish(_BOUND) for a in first + second]
    for result in done:
        assert result.returncode == 0, result.stderr
    for job, results in (("job-a", done[:2]), ("job-b", done[2:])):
        tokens = set()
        for result in results:
            (report,) = node_job_reports(result.stdout)
            assert report["num_processes"] == 2 and report["gathered"] == [0, 1], report
            assert report["variables"]["KDIST_JOB_ID"] == job, report
            tokens.add(report["token"])
        assert len(tokens) == 1  # one attempt's token per job
    assert (
        node_job_reports(done[0].stdout)[0]["token"] != node_job_reports(done[2].stdout)[0]["token"]
    )


def test_a_wrong_token_is_refused_at_the_book(
    place: Place, hosts: list[netns.Host], tmp_path: Path
) -> None:
    env = _env(NODE_JOB_SLEEP="4")
    with Spawned(tmp_path) as spawned:
        agents = [
            spawned.start(_agent(place, i, "tokens", NODE_JOB, nodes="2"), env) for i in (0, 1)
        ]
        _wait_for(agents[0], "NODE_JOB", agents)
        intruder = spawned.start(
            _agent(place, 2, "tokens", NODE_JOB, nodes="2"),
            {**env, "KDIST_ROLL_CALL_TOKEN": "not-the-token-0123456789"},
        )
        refused = intruder.finish(_BOUND)
        done = [a.finish(_BOUND) for a in agents]
    assert refused.returncode == 1, refused.stderr
    assert "its token is not the rendezvous's" in refused.stderr, refused.stderr
    for result in done:
        assert result.returncode == 0, result.stderr
