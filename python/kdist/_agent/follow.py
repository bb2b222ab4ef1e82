"""A machine's agent, from admission to the job's end: each roster the rendezvous hands out
is run here (this machine's share of the attempt, kdist._local_job.share), and how it ended
is reported back; a stop from the rendezvous stops this machine's processes at one agreed
step; a SIGTERM to the agent drains this machine (it tells the rendezvous, which stops the
attempt and goes on without it). The decisions are the rendezvous's book's; this module
only carries them out.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kdist import _errors, _progress
from kdist._agent.agent_log import AgentLog
from kdist._agent.job_rendezvous import JobRendezvous
from kdist._local_job.attempt import Hooks
from kdist._local_job.environment import host_port
from kdist._local_job.job import Job
from kdist._local_job.share import (
    MachineOptions,
    NodePlace,
    Share,
    ShareEnd,
    run_share,
    warm_words,
)
from kdist._local_job.warm import SparePool

if TYPE_CHECKING:
    from kdist._core import NodeReply, NodeSettings

WATCH_SECONDS = 0.5  # how often a wait on the rendezvous looks up (a SIGTERM is seen then)
STEPS_EVERY = 2.0  # how often the newest step goes to the rendezvous while an attempt runs


class Drain:
    """SIGTERM to this agent (a spot or maintenance notice): this machine leaves the job.
    The handler only records it, and forwards it to the running attempt's processes (their
    stop at one agreed step); the agent's threads tell the rendezvous."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.received: list[int] | None = None  # the running attempt's signals
        self.told = False  # the rendezvous has this machine's drain notice

    def handler(self, signum: int, _frame: object) -> None:
        self.requested.set()
        if self.received is not None:
            self.received.append(signum)


@dataclass
class Follower:
    """This machine's agent once admitted: what it runs, where, and how it talks."""

    command: Sequence[str]
    rendezvous: JobRendezvous
    settings: NodeSettings
    machine: MachineOptions
    log: AgentLog
    spares: SparePool | None = None  # warm spares, one per local process; None: cold
    drain: Drain = field(default_factory=Drain)
    loopback_hint: str = ""  # what a 75 adds when the rendezvous is loopback
    last_attempt: int = 0

    def follow(self) -> int:
        """Runs every roster here until the job ends; returns this agent's exit status."""
        from kdist import _core

        lost = int(_core.EXIT_LOST_RENDEZVOUS)
        bound = self.settings.join_timeout + self.settings.last_call + 60.0
        deadline = time.monotonic() + bound
        while True:
            if not self._tell_drain(self.last_attempt):
                return int(_core.EXIT_DRAINED)
            if self.spares is not None:
                self.spares.maintain()  # between attempts too: a spare that died is replaced
            try:
                reply = self.rendezvous.next(WATCH_SECONDS)
            except (_errors.CoordinatorUnreachableError, _errors.RendezvousTimeoutError) as error:
                if (
                    isinstance(error, _errors.RendezvousTimeoutError)
                    and time.monotonic() < deadline
                ):
                    continue
                self.log.note(f"{error}; leaving with status {lost}")
                return lost
            deadline = time.monotonic() + bound
            status = self._act_on(reply)
            if status is not None:
                return status

    def _act_on(self, reply: NodeReply) -> int | None:
        """Carries out one word of the rendezvous; the agent's exit status when it ends."""
        from kdist import _core

        if reply.first_failure:
            self.log.note(f"the job's first failure: {reply.first_failure}")
        if reply.ended:  # a re-form: a machine lost, drained or added; no failure
            self.log.note(reply.ended)
        if reply.kind == "waiting":
            self.log.note(reply.message)
            return None
        if reply.kind == "end":
            hint = self.loopback_hint if reply.exit_status == _core.EXIT_NOT_ENOUGH_NODES else ""
            self.log.note(f"{reply.message}{hint}; exit status {reply.exit_status}")
            return int(reply.exit_status)
        if reply.kind != "roster":
            return None  # a stop of an attempt that already ended here
        self.last_attempt = reply.attempt
        if self.drain.requested.is_set():  # drained before it started: nothing runs here
            self.log.note(f"attempt {reply.attempt}: not started (this machine is drained)")
            return self._report(reply.attempt, int(_core.EXIT_DRAINED), None, drained=True)
        if reply.message:
            self.log.note(f"environment differences let pass:\n{reply.message}")
        ended, lost = self._run(reply)
        outcome = ended.outcome
        if lost:
            self.log.note(
                "lost the nodes' rendezvous: this machine's processes were stopped; leaving "
                f"with status {int(_core.EXIT_LOST_RENDEZVOUS)}"
            )
            return int(_core.EXIT_LOST_RENDEZVOUS)
        return self._report(
            reply.attempt, outcome.status, outcome.failure, ended.progressed, steps=ended.steps
        )

    def _report(
        self,
        attempt: int,
        status: int,
        failure: object,
        progressed: bool = False,
        *,
        drained: bool = False,
        steps: _progress.Steps | None = None,
    ) -> int | None:
        """Reports how `attempt` ended here (`progressed`: its processes saved a backup or
        stepped on); an exit status when the rendezvous is gone."""
        from kdist import _core

        # A drain not yet told (the watch looks up every WATCH_SECONDS; the processes can stop
        # sooner) goes before the end: else the book, with every end in, would count this
        # machine's stop as the job's failure instead of a re-form without it.
        if not drained and not self._tell_drain(attempt):
            return int(_core.EXIT_DRAINED)

        try:
            self.rendezvous.report(
                attempt,
                status,
                failure,  # type: ignore[arg-type]
                _core.free_port(),
                progressed=progressed,
                steps=steps,
            )
        except _errors.KdistError as error:
            leave = int(_core.EXIT_DRAINED if drained else _core.EXIT_LOST_RENDEZVOUS)
            self.log.note(f"{error}; leaving with status {leave}")
            return leave
        return None

    def _tell_drain(self, attempt: int) -> bool:
        """Tells the rendezvous of a drain once; False when it cannot be told (then the
        agent leaves, drained)."""
        from kdist import _core

        if not self.drain.requested.is_set() or self.drain.told:
            return True
        self.drain.told = True
        self.log.note("received SIGTERM: this machine is drained; telling the nodes' rendezvous")
        try:
            self.rendezvous.report(attempt, int(_core.EXIT_DRAINED), None, 0, drain=True)
        except _errors.KdistError as error:
            self.log.note(f"{error}; leaving with status {int(_core.EXIT_DRAINED)}")
            return False
        return True

    def _run(self, roster: NodeReply) -> tuple[ShareEnd, bool]:
        """This machine's processes of one attempt: (how they ended, the rendezvous lost)."""
        share = self._share(roster)
        watch = _Watch(self, roster.attempt)

        def started(job: Job) -> None:
            watch.progress_files = list(job.progress_files)
            watch.start()  # after the last fork (job.start's fork-to-exec hook)
            pids = ", ".join(str(p.pid) for p in job.processes)
            ids = share.process_ids
            self.log.note(
                f"attempt {share.attempt}: node {roster.node_rank} of {roster.node_count} "
                f"({self.settings.node_name}), processes {ids.start}-{ids.stop - 1} (pids "
                f"{pids}), coordinator {host_port(share.coordinator_host, share.coordinator_port)}"
                + warm_words(job, self.spares)
            )

        self.drain.received = watch.received
        if self.drain.requested.is_set():
            watch.received.append(signal.SIGTERM)
        try:
            ended = run_share(
                self.command,
                share,
                self.machine,
                self.log.output,
                watch.received,
                hooks=Hooks(started=started),
                spares=self.spares,
            )
        finally:
            self.drain.received = None
            watch.stop()
        return ended, watch.lost.is_set()

    def _share(self, roster: NodeReply) -> Share:
        n = roster.processes_per_node
        return Share(
            attempt=roster.attempt,
            first_id=roster.node_rank * n,
            count=n,
            num_processes=roster.node_count * n,
            coordinator_port=roster.coordinator_port,
            coordinator_host=roster.coordinator_host,
            previous_processes=roster.previous_processes,
            node=NodePlace(
                roster.node_rank, roster.node_count, self.settings.job_id, self.settings.node_name
            ),
            roll_call_token=self.settings.attempt_token(roster.attempt),
            run_id=roster.run_id,
        )


