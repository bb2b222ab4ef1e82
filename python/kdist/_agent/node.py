"""This machine's agent: the rendezvous (served here when this machine owns its address),
the roster of each attempt, this machine's processes, their end reported, the job's end.

The decisions are the core's (rendezvous/rendezvous_book): this module only joins, starts
what the roster says, and reports. Exit statuses: 75 when too few machines joined before
--join-timeout, 69 when this machine lost the rendezvous (its processes are stopped at
once: it never trains alone), 143 when this machine was drained (SIGTERM to its agent:
the job stops at one agreed step, with a save, and goes on without it), 1 when the
rendezvous refused it, otherwise the job's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kdist import _errors
from kdist._local_job import compile_cache
from kdist._local_job.attempt import Attempt, End, Hooks
from kdist._local_job.environment import child_environment, host_port, without_job_variables
from kdist._local_job.gpu_split import CUDA_VISIBLE_DEVICES
from kdist._local_job.job import Job
from kdist._local_job.output import Output
from kdist._local_job.warm import SparePool

if TYPE_CHECKING:
    from kdist._core import NodeReply, RendezvousAgent, RendezvousServer

EXIT_REFUSED = 1
ATTEMPTS_FILE = "attempts.json"  # in --log-dir, on the rendezvous's machine
# Each process's variables, besides KERAS_DISTRIBUTION_*: the contract of issue 43.
RESTART_COUNT_VARIABLE = "KDIST_RESTART_COUNT"
NODE_RANK_VARIABLE = "KDIST_NODE_RANK"
NUM_NODES_VARIABLE = "KDIST_NUM_NODES"
LOCAL_PROCESS_ID_VARIABLE = "KDIST_LOCAL_PROCESS_ID"
JOB_ID_VARIABLE = "KDIST_JOB_ID"
ROLL_CALL_TOKEN_VARIABLE = "KDIST_ROLL_CALL_TOKEN"  # each attempt's own (attempt_token)
SLURM_NODE_NAME_VARIABLE = "SLURMD_NODENAME"  # Slurm's name for the node a task runs on
SLURM_JOB_ID_VARIABLE = "SLURM_JOB_ID"  # --rendezvous auto's job id when --job-id is not given
# The previous attempt's process count, from the second attempt on (cluster_spec()'s
# previous_num_processes).
PREVIOUS_NUM_PROCESSES_VARIABLE = "KDIST_PREVIOUS_NUM_PROCESSES"
_EXIT_DRAINED = 143  # kdist._core.EXIT_DRAINED (128 + SIGTERM)
_WATCH_SECONDS = 0.5  # how often the watcher of the rendezvous looks up from its wait
# kdist's records that name the job's first failure (kdist._local_job.job reads the same).
_FAILURE_EVENTS = ("failed", "peer_failed", "died", "unreachable")


@dataclass
class NodeOptions:
    """What `kdist launch --nodes` was given."""

    min_nodes: int
    max_nodes: int
    rendezvous: str  # HOST:PORT
    processes_per_node: int
    job_id: str = ""
    node_name: str = ""
    last_call: float = 30.0
    join_timeout: float = 300.0
    max_restarts: int = 0
    log_dir: Path | None = None
    token: str = ""
    devices_per_process: int | None = None
    # Each local process's CUDA_VISIBLE_DEVICES, by local id (kdist._local_job.gpu_split,
    # decided by the command line from this machine's GPUs); None: left alone.
    gpus: tuple[str, ...] | None = None
    grace: float = 30.0
    # KDIST_UNREACHABLE_TIMEOUT: a silent host (the rendezvous's, an agent's) is lost after it.
    unreachable_timeout: float = 20.0
    # A machine arriving while the job runs joins it after this long; None: never.
    scale_up_after: float | None = 30.0
    # Warm spares (kdist._local_job.warm): one per local process, made while this agent
    # waits for the others to join and again as soon as one is used; False: cold starts.
    warm: bool = True
    preload: tuple[str, ...] = ()  # modules the spares import besides the default ones
    # This machine's environment fingerprint, (name, value, must_match) entries
    # (kdist._start.environment_fingerprint, collected by the command line).
    environment: tuple[tuple[str, str, bool], ...] = ()


class _Drain:
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


def run_node(command: Sequence[str], options: NodeOptions) -> int:
    """Runs this machine's part of the job; returns the status the agent exits with."""
    from kdist import _core

    output = Output(sys.stdout.buffer, sys.stderr.buffer)
    agent_log = None
    if options.log_dir is not None:
        options.log_dir.mkdir(parents=True, exist_ok=True)
        agent_log = (options.log_dir / "agent.log").open("a", encoding="utf-8")

    def note(text: str) -> None:
        output.note(text)
        if agent_log is not None:
            agent_log.write(f"kdist: {text}\n")
            agent_log.flush()

    try:
        if options.rendezvous == "auto":
            options.rendezvous = _core.auto_rendezvous(dict(os.environ))
            # The allocation names the job: two allocations never meet at one rendezvous.
            options.job_id = options.job_id or os.environ.get(SLURM_JOB_ID_VARIABLE, "")
            note(
                f"--rendezvous auto: {options.rendezvous} (the scheduler's first host), "
                f"job id {options.job_id!r}"
            )
        address = _core.parse_address(options.rendezvous)
        ip = _core.host_addresses(address.host, 10.0)[0]
    except _errors.KdistError as error:
        note(f"--rendezvous {options.rendezvous}: {error}")
        return 2
    if not options.token and not _core.is_loopback_address(ip):
        note(
            f"--rendezvous {options.rendezvous} is off loopback ({ip}): the job needs a token, "
            "in KDIST_ROLL_CALL_TOKEN or --token-file F, the same on every machine"
        )
        return 2
    host = socket.gethostname()
    node_name = options.node_name or default_node_name(os.environ, host)
    server = _serve_if_here(ip, address.port, options, note)
    try:
        agent = _core.RendezvousAgent(
            ip,
            address.port,
            options.rendezvous,
            options.token,
            options.join_timeout,
            options.unreachable_timeout,
        )
        try:
            agent.join(
                options.job_id,
                node_name,
                host,
                os.getpid(),
                options.processes_per_node,
                options.min_nodes,
                options.max_nodes,
                _core.free_port(),
                list(options.environment),
            )
        except _errors.RendezvousTimeoutError as error:
            note(str(error))
            return int(_core.EXIT_NOT_ENOUGH_NODES)
        except _errors.CoordinatorUnreachableError as error:
            note(str(error))
            return int(_core.EXIT_LOST_RENDEZVOUS)
        except _errors.RendezvousError as error:
            note(str(error))
            return EXIT_REFUSED
        drain = _Drain()
        previous = signal.signal(signal.SIGTERM, drain.handler)
        cache = compile_cache.plan(os.environ, options.log_dir)
        if cache.folder is None and "cannot" in cache.said:
            note(cache.said)
        spares = _spare_pool(command, options, cache.variables, note)
        try:
            status = _follow(
                command,
                agent,
                options=options,
                node_name=node_name,
                host=host,
                output=output,
                note=note,
                drain=drain,
                spares=spares,
                cache_variables=cache.variables,
            )
        finally:
            signal.signal(signal.SIGTERM, previous)
            if spares is not None:
                spares.close()
            cache.close()
        if server is not None and status == int(_core.EXIT_DRAINED) and not server.wait(0.0):
            # The job goes on without this machine's processes, not without its rendezvous.
            note("this machine was drained; it serves the nodes' rendezvous until the job ends")
            while not server.wait(1.0):
                pass
        return status
    finally:
        if server is not None:
            server.wait(10.0)
            server.stop()
            if options.log_dir is not None:
                _write_attempts(options.log_dir / ATTEMPTS_FILE, server, note)
        if agent_log is not None:
            agent_log.close()


