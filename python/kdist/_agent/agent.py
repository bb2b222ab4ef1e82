"""This machine's agent of a job across machines (`kdist launch --nodes`): its settings
resolved once in the core, the job's rendezvous joined (kdist._agent.job_rendezvous), each
roster run and reported (kdist._agent.follow), and the job's end.

Exit statuses: 2 when a setting is refused (before anything starts); 75 when too few
machines joined before --join-timeout; 69 when this machine lost the rendezvous (its
processes are stopped at once: it never trains alone); 143 when this machine was drained
(SIGTERM to its agent: the job stops at one agreed step, with a save, and goes on without
it); 1 when the rendezvous refused it; otherwise the job's.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kdist import _errors
from kdist._agent.agent_log import AgentLog
from kdist._agent.follow import Follower
from kdist._agent.job_rendezvous import EmbeddedRendezvous, JobRendezvous
from kdist._local_job.output import Output
from kdist._local_job.share import MachineOptions

if TYPE_CHECKING:
    from kdist._core import NodeRequest, NodeSettings

EXIT_USAGE = 2
EXIT_REFUSED = 1


@dataclass(frozen=True)
class LocalOptions:
    """What this machine's agent runs with, besides the job's settings."""

    machine: MachineOptions  # this machine's processes: devices, GPUs, grace, logs
    # This machine's environment fingerprint, (name, value, must_match) entries
    # (kdist._start.environment_fingerprint, collected by the command line).
    environment: tuple[tuple[str, str, bool], ...] = ()


def run_node(command: Sequence[str], request: NodeRequest, local: LocalOptions) -> int:
    """Runs this machine's part of the job; returns the status the agent exits with."""
    from kdist import _core

    log = AgentLog(Output(sys.stdout.buffer, sys.stderr.buffer), local.machine.log_dir)
    try:
        try:
            settings = _core.resolve_node_settings(request, dict(os.environ))
        except _errors.ConfigError as error:
            log.note(f"refused before joining: {error}")
            return EXIT_USAGE
        _say_settings(settings, log)
        rendezvous = EmbeddedRendezvous(settings, log, local.machine.log_dir)
        status = EXIT_REFUSED
        try:
            status = _join_and_follow(command, rendezvous, settings, local, log)
        finally:
            rendezvous.close(status)
        return status
    finally:
        log.close()


def _join_and_follow(
    command: Sequence[str],
    rendezvous: JobRendezvous,
    settings: NodeSettings,
    local: LocalOptions,
    log: AgentLog,
) -> int:
    from kdist import _core

    try:
        rendezvous.join(
            socket.gethostname(), os.getpid(), _core.free_port(), list(local.environment)
        )
    except _errors.RendezvousTimeoutError as error:
        log.note(str(error))
        return int(_core.EXIT_NOT_ENOUGH_NODES)
    except _errors.CoordinatorUnreachableError as error:
        log.note(str(error))
        return int(_core.EXIT_LOST_RENDEZVOUS)
    except _errors.RendezvousError as error:
        log.note(str(error))
        return EXIT_REFUSED
    follower = Follower(command, rendezvous, settings, local.machine, log)
    previous = signal.signal(signal.SIGTERM, follower.drain.handler)
    try:
        return follower.follow()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _say_settings(settings: NodeSettings, log: AgentLog) -> None:
    """One line: where the job's rendezvous is, who this machine is, and the windows, each
    with where it came from."""
    sources = settings.sources
    scale = settings.scale_up_after
    if sources["rendezvous"].startswith("--rendezvous auto"):
        log.note(
            f"--rendezvous auto: {settings.rendezvous} (the scheduler's first host), "
            f"job id {settings.job_id!r}"
        )
    log.note(
        f"rendezvous {settings.rendezvous} ({sources['rendezvous']}; {settings.ip}), node "
        f"{settings.node_name!r} ({sources['node_name']}), job id {settings.job_id!r} "
        f"({sources['job_id']}), unreachable after {settings.unreachable_timeout:g} s "
        f"({sources['unreachable_timeout']}), scale up after "
        + ("never" if scale is None else f"{scale:g} s")
        + f" ({sources['scale_up_after']})"
    )
