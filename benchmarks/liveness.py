"""Figure: fault -> whole job exited. One process of an N-process job raises an
uncaught exception or is SIGKILLed while the others wait for it in a collective;
time from the fault until every process of the job has exited, kdist against raw
JAX.

Raw JAX ends these jobs only by its own timeouts: SIGABRT after about 300 s (its
shutdown barrier, exception case) or about 100 s (its heartbeat, SIGKILL case), as
measured on the test machine. The harness does not wait that long: it kills what is still
running at LIMIT_S and records the case as "> LIMIT_S s (killed)", once, not
repeated.
"""

from __future__ import annotations

import json
import signal
import sys
from collections import Counter
from pathlib import Path

from benchmarks.environment import child_env
from benchmarks.harness import Figure, Member, Series, run_group
from kdist._core import free_port

MEMBER = Path(__file__).with_name("_fault_member.py")
TOOLS = ("kdist", "jax")
FAULTS = ("exception", "sigkill")
SIZES = (2, 4)
LIMIT_S = 20.0  # the harness kills anything still running this long after the first spawn
FAULTY = 1


def fault_time(members: list[Member]) -> float | None:
    for line in members[FAULTY].stdout.splitlines():
        if line.startswith('{"fault_at"'):
            return float(json.loads(line)["fault_at"])
    return None


def outcome(member: Member) -> str:
    if member.returncode is None:
        return f"hang (killed at {LIMIT_S:g} s)"
    if member.returncode < 0:
        return signal.Signals(-member.returncode).name
    return f"exit {member.returncode}"


def run_case(tool: str, fault: str, n: int) -> tuple[float | None, str]:
    """(seconds from the fault until every process had exited, or None when something
    was still running at the limit; the outcomes of the processes)."""
    address = f"127.0.0.1:{free_port()}"
    commands = [
        [sys.executable, str(MEMBER), tool, address, str(n), str(pid), fault, str(FAULTY)]
        for pid in range(n)
    ]
    members = run_group(commands, [child_env(1)] * n, delays=[0.0] * n, limit=LIMIT_S)
    outcomes = Counter(outcome(m) for m in members)
    what = ", ".join(f"{k} ×{v}" if v > 1 else k for k, v in sorted(outcomes.items()))
    fault_at = fault_time(members)
    if fault_at is None:
        raise RuntimeError(
            f"{tool} {fault} N={n}: no fault happened; {what}: {members[FAULTY].stderr[-2000:]}"
        )
    if any(m.returncode is None for m in members):
        return None, what
    return max(m.ended for m in members) - fault_at, what


def measure(runs: int) -> list[Figure]:
    figures = []
    for fault in FAULTS:
        for n in SIZES:
            samples: dict[str, list[float]] = {t: [] for t in TOOLS}
            outcomes: dict[str, Counter[str]] = {t: Counter() for t in TOOLS}
            killed: set[str] = set()
            for round_index in range(1 + runs):  # interleaved; round 0 is the warm-up
                for tool in TOOLS:
                    if tool in killed:
                        continue  # killed at the limit: measuring the limit again adds nothing
                    seconds, what = run_case(tool, fault, n)
                    if seconds is None:
                        killed.add(tool)
                        samples[tool] = [LIMIT_S]
                        outcomes[tool] = Counter({what: 1})
                        continue
                    if round_index > 0:
                        samples[tool].append(seconds)
                        outcomes[tool][what] += 1
            notes = [
                f"{tool}: "
                + "; ".join(
                    f"{what} ({count} of {sum(outcomes[tool].values())} runs)"
                    for what, count in outcomes[tool].most_common()
                )
                + (
                    f" — > {LIMIT_S:g} s: still running at the harness's limit and killed, "
                    "not repeated (JAX itself ends it by SIGABRT after about "
                    + (
                        "300 s, its shutdown barrier"
                        if fault == "exception"
                        else "100 s, its heartbeat timeout"
                    )
                    + ")"
                    if tool in killed
                    else ""
                )
                for tool in TOOLS
            ]
            notes.append(
                "Time: from the faulty process's fault (its own time.time() just before) until "
                "the last process of the job had exited, as the harness saw it."
            )
            what = "an uncaught exception" if fault == "exception" else "SIGKILL"
            figures.append(
                Figure(
                    f"liveness_{fault}_{n}",
                    f"Fault to whole job exited: process {FAULTY} of {n} dies by {what}"
                    if fault == "sigkill"
                    else f"Fault to whole job exited: {what} in process {FAULTY} of {n}",
                    [Series(tool, "s", samples[tool]) for tool in TOOLS],
                    baseline="jax",
                    notes=notes,
                )
            )
    return figures
