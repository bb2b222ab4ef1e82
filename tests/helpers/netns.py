"""Network namespaces that stand for hosts: each with its own address on one bridge.

`hosts(3)` makes namespaces k<pid>-h<i> (i = 1, 2, 3; <pid> is this process's id
modulo 100000) joined by veth pairs to a bridge k<pid>br in the root namespace,
addresses 10.<x>.<y>.{1,2,3}/24, and removes everything it made on exit, also after
a failure. Inside each, the machine's host name resolves to 127.0.1.1, as a stock
Debian or Ubuntu /etc/hosts maps it (`ip netns exec` mounts /etc/netns/<name>/hosts
over /etc/hosts): what JAX's CPU collectives would advertise by themselves. Needs
root and iproute2; `unavailable_reason()` says why not when they are missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=20, check=check)


def unavailable_reason() -> str | None:
    """Why namespace tests cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "network-namespace tests need root (ip netns add)"
    if shutil.which("ip") is None:
        return "network-namespace tests need iproute2's `ip` (apt-get install iproute2)"
    probe = f"kdist-probe-{os.getpid()}"
    result = _run("ip", "netns", "add", probe, check=False)
    if result.returncode != 0:
        return f"cannot create a network namespace here: {result.stderr.strip()}"
    _run("ip", "netns", "del", probe, check=False)
    return None


def router_address(hosts: Sequence[Host]) -> str:
    """The root namespace's address on the hosts' bridge."""
    return hosts[0].address.rsplit(".", 1)[0] + ".254"


def netem_unavailable_reason(host: Host) -> str | None:
    """Why `tc netem` cannot delay traffic here (a kernel without sch_netem), or None."""
    result = host.run(
        "tc", "qdisc", "add", "dev", host.device, "root", "netem", "delay", "1ms", check=False
    )
    if result.returncode != 0:
        return f"tc netem is unavailable: {result.stderr.strip()}"
    host.run("tc", "qdisc", "del", "dev", host.device, "root", check=False)
    return None


def nft_unavailable_reason() -> str | None:
    """Why nftables cannot drop traffic here, or None."""
    if shutil.which("nft") is None:
        return "dropping traffic needs nftables' `nft` (apt-get install nftables)"
    return None


@dataclass
class Host:
    namespace: str
    address: str  # IPv4 on the bridge
    device: str  # the veth end inside the namespace

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.namespace, *argv]

    def pids(self) -> list[int]:
        """Every process running inside this host's namespace (`ip netns pids`)."""
        listed = _run("ip", "netns", "pids", self.namespace, check=False).stdout
        return [int(pid) for pid in listed.split()]

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run(*self.command(argv), check=check)

    def set_link(self, up: bool) -> None:
        """Takes this host's link down, or brings it back up. Down, nothing it sends
        leaves and nothing sent to it arrives, and neither side hears a FIN or RST: a host
        that lost power or its network (its processes keep running)."""
        self.run("ip", "link", "set", self.device, "up" if up else "down")

    def drop_all_incoming(self) -> None:
        """Silently drops every packet that arrives at this host (nftables)."""
        self.run("nft", "add", "table", "inet", "kdist_test")
        self.run(
            "nft",
            "add",
            "chain",
            "inet",
            "kdist_test",
            "input",
            "{ type filter hook input priority 0; policy drop; }",
        )

    def allow_only_incoming_tcp_port(self, port: int) -> None:
        """Drops every packet that arrives at this host except replies to its own
        connections and TCP to `port` (a firewall that opens only the coordinator's port)."""
        self.run("nft", "add", "table", "inet", "kdist_test")
        self.run(
            "nft",
            "add",
            "chain",
            "inet",
            "kdist_test",
            "input",
            "{ type filter hook input priority 0; policy drop; }",
        )
        for rule in (
            ("iifname", "lo", "accept"),
            ("ct", "state", "established,related", "accept"),
            ("tcp", "dport", str(port), "accept"),
        ):
            self.run("nft", "add", "rule", "inet", "kdist_test", "input", *rule)


# What `ip netns exec NAME` mounts over /etc: files of /etc/netns/NAME.
NETNS_ETC = Path("/etc/netns")


def _write_debian_hosts_file(namespace: str) -> None:
    """The namespace's /etc/hosts as Debian writes one: the host name on 127.0.1.1."""
    folder = NETNS_ETC / namespace
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hosts").write_text(
        f"127.0.0.1\tlocalhost\n127.0.1.1\t{socket.gethostname()}\n::1\tlocalhost\n"
    )


@contextlib.contextmanager
def hosts(count: int) -> Iterator[list[Host]]:
    """`count` hosts; the root namespace is the bridge's `.254` (the "router")."""
    tag = f"k{os.getpid() % 100000}"
    subnet = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
    bridge = f"{tag}br"
    made_namespaces: list[str] = []
    made_links: list[str] = []
    try:
        _run("ip", "link", "add", bridge, "type", "bridge")
        made_links.append(bridge)
        _run("ip", "link", "set", bridge, "up")
        _run("ip", "addr", "add", f"{subnet}.254/24", "dev", bridge)
        result: list[Host] = []
        for i in range(1, count + 1):
            namespace = f"{tag}-h{i}"
            outside, inside = f"{tag}v{i}", f"{tag}p{i}"
            _run("ip", "netns", "add", namespace)
            made_namespaces.append(namespace)
            _write_debian_hosts_file(namespace)
            _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            made_links.append(outside)
            _run("ip", "link", "set", inside, "netns", namespace)
            _run("ip", "link", "set", outside, "master", bridge)
            _run("ip", "link", "set", outside, "up")
            host = Host(namespace, f"{subnet}.{i}", inside)
            host.run("ip", "addr", "add", f"{host.address}/24", "dev", inside)
            host.run("ip", "link", "set", inside, "up")
            host.run("ip", "link", "set", "lo", "up")
            result.append(host)
        yield result
        # The test ended without an error: nothing it started may still run on any host.
        left = _left_running(result, LEFT_RUNNING_SECONDS)
        assert not left, f"still running in the hosts' namespaces after the test: {left}"
    finally:
        for namespace in made_namespaces:
            for pid in Host(namespace, "", "").pids():  # whatever is left: ended, by pid
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            _run("ip", "netns", "del", namespace, check=False)
            shutil.rmtree(NETNS_ETC / namespace, ignore_errors=True)
        for link in made_links:
            _run("ip", "link", "del", link, check=False)


# How long the processes of a test get to leave their namespaces after it ended.
LEFT_RUNNING_SECONDS = 30.0


def _left_running(hosts: Sequence[Host], bound: float) -> dict[str, list[int]]:
    """The processes still running in each host's namespace once `bound` seconds passed
    without all of them gone (empty: every namespace emptied in time)."""
    deadline = time.monotonic() + bound
    while True:
        left = {host.namespace: pids for host in hosts if (pids := host.pids())}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)
