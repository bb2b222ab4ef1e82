"""Which address JAX's CPU collectives advertise (kdist._start.collectives), in one process.

The JAX boundary is mocked where a JAX that cannot take an address is needed; across real
hosts, tests/hosts/test_netns.py runs the collectives themselves. This machine's host name
resolves to 127.0.0.1, the coordinator's own route, so a choice of the host name's address
looks right here: one test runs on a "Debian host" made for it (a user namespace, no root
needed, whose host name /etc/hosts maps to 127.0.1.1).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kdist
from helpers.support import Finished, clean_env, run_processes
from kdist import _jax_backend
from kdist._start import collectives, config


def spec(monkeypatch: pytest.MonkeyPatch, **env: str) -> object:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return config.resolve("127.0.0.1:1234", 2, 1)


def test_a_single_process_advertises_nothing() -> None:
    assert collectives.choose(config.resolve(num_processes=1), "", 1.0) is None


def test_the_route_toward_the_coordinator_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = collectives.choose(spec(monkeypatch), "127.0.0.1:1234", 1.0)
    assert chosen is not None
    assert (chosen.address, chosen.hostname, chosen.interface) == ("127.0.0.1", "127.0.0.1", None)
    assert chosen.source == "the address this host reaches the coordinator 127.0.0.1:1234 from"


# A host as Debian installs it: /etc/hosts maps its name to 127.0.1.1, a loopback address
# that is not the route toward a coordinator on 127.0.0.1.
DEBIAN_HOST = "kdist-debian-host"
DEBIAN_HOSTS_FILE = f"127.0.0.1 localhost\n127.0.1.1 {DEBIAN_HOST}\n"
# Run inside the namespaces: $0 the hosts file, $1 the host name, $2 Python, $3 its code.
_ON_A_HOST = 'mount --bind "$0" /etc/hosts && hostname "$1" && exec "$2" -c "$3"'


def _user_namespaces_unavailable() -> str | None:
    try:
        probe = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--uts", "--mount", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except FileNotFoundError:
        return "util-linux's unshare is not installed"
    if probe.returncode != 0:
        return f"user namespaces are not available here: {probe.stderr.strip()}"
    return None


def on_a_debian_host(tmp_path: Path, code: str) -> Finished:
    """Runs `code` in a fresh interpreter whose host name is DEBIAN_HOST and whose
    /etc/hosts is DEBIAN_HOSTS_FILE (its own user, UTS and mount namespaces: nothing
    outside it changes, and no root is needed); the network is this machine's."""
    reason = _user_namespaces_unavailable()
    if reason is not None:
        pytest.skip(reason)
    hosts = tmp_path / "hosts"
    hosts.write_text(DEBIAN_HOSTS_FILE)
    command = ["unshare", "--user", "--map-root-user", "--uts", "--mount"]
    command += ["sh", "-c", _ON_A_HOST, str(hosts), DEBIAN_HOST, sys.executable, code]
    (finished,) = run_processes([command], [clean_env()], timeout=60)
    assert finished.returncode == 0, finished.describe()
    return finished


_CHOOSE_ON_THE_HOST = """
import json, os, socket
from kdist._start import collectives, config
spec = config.resolve("127.0.0.1:1234", 2, 1)
chosen = collectives.choose(spec, "127.0.0.1:1234", 5.0)
name = os.uname().nodename
print(json.dumps({
    "name": name,
    "name_resolves_to": sorted({a[4][0] for a in socket.getaddrinfo(name, None)}),
    "address": chosen.address,
    "hostname": chosen.hostname,
    "interface": chosen.interface,
    "source": chosen.source,
}))
"""


