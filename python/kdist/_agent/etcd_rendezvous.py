"""The job's rendezvous kept in etcd (`--rendezvous etcd://...`): no machine is a single
point of failure.

The book stays the one place that decides (kdist._core.RendezvousServer, the same book and
wire as `--rendezvous HOST:PORT`); etcd decides only who runs it and keeps its state:

- every agent holds a lease whose TTL is the silence after which the embedded rendezvous
  would name its machine lost (NodeSettings.etcd_lease_seconds, from
  KDIST_UNREACHABLE_TIMEOUT: 2 s at a 3 s window, 18 s at 20 s), renewed by a thread that
  never dies, and keeps its node's key under it
  (`PREFIX/JOB_ID/live/nodes/NAME`), so a lost machine is seen through etcd as well as
  through its connection;
- the agents campaign for one election key (`PREFIX/JOB_ID/live/holder`, created under
  the winner's lease, its value the address the winner serves the book on); the winner
  loads the book's state (`PREFIX/JOB_ID/book`, sealed under the job's token) and serves it;
- the holder writes each change of state in one transaction conditioned on its lease
  still holding the election key, BEFORE its messages are delivered: a deposed or cut-off
  holder's writes fail, and it delivers nothing more (the fence);
- when the holder's machine is lost, its lease expires, its keys go, another agent wins,
  restores the book and goes on; the others find it through etcd and come back to it as
  the nodes they were (their rank, their attempt; `rejoin`), sending again what the old
  holder may not have kept (a report, a drain notice).

An agent that cannot reach a majority of etcd for the window stops its processes and
leaves with 69, naming the endpoints: it never trains alone. The job's token still
authenticates every node at the book; writing to etcd does not join a job.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from kdist import _errors
from kdist._agent.agent_log import AgentLog
from kdist._agent.etcd_client import (
    EtcdAccess,
    EtcdClient,
    EtcdRefused,
    EtcdUnavailable,
    KeyValue,
    address_toward,
    created_never,
    delete_request,
    held_by,
    put_request,
    range_request,
    ranged,
)
from kdist._agent.etcd_keys import ENDED_MARKER_SECONDS, JobEnded, JobKeys
from kdist._agent.etcd_lease import RETRY_SECONDS, EtcdLease
from kdist._local_job.attempts_file import ATTEMPTS_FILE, final_goodput, write_attempts
from kdist._local_job.environment import host_port
from kdist._progress import Steps, step_words

_T = TypeVar("_T")

if TYPE_CHECKING:
    from kdist._core import (
        JobFailure,
        NodeReply,
        NodeSettings,
        RendezvousAgent,
        RendezvousServer,
    )


class EtcdRendezvous:
    """The job's rendezvous kept in etcd: the book served by whichever agent holds the
    job's election key, reached through etcd by every agent (kdist._agent.job_rendezvous's
    JobRendezvous)."""

    def __init__(self, settings: NodeSettings, log: AgentLog, log_dir: Path | None) -> None:
        window = settings.unreachable_timeout
        self._settings = settings
        self._log = log
        self._log_dir = log_dir
        self._window = window
        self._client = EtcdClient(
            settings.etcd_endpoints,
            EtcdAccess.from_environment(os.environ),
            call_timeout=max(0.3, min(2.0, window / 6)),
        )
        self._keys = JobKeys(settings.etcd_prefix, settings.job_id)
        self._lease = EtcdLease(self._client, window, settings.etcd_lease_seconds, self._lose, log)
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._holder: str | None = None  # the address the book is served on
        self._holder_changed = False
        self._server: RendezvousServer | None = None  # when this agent holds the book
        self._agent: RendezvousAgent | None = None
        self._hello: tuple[str, int, int, list[tuple[str, str, bool]]] | None = None
        self._admitted = False
        self._last_roster = -1  # rosters of this attempt or before are not run again
        self._last_report: tuple[int, int, JobFailure | None, int] | None = None
        self._last_progressed = False  # the last report's `progressed`
        self._drain: tuple[int, int, JobFailure | None, int] | None = None
        self._gone: str | None = None  # why this agent lost the job's rendezvous
        self._refused: str | None = None  # why this agent cannot be the job's (its token)
        # The job ended and its holder forgot it (its book gone from etcd): this agent never
        # campaigns again; `_ended` is how it ended, when its mark was read.
        self._book_gone = False
        self._ended: JobEnded | None = None
        self._campaigning = False  # one thread of this agent campaigns at a time
        self._agent_address: str | None = None  # the holder this agent's connection reached
        self._lost_holders: set[int] = set()  # the holders' leases this agent said it lost
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="kdist-etcd-watch", daemon=True)

    # -- JobRendezvous -------------------------------------------------------------
    def join(
        self, host: str, pid: int, coordinator_port: int, environment: list[tuple[str, str, bool]]
    ) -> None:
        self._hello = (host, pid, coordinator_port, environment)
        self._lease.grant()
        self._log.note(
            f"etcd at {self._client.describe()}: this agent's lease {self._lease.id:x} "
            f"({self._lease.describe()}), the job's keys under {self._keys.job}"
        )
        revision = self._claim_node_key(host, pid)
        self._watcher_revision = revision + 1
        self._watcher.start()
        deadline = time.monotonic() + self._settings.join_timeout
        while True:
            self._raise_if_gone()
            address = self._find_holder()
            if self._refused is not None:
                raise _errors.RendezvousError(self._refused)
            if address is not None:
                agent = self._core().RendezvousAgent(
                    self._settings,
                    log=self._log.note,
                    address=address,
                    connect_timeout=max(0.5, min(self._window, deadline - time.monotonic())),
                )
                try:
                    agent.join(host, pid, coordinator_port, environment)
                except (_errors.CoordinatorUnreachableError, _errors.RendezvousTimeoutError):
                    agent.close()  # the holder went meanwhile: the next one
                else:
                    with self._lock:
                        self._agent = agent
                        self._agent_address = address
                        self._admitted = True
                        self._holder_changed = self._holder not in (None, address)
                    return
            if time.monotonic() >= deadline:
                raise _errors.RendezvousTimeoutError(
                    f"no agent of job {self._settings.job_id!r} served its book within "
                    f"{self._settings.join_timeout:g} s (--join-timeout) at "
                    f"{self._settings.rendezvous}"
                )
            self._wait_for_holder(0.2)

    def next(self, timeout: float) -> NodeReply:
        end = time.monotonic() + timeout
        while True:
            self._raise_if_gone()
            agent = self._connected()
            left = end - time.monotonic()
            if agent is None and self._book_gone:
                return self._end_from_etcd()
            if agent is None:
                if left <= 0:
                    raise _errors.RendezvousTimeoutError(
                        "no word from the job's rendezvous: it moves to another machine"
                    )
                self._wait_for_holder(min(left, 0.1))
                continue
            try:
                reply = agent.next(max(0.05, min(left, 0.25)))
            except _errors.RendezvousTimeoutError:
                if time.monotonic() >= end:
                    raise
                continue
            except _errors.CoordinatorUnreachableError:
                self._drop_agent(agent)  # found again through etcd
                self._holder_lost_here()
                continue
            if reply.kind == "roster":
                if reply.attempt <= self._last_roster:
                    continue  # sent again by a new holder: it runs here already, or ran
                self._last_roster = reply.attempt
            return reply

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
        self._raise_if_gone()
        words = (attempt, exit_status, failure, coordinator_port)
        if steps_only:  # a step notice: to the holder there is, never kept or sent again
            with self._lock:
                holder = self._agent
            if holder is not None and steps is not None:
                with contextlib.suppress(_errors.KdistError):
                    holder.report(*words, steps_only=True, **step_words(steps))
            return
        with self._lock:
            if drain:
                self._drain = words
            else:
                self._last_report = words
                self._last_progressed = progressed
            agent = self._agent
        if agent is None:
            return  # sent once this agent is back at the book
        try:
            agent.report(*words, drain=drain, progressed=progressed, **step_words(steps or Steps()))
        except _errors.KdistError:
            self._drop_agent(agent)  # sent again to the next holder

    def close(self, status: int) -> None:
        from kdist import _core

        self._stop.set()
        with self._lock:
            agent, self._agent = self._agent, None
            server, self._server = self._server, None  # (it holds self._persist: no cycle left)
        if agent is not None:
            agent.close()
        if server is not None:
            ended = (
                self._gone is None
                and status != int(_core.EXIT_DRAINED)
                and server.wait(10.0)
                and server.job_ended
            )
            server.stop()
            if ended:
                final = server.status_json(0.0)  # the book's own, made when the job ended
                self._forget_job(int(server.exit_status), final)
                if self._log_dir is not None:
                    write_attempts(
                        self._log_dir / ATTEMPTS_FILE,
                        server.attempts,
                        int(server.exit_status),
                        final_goodput(final),
                    )
                    self._log.note(f"the job's attempts: {self._log_dir / ATTEMPTS_FILE}")
            elif not ended:
                self._log.note("this machine leaves: another agent takes the job's book over")
        if self._watcher.is_alive():
            self._watcher.join(timeout=self._client.call_timeout * 3 + 2)
        self._lease.close()

    # -- etcd's side ---------------------------------------------------------------
    @staticmethod
    def _core() -> Any:
        from kdist import _core

        return _core

    def _raise_if_gone(self) -> None:
        if self._gone is not None:
            raise _errors.CoordinatorUnreachableError(self._gone)

    def _end_from_etcd(self) -> NodeReply:
        """The job's end as its mark in etcd tells it, for an agent whose connection to the
        holder closed before it read the holder's end word."""
        if self._ended is None:
            raise _errors.CoordinatorUnreachableError(
                f"the job's book is gone from etcd ({self._keys.book}): its holder ended the job "
                f"and no mark of how is left ({self._keys.ended}, kept {ENDED_MARKER_SECONDS} s)"
            )
        return cast("NodeReply", self._ended)

    def _lose(self, why: str) -> None:
        """This agent lost etcd (its lease): it must not train, nor serve the book."""
        with self._lock:
            if self._gone is not None:
                return
            self._gone = f"lost the nodes' rendezvous: {why}; this machine never trains alone"
            server = self._server
            self._changed.notify_all()
        self._log.note(self._gone)
        if server is not None:
            server.stop()  # a holder without etcd delivers nothing more

    def _claim_node_key(self, host: str, pid: int) -> int:
        """This node's key under this agent's lease: refused when a live agent holds the
        name. The store's revision."""
        key = self._keys.node(self._settings.node_name)
        value = json.dumps({"host": host, "pid": pid})
        ok, responses = self._retry(
            lambda: self._client.txn(
                [created_never(key)],
                [put_request(key, value, self._lease.id)],
                [range_request(key)],
            )
        )
        if not ok:
            held = ranged(responses[0])
            holder = held[0].value.decode(errors="replace") if held else "?"
            raise _errors.RendezvousError(
                f"node name {self._settings.node_name} of job {self._settings.job_id!r} is "
                f"held by another live agent ({holder}: "
                f"its key {key} in etcd; an agent that ended abruptly holds it for "
                f"{self._lease.ttl} s more); give each machine its own --node-name"
            )
        _kvs, revision = self._retry(lambda: self._client.range(self._keys.live, prefix=True))
        return revision

    def _retry(self, call: Callable[[], _T]) -> _T:
        """`call` tried until it answers, within the lease's window; lost after that."""
        while True:
            self._raise_if_gone()
            try:
                return call()
            except EtcdUnavailable as error:
                if time.monotonic() >= self._lease.expires_by():
                    self._lose(
                        f"no answer from a majority of etcd ({self._client.describe()}) for "
                        f"{self._lease.describe()}; last: {error}"
                    )
                    self._raise_if_gone()
                time.sleep(RETRY_SECONDS)
            except EtcdRefused as error:
                raise _errors.RendezvousError(
                    f"etcd at {self._client.describe()} refused this agent: {error} (with etcd's "
                    "users on, give the agent ETCDCTL_USER with read and write access to "
                    f"{self._keys.job})"
                ) from None

    def _find_holder(self) -> str | None:
        """The holder's address, read now; when nobody holds the book, this agent
        campaigns for it."""
        try:
            kvs, _ = self._client.range(self._keys.holder)
        except EtcdUnavailable:
            return None
        except EtcdRefused as error:
            self._lose(f"etcd refused this agent: {error}")
            return None
        if kvs:
            self._set_holder(kvs[0].value.decode())
            return self._holder
        return self._campaign()

    def _set_holder(self, address: str | None) -> None:
        with self._lock:
            if address != self._holder:
                self._holder = address
                self._holder_changed = True
                self._changed.notify_all()

    def _wait_for_holder(self, seconds: float) -> None:
        with self._lock:
            self._changed.wait(timeout=seconds)

    def _campaign(self) -> str | None:
        """Campaigns for the job's election key; the address of whoever holds it after (None
        while it is not known, or while another thread of this agent campaigns). No lock is
        held across etcd's answer: the agent's other thread reports and reads meanwhile."""
        with self._lock:
            if self._server is not None:
                return self._holder
            if self._gone is not None or self._stop.is_set() or self._book_gone:
                return None
            if self._campaigning:
                return None
            self._campaigning = True
        try:
            return self._stand()
        finally:
            with self._lock:
                self._campaigning = False

    def _stand(self) -> str | None:
        """One try for the election key (see _campaign)."""
        # Its lines are this agent's (one prefix, agent.log); the waiting line is the one
        # the agents are sent, which each agent prints itself.
        log = self._log
        server = self._core().RendezvousServer(
            self._settings, log=lambda line: log.note(f"rendezvous: {line}"), log_progress=False
        )
        ip = address_toward(self._settings.etcd_endpoints)
        try:
            server.listen_at(ip, 0)
        except _errors.KdistError as error:
            self._log.note(f"cannot serve the job's book here ({ip}): {error}")
            return None
        address = host_port(ip, server.port)
        try:
            won, responses = self._client.txn(
                [created_never(self._keys.holder)],
                [
                    put_request(self._keys.holder, address, self._lease.id),
                    range_request(self._keys.book),
                    range_request(self._keys.nodes, prefix=True),
                    range_request(self._keys.ended),
                ],
                [range_request(self._keys.holder)],
            )
        except (EtcdUnavailable, EtcdRefused):
            server.stop()
            return None
        if not won:
            server.stop()
            holder = ranged(responses[0])
            self._set_holder(holder[0].value.decode() if holder else None)
            return self._holder
        if self._admitted and not ranged(responses[1]):
            server.stop()
            self._job_forgotten(ranged(responses[3]))
            return None
        if not self._serve(server, address, ranged(responses[1]), ranged(responses[2])):
            return None
        return address

    def _job_forgotten(self, mark: list[KeyValue]) -> None:
        """This agent, admitted to the job, won its election and found no book: the job
        ended and its holder forgot it (a holder keeps the book before it admits anyone).
        It gives the key up and never campaigns again: its end is read from the old
        holder's connection, else from the mark the holder left."""
        self._resign()
        ended = None
        if mark:
            try:
                words = json.loads(mark[0].value)
                ended = JobEnded(int(words["exit_status"]), str(words["message"]))
            except (ValueError, KeyError, TypeError) as error:
                self._log.record(f"etcd: the job's end mark is unreadable: {error}")
        with self._lock:
            self._ended = ended
            self._book_gone = True
            self._changed.notify_all()
        self._log.record("etcd: the job's book is gone: its holder ended the job and forgot it")

    def _serve(
        self, server: RendezvousServer, address: str, book: list[KeyValue], nodes: list[KeyValue]
    ) -> bool:
        """The book served here: restored from etcd when it has one (its lost nodes named
        gone), each change persisted before it is delivered."""
        if book:
            try:
                detached = server.restore(book[0].value)
            except _errors.KdistError as error:
                self._log.note(f"cannot take the job's book over: {error}")
                server.stop()
                self._resign()
                if isinstance(error, _errors.RendezvousError) and not self._admitted:
                    self._refused = str(error)  # another job's token: this agent is not its
                return False
            present = {kv.key.rsplit("/", 1)[-1] for kv in nodes}
            for name in detached:
                if name not in present:
                    server.node_gone(name)
        server.persist_with(self._persist)
        with self._lock:  # before it starts: the watch's node_gone reaches it from now on
            if self._gone is not None or self._stop.is_set():
                server.stop()  # this agent lost etcd, or closed, meanwhile
                self._resign()
                return False
            self._server = server
            self._set_holder(address)
        server.start()
        self._log.note(
            f"this machine holds the job's book now ({'restored from etcd' if book else 'new'}): "
            f"serving the nodes' rendezvous on {address}"
        )
        return True

    def _persist(self, sealed: bytes) -> str | None:
        """One change of the book's state kept in etcd, only while this agent's lease holds
        the election key (the fence); None when kept, else why not."""
        while True:
            try:
                kept, _ = self._client.txn(
                    [held_by(self._keys.holder, self._lease.id)],
                    [put_request(self._keys.book, sealed)],
                )
            except EtcdUnavailable as error:
                if time.monotonic() >= self._lease.expires_by() or self._gone is not None:
                    return f"etcd did not keep the book's state within the window: {error}"
                time.sleep(RETRY_SECONDS)
                continue
            except EtcdRefused as error:
                return f"etcd refused the book's state: {error}"
            if kept:
                return None
            return "this agent no longer holds the job's election key in etcd"

    def _resign(self) -> None:
        """Gives the election key up (when this agent still holds it)."""
        with contextlib.suppress(EtcdUnavailable, EtcdRefused):
            self._client.txn(
                [held_by(self._keys.holder, self._lease.id)], [delete_request(self._keys.holder)]
            )

    def _forget_job(self, exit_status: int, final_status: str) -> None:
        """The job ended: its keys go (a later job may take its id) but for a mark of how
        it ended, kept ENDED_MARKER_SECONDS: an agent of the job that had not read the end
        from this holder yet reads it there, and `kdist status` its final state (the book's
        status, JSON schema 1, as readable in etcd as the book was)."""
        words: dict[str, Any] = {
            "exit_status": exit_status,
            "message": f"the job ended (its holder's mark in etcd, {self._keys.ended})",
        }
        with contextlib.suppress(ValueError):
            words["status"] = json.loads(final_status)
        mark = json.dumps(words)
        forget = [delete_request(self._keys.live, prefix=True), delete_request(self._keys.book)]
        with contextlib.suppress(EtcdUnavailable, EtcdRefused):
            mark_lease, _ttl = self._client.grant(ENDED_MARKER_SECONDS)
            forget.append(put_request(self._keys.ended, mark, mark_lease))
        with contextlib.suppress(EtcdUnavailable, EtcdRefused):
            self._client.txn([held_by(self._keys.holder, self._lease.id)], forget)

    def _watch(self) -> None:
        """Follows the job's live keys (the election key, the nodes' keys) until closed;
        never dies: a stream that breaks or goes quiet is opened again from where it was."""
        revision = self._watcher_revision
        quiet = 1.0  # a quiet stream is opened again (and close() waits at most this)
        while not self._stop.is_set() and self._gone is None:
            try:
                self._check_server()
                watched = self._client.watch(self._keys.live, True, revision, quiet)
            except EtcdUnavailable:
                self._stop.wait(RETRY_SECONDS)
                continue
            except Exception as error:
                self._log.record(f"etcd watch: {type(error).__name__}: {error}")
                self._stop.wait(RETRY_SECONDS)
                continue
            if watched.compacted:
                revision = self._resync()
                continue
            revision = max(revision, watched.next_revision)
            for event in watched.events:
                self._on_event(event.kind, event.key, event.value)

    def _resync(self) -> int:
        try:
            kvs, revision = self._client.range(self._keys.holder)
        except (EtcdUnavailable, EtcdRefused):
            return 0
        self._set_holder(kvs[0].value.decode() if kvs else None)
        return revision + 1

    def _on_event(self, kind: str, key: str, value: bytes) -> None:
        if key == self._keys.holder:
            if kind == "DELETE":
                self._set_holder(None)
                if not self._stop.is_set():
                    self._campaign()  # the holder's machine is lost, or it left
            else:
                self._set_holder(value.decode())
            return
        if kind == "DELETE" and key.startswith(self._keys.nodes):
            with self._lock:
                server = self._server
            if server is not None:
                server.node_gone(key[len(self._keys.nodes) :])

    def _check_server(self) -> None:
        """A fenced server (its state not kept) gives the book up."""
        with self._lock:
            server = self._server
            if server is None or not server.fenced:
                return
            self._server = None
        self._resign()  # first: its agents, cut off by the stop, find the key gone
        server.stop()

    # -- the takeover the survivors agree on ----------------------------------------
    def _holder_lost_here(self) -> None:
        """This agent's connection to the holder broke (its machine silent for the
        keepalive's bound, or its book stopped). It says so in etcd under its own lease;
        when every other live node has said so of the same holder, the holder's lease is
        revoked now (its election key and its node's key go, as they would once etcd let
        the lease expire): the book moves as soon as the job agrees its machine is lost,
        not when etcd's lease runs out (which a new etcd leader extends when the lost
        machine held etcd's leader too)."""
        address = self._agent_address
        me = self._settings.node_name
        try:
            held, _ = self._client.range(self._keys.holder)
            if not held or held[0].value.decode() != address:
                return  # the holder changed or left meanwhile (a holder resigns first)
            lease = held[0].lease
            if lease == self._lease.id:
                return
            lost = self._keys.lost(lease)
            self._client.put(lost + me, me, self._lease.id)
            with self._lock:
                self._lost_holders.add(lease)
            _ok, responses = self._client.txn(
                [], [range_request(lost, prefix=True), range_request(self._keys.nodes, prefix=True)]
            )
        except (EtcdUnavailable, EtcdRefused):
            return  # etcd lets the lease expire meanwhile
        said = {kv.value.decode() for kv in ranged(responses[0])}
        others = {
            kv.key[len(self._keys.nodes) :] for kv in ranged(responses[1]) if kv.lease != lease
        }
        if not others or not others <= said:
            return
        self._log.note(
            f"every other node lost the job's book at {address} (nodes {', '.join(sorted(said))})"
            ": its machine's lease in etcd is revoked now, not when it expires"
        )
        with contextlib.suppress(EtcdUnavailable, EtcdRefused):
            self._client.revoke(lease)

    def _withdraw_lost_holders(self) -> None:
        """Back at a holder: what this agent said it lost is taken back."""
        with self._lock:
            leases, self._lost_holders = self._lost_holders, set()
        me = self._settings.node_name
        for lease in leases:
            with contextlib.suppress(EtcdUnavailable, EtcdRefused):
                self._client.txn([], [delete_request(self._keys.lost(lease) + me)])

    # -- this agent's connection to the holder ---------------------------------------
    def _drop_agent(self, agent: RendezvousAgent) -> None:
        with self._lock:
            if self._agent is agent:
                self._agent = None
        agent.close()

    def _connected(self) -> RendezvousAgent | None:
        """The connection to the holder, made again (as the same node) when the holder
        changed or the connection broke; None while none can be made."""
        with self._lock:
            agent = self._agent
            if agent is not None and (
                not self._holder_changed or self._holder == self._agent_address
            ):
                # A healthy connection is never closed for the holder it already reaches: the
                # book takes a closed connection for its agent leaving.
                self._holder_changed = False
                return agent
            keep = agent is not None and self._holder is None
            if not keep:
                self._agent = None
        if agent is not None and not keep:
            agent.close()
        address = self._find_holder()
        if keep and agent is not None:
            # The election key went (the holder's machine is lost, or the job ended and its
            # holder forgot it): the old connection is read on, for the holder's end word may
            # wait there, until a new holder is found (this agent's own, when it won again).
            if address is None or address == self._agent_address:
                return agent
            self._drop_agent(agent)
        with self._lock:
            self._holder_changed = self._holder != address
        if address is None or self._hello is None:
            return None
        agent = cast(
            "RendezvousAgent",
            self._core().RendezvousAgent(
                self._settings,
                log=self._log.note,
                address=address,
                # Short: while the old holder's key lives, a connection to its lost machine
                # is tried again at the next look rather than waited on for long.
                connect_timeout=min(2.0, max(0.5, self._window / 6)),
            ),
        )
        host, pid, port, environment = self._hello
        try:
            agent.join(host, pid, port, environment, rejoin=True)
        except (_errors.CoordinatorUnreachableError, _errors.RendezvousTimeoutError):
            agent.close()
            with self._lock:
                self._holder_changed = True  # tried again at the next look
            return None
        except _errors.RendezvousError as error:
            agent.close()
            self._lose(f"the job's new holder did not take this node back: {error}")
            return None
        with self._lock:
            self._agent = agent
            self._agent_address = address
            drain, report = self._drain, self._last_report
            progressed = self._last_progressed
        self._withdraw_lost_holders()
        # What the old holder may not have kept, sent again (refused when it had).
        with contextlib.suppress(_errors.KdistError):
            if drain is not None:
                agent.report(*drain, drain=True)
            if report is not None:
                agent.report(*report, progressed=progressed)
        return agent
