"""`kdist launch`: an N-process job on this machine, with the coordinator on loopback.

Each process runs in its own process group (so that its own children are
signalled with it) and, on Linux, asks the kernel to SIGKILL it when the
launcher dies (PR_SET_PDEATHSIG), so that each process the launcher started
dies with it, even when the launcher is killed with SIGKILL. That covers only
those processes: their own children are killed with the process group when
the launcher ends the job, but outlive a launcher killed with SIGKILL unless
they arrange to die with their parent. The launcher watches its processes without
reaping them (waitid with WNOWAIT) until the end, so a process group id it
signals can never belong to someone else's processes. Starting, watching,
copying the output and stopping are `kdist._local_job`'s, shared with
`kdist.testing.run_job`; this module is the command's policy: signals, notes,
the timeout, the restarts, the logs and the exit status.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kdist._cli import arguments
from kdist._local_job import compile_cache
from kdist._local_job.attempt import Attempt, End, Hooks
from kdist._local_job.environment import environments
from kdist._local_job.gpu_split import CUDA_VISIBLE_DEVICES, GpuSplitError, job_gpus, split_gpus
from kdist._local_job.job import SETTLE_SECONDS, Job
from kdist._local_job.output import Output, shortened, table
from kdist._local_job.process import Process
from kdist._local_job.warm import SparePool

EXIT_USAGE = 2  # as argparse: refused before any process starts
UNREACHABLE_TIMEOUT_VARIABLE = "KDIST_UNREACHABLE_TIMEOUT"
EXIT_TIMEOUT = 124  # as timeout(1)
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The variable that tells each process which attempt of the job it belongs to (0 first).
RESTART_COUNT_VARIABLE = "KDIST_RESTART_COUNT"
# How many of the first failed process's last lines are printed above the summary.
_TAIL_LINES = 30


_DESCRIPTION = """\
Start COMMAND as N processes of one job on this machine. Each process gets
KERAS_DISTRIBUTION_JOB_ADDRESSES=127.0.0.1:PORT, KERAS_DISTRIBUTION_NUM_PROCESSES=N
and KERAS_DISTRIBUTION_PROCESS_ID=<its id>, so kdist.initialize() needs no
arguments. Every line a process writes is prefixed with its id ("[1] ...").

Ctrl-C, SIGTERM and SIGHUP are forwarded to every process, which stop together
(a kdist job agrees on one step: see kdist.should_stop) within --grace seconds
before SIGKILL. When a process exits with a non-zero status the others are
stopped (SIGTERM, then SIGKILL after --grace seconds) and kdist launch exits
with that status (128+N for signal N); a summary names the first failure, or
how kdist stopped the job, above it the first failed process's last lines (its
traceback). With --max-restarts the whole job is started again after a failure
or a stop (not after success, a signal to the launcher or --timeout), and a last
table has one row per attempt.

On a machine with G NVIDIA GPUs (/dev/nvidiaN, or the CUDA_VISIBLE_DEVICES list
the launcher was given) each process gets G/N of them through
CUDA_VISIBLE_DEVICES, process i the i-th block; N that does not divide G is
refused (status 2) before any process starts. --devices-per-process (JAX's CPU
backend) and JAX_PLATFORMS without cuda leave the GPUs alone. `kdist doctor`
shows the split for every N that divides G. Each process it started dies with the launcher,
even when the launcher is killed with SIGKILL (Linux). Their own children are
stopped with them (each process runs in its own process group) when the launcher
ends the job, but not when the launcher is killed with SIGKILL: a program that
starts children should make them exit with it.
"""

_EPILOG = """\
examples:
  kdist launch -n 2 --devices-per-process 2 -- python examples/hello_cluster.py
  kdist launch -n 4 --port 12345 --timeout 600 -- python train.py --epochs 3
  kdist launch -n 2 -- bash -c 'echo "process $KERAS_DISTRIBUTION_PROCESS_ID"'
  kdist launch -n 8 --max-restarts 3 --log-dir logs --quiet-processes 1- -- python train.py
