"""One machine's share of one attempt of a job: what its processes get, started and
watched as an `Attempt`, and how it ended (`blame`).

`kdist launch -n` (the whole job on this machine) and the agent of `kdist launch --nodes`
(this machine's part of a job across machines) run every attempt through `run_share`, so
each process's variables, its log file and its GPUs are decided here and nowhere else:
KERAS_DISTRIBUTION_* (where the job is), KDIST_RESTART_COUNT (the attempt), the node's
values, the attempt's roll call token, CUDA_VISIBLE_DEVICES, and
`<log dir>/attempt-<A>/process-<I>.log`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kdist import _progress
from kdist._local_job.attempt import Attempt, End, Hooks
from kdist._local_job.blame import Outcome, blame, print_end
from kdist._local_job.environment import child_environment, without_job_variables
from kdist._local_job.gpu_split import CUDA_VISIBLE_DEVICES
from kdist._local_job.job import Job
from kdist._local_job.output import Output
from kdist._local_job.warm import SparePool

# Each process's variables, besides KERAS_DISTRIBUTION_*.
RESTART_COUNT_VARIABLE = "KDIST_RESTART_COUNT"  # the attempt, 0 first
# The previous attempt's process count, from the second attempt on of a job across
# machines (cluster_spec()'s previous_num_processes).
PREVIOUS_NUM_PROCESSES_VARIABLE = "KDIST_PREVIOUS_NUM_PROCESSES"
NODE_RANK_VARIABLE = "KDIST_NODE_RANK"
NUM_NODES_VARIABLE = "KDIST_NUM_NODES"
LOCAL_PROCESS_ID_VARIABLE = "KDIST_LOCAL_PROCESS_ID"
JOB_ID_VARIABLE = "KDIST_JOB_ID"
ROLL_CALL_TOKEN_VARIABLE = "KDIST_ROLL_CALL_TOKEN"  # the attempt's own, never the job's
# The job's run: drawn once by its starter (kdist launch -n) or its rendezvous (--nodes), the
# same in every attempt and another in any other job (a backup folder's lease names it).
RUN_ID_VARIABLE = "KDIST_RUN_ID"
STALL_TIMEOUT_VARIABLE = "KDIST_STALL_TIMEOUT"


@dataclass(frozen=True)
class MachineOptions:
    """What every attempt on this machine shares."""

    devices_per_process: int | None = None  # JAX's CPU backend with K devices each
    # Each local process's CUDA_VISIBLE_DEVICES, by local id (kdist._local_job.gpu_split);
    # None: left alone.
    gpus: tuple[str, ...] | None = None
    grace: float = 30.0  # SIGTERM, then SIGKILL after it
    log_dir: Path | None = None
    stall_timeout: float | None = None  # KDIST_STALL_TIMEOUT for every process
    quiet: Container[int] = ()  # job-wide ids whose lines stay off the console
    # Variables every process of every attempt gets, the same for all (JAX's compilation
    # cache: kdist._local_job.compile_cache).
    job_variables: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NodePlace:
    """This machine's place in a job across machines (`kdist launch --nodes`)."""

    node_rank: int
    num_nodes: int
    job_id: str
    name: str  # the node's name, in its failures


@dataclass(frozen=True)
class Share:
    """This machine's part of one attempt."""

    attempt: int
    first_id: int  # the job-wide id of this machine's first process
    count: int  # this machine's processes
    num_processes: int  # the whole job's
    coordinator_port: int
    coordinator_host: str = "127.0.0.1"
    previous_processes: int = 0  # the previous attempt's count; 0: none or the same job
    node: NodePlace | None = None  # None: the whole job runs on this machine
    roll_call_token: str | None = None  # this attempt's; None: the caller's environment's
    run_id: str = ""  # the job's run (KDIST_RUN_ID); "": none

    @property
    def process_ids(self) -> range:
        return range(self.first_id, self.first_id + self.count)


