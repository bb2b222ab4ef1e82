"""`kdist status`: a job's state from any machine that reaches its rendezvous, as a table or
as one JSON object (schema 1) for scripts."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import TYPE_CHECKING, Any

from kdist._cli import job_query

if TYPE_CHECKING:
    from kdist._core import NodeSettings

_DESCRIPTION = """\
Show a `kdist launch --nodes` job's state from any machine that reaches its rendezvous,
while it gathers or runs, and after it ended while the rendezvous still serves (`kdist
rendezvous serve --linger S`; with etcd://, the agent that holds the job's book, found in
etcd as an agent finds it, and for ten minutes after the end the final state its last holder
left in etcd): the state (gathering, running, stopping, finished, failed),
the attempt, each node (name, host, address, its processes' ids, joined since, draining),
the newest step the processes reported, the restarts by cause, the attempts, and goodput
(the job's wall time split into productive, starting, restarting, recomputing and waiting).
The same token rules as the agents' (--token-file, else KDIST_ROLL_CALL_TOKEN). --json:
one object with the keys schema (1), job_id, state, attempt, nodes, processes, step,
restarts, attempts, goodput. Exits 0; 69 when the rendezvous cannot be reached, 1 when it
refused (another job id, a wrong token).
"""

_EPILOG = """\
example:
  kdist status --rendezvous 10.0.0.1:29400 --job-id run-7 --token-file token
  kdist status --rendezvous 10.0.0.1:29400 --json | jq .goodput.ratio
"""

EXIT_REFUSED = 1
EXIT_UNREACHABLE = 69


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `kdist status` to the `kdist` command line."""
    parser = commands.add_parser(
        "status",
        help="a job's state, nodes, attempts and goodput, from any machine",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    job_query.add_query_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object (schema 1)")
    parser.set_defaults(run=lambda args: _status(args, parser))


def _status(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from kdist import _errors

    settings = job_query.query_settings(args, parser)
    try:
        text = _ask(settings, settings.join_timeout)
    except (_errors.RendezvousTimeoutError, _errors.CoordinatorUnreachableError) as error:
        print(f"kdist status: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except _errors.RendezvousError as error:
        print(f"kdist status: {error}", file=sys.stderr)
        return EXIT_REFUSED
    status = json.loads(text)
    if args.json:
        print(json.dumps(status))
    else:
        print(render(status))
    return 0


def _ask(settings: NodeSettings, timeout: float) -> str:
    """The rendezvous's answer to a status request (an etcd job's: its holder's, found
    through the job's election key as an agent finds it)."""
    from kdist import _core

    address = None
    if settings.store == "etcd":
        from kdist import _errors
        from kdist._agent.etcd_status import ended_status, holder_address

        try:
            address = holder_address(settings)
        except _errors.RendezvousError:
            final = ended_status(settings)  # the job ended: its last holder's mark
            if final is None:
                raise
            return final
    agent = _core.RendezvousAgent(
        settings, log=lambda _line: None, address=address, connect_timeout=timeout
    )
    try:
        return agent.ask_status(socket.gethostname(), os.getpid())
    finally:
        agent.close()


def _seconds(value: object) -> str:
    return f"{value:.1f} s" if isinstance(value, int | float) else "-"


def _ids(ids: list[int]) -> str:
    if not ids:
        return "-"
    return str(ids[0]) if len(ids) == 1 else f"{ids[0]}-{ids[-1]}"


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def render(status: dict[str, Any]) -> str:
    """The table `kdist status` prints for a status object (JSON schema 1).

    Args:
        status: The rendezvous's answer, decoded.

    Returns:
        Lines: the job, its nodes, restarts, attempts and goodput.

    Example:
        >>> print(render({"job_id": "r", "state": "gathering", "nodes": [], "attempts": []}))
        job 'r': gathering, attempt -, 0 processes, step -
        nodes: none
        restarts: none
        attempts: none
    """
    step = status.get("step")
    attempt = status.get("attempt")
    lines = [
        f"job {status.get('job_id', '')!r}: {status.get('state')}, attempt "
        f"{'-' if attempt is None else attempt}, {status.get('processes', 0)} processes, step "
        f"{'-' if step is None else step}"
        + (
            f", exit status {status['exit_status']}"
            if status.get("exit_status") is not None
            else ""
        )
    ]
    nodes = status.get("nodes") or []
    if nodes:
        rows = [["rank", "name", "host", "address", "processes", "joined", "state"]]
        for n in nodes:
            state = (
                "lost" if n.get("lost") else "draining" if n.get("draining")
                else "joining" if n.get("joining") else "detached" if n.get("detached") else "in"
            )  # fmt: skip
            rank = n.get("rank")
            rows.append([
                "-" if rank is None else str(rank), str(n.get("name")), str(n.get("host")),
                str(n.get("address")), _ids(list(n.get("processes") or [])),
                _seconds(n.get("joined_seconds")), state,
            ])  # fmt: skip
        lines.append("nodes:")
        lines.extend(_aligned(rows))
    else:
        lines.append("nodes: none")
    restarts = status.get("restarts") or {}
    words = ", ".join(f"{cause} {count}" for cause, count in sorted(restarts.items()))
    lines.append(f"restarts: {words or 'none'}")
    attempts = status.get("attempts") or []
    if attempts:
        rows = [["attempt", "start", "end", "nodes", "processes", "steps", "ended"]]
        for a in attempts:
            first, last = a.get("first_step"), a.get("step")
            steps = "-" if last is None else f"{first}-{last}"
            rows.append([
                str(a.get("attempt")), _seconds(a.get("started_seconds")),
                _seconds(a.get("ended_seconds")), ",".join(a.get("nodes") or []) or "-",
                str(a.get("processes")), steps, str(a.get("ended")),
            ])  # fmt: skip
        lines.append("attempts:")
        lines.extend(_aligned(rows))
    else:
        lines.append("attempts: none")
    goodput = status.get("goodput")
    if goodput:
        parts = ", ".join(
            f"{phase} {_seconds(goodput.get(f'{phase}_seconds'))}"
            for phase in ("productive", "starting", "restarting", "recomputing", "waiting")
        )
        lines.append(f"goodput: {100 * float(goodput.get('ratio', 0)):.0f}% ({parts})")
    return "\n".join(lines)