class _Watch:
    """The one thread that talks to the rendezvous while an attempt runs here: it tells it
    of a drain, and follows its word (a stop; a closed connection is its loss)."""

    def __init__(self, follower: Follower, attempt: int) -> None:
        self.follower = follower
        self.attempt = attempt
        self.received: list[int] = []  # the attempt's signals (the attempt forwards them)
        self.lost = threading.Event()
        self.progress_files: list[Path] = []  # its processes' (kdist._progress)
        self._steps_told = _progress.Steps()
        self._steps_at = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, name="kdist-rendezvous-watch", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        follower = self.follower
        while not self._done.is_set():
            if not follower._tell_drain(self.attempt):
                self._lose()
                return
            self._tell_steps()
            try:
                reply = follower.rendezvous.next(WATCH_SECONDS)
            except _errors.RendezvousTimeoutError:
                continue
            except _errors.KdistError as error:
                follower.log.note(f"{error}: stopping this machine's processes (SIGTERM)")
                self._lose()
                return
            if reply.kind == "stop" and reply.attempt == self.attempt:
                follower.log.note(f"{reply.message}: stopping this machine's processes (SIGTERM)")
                if not self.received:  # a second one would be a second Ctrl-C: SIGKILL at once
                    self.received.append(signal.SIGTERM)

    def _tell_steps(self) -> None:
        """The newest step here, every STEPS_EVERY seconds when it moved (`kdist status`'s
        step and goodput while the attempt runs); a notice lost is only a late number."""
        now = time.monotonic()
        if now - self._steps_at < STEPS_EVERY or not self.progress_files:
            return
        self._steps_at = now
        steps = _progress.steps_of(self.progress_files)
        if steps == self._steps_told or steps.step < 0:
            return
        self._steps_told = steps
        try:
            self.follower.rendezvous.report(self.attempt, 0, None, 0, steps=steps, steps_only=True)
        except _errors.KdistError as error:
            self.follower.log.note(f"the attempt's step was not told to the rendezvous: {error}")

    def _lose(self) -> None:
        self.lost.set()
        self.received.append(signal.SIGTERM)