def share_environments(
    share: Share, options: MachineOptions, base: Mapping[str, str]
) -> list[dict[str, str]]:
    """Each of this machine's processes' environment, in local order: `base` without any
    other job's variables, then the attempt's.

    Example:
        >>> from kdist._local_job.share import MachineOptions, Share, share_environments
        >>> share = Share(attempt=1, first_id=2, count=2, num_processes=4, coordinator_port=9)
        >>> envs = share_environments(share, MachineOptions(), {"SLURM_PROCID": "7"})
        >>> [(e["KERAS_DISTRIBUTION_PROCESS_ID"], e["KDIST_RESTART_COUNT"]) for e in envs]
        [('2', '1'), ('3', '1')]
    """
    inherited = without_job_variables(base)
    envs = []
    for local, process_id in enumerate(share.process_ids):
        env = child_environment(
            inherited,
            process_id=process_id,
            num_processes=share.num_processes,
            port=share.coordinator_port,
            devices_per_process=options.devices_per_process,
            host=share.coordinator_host,
        )
        env.update(options.job_variables)
        env[RESTART_COUNT_VARIABLE] = str(share.attempt)
        if options.gpus is not None:
            env[CUDA_VISIBLE_DEVICES] = options.gpus[local]
        if options.stall_timeout is not None:
            env[STALL_TIMEOUT_VARIABLE] = repr(options.stall_timeout)
        if share.roll_call_token is not None:
            env[ROLL_CALL_TOKEN_VARIABLE] = share.roll_call_token
        if share.run_id:
            env[RUN_ID_VARIABLE] = share.run_id
        if share.previous_processes > 0:
            env[PREVIOUS_NUM_PROCESSES_VARIABLE] = str(share.previous_processes)
        if share.node is not None:
            env[NODE_RANK_VARIABLE] = str(share.node.node_rank)
            env[NUM_NODES_VARIABLE] = str(share.node.num_nodes)
            env[LOCAL_PROCESS_ID_VARIABLE] = str(local)
            env[JOB_ID_VARIABLE] = share.node.job_id
        envs.append(env)
    return envs


def share_log_files(share: Share, options: MachineOptions) -> list[Path] | None:
    """`<log dir>/attempt-<A>/process-<I>.log` for each process (job-wide ids), or None.

    Example:
        >>> from pathlib import Path
        >>> from kdist._local_job.share import MachineOptions, Share, share_log_files
        >>> share = Share(attempt=3, first_id=2, count=1, num_processes=4, coordinator_port=9)
        >>> [str(p) for p in share_log_files(share, MachineOptions(log_dir=Path("logs")))]
        ['logs/attempt-3/process-2.log']
    """
    if options.log_dir is None:
        return None
    folder = options.log_dir / f"attempt-{share.attempt}"
    return [folder / f"process-{i}.log" for i in share.process_ids]


def expect_spares(
    spares: SparePool, command: Sequence[str], share: Share, options: MachineOptions
) -> None:
    """Tells the pool what this machine's processes will run, so that each has a spare
    ready: the environments of `share` (an attempt like the next; a spare keeps none of
    the attempt's own variables, kdist._local_job.warm.spare_environment)."""
    for local, env in enumerate(share_environments(share, options, os.environ)):
        spares.expect(local, command, env)
    spares.maintain()


def warm_words(job: Job, spares: SparePool | None) -> str:
    """ "; warm: 0, 1 (spares of about 262 MiB each)" when processes started warm."""
    warm = [str(p.process_id) for p in job.processes if p.warm]
    if not warm:
        return ""
    memory = None if spares is None else spares.last_memory_mib
    size = f" (spares of about {memory:.0f} MiB each)" if memory is not None else ""
    return f"; warm: {', '.join(warm)}{size}"


@dataclass
class ShareEnd:
    """How this machine's share of an attempt ended."""

    run: Attempt  # its processes (reaped), how it ended, the signal, the start error
    outcome: Outcome
    # A process here saved a backup, or stepped past its first step (kdist._progress).
    progressed: bool = False
    # The steps its processes reported (goodput's: first and newest, with their times).
    steps: _progress.Steps = field(default_factory=_progress.Steps)


def run_share(
    command: Sequence[str],
    share: Share,
    options: MachineOptions,
    output: Output,
    received: list[int],
    *,
    hooks: Hooks | None = None,
    deadline: float | None = None,
    spares: SparePool | None = None,
) -> ShareEnd:
    """Starts this machine's processes of the attempt, watches them to one end, stops what
    is left, and blames (kdist._local_job.blame); after a failure, prints the first
    failure's last lines and the summary (print_end). Its records folder lives as long as
    the call.

    Args:
        command: The program and its arguments, the same for every process.
        share: This machine's part of the attempt.
        options: What every attempt on this machine shares.
        output: Where the processes' lines and the notes go.
        received: The signals the starter received (the attempt forwards them).
        hooks: What the starter does at the attempt's turning points.
        deadline: A monotonic time at which the attempt is stopped; None: no limit.
        spares: Warm spares (kdist._local_job.warm): local process i runs in its spare
            when one is ready; None: every process starts cold.
    """
    records = Path(tempfile.mkdtemp(prefix="kdist-attempt-"))
    try:
        run = Attempt(
            command,
            share_environments(share, options, os.environ),
            records,
            output,
            received,
            deadline=deadline,
            grace=options.grace,
            hooks=hooks or Hooks(),
            quiet=options.quiet,
            log_files=share_log_files(share, options),
            first_id=share.first_id,
            spares=spares,
        )
        run.run()
        name = share.node.name if share.node is not None else ""
        outcome = blame(run, name)
        if run.end is End.FAILED:  # while the records are there: the summary reads them
            print_end(run.job, outcome)
        return ShareEnd(run, outcome, run.progressed(), run.steps())
    finally:
        shutil.rmtree(records, ignore_errors=True)  # after the records were read
