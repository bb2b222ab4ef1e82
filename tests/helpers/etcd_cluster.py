"""A real etcd cluster for the tests of `--rendezvous etcd://...`: Debian's etcd-server (3.4,
`apt-get install etcd-server etcd-client`; scripts/test.sh installs it as root), one member
per network-namespace host (tests/helpers/netns.py), or one member on loopback.

Each member is a process of its own (`ip netns exec` execs etcd, so the pid is etcd's),
its data in a folder of the test's; `stop()` ends every member by its pid. A member can be
stopped and started again (same data, same name) between tests that share the cluster.
Raft timers at half etcd's defaults (heartbeat 50 ms, election 500 ms) keep a lost leader's
election well within the tests' 3 s unreachable window (docs/configuration.md: the election
timeout well below the window).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from helpers import netns

CLIENT_PORT = 2379
PEER_PORT = 2380
START_BOUND = 60.0  # a cluster that is not healthy by then fails the test, saying why


def unavailable_reason() -> str | None:
    """Why the etcd tests cannot run here, or None when they can."""
    if shutil.which("etcd") is None:
        return (
            "the etcd tests need Debian's etcd-server (apt-get install etcd-server "
            "etcd-client; scripts/test.sh installs it when running as root)"
        )
    return None


@dataclass
class Member:
    name: str
    address: str
    host: netns.Host | None  # None: on loopback, in this namespace
    data: Path
    log: Path
    port: int = CLIENT_PORT  # its client port (peers: the next one on loopback)
    process: subprocess.Popen[bytes] | None = None

    @property
    def client_address(self) -> str:
        return f"{self.address}:{self.port}"

    @property
    def client_url(self) -> str:
        return f"http://{self.client_address}"

    def peer_url(self) -> str:
        return f"http://{self.address}:{PEER_PORT if self.host else self.port + 1}"


@dataclass
class EtcdCluster:
    members: list[Member]
    token: str
    pids: list[int] = field(default_factory=list)

    def endpoints(self) -> str:
        """`--rendezvous` for a job kept in this cluster (every member's endpoint)."""
        return "etcd://" + ",".join(m.client_address for m in self.members)

    def start_member(self, index: int) -> None:
        member = self.members[index]
        initial = ",".join(f"{m.name}={m.peer_url()}" for m in self.members)
        args = [
            "etcd", "--name", member.name, "--data-dir", str(member.data),
            "--listen-client-urls", member.client_url,
            "--advertise-client-urls", member.client_url,
            "--listen-peer-urls", member.peer_url(),
            "--initial-advertise-peer-urls", member.peer_url(),
            "--initial-cluster", initial,
            "--initial-cluster-state", "new",
            "--initial-cluster-token", self.token,
            "--heartbeat-interval", "50", "--election-timeout", "500",
        ]  # fmt: skip
        if member.host is not None:
            args = member.host.command(args)
        with open(member.log, "ab") as log:
            member.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.pids.append(member.process.pid)

    def stop_member(self, index: int) -> None:
        """Member `index` killed (SIGKILL: a machine's etcd gone at once)."""
        process = self.members[index].process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)

    def running_pids(self) -> set[int]:
        return {m.process.pid for m in self.members if m.process and m.process.poll() is None}

    def wait_healthy(self, indices: Sequence[int] | None = None) -> None:
        """Until each member (of `indices`) answers /health with a leader."""
        chosen = [
            self.members[i] for i in (indices if indices is not None else range(len(self.members)))
        ]
        deadline = time.monotonic() + START_BOUND
        last = ""
        while True:
            healthy = 0
            for member in chosen:
                try:
                    with urllib.request.urlopen(member.client_url + "/health", timeout=2) as r:
                        healthy += json.loads(r.read()).get("health") == "true"
                except Exception as error:
                    last = f"{member.name}: {error}"
            if healthy == len(chosen):
                return
            if time.monotonic() > deadline:
                logs = "\n".join(m.log.read_text(errors="replace")[-2000:] for m in chosen)
                raise RuntimeError(f"etcd not healthy within {START_BOUND:g} s ({last}):\n{logs}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Every member ended by its pid, then its data folder removed (its log is kept
        beside it for a failing test's report)."""
        for member in self.members:
            if member.process is not None and member.process.poll() is None:
                member.process.send_signal(signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    member.process.wait(timeout=30)
            shutil.rmtree(member.data, ignore_errors=True)


@contextlib.contextmanager
def cluster_on(hosts: Sequence[netns.Host], folder: Path) -> Iterator[EtcdCluster]:
    """One etcd member per host, healthy; every member ended by its pid at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    members = [
        Member(f"m{i + 1}", host.address, host, folder / f"m{i + 1}", folder / f"m{i + 1}.log")
        for i, host in enumerate(hosts)
    ]
    cluster = EtcdCluster(members, token=f"kdist-test-{os.getpid()}-{time.monotonic_ns()}")
    try:
        for i in range(len(members)):
            cluster.start_member(i)
        cluster.wait_healthy()
        yield cluster
    finally:
        cluster.stop()


def free_port_pair() -> int:
    """A free port on loopback whose next one is free too (a member's client port; its peers
    listen on the next)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = int(a.getsockname()[1])
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return port
    raise RuntimeError("no two adjacent free ports on loopback")


@contextlib.contextmanager
def loopback_member(folder: Path, port: int) -> Iterator[EtcdCluster]:
    """One etcd on 127.0.0.1:`port` (peers on port + 1)."""
    member = Member("solo", "127.0.0.1", None, folder / "solo", folder / "solo.log", port=port)
    cluster = EtcdCluster([member], token=f"kdist-test-{os.getpid()}-{time.monotonic_ns()}")
    try:
        cluster.start_member(0)
        cluster.wait_healthy()
        yield cluster
    finally:
        cluster.stop()
