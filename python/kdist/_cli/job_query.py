"""What `kdist stop` and `kdist status` share: the options that reach a running job's
rendezvous from any machine (--rendezvous, --job-id, --token-file, --timeout, the agents'
token rules) and the settings resolved from them in the core."""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from kdist._cli import arguments

if TYPE_CHECKING:
    from kdist._core import NodeSettings

DEFAULT_TIMEOUT = 20.0  # seconds to reach the rendezvous


def add_query_options(parser: argparse.ArgumentParser) -> None:
    """Adds --rendezvous, --job-id, --token-file and --timeout to `parser`."""
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
        help=f"how long to try to reach the rendezvous (default: {DEFAULT_TIMEOUT:g})",
    )  # fmt: skip


def query_settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> NodeSettings:
    """The job's settings from the query options (a bad value ends the command: parser.error).

    Args:
        args: The parsed options (add_query_options').
        parser: The command's parser, for its error.

    Returns:
        The settings, resolved in the core as an agent's are; their join_timeout is
        --timeout.

    Example:
        >>> settings = query_settings(args, parser)  # doctest: +SKIP
    """
    from kdist import _core, _errors

    request = _core.NodeRequest()
    request.rendezvous = args.rendezvous
    request.host_name = socket.gethostname()
    request.job_id = args.job_id
    request.join_timeout = args.timeout or DEFAULT_TIMEOUT
    arguments.set_token_file(request, args.token_file, parser)
    try:
        return _core.resolve_node_settings(request, dict(os.environ))
    except _errors.ConfigError as error:
        parser.error(str(error))
