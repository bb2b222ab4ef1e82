"""The job's rendezvous, as a machine's agent talks to it: one interface (`JobRendezvous`)
for every store of the nodes' rendezvous, so that the agent's decisions (kdist._agent.follow)
never depend on where the book is kept.

`EmbeddedRendezvous` is the store `--rendezvous HOST:PORT` and `auto` use: the book runs in
the agent whose machine owns the address (checked by binding it), or in `kdist rendezvous
serve`; every agent reaches it over the nodes' wire (kdist._core.RendezvousAgent).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kdist import _errors
from kdist._agent.agent_log import AgentLog
from kdist._local_job.attempts_file import ATTEMPTS_FILE, final_goodput, write_attempts
from kdist._local_job.environment import host_port
from kdist._progress import Steps, step_words

if TYPE_CHECKING:
    from kdist._core import (
        JobFailure,
        NodeReply,
        NodeSettings,
        RendezvousAgent,
        RendezvousServer,
    )


class JobRendezvous(Protocol):
    """What a machine's agent asks of the job's rendezvous, whatever keeps it."""

    def join(
        self, host: str, pid: int, coordinator_port: int, environment: list[tuple[str, str, bool]]
    ) -> None:
        """Joins the job (RendezvousTimeoutError, CoordinatorUnreachableError or
        RendezvousError when it cannot)."""

    def next(self, timeout: float) -> NodeReply:
        """The rendezvous's next word (RendezvousTimeoutError when none came in `timeout`,
        CoordinatorUnreachableError when the rendezvous is lost)."""

    def report(
        self,
        attempt: int,
        exit_status: int,
        failure: JobFailure | None,
        coordinator_port: int,
        *,
        drain: bool = False,
        progressed: bool = False,
        steps: Steps | None = None,
        steps_only: bool = False,
    ) -> None:
        """How `attempt` ended here (or, with drain, that this machine is leaving);
        `progressed`: its processes saved a backup or stepped past their first step;
        `steps`: the steps they reported (kdist._progress); with steps_only, a step notice
        while the attempt runs instead."""

    def close(self, status: int) -> None:
        """This agent is done with exit status `status` (a drained machine that serves the
        rendezvous keeps serving it until the job ends)."""


class EmbeddedRendezvous:
    """The book in one agent (the one whose machine owns the address) or in `kdist
    rendezvous serve`; every agent reaches it over the nodes' wire."""

    def __init__(self, settings: NodeSettings, log: AgentLog, log_dir: Path | None) -> None:
        from kdist import _core

        self._log = log
        self._log_dir = log_dir
        self._settings = settings
        self._server = _serve_if_here(settings, log)
        self._agent: RendezvousAgent = _core.RendezvousAgent(settings, log=log.note)

    def join(
        self, host: str, pid: int, coordinator_port: int, environment: list[tuple[str, str, bool]]
    ) -> None:
        self._agent.join(host, pid, coordinator_port, environment)

    def next(self, timeout: float) -> NodeReply:
        return self._agent.next(timeout)

    def report(
        self,
        attempt: int,
        exit_status: int,
        failure: JobFailure | None,
        coordinator_port: int,
        *,
        drain: bool = False,
        progressed: bool = False,
        steps: Steps | None = None,
        steps_only: bool = False,
    ) -> None:
        self._agent.report(
            attempt,
            exit_status,
            failure,
            coordinator_port,
            drain=drain,
            progressed=progressed,
            steps_only=steps_only,
            **step_words(steps or Steps()),
        )

    @property
    def server(self) -> RendezvousServer | None:
        """The rendezvous this agent serves, when its machine owns the address."""
        return self._server

    def close(self, status: int) -> None:
        self._agent.close()
        server = self._server
        if server is None:
            return
        if not server.wait(0.0) and not server.formed:
            # Nothing runs yet: the others are told at once that this machine's rendezvous is
            # gone, and the port is free for the next start (never an empty rendezvous kept).
            server.abandon(
                f"node {self._settings.node_name}'s agent, on the rendezvous's machine, left "
                f"with status {status} before the job formed"
            )
            server.wait(10.0)
        self._serve_on_if_running(server, status)
        server.wait(10.0)
        server.stop()
        if self._log_dir is not None:
            path = self._log_dir / ATTEMPTS_FILE
            write_attempts(
                path,
                server.attempts,
                int(server.exit_status),
                final_goodput(server.status_json(0.0)),
            )
            self._log.note(f"the job's attempts: {path}")

    def _serve_on_if_running(self, server: RendezvousServer, status: int) -> None:
        """A drained machine leaves the job's processes, not its rendezvous: it serves it
        until the job ends."""
        from kdist import _core

        if status == int(_core.EXIT_DRAINED) and not server.wait(0.0):
            self._log.note(
                "this machine was drained; it serves the nodes' rendezvous until the job ends"
            )
            while not server.wait(1.0):
                pass


def _serve_if_here(settings: NodeSettings, log: AgentLog) -> RendezvousServer | None:
    """The rendezvous, when this machine owns its address (checked by binding it)."""
    from kdist import _core

    # Its lines are this agent's (one prefix, agent.log); the waiting line is the one the
    # agents are sent, which this agent prints itself.
    server = _core.RendezvousServer(
        settings, log=lambda line: log.note(f"rendezvous: {line}"), log_progress=False
    )
    where = host_port(settings.ip, settings.port)
    try:
        server.listen(settings)
    except _errors.PortInUseError as error:
        log.note(f"the rendezvous port {where} is taken here ({error}): joining whoever serves it")
        return None
    except _errors.KdistError as error:
        log.note(f"the rendezvous {where} is not this machine's ({error}): joining it")
        return None
    server.start()
    log.note(f"this machine owns {settings.ip}: serving the nodes' rendezvous on {where}")
    return server
