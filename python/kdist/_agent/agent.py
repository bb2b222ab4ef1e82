"""This machine's agent of a job across machines (`kdist launch --nodes`): its settings
resolved once in the core, the job's rendezvous joined (kdist._agent.job_rendezvous), each
roster run and reported (kdist._agent.follow), and the job's end.

Exit statuses: 2 when a setting is refused (before anything starts); 75 when too few
machines joined before --join-timeout; 69 when this machine lost the rendezvous (its
processes are stopped at once: it never trains alone; with `--rendezvous etcd://...`, when
it cannot reach a majority of etcd for the unreachable window, or etcd does not answer at
start); 143 when this machine was drained
(SIGTERM to its agent: the job stops at one agreed step, with a save, and goes on without
it); 1 when the rendezvous refused it; otherwise the job's.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kdist import _errors
from kdist._agent.agent_log import AgentLog
from kdist._agent.follow import Follower
from kdist._agent.job_rendezvous import EmbeddedRendezvous, JobRendezvous
from kdist._local_job import compile_cache
from kdist._local_job.output import Output
from kdist._local_job.share import MachineOptions, Share, expect_spares
from kdist._local_job.warm import SparePool

if TYPE_CHECKING:
    from kdist._agent.metrics import MetricsServer
    from kdist._core import NodeRequest, NodeSettings

EXIT_USAGE = 2
EXIT_REFUSED = 1
_LEAVE_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass(frozen=True)
class LocalOptions:
    """What this machine's agent runs with, besides the job's settings."""

    machine: MachineOptions  # this machine's processes: devices, GPUs, grace, logs
    # This machine's environment fingerprint, (name, value, must_match) entries
    # (kdist._start.environment_fingerprint, collected by the command line).
    environment: tuple[tuple[str, str, bool], ...] = ()
    # Warm spares (kdist._local_job.warm): one per local process, made while this agent
    # waits for the others to join and again as soon as one is used; False: cold starts.
    warm: bool = True
    preload: tuple[str, ...] = ()  # modules the spares import besides the default ones
    metrics_port: int | None = None  # --metrics-port: /metrics (kdist._agent.metrics)


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
        metrics = None
        rendezvous_box: list[JobRendezvous] = []
        if local.metrics_port is not None:
            try:  # before anything starts: a port in use is named, and nothing runs
                metrics = _serve_metrics(local.metrics_port, settings, rendezvous_box)
            except (_errors.PortInUseError, _errors.ConfigError) as error:
                log.note(f"refused before joining: {error}")
                return EXIT_USAGE
            log.note(f"serving /metrics on {metrics.where}")
        cache = compile_cache.plan(os.environ, local.machine.log_dir)
        if cache.warning:
            log.note(cache.warning)
        # The processes see the job's thrash guard (cluster_spec(), kdist doctor).
        guard = {
            "KDIST_MAX_REFORMS": str(settings.max_reforms),
            "KDIST_REFORM_WINDOW": f"{settings.reform_window:g}",
        }
        variables = {**cache.variables, **guard}
        local = replace(local, machine=replace(local.machine, job_variables=variables))
        spares = _spare_pool(command, settings, local, log)
        rendezvous = _rendezvous_of(settings, log, local.machine.log_dir)
        rendezvous_box.append(rendezvous)
        status = EXIT_REFUSED
        try:
            status = _join_and_follow(command, rendezvous, settings, local, log, spares=spares)
        finally:
            rendezvous.close(status)
            if spares is not None:
                spares.close()
            cache.close()
            if metrics is not None:
                metrics.close()
        return status
    finally:
        log.close()


def _serve_metrics(
    port: int, settings: NodeSettings, rendezvous_box: list[JobRendezvous]
) -> MetricsServer:
    """/metrics from the job's state: the book's own when this machine serves it, else asked
    of the rendezvous as `kdist status` does (at most once a second, bounded by 2 s)."""
    import json

    from kdist import _core
    from kdist._agent.metrics import serve_metrics
    from kdist._local_job.environment import host_port

    def status() -> dict[str, object] | None:
        if not rendezvous_box:
            return None
        server = getattr(rendezvous_box[0], "server", None)
        if server is not None:
            text = str(server.status_json(2.0))
        else:
            if settings.store == "etcd":  # the holder moves: found again each time
                from kdist._agent.etcd_status import holder_address

                address = holder_address(settings)
            else:
                address = host_port(settings.ip, settings.port)
            asker = _core.RendezvousAgent(
                settings, log=lambda _line: None, address=address, connect_timeout=2.0
            )
            try:
                text = asker.ask_status(socket.gethostname(), os.getpid())
            finally:
                asker.close()
        value = json.loads(text)
        return value if isinstance(value, dict) else None

    return serve_metrics(port, status, settings.node_name, _listening_address(settings))


def _listening_address(settings: NodeSettings) -> str:
    """Where this agent listens: the address its traffic to the rendezvous (to etcd's first
    reachable endpoint) leaves from, the one the other machines reach it at. Nothing is
    sent; a rendezvous without a route raises kdist.ConfigError naming it."""
    from kdist import _core, _errors
    from kdist._local_job.environment import host_port

    if settings.store == "etcd":
        from kdist._agent.etcd_client import address_toward

        return address_toward(settings.etcd_endpoints)
    rendezvous = host_port(settings.ip, settings.port)
    try:
        return str(_core.local_address_toward(rendezvous, 2.0))
    except _errors.KdistError as error:
        raise _errors.ConfigError(
            f"--metrics-port: no address of this machine reaches the rendezvous {rendezvous} "
            f"to serve /metrics on: {error}"
        ) from None


def _rendezvous_of(settings: NodeSettings, log: AgentLog, log_dir: Path | None) -> JobRendezvous:
    """The job's rendezvous as the settings keep it: in etcd (`etcd://`), else embedded."""
    if settings.store == "etcd":
        from kdist._agent.etcd_rendezvous import EtcdRendezvous

        return EtcdRendezvous(settings, log, log_dir)
    return EmbeddedRendezvous(settings, log, log_dir)


