"""`kdist rendezvous serve`: the nodes' rendezvous on a machine that trains nothing."""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

from kdist._cli import arguments, launch_arguments

_DESCRIPTION = """\
Serve the nodes' rendezvous of `kdist launch --nodes MIN[:MAX] --rendezvous HOST:PORT`
on this machine, which runs none of the job's processes: the agents join it, it forms
each attempt and ends the job. It exits with the job's status (75 when fewer than MIN
machines joined within --join-timeout) and prints one table of the attempts. Its
settings resolve as the agents' do (the unreachable window from KDIST_UNREACHABLE_TIMEOUT,
the token from --token-file or KDIST_ROLL_CALL_TOKEN), and it says each with its source.
"""

_EPILOG = """\
example:
  kdist rendezvous serve --port 29400 --nodes 2:4 --token-file token
  (and on every machine: kdist launch --nodes 2:4 --rendezvous THIS_HOST:29400
   --token-file token -n 8 -- python train.py)
"""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `kdist rendezvous serve` to the `kdist` command line."""
    parser = commands.add_parser(
        "rendezvous",
        help="serve the nodes' rendezvous of `kdist launch --nodes` (trains nothing)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="rendezvous_action", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve it until the job ends",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_serve_options(serve)
    serve.set_defaults(run=lambda args: _serve(args, serve))


def _add_serve_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--port",
        type=arguments.port,
        required=True,
        metavar="P",
        help="the port to serve on: the PORT of every agent's --rendezvous HOST:PORT",
    )
    serve.add_argument(
        "--host",
        default="::",
        metavar="IP",
        help="the address to bind (default: every address of this machine)",
    )
    serve.add_argument(
        "--nodes",
        type=arguments.node_range,
        required=True,
        metavar="MIN[:MAX]",
        help="the job's --nodes, as every agent gives it",
    )
    serve.add_argument("--job-id", metavar="ID", help="the job's --job-id (default: none)")
    serve.add_argument(
        "--last-call",
        type=arguments.seconds,
        metavar="S",
        help="with MIN machines in, form the job when no other joined for S seconds (default: 30)",
    )
    serve.add_argument(
        "--join-timeout",
        type=arguments.seconds,
        metavar="S",
        help="bound of every wait for MIN machines (default: 300); then every agent exits 75",
    )
    serve.add_argument(
        "--max-restarts",
        type=arguments.non_negative_int,
        default=0,
        metavar="N",
        help="start the job again after a failure at most N times (default: 0)",
    )
    serve.add_argument(
        "--scale-up-after",
        metavar="S|never",
        help="a machine arriving while the job runs: after S seconds the job stops at one "
        "agreed step and goes on with it (default: 30); never: a running job admits nobody",
    )
    launch_arguments.add_thrash_guard_options(serve)
    serve.add_argument(
        "--token-file",
        type=Path,
        metavar="F",
        help="the job's token (else KDIST_ROLL_CALL_TOKEN); required off loopback",
    )
    serve.add_argument(
        "--log-dir",
        type=Path,
        metavar="DIR",
        help="write the job's attempts to DIR/attempts.json when it ends",
    )
    serve.add_argument(
        "--linger",
        type=arguments.seconds,
        default=0.0,
        metavar="S",
        help="after the job ended, go on answering `kdist status` for S seconds (default: 0)",
    )
    launch_arguments.add_metrics_option(serve)


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import os

    from kdist import _core, _errors
    from kdist._local_job.attempts_file import ATTEMPTS_FILE, final_goodput, write_attempts
    from kdist._local_job.environment import host_port

    request = _core.NodeRequest()
    request.rendezvous = host_port(args.host, args.port)
    request.serve_only = True
    request.host_name = socket.gethostname()
    request.job_id = args.job_id
    request.min_nodes, request.max_nodes = args.nodes
    request.last_call = args.last_call
    request.join_timeout = args.join_timeout
    request.max_restarts = args.max_restarts
    request.scale_up_after = args.scale_up_after
    request.max_reforms = args.max_reforms
    request.reform_window = args.reform_window
    arguments.set_token_file(request, args.token_file, parser)
    try:
        settings = _core.resolve_node_settings(request, dict(os.environ))
    except _errors.ConfigError as error:
        parser.error(str(error))
    server = _core.RendezvousServer(settings)
    server.listen(settings)
    metrics = None
    if args.metrics_port is not None:
        import json

        from kdist._agent.metrics import serve_metrics

        try:
            metrics = serve_metrics(
                args.metrics_port,
                lambda: json.loads(server.status_json(2.0)),
                socket.gethostname(),
                settings.ip,  # where the rendezvous listens
            )
        except (_errors.PortInUseError, _errors.ConfigError) as error:
            print(f"kdist rendezvous serve: refused before serving: {error}", file=sys.stderr)
            return 2
    if args.linger:
        server.linger_after_end(args.linger)
    server.start()
    sources = settings.sources
    print(
        f"kdist: serving the nodes' rendezvous on {host_port(settings.ip, server.port)} "
        f"(job id {settings.job_id!r}, --nodes {settings.min_nodes}:{settings.max_nodes}; "
        f"an agent is lost after {settings.unreachable_timeout:g} s without an answer, "
        f"{sources['unreachable_timeout']})",
        file=sys.stderr,
    )
    try:
        while not server.wait(1.0):
            pass
    except KeyboardInterrupt:
        server.stop()
    finally:
        if metrics is not None:
            metrics.close()
    if args.log_dir is not None:
        write_attempts(
            args.log_dir / ATTEMPTS_FILE,
            server.attempts,
            int(server.exit_status),
            final_goodput(server.status_json(0.0)),
        )
    return int(server.exit_status)
