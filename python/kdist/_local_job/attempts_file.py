"""attempts.json: the job's attempts table for machines, in --log-dir. `kdist launch -n`
writes its own ledger's; the agent whose machine serves the nodes' rendezvous writes the
rendezvous's; both the same way, with the job's goodput (its wall time split by cause)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kdist._core import AttemptRow, Goodput

ATTEMPTS_FILE = "attempts.json"
GOODPUT_KEYS = (
    "productive_seconds",
    "starting_seconds",
    "restarting_seconds",
    "recomputing_seconds",
    "waiting_seconds",
)


def goodput_dict(goodput: Goodput) -> dict[str, float]:
    """The goodput object of attempts.json and `kdist status --json`: each phase's seconds
    and the ratio (productive / wall).

    Args:
        goodput: The ledger's (kdist._core.Goodput).

    Returns:
        productive_seconds, starting_seconds, restarting_seconds, recomputing_seconds,
        waiting_seconds and ratio.
    """
    values: dict[str, float] = {key: float(getattr(goodput, key)) for key in GOODPUT_KEYS}
    values["ratio"] = float(goodput.ratio)
    return values


def final_goodput(status_json: str) -> dict[str, Any] | None:
    """The goodput object of a rendezvous's final status (RendezvousServer.status_json)."""
    try:
        goodput = json.loads(status_json).get("goodput")
    except (ValueError, AttributeError):
        return None
    return goodput if isinstance(goodput, dict) else None


def write_attempts(
    path: Path,
    rows: Sequence[AttemptRow],
    exit_status: int,
    goodput: dict[str, Any] | None = None,
) -> None:
    """One object per attempt (its number, coordinator port, nodes, processes, start and
    end in seconds since the job started, how it ended, its status, whether it counted
    against --max-restarts, its first and newest step), the job's exit status and, when
    given, its goodput (goodput_dict)."""
    attempts = [
        {
            "attempt": a.attempt,
            "port": a.port,
            "nodes": list(a.nodes),
            "processes": a.processes,
            "started_seconds": a.started_seconds,
            "ended_seconds": None if a.ended_seconds < 0 else a.ended_seconds,
            "ended": a.ended,
            "exit_status": a.exit_status,
            "counted": a.counted,
            "first_step": None if a.first_step < 0 else a.first_step,
            "step": None if a.step < 0 else a.step,
        }
        for a in rows
    ]
    document: dict[str, Any] = {"exit_status": exit_status, "attempts": attempts}
    if goodput is not None:
        document["goodput"] = goodput
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))