def _spare_pool(
    command: Sequence[str],
    options: NodeOptions,
    cache_variables: Mapping[str, str],
    note: Callable[[str], None],
) -> SparePool | None:
    """This machine's warm spares, started now (while the others join), or None."""
    if not options.warm or not sys.platform.startswith("linux"):
        return None
    spares = SparePool(options.preload, note=note)
    base = without_job_variables(os.environ)
    for local in range(options.processes_per_node):
        # The attempt's own values (ids, coordinator, restart count) are not in a spare's
        # environment: any stand-in does.
        env = child_environment(
            base,
            process_id=local,
            num_processes=options.processes_per_node,
            port=1,
            devices_per_process=options.devices_per_process,
        )
        env.update(cache_variables)
        spares.expect(local, command, env)
    spares.maintain()
    return spares


def default_node_name(environ: Mapping[str, str], host: str) -> str:
    """This machine's name when --node-name is not given: the scheduler's name for it
    (Slurm's SLURMD_NODENAME: a cluster's nodes may share one host name, as in containers),
    else its host name.

    Example:
        >>> default_node_name({"SLURMD_NODENAME": "gpu17"}, "localhost")
        'gpu17'
        >>> default_node_name({}, "vm-3")
        'vm-3'
    """
    return environ.get(SLURM_NODE_NAME_VARIABLE) or host


