"""`--rendezvous etcd://` agents in this process, with a real book and a real etcd on
loopback, in orders that the namespace hosts' tests meet only by chance:

- the end of a job as its last agent reads it: the holder ends the job and forgets its
  keys; an agent that had not read the end word yet must read it (from its connection,
  else from the mark the holder left), not take the forgotten job's book over as a new one
  and be refused by it (a CI run: `test_two_jobs_share_one_etcd_without_meeting`, node 1
  left with 69 under load);
- the takeover the survivors agree on: the holder's book goes silent while etcd still keeps
  its lease (what a new etcd leader's extension does to a lost machine's lease): once every
  other node lost it, its lease is revoked and the book moves."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import etcd_cluster

_reason = etcd_cluster.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

from kdist import RendezvousTimeoutError, _core  # noqa: E402 (after the skip)
from kdist._agent.agent_log import AgentLog  # noqa: E402
from kdist._agent.etcd_client import EtcdAccess, EtcdClient  # noqa: E402
from kdist._agent.etcd_keys import JobKeys  # noqa: E402
from kdist._agent.etcd_rendezvous import EtcdRendezvous  # noqa: E402
from kdist._local_job.output import Output  # noqa: E402

_TOKEN = "etcd-job-end-test-token-0123456789"
_BOUND = 20.0  # every wait of this test


class _Lines:
    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.lines.append(data)
        return len(data)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        return b"".join(self.lines).decode(errors="replace")


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("etcd")
    with etcd_cluster.loopback_member(folder, etcd_cluster.free_port_pair()) as cluster:
        yield cluster.members[0].client_url


def _agent(
    etcd: str, job: str, node: str, nodes: tuple[int, int] = (2, 2)
) -> tuple[EtcdRendezvous, _Lines]:
    request = _core.NodeRequest()
    request.rendezvous = f"etcd://{etcd.split('://', 1)[-1]}/kdist-test"
    request.host_name = socket.gethostname()
    request.node_name = node
    request.job_id = job
    request.min_nodes, request.max_nodes = nodes
    request.last_call = 0.2
    request.processes_per_node = 1
    request.token = _TOKEN
    request.token_source = "the test"
    settings = _core.resolve_node_settings(request, {"KDIST_UNREACHABLE_TIMEOUT": "3"})
    err = _Lines()
    return EtcdRendezvous(settings, AgentLog(Output(_Lines(), err, node), None), None), err


def _next_of_kind(rendezvous: EtcdRendezvous, kind: str) -> Any:
    deadline = time.monotonic() + _BOUND
    while time.monotonic() < deadline:
        reply = rendezvous.next(1.0)
        if reply.kind == kind:
            return reply
    raise AssertionError(f"no {kind} word within {_BOUND} s")


def _joined(
    etcd: str, job: str, count: int, nodes: tuple[int, int]
) -> tuple[list[EtcdRendezvous], list[_Lines], list[int]]:
    """`count` agents joined, attempt 0 formed (its roster read by each): the agents, their
    notes, their coordinator ports."""
    pairs = [_agent(etcd, job, f"node{i}", nodes) for i in range(count)]
    agents = [rendezvous for rendezvous, _ in pairs]
    ports = [_core.free_port() for _ in agents]
    failed: list[BaseException] = []

    def join(rendezvous: EtcdRendezvous, port: int, pid: int) -> None:
        try:  # (each agent its own pid: the book knows an agent by its host and pid)
            rendezvous.join(socket.gethostname(), pid, port, [])
        except BaseException as error:  # told by the test's thread
            failed.append(error)

    pids = [os.getpid() * 10 + i for i in range(count)]
    words = zip(agents, ports, pids, strict=True)
    joins = [threading.Thread(target=join, args=each) for each in words]
    for thread in joins:
        thread.start()
    for thread in joins:
        thread.join(timeout=_BOUND)
    assert not any(t.is_alive() for t in joins), "the agents did not join"
    assert not failed, failed
    for a in agents:
        assert _next_of_kind(a, "roster").attempt == 0
    return agents, [err for _, err in pairs], ports


def _run_one_attempt(etcd: str, job: str) -> tuple[list[EtcdRendezvous], list[_Lines]]:
    """Two agents joined, attempt 0 run and reported by both; the end word not read yet."""
    agents, notes, ports = _joined(etcd, job, 2, (2, 2))
    for a, port in zip(agents, ports, strict=True):
        a.report(0, 0, None, port)
    return agents, notes


def _holder_first(agents: list[EtcdRendezvous]) -> list[EtcdRendezvous]:
    holders = [a for a in agents if a._server is not None]
    assert len(holders) == 1
    return holders + [a for a in agents if a is not holders[0]]


def test_the_last_agent_reads_the_end_after_the_holder_forgot_the_job(etcd: str) -> None:
    holder, other = _holder_first(_run_one_attempt(etcd, "ends")[0])
    assert _next_of_kind(holder, "end").exit_status == 0
    holder.close(0)  # its keys go: the other agent's watch sees the election key deleted
    time.sleep(1.5)  # what the load did: the other reads its end word only now
    try:
        end = _next_of_kind(other, "end")
    finally:
        other.close(0)
    assert end.exit_status == 0
    keys = JobKeys("kdist-test", "ends")
    client = EtcdClient([etcd], EtcdAccess(), call_timeout=2.0)
    assert client.range(keys.live, prefix=True)[0] == []  # no new book, no holder left
    assert client.range(keys.book)[0] == []
    (mark,) = client.range(keys.ended)[0]
    assert b'"exit_status": 0' in mark.value


def test_an_agent_whose_connection_closed_reads_the_end_from_the_mark(etcd: str) -> None:
    holder, other = _holder_first(_run_one_attempt(etcd, "marked")[0])
    assert _next_of_kind(holder, "end").exit_status == 0
    holder.close(0)
    # The connection to the old holder closed before its end word was read (a holder that
    # ended and went at once): the mark in etcd tells it.
    connection = other._agent
    assert connection is not None
    other._drop_agent(connection)
    try:
        end = _next_of_kind(other, "end")
    finally:
        other.close(0)
    assert end.exit_status == 0
    assert "the job ended (its holder's mark in etcd" in end.message


def test_the_survivors_move_the_book_once_every_one_of_them_lost_it(etcd: str) -> None:
    agents, notes, ports = _joined(etcd, "agreed", 3, (2, 3))
    holder, *others = _holder_first(agents)
    survivors = [(a, n, p) for a, n, p in zip(agents, notes, ports, strict=True) if a in others]
    try:
        server = holder._server
        assert server is not None
        server.stop()  # its book silent; its agent's lease still renewed: etcd never expires it
        for survivor, _, port in survivors:  # their processes fail with their peer's machine
            survivor.report(0, 1, None, port)
        rosters: dict[int, Any] = {}
        deadline = time.monotonic() + _BOUND
        while len(rosters) < len(survivors) and time.monotonic() < deadline:
            for i, (survivor, _, _) in enumerate(survivors):  # side by side, as agents are
                if i in rosters:
                    continue
                try:
                    reply = survivor.next(0.2)
                except RendezvousTimeoutError:
                    continue
                if reply.kind == "roster":
                    rosters[i] = reply
        said = "".join(n.text() for _, n, _ in survivors)
        assert [(r.attempt, r.node_count) for r in rosters.values()] == [(1, 2)] * 2, said
        said = "".join(n.text() for _, n, _ in survivors)
        assert "every other node lost the job's book at" in said, said
        assert "its machine's lease in etcd is revoked now, not when it expires" in said
        deadline = time.monotonic() + _BOUND
        while holder._gone is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert holder._gone is not None
        assert "no longer has this agent's lease" in holder._gone  # it never trains alone
        for survivor, _, port in survivors:  # the job ends at its new holder
            survivor.report(1, 0, None, port)
        assert [_next_of_kind(a, "end").exit_status for a, _, _ in survivors] == [0, 0]
    finally:
        for a in agents:
            a.close(1)
