"""The `kdist` command line (also `python -m kdist`): `doctor`, `launch` and `bench`.

Importing this module imports neither JAX nor the compiled core; each
command imports what it needs when it runs (parsing a port or a duration
option imports the core, which owns those rules).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

_DESCRIPTION = """\
kdist: start multi-process JAX jobs fast, checked and explained.
"""

_EPILOG = """\
examples:
  kdist doctor
  kdist doctor --json
  kdist launch -n 2 --devices-per-process 2 -- python examples/hello_cluster.py
  kdist launch -n 4 --devices-per-process 2 -- kdist bench
"""

_BENCH_DESCRIPTION = """\
Run as every process of a job: each process calls kdist.initialize() (configured
as usual: arguments are not taken, so KERAS_DISTRIBUTION_*, KDIST_* or a detected
scheduler), times its phases, and sends its record to process 0 through
jax.distributed's key-value store. Process 0 prints one row per process: when it
arrived (relative to the first arrival), how long it waited in the
roll call, how long jax.distributed.initialize took, when it was ready, and its
devices (local/global). A phase that did not run (no roll call with preflight
off or a single process) shows as "-".

exit status: 0 on success, 1 when initialize() fails or (process 0) a process's
record does not arrive within the initialize() timeout.
"""

_BENCH_EPILOG = """\
examples:
  kdist launch -n 4 --devices-per-process 2 -- kdist bench
  srun --ntasks=8 kdist bench
  kdist launch -n 2 -- kdist bench --json | python -m json.tool
"""

_DOCTOR_DESCRIPTION = """\
Show how kdist.initialize() would configure this process, without starting
anything: every resolved value with its source (argument, KERAS_DISTRIBUTION_*
or KDIST_* variable, detected scheduler, default), what each scheduler detector
makes of the environment, the accelerators this machine has (found without
importing JAX: device nodes such as /dev/nvidia*, /dev/accel*, /dev/kfd, and
variables such as CUDA_VISIBLE_DEVICES), and a bounded TCP probe of the
coordinator's address.

exit status: 0 when the configuration is valid, 1 when it is not, 2 on a usage
error. JAX is imported only with --devices.
"""

_DOCTOR_EPILOG = """\
examples:
  kdist doctor
  KERAS_DISTRIBUTION_JOB_ADDRESSES=10.0.0.1:1234 KERAS_DISTRIBUTION_NUM_PROCESSES=2 \\
    KERAS_DISTRIBUTION_PROCESS_ID=1 kdist doctor
  srun --ntasks=2 kdist doctor --no-probe      # what each Slurm task would resolve
  mpirun -n 4 kdist doctor --exit-zero          # every rank reports, valid or not
  kdist doctor --json | python -m json.tool
  kdist doctor --devices                        # also ask JAX which devices it sees
"""

_LAUNCH_DESCRIPTION = """\
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
table has one row per attempt. Each process it started dies with the launcher,
even when the launcher is killed with SIGKILL (Linux). Their own children are
stopped with them (each process runs in its own process group) when the launcher
ends the job, but not when the launcher is killed with SIGKILL: a program that
starts children should make them exit with it.
"""

_LAUNCH_EPILOG = """\
examples:
  kdist launch -n 2 --devices-per-process 2 -- python examples/hello_cluster.py
  kdist launch -n 4 --port 12345 --timeout 600 -- python train.py --epochs 3
  kdist launch -n 2 -- bash -c 'echo "process $KERAS_DISTRIBUTION_PROCESS_ID"'
  kdist launch -n 8 --max-restarts 3 --log-dir logs --quiet-processes 1- -- python train.py
