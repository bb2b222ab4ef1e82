"""`kdist stop`: stop a whole job across machines from any machine, at one agreed step."""

from __future__ import annotations

import argparse
import os
import socket
import sys

from kdist._cli import job_query

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
    job_query.add_query_options(parser)
    parser.set_defaults(run=lambda args: _stop(args, parser))


def _stop(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from kdist import _core, _errors

    settings = job_query.query_settings(args, parser)
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
