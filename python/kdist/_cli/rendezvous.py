"""`kdist rendezvous serve`: the nodes' rendezvous on a machine that trains nothing."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kdist._cli import arguments

_DESCRIPTION = """\
Serve the nodes' rendezvous of `kdist launch --nodes MIN[:MAX] --rendezvous HOST:PORT`
on this machine, which runs none of the job's processes: the agents join it, it forms
each attempt and ends the job. It exits with the job's status (75 when fewer than MIN
machines joined within --join-timeout) and prints one table of the attempts.
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
    serve = actions.add_parser("serve", help="serve it until the job ends")
    serve.add_argument("--port", type=arguments.port, required=True, metavar="P")
    serve.add_argument(
        "--host", default="::", metavar="IP", help="the address to bind (default: every one)"
    )
    serve.add_argument("--nodes", type=arguments.node_range, required=True, metavar="MIN:MAX")
    serve.add_argument("--job-id", default="", metavar="ID")
    serve.add_argument("--last-call", type=arguments.seconds, default=30.0, metavar="S")
    serve.add_argument("--join-timeout", type=arguments.seconds, default=300.0, metavar="S")
    serve.add_argument("--max-restarts", type=arguments.non_negative_int, default=0, metavar="N")
    serve.add_argument(
        "--scale-up-after",
        type=arguments.scale_up_after,
        default=arguments.SCALE_UP_AFTER_DEFAULT,
        metavar="S|never",
    )
    serve.add_argument("--token-file", type=Path, metavar="F")
    serve.set_defaults(run=lambda args: _serve(args, serve))


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from kdist import _core

    token = os.environ.get("KDIST_ROLL_CALL_TOKEN", "")
    if args.token_file is not None:
        try:
            token = arguments.token_file(args.token_file)
        except ValueError as error:
            parser.error(str(error))
    if not token and not _core.is_loopback_address(args.host):
        parser.error(
            "a rendezvous off loopback needs the job's token: KDIST_ROLL_CALL_TOKEN or "
            "--token-file F, the same on every machine"
        )
    min_nodes, max_nodes = args.nodes
    server = _core.RendezvousServer(
        args.job_id,
        min_nodes,
        max_nodes,
        0,
        args.last_call,
        args.join_timeout,
        args.max_restarts,
        token,
        scale_up_after=-1.0 if args.scale_up_after is None else args.scale_up_after,
    )
    server.listen(args.host, args.port)
    server.start()
    print(f"kdist: serving the nodes' rendezvous on port {server.port}", file=sys.stderr)
    try:
        while not server.wait(1.0):
            pass
    except KeyboardInterrupt:
        server.stop()
    return int(server.exit_status)