def test_the_route_wins_where_the_host_name_is_another_loopback_address(tmp_path: Path) -> None:
    """On a Debian host (its name is 127.0.1.1) a process that reaches the coordinator on
    127.0.0.1 hands Gloo 127.0.0.1, the route: the host name's address is what Gloo would
    advertise by itself, and what kdist must not hand it."""
    report = json.loads(on_a_debian_host(tmp_path, _CHOOSE_ON_THE_HOST).stdout)
    # The host is as meant: its name resolves to the other loopback address alone.
    assert (report["name"], report["name_resolves_to"]) == (DEBIAN_HOST, ["127.0.1.1"]), report
    assert report["address"] == "127.0.0.1", report  # the route, not the host name's
    assert (report["hostname"], report["interface"]) == ("127.0.0.1", None), report
    assert report["source"] == (
        "the address this host reaches the coordinator 127.0.0.1:1234 from"
    ), report


def test_the_users_address_wins_when_it_is_this_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = collectives.choose(
        spec(monkeypatch, KDIST_COLLECTIVES_ADDRESS="127.0.0.1"), "127.0.0.1:1234", 1.0
    )
    assert chosen is not None and chosen.describe() == "127.0.0.1 (from KDIST_COLLECTIVES_ADDRESS)"


def test_an_address_of_another_host_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            'KDIST_COLLECTIVES_ADDRESS="192.0.2.7" (from the environment): 192.0.2.7 is not an '
            "address of this host; expected an address of this host"
        ),
    ):
        collectives.choose(
            spec(monkeypatch, KDIST_COLLECTIVES_ADDRESS="192.0.2.7"), "127.0.0.1:1234", 1.0
        )


def test_the_users_interface_gives_its_address(monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = collectives.choose(
        spec(monkeypatch, KDIST_COLLECTIVES_INTERFACE="lo"), "127.0.0.1:1234", 1.0
    )
    assert chosen is not None
    assert (chosen.address, chosen.hostname, chosen.interface) == ("127.0.0.1", None, "lo")
    assert chosen.source == "interface lo, from KDIST_COLLECTIVES_INTERFACE"


def test_a_host_name_is_not_an_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KDIST_COLLECTIVES_ADDRESS", "node-1")
    with pytest.raises(kdist.ConfigError, match="expected an IP address of this host"):
        config.resolve("127.0.0.1:1234", 2, 1)


def _jax_without_the_address(monkeypatch: pytest.MonkeyPatch, *addresses: str) -> None:
    monkeypatch.setattr(
        _jax_backend, "cpu_collectives_address_unsupported", lambda: "it takes no hostname"
    )
    monkeypatch.setattr(_jax_backend, "jax_version", lambda: "9.9")
    monkeypatch.setattr(collectives, "host_name_addresses", lambda: ("vm", list(addresses)))


ACROSS_HOSTS = collectives.CollectivesAddress("10.0.0.2", "the route")


def test_a_jax_that_cannot_take_the_address_stops_the_start_where_the_name_is_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _jax_without_the_address(monkeypatch, "127.0.1.1")
    with pytest.raises(kdist.ConfigError) as info:
        collectives.refuse_if_unreachable(ACROSS_HOSTS)
    message = str(info.value)
    assert message.startswith("this host's name 'vm' resolves to 127.0.1.1 (loopback)")
    assert "the installed JAX 9.9 cannot take one (it takes no hostname)" in message
    assert "map 'vm' to 10.0.0.2 in /etc/hosts" in message


def test_nothing_stops_where_the_default_would_work(monkeypatch: pytest.MonkeyPatch) -> None:
    _jax_without_the_address(monkeypatch, "10.0.0.2")
    collectives.refuse_if_unreachable(ACROSS_HOSTS)  # the name is not loopback
    _jax_without_the_address(monkeypatch, "127.0.1.1")
    collectives.refuse_if_unreachable(  # one host: loopback reaches every process
        collectives.CollectivesAddress("127.0.0.1", "the route")
    )


@pytest.mark.compat
def test_this_jax_takes_the_address() -> None:
    """Every supported JAX (the compat run: the oldest) can be handed the address."""
    assert _jax_backend.cpu_collectives_address_unsupported() is None
