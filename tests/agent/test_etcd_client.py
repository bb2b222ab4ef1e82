"""kdist._agent.etcd_client against a real etcd on loopback (Debian's etcd-server): the calls
`--rendezvous etcd://` is built on (the election, the fence, leases, watches), an endpoint
down, none answering (bounded, each named), and TLS with etcd's own users through
etcdctl's variables."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import etcd_cluster

_reason = etcd_cluster.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

from kdist._agent.etcd_client import (  # noqa: E402 (after the skip)
    EtcdAccess,
    EtcdClient,
    EtcdRefused,
    EtcdUnavailable,
    created_never,
    held_by,
    put_request,
    range_request,
    ranged,
)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("etcd")
    with etcd_cluster.loopback_member(folder, etcd_cluster.free_port_pair()) as cluster:
        yield cluster.members[0].client_url


def test_one_election_key_one_winner_and_a_fence_on_its_lease(etcd: str) -> None:
    client = EtcdClient([etcd], EtcdAccess(), call_timeout=2.0)
    key, book = f"t/{time.monotonic_ns()}/holder", f"t/{time.monotonic_ns()}/book"
    first, ttl = client.grant(5)
    second, _ = client.grant(5)
    assert ttl == 5
    won, _ = client.txn([created_never(key)], [put_request(key, "10.0.0.1:1", first)])
    lost, responses = client.txn(
        [created_never(key)], [put_request(key, "10.0.0.2:2", second)], [range_request(key)]
    )
    assert won and not lost
    assert ranged(responses[0])[0].value == b"10.0.0.1:1"  # the loser learns the winner
    kept, _ = client.txn([held_by(key, first)], [put_request(book, b"state 1")])
    refused, _ = client.txn([held_by(key, second)], [put_request(book, b"forged")])
    assert kept and not refused
    client.revoke(first)  # the holder's lease gone: its key, and its writes
    assert client.range(key)[0] == []
    fenced, _ = client.txn([held_by(key, first)], [put_request(book, b"state 2")])
    assert not fenced
    assert client.range(book)[0][0].value == b"state 1"


def test_a_lease_renewed_then_expired_and_a_watch_sees_its_key_go(etcd: str) -> None:
    client = EtcdClient([etcd], EtcdAccess(), call_timeout=2.0)
    lease, _ = client.grant(2)
    prefix = f"w/{time.monotonic_ns()}/"
    client.put(prefix + "nodes/a", "x", lease)
    _, revision = client.range(prefix, prefix=True)
    assert client.keepalive(lease) > 0
    deadline = time.monotonic() + 30
    events = []
    while not events and time.monotonic() < deadline:  # expires within its TTL unrenewed
        watched = client.watch(prefix, True, revision + 1, duration=1.0)
        events = watched.events
        revision = max(revision, watched.next_revision - 1)
    assert [(e.kind, e.key) for e in events] == [("DELETE", prefix + "nodes/a")]
    assert client.keepalive(lease) == 0  # etcd no longer has it


def test_a_member_down_costs_one_try_and_none_answering_names_each(etcd: str) -> None:
    down = f"http://127.0.0.1:{_closed_port()}"
    client = EtcdClient([down, etcd], EtcdAccess(), call_timeout=1.0)
    client.put("m/key", "v")
    assert client.range("m/key")[0][0].value == b"v"
    nowhere = EtcdClient([down, f"http://127.0.0.1:{_closed_port()}"], EtcdAccess(), 0.5)
    started = time.monotonic()
    with pytest.raises(EtcdUnavailable, match=f"{down}: connection refused; http://127.0.0.1:"):
        nowhere.range("m/key")
    assert time.monotonic() - started < 10
    with pytest.raises(EtcdRefused, match="lease not found"):
        client.put("m/key", "v", lease=12345)


def test_tls_and_etcds_users_through_etcdctls_variables(tmp_path: Path) -> None:
    if subprocess.run(["which", "openssl", "etcdctl"], capture_output=True).returncode != 0:
        pytest.skip("needs openssl and etcdctl (apt-get install openssl etcd-client)")
    cert, key = tmp_path / "etcd.crt", tmp_path / "etcd.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    port = etcd_cluster.free_port_pair()
    url = f"https://127.0.0.1:{port}"
    process = subprocess.Popen(
        ["etcd", "--name", "tls", "--data-dir", str(tmp_path / "data"),
         "--listen-client-urls", url, "--advertise-client-urls", url,
         "--listen-peer-urls", f"http://127.0.0.1:{port + 1}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{port + 1}",
         "--initial-cluster", f"tls=http://127.0.0.1:{port + 1}",
         "--cert-file", str(cert), "--key-file", str(key)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        ctl = {**os.environ, "ETCDCTL_API": "3", "ETCDCTL_CACERT": str(cert)}
        deadline = time.monotonic() + 60
        while True:
            ready = subprocess.run(
                ["etcdctl", "--endpoints", url, "user", "add", "root:rootpw"],
                env=ctl,
                capture_output=True,
                timeout=30,
            )
            if ready.returncode == 0:
                break
            assert time.monotonic() < deadline, ready.stderr
            time.sleep(0.2)
        subprocess.run(["etcdctl", "--endpoints", url, "auth", "enable"], env=ctl, check=True,
                       capture_output=True, timeout=30)  # fmt: skip
        anonymous = EtcdClient([url], EtcdAccess(cacert=str(cert)), call_timeout=5.0)
        with pytest.raises(EtcdRefused):
            anonymous.put("auth/key", "v")
        access = EtcdAccess.from_environment(
            {"ETCDCTL_CACERT": str(cert), "ETCDCTL_USER": "root:rootpw"}
        )
        client = EtcdClient([url], access, call_timeout=5.0)
        client.put("auth/key", "v")
        assert client.range("auth/key")[0][0].value == b"v"
        untrusted = EtcdClient([url], EtcdAccess(user="root", password="rootpw"), 2.0)
        with pytest.raises(EtcdUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
            untrusted.range("auth/key")
    finally:
        process.kill()
        process.wait(timeout=30)