def attempt_token(token: str, job_id: str, attempt: int) -> str:
    """The roll call's token for one attempt of the job: HMAC-SHA-256 of the attempt under
    the job's token (under a fixed key without one, on loopback), so that a process left
    over from another attempt (a SIGSTOPped one that wakes up) is refused at the roll call,
    and the job's token itself never reaches the processes.

    Example:
        >>> attempt_token("s3cret", "run-7", 0) != attempt_token("s3cret", "run-7", 1)
        True
        >>> attempt_token("s3cret", "run-7", 1) == attempt_token("s3cret", "run-7", 1)
        True
    """
    key = token.encode() if token else b"kdist launch --nodes (no token)"
    message = f"kdist launch --nodes; job {job_id!r}; attempt {attempt}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _write_attempts(path: Path, server: RendezvousServer, note: Callable[[str], None]) -> None:
    """The rendezvous's table of the job's attempts, as JSON (one object per attempt)."""
    rows = [
        {
            "attempt": a.attempt,
            "nodes": list(a.nodes),
            "processes": a.processes,
            "started_seconds": a.started_seconds,
            "ended_seconds": None if a.ended_seconds < 0 else a.ended_seconds,
            "ended": a.ended,
            "exit_status": a.exit_status,
            "counted": a.counted,
        }
        for a in server.attempts
    ]
    path.write_text(json.dumps({"exit_status": server.exit_status, "attempts": rows}, indent=2))
    note(f"the job's attempts: {path}")


def _serve_if_here(
    ip: str, port: int, options: NodeOptions, note: Callable[[str], None]
) -> RendezvousServer | None:
    """The rendezvous, when this machine owns its address (checked by binding it)."""
    from kdist import _core

    server = _core.RendezvousServer(
        options.job_id,
        options.min_nodes,
        options.max_nodes,
        options.processes_per_node,
        options.last_call,
        options.join_timeout,
        options.max_restarts,
        options.token,
        unreachable_timeout=options.unreachable_timeout,
        scale_up_after=-1.0 if options.scale_up_after is None else options.scale_up_after,
    )
    try:
        server.listen(ip, port)
    except _errors.PortInUseError:
        note(f"the rendezvous port {host_port(ip, port)} is taken here: another agent serves it")
        return None
    except _errors.KdistError as error:
        note(f"the rendezvous {host_port(ip, port)} is not this machine's ({error}): joining it")
        return None
    server.start()
    note(f"this machine owns {ip}: serving the nodes' rendezvous on {host_port(ip, server.port)}")
    return server


