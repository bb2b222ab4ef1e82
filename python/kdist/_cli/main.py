"""The `kdist` command line (also `python -m kdist`): `doctor`, `launch` and `bench`.

Each command's module holds its parser (`add_parser`) and what runs it. Importing this
module imports neither JAX nor the compiled core; each command imports what it needs
when it runs (parsing a port or a duration option imports the core, which owns those
rules: arguments.py).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from typing import Any

from kdist._cli import bench, doctor, launch, rendezvous, status, stop

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
    parser = _Parser(
        prog="kdist",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print kdist's version and exit")
    commands = parser.add_subparsers(
        dest="command_name", metavar="COMMAND", title="commands", parser_class=_Parser
    )

    for command in (doctor, launch, stop, status, rendezvous, bench):
        command.add_parser(commands)
    return parser


class _Parser(argparse.ArgumentParser):
    """kdist's parsers take long options whole: `--rend` is not `--rendezvous` (a prefix
    that means one flag today would mean another once a flag is added)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def _options_of(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """Every command's long options (the parser's own under ""), subcommands included."""
    found: dict[str, set[str]] = {}

    def walk(node: argparse.ArgumentParser, name: str) -> None:
        found[name] = {o for a in node._actions for o in a.option_strings if o.startswith("--")}
        for action in node._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(child, f"{name} {sub}".strip())

    walk(parser, "")
    return found


def misspelled_option(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """The message for a long option the command does not have, with the ones it likely
    meant; None when every option before `--` is known.

    Example:
        >>> print(misspelled_option(build_parser(), ["launch", "--rendevous", "h:1", "-n", "1"]))
        kdist launch: unknown option --rendevous; did you mean --rendezvous?
    """
    options = _options_of(parser)
    command = ""
    for token in argv:
        if token == "--":
            break
        if f"{command} {token}".strip() in options:
            command = f"{command} {token}".strip()
            continue
        name = token.split("=", 1)[0]
        if not name.startswith("--") or name in options[command] or name in options[""]:
            continue
        close = difflib.get_close_matches(name, sorted(options[command]), n=1, cutoff=0.6)
        suggestion = f"; did you mean {close[0]}?" if close else ""
        known = f"; `kdist {command} --help` lists them" if not close else ""
        return f"kdist {command}: unknown option {name}{suggestion}{known}".replace("  ", " ")
    return None


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
    wrong = misspelled_option(parser, sys.argv[1:] if argv is None else argv)
    if wrong is not None:
        print(wrong, file=sys.stderr)
        return 2
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
