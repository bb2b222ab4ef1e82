"""`kdist stop`: stop a whole job across machines from any machine, at one agreed step."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from kdist._cli import arguments

_DESCRIPTION = """\
Stop a `kdist launch --nodes` job from any machine that reaches its rendezvous: every
process of the running attempt stops at one agreed step (kdist.should_stop turns True
there, kdist.BackupAndRestore saves), then every agent leaves with status 143 (before the
job formed, at once). The same token rules as the agents' (--token-file, else
KDIST_ROLL_CALL_TOKEN; required off loopback). Exits 0 once the rendezvous took the
request; 69 when it cannot be reached, 1 when it refused (another job id, a wrong token).
"""

_EPILOG = """\
example:
  kdist stop --rendezvous 10.0.0.1:29400 --job-id run-7 --token-file token
"""

EXIT_REFUSED = 1
EXIT_UNREACHABLE = 69


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `kdist stop` to the `kdist` command line."""
    parser = commands.add_parser(
        "stop",
        help="stop a job across machines at one agreed step, from any machine",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--rendezvous", required=True, metavar="HOST:PORT",
        help="the job's rendezvous, as its agents were given it (auto: under Slurm)",
    )  # fmt: skip
    parser.add_argument("--job-id", metavar="ID", help="the job's --job-id (default: none)")
    parser.add_argument(
        "--token-file", type=Path, metavar="F",
        help="the job's token (else KDIST_ROLL_CALL_TOKEN); required off loopback",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=arguments.seconds, metavar="S",
        help="how long to try to reach the rendezvous (default: 20)",
    )  # fmt: skip
    parser.set_defaults(run=lambda args: _stop(args, parser))


def _stop(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from kdist import _core, _errors

    request = _core.NodeRequest()
    request.rendezvous = args.rendezvous
    request.host_name = socket.gethostname()
    request.job_id = args.job_id
    request.join_timeout = args.timeout or 20.0
    if args.token_file is not None:
        try:
            request.token = arguments.token_file(args.token_file)
        except ValueError as error:
            parser.error(str(error))
        request.token_source = f"--token-file {args.token_file}"
    try:
        settings = _core.resolve_node_settings(request, dict(os.environ))
    except _errors.ConfigError as error:
        parser.error(str(error))
    agent = _core.RendezvousAgent(settings)
    try:
        answer = agent.ask_stop(socket.gethostname(), os.getpid())
    except (_errors.RendezvousTimeoutError, _errors.CoordinatorUnreachableError) as error:
        print(f"kdist stop: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except _errors.RendezvousError as error:
        print(f"kdist stop: {error}", file=sys.stderr)
        return EXIT_REFUSED
    finally:
        agent.close()
    print(f"kdist stop: {answer}", file=sys.stderr)
    return 0
