"""`kdist launch --nodes`: this machine's agent of a job across machines, from the command
line (kdist._agent). What the agent's settings are is the core's to resolve
(kdist._core.resolve_node_settings); this module only hands it what was given."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Sequence

from kdist._cli import arguments
from kdist._cli.machine_gpus import EXIT_USAGE, gpus_per_process
from kdist._local_job.gpu_split import GpuSplitError
from kdist._local_job.share import MachineOptions, Share, share_environments


def run_nodes(
    command: Sequence[str], args: argparse.Namespace, parser: argparse.ArgumentParser
) -> int:
    """Runs this machine's agent; returns its exit status."""
    from kdist import _core
    from kdist._agent.agent import LocalOptions, run_node
    from kdist._agent.global_batch import global_batch_problem
    from kdist._start import environment_fingerprint

    if args.rendezvous is None:
        parser.error("--nodes needs --rendezvous HOST:PORT, the same on every machine")
    request = _core.NodeRequest()
    request.rendezvous = args.rendezvous
    request.host_name = socket.gethostname()
    request.job_id = args.job_id
    request.node_name = args.node_name
    request.min_nodes, request.max_nodes = args.nodes
    request.processes_per_node = args.num_processes
    request.last_call = args.last_call
    request.join_timeout = args.join_timeout
    request.max_restarts = args.max_restarts
    request.scale_up_after = args.scale_up_after
    request.max_reforms = args.max_reforms
    request.reform_window = args.reform_window
    arguments.set_token_file(request, args.token_file, parser)
    if args.global_batch is not None:
        problem = global_batch_problem(
            args.global_batch, request.min_nodes, request.max_nodes, args.num_processes
        )
        if problem is not None:
            print(f"kdist launch: refused before joining: {problem}", file=sys.stderr)
            return EXIT_USAGE
    try:  # this machine's GPUs, each of its processes its own block, as without --nodes
        gpus = gpus_per_process(args.num_processes, args.devices_per_process)
    except GpuSplitError as error:
        print(f"kdist launch: refused before starting any process: {error}", file=sys.stderr)
        return EXIT_USAGE
    machine = MachineOptions(
        devices_per_process=args.devices_per_process,
        gpus=gpus,
        grace=args.grace,
        log_dir=args.log_dir,
        stall_timeout=args.stall_timeout,
        quiet=args.quiet_processes,
    )
    # What this machine's processes will be: their environment (their devices: JAX's CPU
    # backend with --devices-per-process, their block of GPUs) and the program's script and
    # arguments, not the agent's (--node-name differs). The compile cache's folder is
    # this machine's own: not part of it.
    like = Share(attempt=0, first_id=0, count=args.num_processes,
                 num_processes=args.num_processes, coordinator_port=1)  # fmt: skip
    processes_environ = share_environments(like, machine, os.environ)[0]
    fingerprint = environment_fingerprint.collect(processes_environ, argv=list(command))
    environment = tuple((e.name, e.value, e.must_match) for e in fingerprint)
    local = LocalOptions(
        machine,
        environment,
        warm=not args.no_warm,
        preload=tuple(args.preload),
        metrics_port=args.metrics_port,
    )
    return run_node(command, request, local)
