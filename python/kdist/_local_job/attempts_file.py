"""attempts.json: the job's attempts table for machines, in --log-dir. `kdist launch -n`
writes its own ledger's; the agent whose machine serves the nodes' rendezvous writes the
rendezvous's; both the same way."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kdist._core import AttemptRow

ATTEMPTS_FILE = "attempts.json"


def write_attempts(path: Path, rows: Sequence[AttemptRow], exit_status: int) -> None:
    """One object per attempt (its number, coordinator port, nodes, processes, start and
    end in seconds since the job started, how it ended, its status, whether it counted
    against --max-restarts) and the job's exit status."""
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
        }
        for a in rows
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_status": exit_status, "attempts": attempts}, indent=2))
