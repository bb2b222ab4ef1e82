"""`kdist launch`'s command line: its options, in three groups (this machine's processes,
their attempts, a job across machines). What runs it: kdist._cli.launch (one machine) and
kdist._cli.launch_nodes (`--nodes`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kdist._cli import arguments

_DESCRIPTION = """\
Start COMMAND as N processes of one job on this machine (with --nodes, N on each of
several machines: one agent per machine, the same command on each; see the options of
"several machines" below). Each process gets
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


def build_launch_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Adds `kdist launch` and its options to the `kdist` command line; returns its parser."""
    parser = commands.add_parser(
        "launch",
        help="start a job: N processes on this machine, or on each of several machines (--nodes)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_process_options(parser)
    _add_attempt_options(parser)
    _add_warm_options(parser)
    _add_node_options(parser)
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND ...",
        help="the program each process runs, with its arguments",
    )
    return parser


def _add_process_options(parser: argparse.ArgumentParser) -> None:
    """This machine's processes: how many, their devices, the coordinator's port."""
    parser.add_argument(
        "-n",
        "--num-processes",
        type=arguments.positive_int,
        required=True,
        metavar="N",
        help="number of processes to start on this machine (with --nodes: on each machine)",
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


def _add_attempt_options(parser: argparse.ArgumentParser) -> None:
    """How an attempt ends and starts again: timeout, grace, stall, restarts, logs."""
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
    add_metrics_option(parser)
    parser.add_argument(
        "--quiet-processes",
        type=arguments.ProcessIds.parse,
        default=arguments.ProcessIds([]),
        metavar="IDS",
        help="keep these processes' lines off the console (e.g. 1- : every process but 0; "
        "2,5-7; all); they still reach --log-dir, and a failed process's last lines are "
        "still printed",
    )


def _add_warm_options(parser: argparse.ArgumentParser) -> None:
    """Warm restarts: a spare interpreter per process, ready for the next attempt."""
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


def _add_node_options(parser: argparse.ArgumentParser) -> None:
    """A job across machines: one agent per machine, joined through a rendezvous."""
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
        "allocation's first host, a port from the job id; etcd://HOST:PORT[,HOST:PORT...]"
        "[/PREFIX]: kept in etcd, served by any agent, so that no machine is a single point "
        "of failure (https:// endpoints and etcdctl's ETCDCTL_* variables for TLS and users)",
    )
    nodes.add_argument(
        "--job-id",
        metavar="ID",
        help="the job's id (default: none; with --rendezvous auto or etcd:// under Slurm, "
        "Slurm's SLURM_JOB_ID; etcd:// needs one: its keys live under PREFIX/ID/)",
    )
    nodes.add_argument(
        "--node-name",
        metavar="NAME",
        help="this machine's name (default: Slurm's SLURMD_NODENAME, else the host name)",
    )
    _add_forming_options(nodes)


def add_metrics_option(parser: argparse.ArgumentParser) -> None:
    """--metrics-port: /metrics for Prometheus (kdist._agent.metrics)."""
    parser.add_argument(
        "--metrics-port",
        type=arguments.port,
        metavar="PORT",
        help="serve /metrics for Prometheus on PORT (the job's attempt, nodes, processes, "
        "step, restarts by cause, time by phase and goodput; needs prometheus_client: "
        "pip install 'kdist[metrics]'; default: off)",
    )


def add_thrash_guard_options(
    group: argparse.ArgumentParser | argparse._ArgumentGroup,
) -> None:
    """--max-reforms and --reform-window (`kdist launch --nodes`, `kdist rendezvous serve`);
    their texts are checked by the core with the other agent settings."""
    group.add_argument(
        "--max-reforms",
        metavar="N",
        help="the thrash guard: end the job (status 1) after more than N re-forms (a machine "
        "lost, drained or added) of attempts that made no progress — no backup saved, no "
        "step past their start — within --reform-window (default: 4, or KDIST_MAX_REFORMS)",
    )
    group.add_argument(
        "--reform-window",
        metavar="S",
        help="the thrash guard's window in seconds (default: 600, or KDIST_REFORM_WINDOW); a "
        "job that keeps saving between re-forms is never ended by it",
    )


def _add_forming_options(nodes: argparse._ArgumentGroup) -> None:
    """When a job across machines forms, waits and grows."""
    nodes.add_argument(
        "--last-call",
        type=arguments.seconds,
        metavar="S",
        help="with MIN machines in, form the job when no other joined for S seconds (default: 30)",
    )
    nodes.add_argument(
        "--join-timeout",
        type=arguments.seconds,
        metavar="S",
        help="bound of every wait for MIN machines (default: 300); then every agent exits 75",
    )
    nodes.add_argument(
        "--scale-up-after",
        metavar="S|never",
        help="a machine arriving while the job runs with fewer than MAX: after S seconds the "
        "job stops at one agreed step (a save) and goes on with it (default: 30); never: a "
        "running job admits nobody",
    )
    add_thrash_guard_options(nodes)
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
