"""Which address JAX's CPU collectives advertise (kdist._start.collectives), in one process.

The JAX boundary is mocked where a JAX that cannot take an address is needed; across real
hosts, tests/hosts/test_netns.py runs the collectives themselves.
"""

from __future__ import annotations

import re

import pytest

import kdist
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
