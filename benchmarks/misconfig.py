"""Figure 5: time to a clear Python error for each misconfiguration, per tool, with what
each tool did (exception class, abort signal, or a hang killed at the harness's limit)."""

from __future__ import annotations

import signal
import socket
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.environment import child_env
from benchmarks.harness import Figure, Member, Series, run_group
from kdist._core import free_port

MEMBER = Path(__file__).with_name("_cluster_member.py")
TOOLS = ("kdist", "jax", "keras")
TIMEOUT_S = 3  # the deadline given to the tools that take one (Keras takes none)
LIMIT_S = 12.0  # the harness kills anything still running after this


@dataclass(frozen=True)
class Case:
    key: str
    title: str
    # (coordinator address, num_processes, process ids to start) for a free port
    layout: Callable[[int], tuple[str, int, list[int]]]
    hold_port: bool = False  # a plain listener holds the coordinator port


CASES = (
    Case(
        "no_coordinator",
        "no coordinator (worker alone, timeout 3 s)",
        lambda port: (f"127.0.0.1:{port}", 2, [1]),
    ),
    Case(
        "port_taken",
        "coordinator port taken by another listener (process 0)",
        lambda port: (f"127.0.0.1:{port}", 2, [0]),
        hold_port=True,
    ),
    Case("bad_address", "bad address (port 99999)", lambda port: ("127.0.0.1:99999", 2, [0, 1])),
    Case(
        "process_id_out_of_range",
        "process id out of range (2 of 2)",
        lambda port: (f"127.0.0.1:{port}", 2, [0, 2]),
    ),
    Case(
        "duplicate_process_id",
        "duplicate process id (0, 1, 1 of 3)",
        lambda port: (f"127.0.0.1:{port}", 3, [0, 1, 1]),
    ),
    Case(
        "missing_process",
        "missing process (1 of 2 started, timeout 3 s)",
        lambda port: (f"127.0.0.1:{port}", 2, [0]),
    ),
)


def outcome(member: Member) -> str:
    """What one process did: 'ok', an exception class, a signal, or a hang."""
    if member.returncode is None:
        return f"hang (killed at {LIMIT_S:g} s)"
    if member.returncode < 0:
        return signal.Signals(-member.returncode).name
    report = member.report()
    if member.returncode == 0:
        return "ok"
    if report and "error" in report:
        return str(report["error"]).rsplit(".", 1)[-1]
    return f"exit {member.returncode}"


def run_case(case: Case, tool: str) -> tuple[float, float | None, str]:
    """(seconds until every process had ended or failed, seconds to the first Python
    exception or None, outcomes of the processes)."""
    port = free_port()
    address, n, ids = case.layout(port)
    holder = None
    if case.hold_port:
        holder = socket.socket()
        holder.bind(("0.0.0.0", port))
        holder.listen()
    try:
        commands = [
            [sys.executable, str(MEMBER), tool, address, str(n), str(pid), str(TIMEOUT_S)]
            for pid in ids
        ]
        members = run_group(
            commands, [child_env(1)] * len(ids), delays=[0.0] * len(ids), limit=LIMIT_S
        )
    finally:
        if holder is not None:
            holder.close()
    first = min(m.spawned for m in members)
    seconds = max(m.ended for m in members) - first
    if any(m.returncode is None for m in members):
        seconds = LIMIT_S
    raised = [
        float(report["failed_at"]) - first  # type: ignore[arg-type]
        for report in (m.report() for m in members)
        if report and "error" in report
    ]
    outcomes = Counter(outcome(m) for m in members)
    what = ", ".join(f"{k} ×{v}" if v > 1 else k for k, v in sorted(outcomes.items()))
    return seconds, min(raised) if raised else None, what


def measure(runs: int) -> list[Figure]:
    figures = []
    for case in CASES:
        samples: dict[str, list[float]] = {t: [] for t in TOOLS}
        first_raised: dict[str, list[float]] = {t: [] for t in TOOLS}
        outcomes: dict[str, Counter[str]] = {t: Counter() for t in TOOLS}
        hung: set[str] = set()
        for round_index in range(1 + runs):  # interleaved; round 0 is the warm-up
            for tool in TOOLS:
                if tool in hung:
                    continue  # a hang killed at the limit measures the limit again
                seconds, raised, what = run_case(case, tool)
                if "hang" in what:
                    hung.add(tool)
                    samples[tool] = [LIMIT_S]
                    outcomes[tool] = Counter({what: 1})
                    continue
                if round_index > 0:
                    samples[tool].append(seconds)
                    outcomes[tool][what] += 1
                    if raised is not None:
                        first_raised[tool].append(raised)
        notes = [
            f"{tool}: "
            + "; ".join(
                f"{what} ({count} of {sum(outcomes[tool].values())} runs)"
                for what, count in outcomes[tool].most_common()
            )
            + (" — not repeated after the first hang" if tool in hung else "")
            + (
                f"; first Python exception after {statistics.median(first_raised[tool]):.3g} s "
                "(median)"
                if first_raised[tool]
                else ""
            )
            for tool in TOOLS
        ]
        notes.append(
            "Time: from the first spawn until every process had exited (or was killed at the "
            f"harness's {LIMIT_S:g} s limit)."
        )
        figures.append(
            Figure(
                f"misconfig_{case.key}",
                f"Time to a clear error: {case.title}",
                [Series(tool, "s", samples[tool]) for tool in TOOLS],
                baseline="jax",
                notes=notes,
            )
        )
    return figures