def _join_and_follow(
    command: Sequence[str],
    rendezvous: JobRendezvous,
    settings: NodeSettings,
    local: LocalOptions,
    log: AgentLog,
    *,
    spares: SparePool | None,
) -> int:
    from kdist import _core

    try:
        rendezvous.join(
            socket.gethostname(), os.getpid(), _core.free_port(), list(local.environment)
        )
    except _errors.RendezvousTimeoutError as error:
        log.note(str(error) + _loopback_hint(settings))
        return int(_core.EXIT_NOT_ENOUGH_NODES)
    except _errors.CoordinatorUnreachableError as error:
        log.note(str(error))
        return int(_core.EXIT_LOST_RENDEZVOUS)
    except _errors.RendezvousError as error:
        log.note(str(error))
        return EXIT_REFUSED
    follower = Follower(command, rendezvous, settings, local.machine, log, spares)
    follower.loopback_hint = _loopback_hint(settings)
    # SIGTERM and Ctrl-C alike: this machine leaves (before the job formed: at once).
    previous = {s: signal.signal(s, follower.drain.handler) for s in _LEAVE_SIGNALS}
    try:
        return follower.follow()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _spare_pool(
    command: Sequence[str], settings: NodeSettings, local: LocalOptions, log: AgentLog
) -> SparePool | None:
    """This machine's warm spares, started now, while the others join (so the first start
    gains too), or None."""
    if not local.warm or not sys.platform.startswith("linux"):
        return None
    spares = SparePool(local.preload, note=log.note)
    n = settings.processes_per_node
    # An attempt like the first: a spare keeps none of the attempt's own values.
    like = Share(attempt=0, first_id=0, count=n, num_processes=n, coordinator_port=1)
    expect_spares(spares, command, like, local.machine)
    return spares


def _loopback_hint(settings: NodeSettings) -> str:
    """What a wait for machines that never come says of a loopback rendezvous: the likely
    cause ("" for any other address)."""
    if not settings.loopback:
        return ""
    return (
        f"; --rendezvous {settings.rendezvous} is a loopback address: only agents on this "
        "machine can join it (an agent on another machine given the same address serves a "
        "rendezvous of its own there). To run on several machines, give every machine one "
        "address of the rendezvous's machine that they all reach"
    )


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
    where = f"; {settings.ip}" if settings.ip else ""
    log.note(
        f"rendezvous {settings.rendezvous} ({sources['rendezvous']}{where}), node "
        f"{settings.node_name!r} ({sources['node_name']}), job id {settings.job_id!r} "
        f"({sources['job_id']}), unreachable after {settings.unreachable_timeout:g} s "
        f"({sources['unreachable_timeout']}), scale up after "
        + ("never" if scale is None else f"{scale:g} s")
        + f" ({sources['scale_up_after']}), thrash guard: more than {settings.max_reforms} "
        f"re-forms without progress ({sources['max_reforms']}) within "
        f"{settings.reform_window:g} s ({sources['reform_window']})"
    )
    if settings.loopback:
        log.note(
            f"--rendezvous {settings.rendezvous} is a loopback address: only agents on this "
            "machine can join this job; for several machines give an address they all reach"
        )
