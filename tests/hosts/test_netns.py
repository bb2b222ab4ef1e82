"""kdist clusters across three network namespaces (three "hosts" on one bridge): plain,
through a 100 ms delay, and with the coordinator's host dropping every packet."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO

import pytest

from helpers import netns
from helpers.support import PROGRAMS, Finished, clean_env, run_processes

pytestmark = pytest.mark.multiprocess

_reason = netns.unavailable_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

PORT = 8476
DELAY_MS = 100


def read_line(stream: IO[bytes], timeout: float) -> str:
    """The first line `stream` gives within `timeout` seconds (what came, if no
    whole line did)."""
    deadline = time.monotonic() + timeout
    fd, data = stream.fileno(), b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").split("\n", 1)[0]


def run_hosts(
    hosts: list[netns.Host],
    coordinator: str,
    *,
    timeout: float,
    ids: list[int] | None = None,
    worker: str = "report_cluster.py",
    limit: float = 120,
    env_of: Callable[[netns.Host], dict[str, str]] | None = None,
) -> list[Finished]:
    """Runs process i of a len(hosts)-process job on hosts[i] for each i in `ids`
    (`env_of(host)`: variables of that host's process)."""
    ids = list(range(len(hosts))) if ids is None else ids
    commands, envs = [], []
    for pid in ids:
        commands.append(hosts[pid].command([sys.executable, str(PROGRAMS / worker)]))
        envs.append(
            clean_env(
                2,
                KERAS_DISTRIBUTION_JOB_ADDRESSES=coordinator,
                KERAS_DISTRIBUTION_NUM_PROCESSES=str(len(hosts)),
                KERAS_DISTRIBUTION_PROCESS_ID=str(pid),
                KDIST_INIT_TIMEOUT=str(timeout),
                **(env_of(hosts[pid]) if env_of is not None else {}),
            )
        )
    return run_processes(commands, envs, timeout=limit)


def assert_global_devices(results: list[Finished], coordinator: str) -> None:
    for result in results:
        assert result.returncode == 0, result.describe()
    reports = [r.report() for r in results]
    assert [r["process_id"] for r in reports] == [0, 1, 2]
    devices = reports[0]["devices"]
    assert isinstance(devices, list) and len(devices) == 6
    assert all(r["devices"] == devices for r in reports)
    assert all(r["coordinator"] == coordinator for r in reports)


def test_cluster_across_three_hosts() -> None:
    with netns.hosts(3) as hosts:
        coordinator = f"{hosts[0].address}:{PORT}"
        results = run_hosts(hosts, coordinator, timeout=60)
    assert_global_devices(results, coordinator)


def test_collectives_and_keras_across_three_hosts_whose_name_is_loopback() -> None:
    """Each host's name resolves to 127.0.1.1 (netns.hosts writes a Debian /etc/hosts),
    which JAX's Gloo would advertise: kdist hands it the address that reaches the
    coordinator, so JAX's collectives and a Keras DataParallel fit work across hosts."""
    with netns.hosts(3) as hosts:
        coordinator = f"{hosts[0].address}:{PORT}"
        own_name = hosts[2].run("getent", "hosts", socket.gethostname()).stdout.split()
        assert own_name[:1] == ["127.0.1.1"], own_name  # the trap is really there
        results = run_hosts(hosts, coordinator, timeout=60, worker="across_hosts.py", limit=240)
    for result in results:
        assert result.returncode == 0, result.describe()
        assert "Gloo context initialization failed" not in result.stderr
    reports = [r.report() for r in results]
    assert [r["process_id"] for r in reports] == [0, 1, 2]
    assert all(r["gathered"] == [0, 1, 2] for r in reports), reports
    assert all(r["psum"] == r["expected_psum"] for r in reports), reports
    losses = reports[0]["losses"]
    assert isinstance(losses, list) and len(losses) == 3
    assert all(r["losses"] == losses for r in reports), reports


def test_the_collectives_take_the_interface_the_user_names() -> None:
    """KDIST_COLLECTIVES_INTERFACE (each host's own veth) instead of the route."""
    with netns.hosts(3) as hosts:
        coordinator = f"{hosts[0].address}:{PORT}"
        results = run_hosts(
            hosts,
            coordinator,
            timeout=60,
            worker="across_hosts.py",
            limit=240,
            env_of=lambda host: {"KDIST_COLLECTIVES_INTERFACE": host.device},
        )
    for result in results:
        assert result.returncode == 0, result.describe()
    assert all(r.report()["gathered"] == [0, 1, 2] for r in results)


def test_an_address_that_is_not_this_hosts_is_named_at_the_start() -> None:
    """KDIST_COLLECTIVES_ADDRESS set to another host's address: that process stops at
    the start naming it (the others are told by the liveness channel)."""
    with netns.hosts(3) as hosts:
        coordinator = f"{hosts[0].address}:{PORT}"
        wrong = hosts[0].address
        results = run_hosts(
            hosts,
            coordinator,
            timeout=60,
            worker="across_hosts.py",
            env_of=lambda host: {"KDIST_COLLECTIVES_ADDRESS": wrong} if host is hosts[2] else {},
        )
    assert all(result.returncode != 0 for result in results), [r.describe() for r in results]
    assert (
        f'KDIST_COLLECTIVES_ADDRESS="{wrong}" (from the environment): {wrong} is not an '
        "address of this host" in results[2].stderr
    ), results[2].describe()


@contextlib.contextmanager
def delayed_path(mechanism: str, hosts: list[netns.Host]) -> Iterator[str]:
    """Adds DELAY_MS one way between the hosts and the coordinator; yields the
    coordinator address to use."""
    if mechanism == "netem":
        reason = netns.netem_unavailable_reason(hosts[0])
        if reason is not None:
            pytest.skip(f"{reason} (the 'relay' variant adds the delay in user space)")
        for host in hosts:
            host.run(
                "tc",
                "qdisc",
                "add",
                "dev",
                host.device,
                "root",
                "netem",
                "delay",
                f"{DELAY_MS // 2}ms",
            )
        yield f"{hosts[0].address}:{PORT}"
        return
    router = netns.router_address(hosts)
    relay = subprocess.Popen(
        [
            sys.executable,
            str(PROGRAMS / "delay_relay.py"),
            router,
            str(PORT),
            hosts[0].address,
            str(DELAY_MS),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert relay.stdout is not None
        line = read_line(relay.stdout, timeout=20)
        assert line.strip() == "ready", f"relay said {line!r}; exit status {relay.poll()}"
        yield f"{router}:{PORT}"
    finally:
        relay.kill()
        relay.wait(timeout=10)
        if relay.stdout is not None:
            relay.stdout.close()


@pytest.mark.parametrize("mechanism", ["netem", "relay"])
def test_cluster_through_a_100ms_delay(mechanism: str) -> None:
    with netns.hosts(3) as hosts, delayed_path(mechanism, hosts) as coordinator:
        results = run_hosts(hosts, coordinator, timeout=60)
    assert_global_devices(results, coordinator)
    # The delay was in effect: the roll call and JAX's handshake cross it several times.
    workers = [r.report() for r in results[1:]]
    assert all(float(r["init_seconds"]) >= 4 * DELAY_MS / 1000 for r in workers), workers


@pytest.mark.parametrize("mechanism", ["netem", "relay"])
def test_deadline_is_honoured_through_a_100ms_delay(mechanism: str) -> None:
    with netns.hosts(3) as hosts, delayed_path(mechanism, hosts) as coordinator:
        (lone,) = run_hosts(
            hosts, coordinator, timeout=3, ids=[1], worker="roll_call_report.py", limit=30
        )
    report = lone.report()
    assert lone.returncode == 1, lone.describe()
    assert report["error"] == "CoordinatorUnreachableError"
    assert 2.5 <= float(report["elapsed"]) < 20, report  # the 3 s deadline; 20: not a hang
    assert coordinator in str(report["message"])


def test_workers_are_told_the_coordinator_is_unreachable_when_its_host_drops_traffic() -> None:
    reason = netns.nft_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    with netns.hosts(3) as hosts:
        hosts[0].drop_all_incoming()
        coordinator = f"{hosts[0].address}:{PORT}"
        results = run_hosts(hosts, coordinator, timeout=3, worker="roll_call_report.py", limit=30)
    reports = [r.report() for r in results]
    for result, report in zip(results[1:], reports[1:], strict=True):
        assert result.returncode == 1, result.describe()
        assert report["error"] == "CoordinatorUnreachableError"
        assert 2.5 <= float(report["elapsed"]) < 20, report  # the 3 s deadline; not a hang
        assert coordinator in str(report["message"])
    # The coordinator itself is up but hears nobody: it names who is missing.
    assert reports[0]["error"] == "RendezvousTimeoutError"
    message = str(reports[0]["message"])
    assert "1 of 3" in message and "missing process ids [1-2]" in message


def test_a_firewall_that_opens_only_the_coordinator_port_falls_back_to_jax_heartbeat() -> None:
    """Process 0's host accepts TCP only on the coordinator's port: its liveness
    channel's ephemeral port is unreachable. The others say so once, fall back to
    JAX's heartbeat, and the job still starts and ends normally."""
    reason = netns.nft_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    with netns.hosts(3) as hosts:
        hosts[0].allow_only_incoming_tcp_port(PORT)
        coordinator = f"{hosts[0].address}:{PORT}"
        results = run_hosts(hosts, coordinator, timeout=60, limit=90)
    assert_global_devices(results, coordinator)
    fallback = "runs without kdist's liveness channel"
    for pid in (1, 2):
        stderr = results[pid].stderr
        assert stderr.count(fallback) == 1, results[pid].describe()
        assert f"process {pid} {fallback}: no answer from process 0's liveness channel" in stderr
        assert "Falling back to JAX's heartbeat" in stderr
        assert "heartbeat_timeout (100 s, from default)" in stderr
    assert fallback not in results[0].stderr