"""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `kdist launch` and its options to the `kdist` command line."""
    parser = commands.add_parser(
        "launch",
        help="start an N-process job on this machine (loopback)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-n",
        "--num-processes",
        type=arguments.positive_int,
        required=True,
        metavar="N",
        help="number of processes to start",
    )
    parser.add_argument(
        "--devices-per-process",
        type=arguments.positive_int,
        metavar="K",
        help="run each process on JAX's CPU backend with K devices (sets JAX_PLATFORMS=cpu "
        "and JAX_NUM_CPU_DEVICES=K); by default the processes see this machine's devices",
    )
    parser.add_argument(
        "--port",
        type=arguments.port,
        metavar="P",
        help="the coordinator's port on 127.0.0.1 (default: a free port)",
    )
    parser.add_argument(
        "--timeout",
        type=arguments.seconds,
        metavar="S",
        help="stop the whole job after S seconds and exit with status 124 (default: no limit)",
    )
    parser.add_argument(
        "--grace",
        type=arguments.seconds,
        default=30.0,
        metavar="S",
        help="seconds the processes get to exit after a forwarded SIGTERM (or Ctrl-C) before "
        "SIGKILL: kdist's processes stop together at one agreed step meanwhile (default: 30)",
    )
    parser.add_argument(
        "--stall-timeout",
        type=arguments.seconds,
        metavar="S",
        help="end the job when a process that reported progress (kdist.should_stop, "
        "kdist.barrier) makes none for S seconds, naming it with its stacks (sets "
        "KDIST_STALL_TIMEOUT; default: off)",
    )
    parser.add_argument(
        "--max-restarts",
        type=arguments.non_negative_int,
        default=0,
        metavar="N",
        help="after a failure or a stop, end every process and start the whole job again on "
        "a fresh coordinator port, at most N times; each process gets its attempt in "
        "KDIST_RESTART_COUNT (0 first) and the exit status is the last attempt's "
        "(default: 0, no restart)",
    )
    parser.add_argument(
        "--log-dir",
        type=Path,
        metavar="DIR",
        help="also write every line of process I of attempt A to DIR/attempt-A/process-I.log",
    )
    parser.add_argument(
        "--quiet-processes",
        type=arguments.ProcessIds.parse,
        default=arguments.ProcessIds([]),
        metavar="IDS",
        help="keep these processes' lines off the console (e.g. 1- : every process but 0; "
        "2,5-7; all); they still reach --log-dir, and a failed process's last lines are "
        "still printed",
    )
    parser.add_argument(
        "--no-warm",
        action="store_true",
        help="start every attempt's processes cold: no warm spares (by default each local "
        "process of a `python PROGRAM` / `python -m MODULE` job has a spare interpreter that "
        "has imported JAX, Keras and kdist and waits to run its next attempt)",
    )
    parser.add_argument(
        "--preload",
        type=arguments.module_names,
        default=[],
        metavar="MODULES",
        help="comma-separated modules the warm spares import besides JAX, jaxlib, Keras "
        "(KERAS_BACKEND=jax) and kdist, e.g. orbax.checkpoint,my_model",
    )
    nodes = parser.add_argument_group(
        "several machines (the same command on every machine; docs/configuration.md, "
        '"Several machines without a scheduler")'
    )
    nodes.add_argument(
        "--nodes",
        type=arguments.node_range,
        metavar="MIN[:MAX]",
        help="run the job across MIN to MAX machines, -n processes on each: one agent per "
        "machine, joined through --rendezvous; a machine lost or drained (SIGTERM to its "
        "agent: it exits 143) and one arriving re-form the job at its new size; exit 75 when "
        "fewer than MIN remain after --join-timeout, 69 when this machine loses the rendezvous",
    )
    nodes.add_argument(
        "--rendezvous",
        metavar="HOST:PORT",
        help="the nodes' rendezvous: served by the agent on the machine that owns HOST "
        "(checked by binding), or by `kdist rendezvous serve`; `auto` under Slurm: the "
        "allocation's first host, a port from the job id",
    )
    nodes.add_argument(
        "--job-id",
        default="",
        metavar="ID",
        help="the job's id (default: none; with --rendezvous auto, Slurm's SLURM_JOB_ID)",
    )
    nodes.add_argument(
        "--node-name",
        default="",
        metavar="NAME",
        help="this machine's name (default: Slurm's SLURMD_NODENAME, else the host name)",
    )
    nodes.add_argument(
        "--last-call",
        type=arguments.seconds,
        default=30.0,
        metavar="S",
        help="with MIN machines in, form the job when no other joined for S seconds (default: 30)",
    )
    nodes.add_argument(
        "--join-timeout",
        type=arguments.seconds,
        default=300.0,
        metavar="S",
        help="bound of every wait for MIN machines (default: 300); then every agent exits 75",
    )
    nodes.add_argument(
        "--scale-up-after",
        type=arguments.scale_up_after,
        default=arguments.SCALE_UP_AFTER_DEFAULT,
        metavar="S|never",
        help="a machine arriving while the job runs with fewer than MAX: after S seconds the "
        "job stops at one agreed step (a save) and goes on with it (default: "
        f"{arguments.SCALE_UP_AFTER_DEFAULT:g}); never: a running job admits nobody",
    )
    nodes.add_argument(
        "--global-batch",
        type=arguments.positive_int,
        metavar="B",
        help="refuse to start unless B splits evenly over the processes at every node count "
        "MIN..MAX (a constant global batch resumes exactly on another shape)",
    )
    nodes.add_argument(
        "--token-file",
        type=Path,
        metavar="F",
        help="the job's token (else KDIST_ROLL_CALL_TOKEN); required off loopback; refused "
        "when others can read F",
    )
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND ...",
        help="the program each process runs, with its arguments",
    )

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
        return _run_nodes(command, args, parser)
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
    )


