"""What the tests of `kdist launch --nodes` share: an agent's command line, and the
reports of tests/programs/node_job.py (one "NODE_JOB {json}" line per process)."""

from __future__ import annotations

import json
import sys

from helpers.support import PROGRAMS

NODE_JOB = str(PROGRAMS / "node_job.py")


def agent_args(
    rendezvous: str,
    name: str,
    *extra: str,
    nodes: str = "2",
    job_id: str = "t43",
    last_call: str = "2",
    program: str = NODE_JOB,
) -> list[str]:
    """`kdist launch --nodes NODES --rendezvous RENDEZVOUS -n 1` on JAX's CPU backend with one
    device, as node NAME of job JOB_ID, running `program` (a path) with this Python;
    `extra` are more options before the command."""
    return [
        sys.executable, "-m", "kdist", "launch", "--nodes", nodes, "--rendezvous", rendezvous,
        "-n", "1", "--devices-per-process", "1", "--node-name", name, "--job-id", job_id,
        "--last-call", last_call, *extra, "--", sys.executable, program,
    ]  # fmt: skip


def node_job_reports(text: str) -> list[dict[str, object]]:
    """Each NODE_JOB report in a job's output."""
    return [
        json.loads(line.split("NODE_JOB ", 1)[1])
        for line in text.splitlines()
        if "NODE_JOB " in line
    ]
