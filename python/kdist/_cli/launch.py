"""`kdist launch`: an N-process job on this machine, with the coordinator on loopback (and,
with --nodes, this machine's share of a job across machines: kdist._cli.launch_nodes).

Each process runs in its own process group (so that its own children are
signalled with it) and, on Linux, asks the kernel to SIGKILL it when the
launcher dies (PR_SET_PDEATHSIG), so that each process the launcher started
dies with it, even when the launcher is killed with SIGKILL. That covers only
those processes: their own children are killed with the process group when
the launcher ends the job, but outlive a launcher killed with SIGKILL unless
they arrange to die with their parent. The launcher watches its processes without
reaping them (waitid with WNOWAIT) until the end, so a process group id it
signals can never belong to someone else's processes. Starting, watching, copying
the output, stopping and blaming are `kdist._local_job`'s (`run_share`), shared with
the agent of `--nodes`; what follows an attempt is the job's ledger's one restart
rule (kdist._core.AttemptLedger), as the rendezvous keeps it for `--nodes`; this
module is the command's policy: signals, notes, the timeout, the logs and the exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from kdist import _errors
from kdist._cli.launch_arguments import build_launch_parser
from kdist._cli.machine_gpus import EXIT_USAGE, gpus_per_process
from kdist._local_job import compile_cache
from kdist._local_job.attempt import End, Hooks
from kdist._local_job.attempts_file import ATTEMPTS_FILE, goodput_dict, write_attempts
from kdist._local_job.blame import cannot_run
from kdist._local_job.gpu_split import GpuSplitError
from kdist._local_job.job import SETTLE_SECONDS, Job
from kdist._local_job.output import Output
from kdist._local_job.process import Process
from kdist._local_job.share import MachineOptions, Share, ShareEnd, run_share, warm_words
from kdist._local_job.warm import SparePool

if TYPE_CHECKING:
    from kdist._core import AttemptLedger, LedgerDecision

EXIT_TIMEOUT = 124  # as timeout(1)
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `kdist launch` and its options to the `kdist` command line."""
    parser = build_launch_parser(commands)
    parser.set_defaults(run=lambda args: _run_from(args, parser))