def _run_nodes(
    command: list[str], args: argparse.Namespace, parser: argparse.ArgumentParser
) -> int:
    """`kdist launch --nodes`: this machine's agent (kdist._agent)."""
    from kdist._agent.global_batch import global_batch_problem
    from kdist._agent.node import NodeOptions, run_node
    from kdist._start import environment_fingerprint

    if args.rendezvous is None:
        parser.error("--nodes needs --rendezvous HOST:PORT, the same on every machine")
    token = os.environ.get("KDIST_ROLL_CALL_TOKEN", "")
    if args.token_file is not None:
        try:
            token = arguments.token_file(args.token_file)
        except ValueError as error:
            parser.error(str(error))
    min_nodes, max_nodes = args.nodes
    if args.global_batch is not None:
        problem = global_batch_problem(args.global_batch, min_nodes, max_nodes, args.num_processes)
        if problem is not None:
            print(f"kdist launch: refused before joining: {problem}", file=sys.stderr)
            return EXIT_USAGE
    # The window after which a silent host is lost: the processes' liveness channel and the
    # rendezvous's connections use the same one (KDIST_UNREACHABLE_TIMEOUT).
    unreachable = os.environ.get(UNREACHABLE_TIMEOUT_VARIABLE, "")
    try:
        unreachable_timeout = arguments.seconds(unreachable) if unreachable else 20.0
    except argparse.ArgumentTypeError as error:
        print(
            f"kdist launch: {UNREACHABLE_TIMEOUT_VARIABLE} (from the environment): {error}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:  # this machine's GPUs, each of its processes its own block, as without --nodes
        gpus = _gpus_per_process(args.num_processes, args.devices_per_process)
    except GpuSplitError as error:
        print(f"kdist launch: refused before starting any process: {error}", file=sys.stderr)
        return EXIT_USAGE
    return run_node(
        command,
        NodeOptions(
            min_nodes=min_nodes,
            max_nodes=max_nodes,
            rendezvous=args.rendezvous,
            processes_per_node=args.num_processes,
            job_id=args.job_id,
            node_name=args.node_name,
            last_call=args.last_call,
            join_timeout=args.join_timeout,
            max_restarts=args.max_restarts,
            log_dir=args.log_dir,
            token=token,
            devices_per_process=args.devices_per_process,
            gpus=None if gpus is None else tuple(gpus),
            grace=args.grace,
            unreachable_timeout=unreachable_timeout,
            scale_up_after=args.scale_up_after,
            warm=not args.no_warm,
            preload=tuple(args.preload),
            environment=tuple(
                (e.name, e.value, e.must_match)
                # The program's script and arguments, not the agent's (--node-name differs).
                for e in environment_fingerprint.collect(argv=command)
            ),
        ),
    )


@dataclass
class AttemptRecord:
    """One run of the whole job, and how it ended (a row of the attempts table)."""

    number: int
    port: int
    status: int = 0
    ended: str = "every process exited 0"
    failure: str = ""  # the first failure: process, host, pid and its last error line
    seconds: float = 0.0
    final: bool = False  # nothing may follow it (success, a launcher signal, the timeout)


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
            timeout). Each process gets its attempt in KDIST_RESTART_COUNT (0
            first). Defaults to 0: it runs once.
        log_dir: When set, every line of process i of attempt a also goes to
            `log_dir/attempt-<a>/process-<i>.log` (both streams as they arrive,
            without the prefix). Defaults to None: no files.
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

    Unless JAX's cache variables are set, every attempt shares one persistent
    compilation cache (in `log_dir` when given, else a folder removed at the end).

    After the first non-zero exit the others get SETTLE_SECONDS to leave by
    themselves (kdist's liveness channel ends them at once), then SIGTERM and,
    after `grace`, SIGKILL. The launcher then names the first failure (the
    process kdist's channel named, else the first to exit non-zero), prints its
    last lines (its traceback) and a summary table: process, host, pid, how it
    ended, when, its last error line, with the first failure marked. With
    restarts, a last table has one row per attempt.

    Returns:
        The last attempt's status: 0 when every process exited with 0; else
        its first failure's status (128 + N for a process killed by signal N);
        128 + N when the launcher received signal N; 124 on timeout; 127 (126)
        when the command cannot be found (executed).

    Example:
        >>> from kdist._cli.launch import launch
        >>> launch(["true"], num_processes=2)  # doctest: +SKIP
        0
    """
    output = Output(out or sys.stdout.buffer, err or sys.stderr.buffer)
    try:
        gpus = _gpus_per_process(num_processes, devices_per_process)
    except GpuSplitError as error:
        output.note(f"refused before starting any process: {error}")
        return EXIT_USAGE
    received: list[int] = []
    previous = {
        s: signal.signal(s, lambda signum, _frame: received.append(signum))
        for s in _FORWARDED_SIGNALS
    }
    options = _JobOptions(
        num_processes,
        devices_per_process,
        stall_timeout,
        log_dir,
        quiet_processes,
        grace,
        timeout,
        None if timeout is None else time.monotonic() + timeout,
        gpus,
    )
    attempts: list[AttemptRecord] = []
    cache = compile_cache.plan(os.environ, log_dir)
    if cache.folder is None and "cannot" in cache.said:
        output.note(cache.said)
    options.cache_variables = cache.variables
    # Spares only where an attempt can follow (on Linux: they ask to die with the launcher).
    if warm and max_restarts and sys.platform.startswith("linux"):
        options.spares = SparePool(preload, note=output.note)
    try:
        for number in range(max_restarts + 1):
            if number:
                output.note(
                    f"attempt {number - 1} {attempts[-1].ended}; starting the job again "
                    f"(attempt {number} of at most {max_restarts + 1})"
                )
            if options.spares is not None:
                options.spares.keep = number < max_restarts  # no spare after the last
            attempt = AttemptRecord(number, port or _free_port())
            attempts.append(attempt)
            _run_attempt(command, attempt, options, output, received)
            if attempt.final or attempt.status == 0:
                break
        if len(attempts) > 1 or max_restarts:
            output.note("attempts:\n" + _attempt_table(attempts))
        return attempts[-1].status
    finally:
        if options.spares is not None:
            options.spares.close()
        cache.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@dataclass
class _JobOptions:
    """What every attempt of one `launch()` shares."""

    num_processes: int
    devices_per_process: int | None
    stall_timeout: float | None
    log_dir: Path | None
    quiet_processes: Container[int]
    grace: float
    timeout: float | None
    ends_at: float | None  # the monotonic time at which the timeout stops the job
    gpus: list[str] | None  # each process's CUDA_VISIBLE_DEVICES, by id; None: left alone
    # JAX's compilation cache variables (kdist._local_job.compile_cache), the same for all.
    cache_variables: dict[str, str] = field(default_factory=dict)
    spares: SparePool | None = None  # warm spares for the next attempt; None: cold starts


def _gpus_per_process(num_processes: int, devices_per_process: int | None) -> list[str] | None:
    """Each process's CUDA_VISIBLE_DEVICES on this machine (kdist._local_job.gpu_split), or
    None: no GPUs, or the processes run on JAX's CPU backend."""
    if devices_per_process is not None:
        return None
    from kdist._start.accelerators import find_accelerators

    gpus = job_gpus(os.environ, find_accelerators()["nvidia_gpus"])
    return None if gpus is None else split_gpus(gpus, num_processes)


def _run_attempt(
    command: Sequence[str],
    attempt: AttemptRecord,
    options: _JobOptions,
    output: Output,
    received: list[int],
) -> None:
    """Runs one attempt of the job (kdist._local_job.attempt) and fills in `attempt`."""
    records = Path(tempfile.mkdtemp(prefix="kdist-launch-"))
    envs = environments(
        os.environ,
        num_processes=options.num_processes,
        port=attempt.port,
        devices_per_process=options.devices_per_process,
    )
    for i, env in enumerate(envs):
        env.update(options.cache_variables)
        env[RESTART_COUNT_VARIABLE] = str(attempt.number)
        if options.gpus is not None:
            env[CUDA_VISIBLE_DEVICES] = options.gpus[i]
        if options.stall_timeout is not None:
            env["KDIST_STALL_TIMEOUT"] = repr(options.stall_timeout)
    log_files = None
    if options.log_dir is not None:
        folder = options.log_dir / f"attempt-{attempt.number}"
        log_files = [folder / f"process-{i}.log" for i in range(options.num_processes)]

    def started(job: Job) -> None:
        count = options.num_processes
        output.note(
            f"started {count} process{'es' if count != 1 else ''} "
            f"(pids {', '.join(str(p.pid) for p in job.processes)}), coordinator "
            f"127.0.0.1:{attempt.port}"
            + (f", attempt {attempt.number}" if attempt.number else "")
            + (f", logs in {log_files[0].parent}" if log_files else "")
            + (
                "; GPUs (CUDA_VISIBLE_DEVICES): "
                + ", ".join(f"process {i}: {ids}" for i, ids in enumerate(options.gpus))
                if options.gpus is not None
                else ""
            )
            + _warm_words(job, options.spares)
        )

    def failed(job: Job, process: Process) -> None:
        others = [p for p in job.processes if p is not process and p.poll() is None]
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
        output.note(f"timed out after {options.timeout:g} s; stopping every process")

    run = Attempt(
        command,
        envs,
        records,
        output,
        received,
        deadline=options.ends_at,
        grace=options.grace,
        hooks=Hooks(started=started, failed=failed, signalled=signalled, deadline=deadline),
        quiet=options.quiet_processes,
        log_files=log_files,
        spares=options.spares,
    )
    try:
        end = run.run()
        _record_end(run, end, attempt, command, output)
    finally:
        attempt.seconds = run.seconds
        shutil.rmtree(records, ignore_errors=True)


def _warm_words(job: Job, spares: SparePool | None) -> str:
    """ "; warm: 0, 1 (spares of about 262 MiB each)" when processes started warm."""
    warm = [str(p.process_id) for p in job.processes if p.warm]
    if not warm:
        return ""
    memory = None if spares is None else spares.last_memory_mib
    size = f" (spares of about {memory:.0f} MiB each)" if memory is not None else ""
    return f"; warm: {', '.join(warm)}{size}"


def _record_end(
    run: Attempt, end: End, attempt: AttemptRecord, command: Sequence[str], output: Output
) -> None:
    """What the attempt's end means for the launcher: its notes, status and summary."""
    job = run.job
    if end is End.CANNOT_START:
        assert run.error is not None
        attempt.status, attempt.final = _cannot_run(command, run.error, output), True
        attempt.ended = f"could not start (status {attempt.status})"
    elif end is End.STOPPED:
        assert run.signum is not None
        ending = job.ending()
        if ending is not None:
            output.note(ending)
        attempt.status, attempt.final = 128 + run.signum, True
        attempt.ended = f"stopped by the launcher's {signal.Signals(run.signum).name}"
    elif end is End.TIMED_OUT:
        attempt.status, attempt.final = EXIT_TIMEOUT, True
        attempt.ended = "timed out"
    elif end is End.FAILED:
        assert run.failed is not None
        _blame(job, run.failed, attempt)
    else:
        attempt.status, attempt.final = 0, True


def _cannot_run(command: Sequence[str], error: OSError, output: Output) -> int:
    """The note and the status (as a shell's) when the command cannot be started."""
    if isinstance(error, FileNotFoundError):
        output.note(f"cannot run {command[0]!r}: no such file or command")
        return EXIT_NOT_FOUND
    if isinstance(error, PermissionError):
        output.note(f"cannot run {command[0]!r}: permission denied")
        return EXIT_CANNOT_EXECUTE
    # ENOEXEC (not a program nor a #! script), ENOTDIR, ...
    output.note(f"cannot run {command[0]!r}: {error.strerror or error}")
    return EXIT_CANNOT_EXECUTE


def _print_last_lines(job: Job, process: Process) -> None:
    """The last lines the first failed process wrote (its traceback), above the summary."""
    lines = process.last_lines(_TAIL_LINES)
    if not lines:
        return
    job.output.note(
        f"the last lines of process {process.process_id}:\n"
        + "\n".join(f"  {line}" for line in lines)
    )


def _blame(job: Job, failed: Process, attempt: AttemptRecord) -> None:
    """After a failure, once every process has left: how kdist ended the job when it
    stopped or stalled; else the first failure (the one kdist named, else the first
    non-zero exit), its last lines and the summary table; and that status."""
    assert failed.status is not None
    ending = job.ending()
    if ending is not None:  # the job stopped or stalled, as kdist decided
        job.output.note(ending)
        job.output.note("summary:\n" + job.summary())
        attempt.status, attempt.ended = failed.status, ending.split(":", 1)[0]
        attempt.failure = ending.split(":", 1)[1].strip() if ":" in ending else ""
        return
    first = job.first_failure() or failed
    assert first.status is not None
    _print_last_lines(job, first)
    job.output.note(
        f"process {first.process_id} failed first ({first.ended_how()})"
        + (f": {first.error_line}" if first.error_line else "")
    )
    job.output.note("summary:\n" + job.summary())
    attempt.status = first.status
    attempt.ended = f"failed ({first.ended_how()})"
    attempt.failure = job.describe_failure(first)


def _attempt_table(attempts: Sequence[AttemptRecord]) -> str:
    """One row per attempt: its number, port, status, how it ended, how long it ran and
    its first failure."""
    rows = [("attempt", "port", "status", "after", "ended", "first failure")]
    for a in attempts:
        rows.append(
            (
                str(a.number),
                str(a.port),
                str(a.status),
                f"{a.seconds:.2f} s",
                a.ended,
                shortened(a.failure),
            )
        )
    return "\n".join("  " + line for line in table(rows))


def _free_port() -> int:
    # The core owns the free-port rule; imported here so that `kdist --help` loads no core.
    from kdist import _core

    return _core.free_port()
