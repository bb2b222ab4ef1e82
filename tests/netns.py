"""Network namespaces that stand for hosts: each with its own address on one bridge.

`hosts(3)` makes namespaces kdist-<pid>-<i> joined by veth pairs to a bridge in the
root namespace, addresses 10.<x>.<y>.{1,2,3}/24, and removes everything it made on
exit, also after a failure. Needs root and iproute2; `unavailable_reason()` says
why not when they are missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass


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


@dataclass
class Host:
    namespace: str
    address: str  # IPv4 on the bridge
    device: str  # the veth end inside the namespace

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.namespace, *argv]

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run(*self.command(argv), check=check)


@contextlib.contextmanager
def hosts(count: int) -> Iterator[list[Host]]:
    tag = f"k{os.getpid() % 100000}"
    subnet = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
    bridge = f"{tag}br"
    made_namespaces: list[str] = []
    made_links: list[str] = []
    try:
        _run("ip", "link", "add", bridge, "type", "bridge")
        made_links.append(bridge)
        _run("ip", "link", "set", bridge, "up")
        result: list[Host] = []
        for i in range(1, count + 1):
            namespace = f"{tag}-h{i}"
            outside, inside = f"{tag}v{i}", f"{tag}p{i}"
            _run("ip", "netns", "add", namespace)
            made_namespaces.append(namespace)
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
    finally:
        for namespace in made_namespaces:
            _run("ip", "netns", "del", namespace, check=False)
        for link in made_links:
            _run("ip", "link", "del", link, check=False)
