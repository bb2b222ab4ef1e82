"""Where an etcd job's book is served now (`kdist status`, and an agent's /metrics): the
address its holder put under the job's election key (kdist._agent.etcd_keys.JobKeys.holder),
read once, as an agent reads it. Read only: nothing here campaigns, leases or writes."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kdist import _errors
from kdist._agent.etcd_client import EtcdAccess, EtcdClient, EtcdRefused, EtcdUnavailable
from kdist._agent.etcd_keys import JobKeys

if TYPE_CHECKING:
    from kdist._core import NodeSettings


def holder_address(settings: NodeSettings, call_timeout: float = 2.0) -> str:
    """The address (IP:PORT) on which the agent that holds the job's book serves it.

    Args:
        settings: The job's settings, their rendezvous `etcd://...` (store "etcd").
        call_timeout: Bound of each etcd call, in seconds.

    Returns:
        The holder's address, as it wrote it under the job's election key.

    Raises:
        CoordinatorUnreachableError: etcd does not answer (named with its endpoints).
        RendezvousError: no agent holds the job's book (it has not started, or it ended).

    Example:
        >>> holder_address(settings)  # doctest: +SKIP
        '10.0.0.2:41877'
    """
    client = EtcdClient(
        settings.etcd_endpoints, EtcdAccess.from_environment(os.environ), call_timeout
    )
    key = JobKeys(settings.etcd_prefix, settings.job_id).holder
    try:
        found, _revision = client.range(key)
    except (EtcdUnavailable, EtcdRefused) as error:
        raise _errors.CoordinatorUnreachableError(
            f"etcd at {client.describe()} did not answer where job {settings.job_id!r}'s book "
            f"is served ({error}); check that this machine reaches etcd"
        ) from None
    if not found:
        raise _errors.RendezvousError(
            f"no agent holds job {settings.job_id!r}'s book in etcd at {client.describe()} "
            f"(no key {key}): the job has not started, or it ended; give the job's --job-id"
        )
    return found[0].value.decode()