def _run_from(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        parser.error(
            "launch needs the command to run after '--', e.g. kdist launch -n 2 -- python train.py"
        )
    if args.nodes is not None:
        from kdist._cli.launch_nodes import run_nodes

        return run_nodes(command, args, parser)
    if args.rendezvous is not None:
        parser.error("--rendezvous needs --nodes MIN[:MAX]")
    return launch(
        command,
        num_processes=args.num_processes,
        devices_per_process=args.devices_per_process,
        port=args.port,
        timeout=args.timeout,
        grace=args.grace,
        stall_timeout=args.stall_timeout,
        max_restarts=args.max_restarts,
        log_dir=args.log_dir,
        quiet_processes=args.quiet_processes,
        warm=not args.no_warm,
        preload=args.preload,
        metrics_port=args.metrics_port,
    )


def launch(
    command: Sequence[str],
    *,
    num_processes: int,
    devices_per_process: int | None = None,
    port: int | None = None,
    timeout: float | None = None,
    grace: float = 30.0,
    stall_timeout: float | None = None,
    max_restarts: int = 0,
    log_dir: Path | None = None,
    quiet_processes: Container[int] = (),
    out: BinaryIO | None = None,
    err: BinaryIO | None = None,
    warm: bool = True,
    preload: Sequence[str] = (),
    metrics_port: int | None = None,
) -> int:
    """Runs `command` as `num_processes` processes of one job on 127.0.0.1.

    Must run in the main thread (it handles SIGINT, SIGTERM and SIGHUP,
    forwarding them to every process) of a process without other threads
    (on Linux each child is told to die with its parent between fork and exec).

    Args:
        command: The program and its arguments.
        num_processes: How many processes; each gets its id in
            KERAS_DISTRIBUTION_PROCESS_ID.
        devices_per_process: When set, each process uses JAX's CPU backend
            with this many devices. Defaults to None: the machine's devices.
        port: The coordinator's port, the same on every attempt. Defaults to
            None: a free port, a fresh one for each attempt.
        timeout: Seconds after which the whole job is stopped (exit status
            124), restarts included. Defaults to None: no limit.
        grace: Seconds between SIGTERM and SIGKILL when stopping; a kdist job
            stops together at one agreed step meanwhile. Defaults to 30.
        stall_timeout: When set, KDIST_STALL_TIMEOUT for every process (kdist's
            stall watchdog). Defaults to None: off.
        max_restarts: How many times the whole job is started again after it
            failed or stopped (not after success, a signal to the launcher or the
            timeout); the same failure at the same point twice ends it with 1.
            Each process gets its attempt in KDIST_RESTART_COUNT (0 first).
            Defaults to 0: it runs once.
        log_dir: When set, every line of process i of attempt a also goes to
            `log_dir/attempt-<a>/process-<i>.log`, and the attempts table to
            `log_dir/attempts.json`. Defaults to None: no files.
        quiet_processes: The ids of the processes whose lines stay off the
            console (they are still logged, and a failed one's last lines are
            still printed). Defaults to none.
        out: Where the processes' stdout lines go. Defaults to stdout.
        err: Where their stderr lines and the launcher's notes go. Defaults
            to stderr.
        warm: With restarts, keep a warm spare per process for the next attempt
            (kdist._local_job.warm): a `python PROGRAM` / `python -m MODULE` command
            then restarts without the interpreter's start and the heavy imports.
            Defaults to True (`--no-warm`: False).
        preload: Modules the spares import besides the default ones (`--preload`).
        metrics_port: When set, /metrics for Prometheus on this port (kdist._agent.metrics),
            taken before any process starts. Defaults to None: off.

    Unless JAX's cache variables are set, every attempt shares one persistent
    compilation cache (in `log_dir` when given, else a folder removed at the end).

    Returns:
        The job's status: 0 when every process of the last attempt exited with 0; 1
        when the same failure came twice at the same point; else the last failure's
        status (128 + N for a process killed by signal N); 128 + N when the launcher
        received signal N; 124 on timeout; 127 (126) when the command cannot be found
        (executed).

    Example:
        >>> from kdist._cli.launch import launch
        >>> launch(["true"], num_processes=2)  # doctest: +SKIP
        0
    """
    output = Output(out or sys.stdout.buffer, err or sys.stderr.buffer)
    try:
        gpus = gpus_per_process(num_processes, devices_per_process)
    except GpuSplitError as error:
        output.note(f"refused before starting any process: {error}")
        return EXIT_USAGE
    cache = compile_cache.plan(os.environ, log_dir)
    if cache.warning:
        output.note(cache.warning)
    options = MachineOptions(
        devices_per_process, gpus, grace, log_dir, stall_timeout, quiet_processes, cache.variables
    )
    from kdist import _core

    ledger = _core.AttemptLedger(max_restarts)
    metrics = None
    if metrics_port is not None:
        from kdist._agent.metrics import serve_metrics

        try:
            metrics = serve_metrics(
                metrics_port, lambda: local_status(ledger), socket.gethostname()
            )
        except (_errors.PortInUseError, _errors.ConfigError) as error:
            output.note(f"refused before starting any process: {error}")
            return EXIT_USAGE
        output.note(f"serving /metrics on {metrics.where}")
    ends_at = None if timeout is None else time.monotonic() + timeout
    job = _Job(num_processes, port, secrets.token_hex(16), timeout, ends_at, max_restarts, options)
    # Spares only where an attempt can follow (on Linux: they ask to die with the launcher).
    spares = None
    if warm and max_restarts and sys.platform.startswith("linux"):
        spares = SparePool(preload, note=output.note)
    try:
        with _forwarded_signals() as received:
            status = _run_attempts(command, job, ledger, output, received, spares=spares)
    finally:
        if spares is not None:
            spares.close()
        cache.close()
        if metrics is not None:
            metrics.close()
    if len(ledger.rows) > 1 or max_restarts:
        table = ledger.table.rstrip("\n").splitlines()
        table.append(f"goodput: {ledger.goodput().line()}")
        output.note("attempts:\n" + "\n".join("  " + line for line in table))
    if log_dir is not None:
        write_attempts(log_dir / ATTEMPTS_FILE, ledger.rows, status, goodput_dict(ledger.goodput()))
    return status


def local_status(ledger: AttemptLedger) -> dict[str, Any]:
    """`kdist launch -n`'s state as `kdist status --json` has it (schema 1), from its ledger:
    what /metrics serves.

    Args:
        ledger: The job's ledger.

    Returns:
        schema, job_id (""), state, attempt, nodes (this machine), processes, step,
        restarts, attempts, goodput.
    """
    rows = ledger.rows
    running = bool(rows) and rows[-1].ended_seconds < 0
    last = rows[-1] if rows else None
    if ledger.over:
        state = "finished" if last is not None and last.exit_status == 0 else "failed"
    else:
        state = "running"
    processes = last.processes if running and last is not None else 0
    step = ledger.newest_step
    return {
        "schema": 1,
        "job_id": "",
        "state": state,
        "attempt": None if last is None else last.attempt,
        "nodes": [
            {
                "name": socket.gethostname(),
                "host": socket.gethostname(),
                "address": "127.0.0.1",
                "rank": 0,
                "processes": list(range(processes)),
                "draining": False,
                "lost": False,
                "joining": False,
            }
        ],
        "processes": processes,
        "step": None if step < 0 else step,
        "restarts": dict(ledger.restarts),
        "attempts": [],
        "goodput": goodput_dict(ledger.goodput()),
    }


@dataclass(frozen=True)
class _Job:
    """What every attempt of one `launch()` shares, besides this machine's options."""

    num_processes: int
    port: int | None  # the coordinator's, the same every attempt; None: a fresh one each
    run_id: str  # the job's run (KDIST_RUN_ID): the same in every attempt
    timeout: float | None
    ends_at: float | None  # the monotonic time at which the timeout stops the job
    max_restarts: int
    options: MachineOptions


def _run_attempts(
    command: Sequence[str],
    job: _Job,
    ledger: AttemptLedger,
    output: Output,
    received: list[int],
    *,
    spares: SparePool | None,
) -> int:
    """Runs attempts until the ledger says the job ends; returns its status."""
    while True:
        share = Share(
            attempt=len(ledger.rows),
            first_id=0,
            count=job.num_processes,
            num_processes=job.num_processes,
            coordinator_port=job.port or _free_port(),
            run_id=job.run_id,
        )
        ledger.begin(share.coordinator_port, share.count)
        if spares is not None:
            spares.keep = share.attempt < job.max_restarts  # no spare after the last
        ended = run_share(
            command,
            share,
            job.options,
            output,
            received,
            hooks=_notes(share, job, output, spares),
            deadline=job.ends_at,
            spares=spares,
        )
        steps = ended.steps
        ledger.note_steps(
            share.attempt,
            steps.first_step,
            steps.first_step_unix_millis,
            steps.step,
            steps.step_unix_millis,
        )
        decision = _decide(ledger, ended, command, output)
        if decision.again or (job.max_restarts and ended.run.end is End.FAILED):
            output.note(decision.message)  # why it goes on, or why it ends with restarts asked
        if not decision.again:
            return int(decision.exit_status)


def _decide(
    ledger: AttemptLedger, ended: ShareEnd, command: Sequence[str], output: Output
) -> LedgerDecision:
    """What the attempt's end means for the job: its notes, and the ledger's decision."""
    run, outcome = ended.run, ended.outcome
    if run.end is End.PASSED:
        return ledger.finished()
    if run.end is End.CANNOT_START:
        assert run.error is not None
        status, what = cannot_run(command, run.error)
        output.note(what)
        return ledger.ended(f"could not start (status {status})", status)
    if run.end is End.STOPPED:
        assert run.signum is not None
        if outcome.ending is not None:
            output.note(outcome.ending)
        name = signal.Signals(run.signum).name
        return ledger.ended(f"stopped by the launcher's {name}", 128 + run.signum)
    if run.end is End.TIMED_OUT:
        return ledger.ended("timed out", EXIT_TIMEOUT)
    # On one machine the failure always began here (blame names it).
    assert outcome.failure is not None
    return ledger.failed(outcome.failure)


def _notes(share: Share, job: _Job, output: Output, spares: SparePool | None) -> Hooks:
    """The launcher's notes at an attempt's turning points."""

    def started(running: Job) -> None:
        count = share.count
        logs = job.options.log_dir
        gpus = job.options.gpus
        output.note(
            f"started {count} process{'es' if count != 1 else ''} "
            f"(pids {', '.join(str(p.pid) for p in running.processes)}), coordinator "
            f"127.0.0.1:{share.coordinator_port}"
            + (f", attempt {share.attempt}" if share.attempt else "")
            + (f", logs in {logs / f'attempt-{share.attempt}'}" if logs is not None else "")
            + (
                "; GPUs (CUDA_VISIBLE_DEVICES): "
                + ", ".join(f"process {i}: {ids}" for i, ids in enumerate(gpus))
                if gpus is not None
                else ""
            )
            + warm_words(running, spares)
        )

    def failed(running: Job, process: Process) -> None:
        others = [p for p in running.processes if p is not process and p.poll() is None]
        output.note(
            f"process {process.process_id} exited with status {process.status}"
            + (
                f"; giving the others {SETTLE_SECONDS:g} s to leave, then stopping them"
                if others
                else ""
            )
        )

    def signalled(_job: Job, signum: int) -> None:
        output.note(f"received {signal.Signals(signum).name}: forwarding it to every process")

    def deadline(_job: Job, _running: list[Process]) -> None:
        output.note(f"timed out after {job.timeout:g} s; stopping every process")

    return Hooks(started=started, failed=failed, signalled=signalled, deadline=deadline)


@contextlib.contextmanager
def _forwarded_signals() -> Iterator[list[int]]:
    """SIGINT, SIGTERM and SIGHUP recorded (the running attempt forwards them) while the
    job runs; the previous handlers back after."""
    received: list[int] = []
    previous = {
        s: signal.signal(s, lambda signum, _frame: received.append(signum))
        for s in _FORWARDED_SIGNALS
    }
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _free_port() -> int:
    # The core owns the free-port rule; imported here so that `kdist --help` loads no core.
    from kdist import _core

    return _core.free_port()
