"""Which address JAX's CPU collectives (Gloo) advertise to the other hosts of a job.

JAX starts Gloo without saying where it listens, and Gloo then takes the address
the host's *name* resolves to. On a stock Debian or Ubuntu host that is 127.0.1.1
(/etc/hosts maps the name to it; on some hosts 127.0.0.1), which no other host
can reach: across hosts, the first collective fails with "Gloo context
initialization failed ... Connection refused, remote=[127.0.0.1]:...".

kdist knows better: the address this host reaches the coordinator from (the
route toward it, as the roll call's connection used it) is one the other hosts
reach. `choose` picks it, unless the user chose (KDIST_COLLECTIVES_ADDRESS, an
address of this host; KDIST_COLLECTIVES_INTERFACE, a network interface);
`refuse_if_unreachable` stops the start, naming the host and the fix, where the
installed JAX cannot be handed an address and its default would be loopback.
`kdist doctor` shows the same choice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kdist import _core, _jax_backend
from kdist._errors import ConfigError

# How long looking up this host's own name may take (for messages only).
_NAME_LOOKUP_SECONDS = 2.0


@dataclass(frozen=True)
class CollectivesAddress:
    """What Gloo is handed: an `interface` (whose `address` it listens on), or else the
    `address` itself (an IP literal); and where the choice came from."""

    address: str
    source: str
    interface: str | None = None

    @property
    def hostname(self) -> str | None:
        """What jaxlib's make_gloo_tcp_collectives takes as `hostname=`: the address,
        unless an interface was chosen (Gloo then takes that interface's address)."""
        return None if self.interface is not None else self.address

    def describe(self) -> str:
        """ "10.0.0.2 (the address this host reaches the coordinator 10.0.0.1:1234 from)"."""
        return f"{self.address} ({self.source})"


def choose(spec: _core.ClusterSpec, toward: str, timeout: float) -> CollectivesAddress | None:
    """The address this process's CPU collectives advertise; None for a job of one process.

    Args:
        spec: The resolved configuration.
        toward: The coordinator as this process reaches it ("host:port"; after the
            roll call, the IP literal that answered).
        timeout: Seconds a host name's lookup may take.

    Raises:
        kdist.ConfigError: KDIST_COLLECTIVES_ADDRESS is not an address of this host,
            or KDIST_COLLECTIVES_INTERFACE names no interface with an address.
        kdist.CoordinatorUnreachableError: there is no route toward the coordinator.

    Example:
        >>> from kdist._start import collectives, config
        >>> spec = config.resolve("127.0.0.1:1234", 2, 1)
        >>> collectives.choose(spec, "127.0.0.1:1234", 1.0).describe()
        '127.0.0.1 (the address this host reaches the coordinator 127.0.0.1:1234 from)'
    """
    if spec.num_processes < 2:
        return None
    sources = spec.sources
    if spec.collectives_interface is not None:
        name = spec.collectives_interface
        source = sources["collectives_interface"]
        try:
            address = _core.interface_address(name)
        except ConfigError as error:
            raise ConfigError(
                f'{source}="{name}" (from the environment): {error}; expected the network '
                "interface whose address the other hosts reach (`ip -brief address` lists "
                "them), or unset it"
            ) from None
        return CollectivesAddress(address, f"interface {name}, from {source}", interface=name)
    if spec.collectives_address is not None:
        address = spec.collectives_address
        source = sources["collectives_address"]
        try:
            _core.check_local_address(address)
        except ConfigError as error:
            raise ConfigError(
                f'{source}="{address}" (from the environment): {error}; expected an address '
                "of this host that the other hosts reach (`ip -brief address` lists them), or "
                "unset it"
            ) from None
        return CollectivesAddress(address, f"from {source}")
    address = _core.local_address_toward(toward, timeout)
    return CollectivesAddress(
        address, f"the address this host reaches the coordinator {toward} from"
    )


def host_name_addresses() -> tuple[str, list[str]]:
    """This host's name and what it resolves to (what Gloo would advertise by itself);
    an empty list when it does not resolve in time."""
    name = os.uname().nodename
    try:
        return name, _core.host_addresses(name, _NAME_LOOKUP_SECONDS)
    except Exception:  # a name that does not resolve: nothing to warn about here
        return name, []


def refuse_if_unreachable(chosen: CollectivesAddress) -> None:
    """Stops the start where this JAX cannot be handed `chosen` and its own choice
    (the host name's address) is loopback while the job spans hosts. Every process
    of such a job sees the same JAX and a non-loopback route to the coordinator, so
    each raises the same error at the same step instead of failing at the first
    collective.

    Raises:
        kdist.ConfigError: naming the host, the address its name resolves to and the fix.
    """
    why = _jax_backend.cpu_collectives_address_unsupported()
    if why is None or _core.is_loopback_address(chosen.address):
        return
    name, addresses = host_name_addresses()
    if not addresses or not all(_core.is_loopback_address(a) for a in addresses):
        return
    raise ConfigError(
        f"this host's name {name!r} resolves to {', '.join(addresses)} (loopback), which JAX's "
        f"CPU collectives (Gloo) would advertise to the other hosts, and none of them can "
        f"reach it: the first collective would fail with 'Gloo context initialization "
        f"failed ... Connection refused'. kdist hands Gloo the address the other hosts "
        f"reach, {chosen.describe()}, but the installed JAX {_jax_backend.jax_version()} "
        f"cannot take one ({why}). Expected: a JAX whose CPU client takes its collectives "
        f"(0.5.1 and later do), or a host name that resolves to an address the other hosts "
        f"reach. Fix: upgrade JAX on every host, or map {name!r} to {chosen.address} in "
        "/etc/hosts."
    )
