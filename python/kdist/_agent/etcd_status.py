"""Where an etcd job's book is served now (`kdist status`, and an agent's /metrics): the
address its holder put under the job's election key (kdist._agent.etcd_keys.JobKeys.holder),
read once, as an agent reads it; once the job ended, its final state from the mark its last
holder left (JobKeys.ended, kept ENDED_MARKER_SECONDS). Read only: nothing here campaigns,
leases or writes."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from kdist import _errors
from kdist._agent.etcd_client import EtcdAccess, EtcdClient, EtcdRefused, EtcdUnavailable
from kdist._agent.etcd_keys import JobKeys

if TYPE_CHECKING:
    from kdist._core import NodeSettings


def ended_status(settings: NodeSettings, call_timeout: float = 2.0) -> str | None:
    """The final state (JSON schema 1) an ended etcd job's last holder left in etcd; None when
    there is none (the job has not ended, or ended more than ENDED_MARKER_SECONDS ago).

    Args:
        settings: The job's settings, their rendezvous `etcd://...` (store "etcd").
        call_timeout: Bound of each etcd call, in seconds.

    Returns:
        The status as JSON text, or None.

    Example:
        >>> json.loads(ended_status(settings))["state"]  # doctest: +SKIP
        'finished'
    """
    client = EtcdClient(
        settings.etcd_endpoints, EtcdAccess.from_environment(os.environ), call_timeout
    )
    try:
        found, _revision = client.range(JobKeys(settings.etcd_prefix, settings.job_id).ended)
    except (EtcdUnavailable, EtcdRefused):
        return None
    if not found:
        return None
    try:
        status = json.loads(found[0].value)["status"]
    except (ValueError, KeyError, TypeError):
        return None
    return json.dumps(status) if isinstance(status, dict) else None


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