def _follow(
    command: Sequence[str],
    agent: RendezvousAgent,
    *,
    options: NodeOptions,
    node_name: str,
    host: str,
    output: Output,
    note: Callable[[str], None],
    drain: _Drain,
    spares: SparePool | None = None,
    cache_variables: Mapping[str, str] | None = None,
) -> int:
    """From admission to the end: each roster run here, each end reported."""
    from kdist import _core

    lost_status = int(_core.EXIT_LOST_RENDEZVOUS)
    drained_status = int(_core.EXIT_DRAINED)
    wait_bound = options.join_timeout + options.last_call + 60.0
    deadline = time.monotonic() + wait_bound
    last_attempt = 0
    while True:
        if drain.requested.is_set() and not drain.told:
            drain.told = True
            note("received SIGTERM: this machine is drained; telling the nodes' rendezvous")
            try:
                agent.report(last_attempt, drained_status, "", 0, drain=True)
            except _errors.KdistError as error:
                note(f"{error}; leaving with status {drained_status}")
                return drained_status
        if spares is not None:
            spares.maintain()  # between attempts too: a spare that died is replaced
        try:
            # Short waits, so that a SIGTERM is seen at once (the handler runs between them).
            reply = agent.next(_WATCH_SECONDS)
        except (_errors.CoordinatorUnreachableError, _errors.RendezvousTimeoutError) as error:
            if isinstance(error, _errors.RendezvousTimeoutError) and time.monotonic() < deadline:
                continue
            note(f"{error}; leaving with status {lost_status}")
            return lost_status
        deadline = time.monotonic() + wait_bound
        if reply.first_failure:
            note(f"the job's first failure: {reply.first_failure}")
        if reply.kind == "waiting":
            note(reply.message)
            continue
        if reply.kind == "end":
            note(f"{reply.message}; exit status {reply.exit_status}")
            return int(reply.exit_status)
        if reply.kind != "roster":
            continue  # a stop of an attempt that already ended here
        last_attempt = reply.attempt
        if drain.requested.is_set():  # drained before it started: nothing runs here
            note(f"attempt {reply.attempt}: not started (this machine is drained)")
            try:
                agent.report(reply.attempt, drained_status, "", _core.free_port())
            except _errors.KdistError as error:
                note(f"{error}; leaving with status {drained_status}")
                return drained_status
            continue
        if reply.message:
            note(f"environment differences let pass:\n{reply.message}")
        status, failure, lost = _run_attempt(
            command,
            reply,
            options=options,
            node_name=node_name,
            host=host,
            output=output,
            note=note,
            agent=agent,
            drain=drain,
            spares=spares,
            cache_variables=cache_variables or {},
        )
        if lost:
            note(
                f"lost the nodes' rendezvous: this machine's processes were stopped; leaving "
                f"with status {lost_status}"
            )
            return lost_status
        try:
            agent.report(reply.attempt, status, failure, _core.free_port())
        except _errors.KdistError as error:
            note(f"{error}; leaving with status {lost_status}")
            return lost_status
        deadline = time.monotonic() + wait_bound


