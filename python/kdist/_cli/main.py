"""The `kdist` command line (also `python -m kdist`): `doctor`, `launch` and `bench`.

Each command's module holds its parser (`add_parser`) and what runs it. Importing this
module imports neither JAX nor the compiled core; each command imports what it needs
when it runs (parsing a port or a duration option imports the core, which owns those
rules: arguments.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kdist._cli import bench, doctor, launch, rendezvous

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
    parser = argparse.ArgumentParser(
        prog="kdist",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print kdist's version and exit")
    commands = parser.add_subparsers(dest="command_name", metavar="COMMAND", title="commands")

    for command in (doctor, launch, rendezvous, bench):
        command.add_parser(commands)
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
    if args.command_name is None:
        parser.print_help(sys.stderr)
        return 2
    status: int = args.run(args)
    return status