"""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


class ProcessIds:
    """A set of process ids from text: "1,3", "2-5", "1-" (1 and every id after it),
    "all".

    Example:
        >>> from kdist._cli.main import ProcessIds
        >>> ids = ProcessIds.parse("0,4-5,9-")
        >>> [i for i in range(12) if i in ids]
        [0, 4, 5, 9, 10, 11]
    """

    def __init__(self, ranges: list[tuple[int, int | None]]) -> None:
        self.ranges = ranges  # (first, last or None: no end), inclusive

    def __contains__(self, process_id: object) -> bool:
        if not isinstance(process_id, int):
            return False
        return any(
            first <= process_id and (last is None or process_id <= last)
            for first, last in self.ranges
        )

    @classmethod
    def parse(cls, text: str) -> ProcessIds:
        if text.strip() == "all":
            return cls([(0, None)])
        ranges: list[tuple[int, int | None]] = []
        for part in text.split(","):
            first, dash, last = part.strip().partition("-")
            try:
                low = int(first)
                high = (int(last) if last else None) if dash else low
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"expected process ids such as 1,3 or 2-5 or 1- (1 and every id "
                    f"after it) or all, got {text!r}"
                ) from None
            if low < 0 or (high is not None and high < low):
                raise argparse.ArgumentTypeError(
                    f"expected ids >= 0 and ranges low-high with low <= high, got {part!r}"
                )
            ranges.append((low, high))
        return cls(ranges)


def _port(text: str) -> int:
    """argparse's `type=` for a port: the core parses it (1..65535)."""
    from kdist import _core
    from kdist._errors import ConfigError

    try:
        return _core.parse_port(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(f"{text!r} {error}") from None


def _seconds(text: str) -> float:
    """argparse's `type=` for a duration: the core parses it (positive seconds, at most the
    longest timeout it accepts)."""
    from kdist import _core
    from kdist._errors import ConfigError

    try:
        return _core.parse_timeout_seconds(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(f"{error}, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """Returns the parser of the `kdist` command line.

    Returns:
        An `argparse.ArgumentParser` with the `doctor`, `launch` and `bench`
        commands.

    Example:
        >>> from kdist._cli.main import build_parser
        >>> build_parser().parse_args(["launch", "-n", "2", "--", "true"]).num_processes
        2
    """
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="kdist", description=_DESCRIPTION, epilog=_EPILOG, formatter_class=formatter
    )
    parser.add_argument("--version", action="store_true", help="print kdist's version and exit")
    commands = parser.add_subparsers(dest="command_name", metavar="COMMAND", title="commands")

    doctor = commands.add_parser(
        "doctor",
        help="show the resolved configuration, the detected scheduler, the local "
        "accelerators and whether the coordinator answers",
        description=_DOCTOR_DESCRIPTION,
        epilog=_DOCTOR_EPILOG,
        formatter_class=formatter,
    )
    doctor.add_argument("--json", action="store_true", help="print one JSON object for machines")
    doctor.add_argument(
        "--devices",
        action="store_true",
        help="also import JAX and list the devices it sees (starts JAX's backend)",
    )
    doctor.add_argument(
        "--no-probe", action="store_true", help="do not connect to the coordinator's address"
    )
    doctor.add_argument(
        "--probe-timeout",
        type=_seconds,
        default=2.0,
        metavar="S",
        help="give up connecting to the coordinator after S seconds (default: 2)",
    )
    doctor.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 once the report is printed, even when the configuration is invalid: "
        "under mpirun, mpiexec or srun a rank that exits non-zero gets the others killed "
        "before they report",
    )

    launch = commands.add_parser(
        "launch",
        help="start an N-process job on this machine (loopback)",
        description=_LAUNCH_DESCRIPTION,
        epilog=_LAUNCH_EPILOG,
        formatter_class=formatter,
    )
    launch.add_argument(
        "-n",
        "--num-processes",
        type=_positive_int,
        required=True,
        metavar="N",
        help="number of processes to start",
    )
    launch.add_argument(
        "--devices-per-process",
        type=_positive_int,
        metavar="K",
        help="run each process on JAX's CPU backend with K devices (sets JAX_PLATFORMS=cpu "
        "and JAX_NUM_CPU_DEVICES=K); by default the processes see this machine's devices",
    )
    launch.add_argument(
        "--port",
        type=_port,
        metavar="P",
        help="the coordinator's port on 127.0.0.1 (default: a free port)",
    )
    launch.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="stop the whole job after S seconds and exit with status 124 (default: no limit)",
    )
    launch.add_argument(
        "--grace",
        type=_seconds,
        default=30.0,
        metavar="S",
        help="seconds the processes get to exit after a forwarded SIGTERM (or Ctrl-C) before "
        "SIGKILL: kdist's processes stop together at one agreed step meanwhile (default: 30)",
    )
    launch.add_argument(
        "--stall-timeout",
        type=_seconds,
        metavar="S",
        help="end the job when a process that reported progress (kdist.should_stop, "
        "kdist.barrier) makes none for S seconds, naming it with its stacks (sets "
        "KDIST_STALL_TIMEOUT; default: off)",
    )
    launch.add_argument(
        "--max-restarts",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="after a failure or a stop, end every process and start the whole job again on "
        "a fresh coordinator port, at most N times; each process gets its attempt in "
        "KDIST_RESTART_COUNT (0 first) and the exit status is the last attempt's "
        "(default: 0, no restart)",
    )
    launch.add_argument(
        "--log-dir",
        type=Path,
        metavar="DIR",
        help="also write every line of process I of attempt A to DIR/attempt-A/process-I.log",
    )
    launch.add_argument(
        "--quiet-processes",
        type=ProcessIds.parse,
        default=ProcessIds([]),
        metavar="IDS",
        help="keep these processes' lines off the console (e.g. 1- : every process but 0; "
        "2,5-7; all); they still reach --log-dir, and a failed process's last lines are "
        "still printed",
    )
    launch.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND ...",
        help="the program each process runs, with its arguments",
    )

    bench = commands.add_parser(
        "bench",
        help="time initialize() in every process of a job; process 0 prints a table",
        description=_BENCH_DESCRIPTION,
        epilog=_BENCH_EPILOG,
        formatter_class=formatter,
    )
    bench.add_argument(
        "--json", action="store_true", help="print the records as JSON (process 0) instead"
    )
    bench.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="the deadline of initialize() (default: KDIST_INIT_TIMEOUT, else 300)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the `kdist` command line.

    Args:
        argv: The arguments after the program name. Defaults to None:
            `sys.argv[1:]`.

    Returns:
        The exit status: 0 on success; for `doctor`, 1 when the configuration
        is invalid; for `launch`, the job's status; for `bench`, 1 when
        initialize() fails or a process's record does not arrive; 2 on a
        usage error.

    Example:
        >>> from kdist._cli.main import main
        >>> main(["launch", "-n", "1", "--", "true"])  # doctest: +SKIP
        0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from kdist._version import __version__

        print(f"kdist {__version__}")
        return 0
    if args.command_name == "doctor":
        from kdist._cli import doctor

        return doctor.run(
            as_json=args.json,
            with_devices=args.devices,
            probe=not args.no_probe,
            probe_timeout=args.probe_timeout,
            exit_zero=args.exit_zero,
        )
    if args.command_name == "launch":
        command = list(args.command)
        if command[:1] == ["--"]:
            command = command[1:]
        if not command:
            parser.error(
                "launch needs the command to run after '--', e.g. "
                "kdist launch -n 2 -- python train.py"
            )
        from kdist._cli import launch

        return launch.launch(
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
        )
    if args.command_name == "bench":
        from kdist._cli import bench

        return bench.run(as_json=args.json, timeout=args.timeout)
    parser.print_help(sys.stderr)
    return 2