def _run_attempt(
    command: Sequence[str],
    roster: NodeReply,
    *,
    options: NodeOptions,
    node_name: str,
    host: str,
    output: Output,
    note: Callable[[str], None],
    agent: RendezvousAgent,
    drain: _Drain,
    spares: SparePool | None = None,
    cache_variables: Mapping[str, str] | None = None,
) -> tuple[int, str, bool]:
    """This machine's processes of one attempt: (status, first failure here, lost)."""

    n = roster.processes_per_node
    num_nodes = len(roster.nodes)
    first_id = roster.node_rank * n
    base = without_job_variables(os.environ)
    envs = []
    for local in range(n):
        env = child_environment(
            base,
            process_id=first_id + local,
            num_processes=num_nodes * n,
            port=roster.coordinator_port,
            devices_per_process=options.devices_per_process,
            host=roster.coordinator_host,
        )
        env.update(cache_variables or {})
        env[RESTART_COUNT_VARIABLE] = str(roster.attempt)
        if roster.previous_processes > 0:
            env[PREVIOUS_NUM_PROCESSES_VARIABLE] = str(roster.previous_processes)
        env[NODE_RANK_VARIABLE] = str(roster.node_rank)
        env[NUM_NODES_VARIABLE] = str(num_nodes)
        env[LOCAL_PROCESS_ID_VARIABLE] = str(local)
        env[JOB_ID_VARIABLE] = options.job_id
        if options.gpus is not None:
            env[CUDA_VISIBLE_DEVICES] = options.gpus[local]
        env[ROLL_CALL_TOKEN_VARIABLE] = attempt_token(options.token, options.job_id, roster.attempt)
        envs.append(env)
    log_files = None
    if options.log_dir is not None:
        folder = options.log_dir / f"attempt-{roster.attempt}"
        log_files = [folder / f"process-{first_id + i}.log" for i in range(n)]
    received: list[int] = []
    lost = threading.Event()
    done = threading.Event()

    def watch() -> None:
        # The only thread that talks to the rendezvous during the attempt: it tells it of a
        # drain, and follows its word (a stop; a closed connection is its loss).
        while not done.is_set():
            if drain.requested.is_set() and not drain.told:
                drain.told = True
                note("received SIGTERM: this machine is drained; telling the nodes' rendezvous")
                try:
                    agent.report(roster.attempt, _EXIT_DRAINED, "", 0, drain=True)
                except _errors.KdistError:
                    lost.set()
                    received.append(signal.SIGTERM)
                    return
            try:
                reply = agent.next(_WATCH_SECONDS)
            except _errors.RendezvousTimeoutError:
                continue
            except _errors.KdistError:
                lost.set()
                received.append(signal.SIGTERM)
                return
            if reply.kind == "stop" and reply.attempt == roster.attempt:
                note(f"{reply.message}: stopping this machine's processes (SIGTERM)")
                if not received:  # a second one would be a second Ctrl-C: SIGKILL at once
                    received.append(signal.SIGTERM)

    watcher = threading.Thread(target=watch, name="kdist-rendezvous-watch", daemon=True)

    def started(job: Job) -> None:
        watcher.start()  # after the last fork (job.start's fork-to-exec hook)
        warm = [str(p.process_id) for p in job.processes if p.warm]
        memory = None if spares is None else spares.last_memory_mib
        note(
            f"attempt {roster.attempt}: node {roster.node_rank} of {num_nodes} ({node_name}), "
            f"processes {first_id}-{first_id + n - 1} (pids "
            f"{', '.join(str(p.pid) for p in job.processes)}), coordinator "
            f"{host_port(roster.coordinator_host, roster.coordinator_port)}"
            + (f"; warm: {', '.join(warm)}" if warm else "")
            + (f" (spares of about {memory:.0f} MiB each)" if warm and memory else "")
        )

    records = Path(tempfile.mkdtemp(prefix="kdist-node-"))
    run = Attempt(
        command,
        envs,
        records,
        output,
        received,
        grace=options.grace,
        hooks=Hooks(started=started),
        log_files=log_files,
        first_id=first_id,
        spares=spares,
    )
    drain.received = received
    if drain.requested.is_set():
        received.append(signal.SIGTERM)
    try:
        try:
            end = run.run()
        finally:
            drain.received = None
            done.set()
            if watcher.is_alive():
                watcher.join()
        return _attempt_end(
            run, end, lost=lost.is_set(), first_id=first_id, n=n, node_name=node_name, host=host
        )
    finally:
        shutil.rmtree(records, ignore_errors=True)  # after the records were read


def _attempt_end(
    run: Attempt, end: End, *, lost: bool, first_id: int, n: int, node_name: str, host: str
) -> tuple[int, str, bool]:
    """(status, the failure that began here or "", lost) of one attempt on this machine."""
    if lost:
        return 1, "", True
    if end is End.PASSED:
        return 0, "", False
    job = run.job
    # The process kdist's channel named as the job's first failure (a global id): when it
    # runs elsewhere, this machine's failure is a consequence, reported without a text.
    named = next(
        (
            r["process_id"]
            for r in job.records(_FAILURE_EVENTS)
            if isinstance(r.get("process_id"), int)
        ),
        None,
    )
    status = next((p.status for p in job.processes if p.status not in (None, 0)), 1)
    if named is not None and not first_id <= named < first_id + n:
        return status or 1, "", False
    first = job.process(named) if named is not None else job.first_failure()
    first = first or run.failed
    if first is None or first.status is None:
        return status or 1, f"node {node_name}'s processes ended ({end.name.lower()})", False
    what = first.raised or first.error_line or first.ended_how()
    return (
        first.status or status or 1,
        f"process {first.process_id} (node {node_name}, host {host}): {what}",
        False,
    )
