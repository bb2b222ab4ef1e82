"""Figures 3 and 4: spawn -> every process ready, and time inside initialize after the
last process arrives; N = 1, 2, 4, 8 processes x 2 CPU devices on loopback, all spawned at
once, and with process 0 spawned 500 ms after the others."""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.environment import child_env
from benchmarks.harness import Figure, Series, interleave, run_group
from kdist._core import free_port

MEMBER = Path(__file__).with_name("_cluster_member.py")
TOOLS = ("kdist", "jax", "keras")
PROCESS_COUNTS = (1, 2, 4, 8)
LATE_MS = 500
LIMIT_S = 120.0


def one_cluster(tool: str, n: int, late_ms: int, preimport_jax: bool = False) -> dict[str, float]:
    port = free_port()
    extra = ["--preimport-jax"] if preimport_jax else []
    commands = [
        [sys.executable, str(MEMBER), tool, f"127.0.0.1:{port}", str(n), str(pid), "60", *extra]
        for pid in range(n)
    ]
    delays = [late_ms / 1000 if pid == 0 and n > 1 else 0.0 for pid in range(n)]
    members = run_group(commands, [child_env(2)] * n, delays=delays, limit=LIMIT_S)
    reports = [m.report() for m in members]
    for member, report in zip(members, reports, strict=True):
        if member.returncode != 0 or report is None or "ready" not in report:
            raise RuntimeError(
                f"{tool} N={n}: a process failed ({member.returncode}):\n{member.stderr[-3000:]}"
            )
    first_spawn = min(m.spawned for m in members)
    ready = max(float(r["ready"]) for r in reports if r)  # type: ignore[arg-type]
    last_arrival = max(float(r["init_start"]) for r in reports if r)  # type: ignore[arg-type]
    init_end = max(float(r["init_end"]) for r in reports if r)  # type: ignore[arg-type]
    return {
        "spawn_to_ready_s": ready - first_spawn,
        "init_after_last_arrival_ms": (init_end - last_arrival) * 1000,
    }


def measure(runs: int) -> list[Figure]:
    figures: list[Figure] = []
    for late_ms in (0, LATE_MS):
        for n in PROCESS_COUNTS:
            if late_ms and n == 1:
                continue
            samples = interleave(
                {
                    tool: (lambda tool=tool, n=n, late_ms=late_ms: one_cluster(tool, n, late_ms))
                    for tool in TOOLS
                },
                runs=runs,
            )
            variant = f", process 0 spawned {late_ms} ms late" if late_ms else ", all at once"
            suffix = f"_late{late_ms}" if late_ms else ""
            figures.append(
                Figure(
                    f"spawn_ready_n{n}{suffix}",
                    f"Spawn → all ready, N={n} × 2 CPU devices{variant}",
                    [Series(t, "s", samples[t]["spawn_to_ready_s"]) for t in TOOLS],
                    baseline="jax",
                    notes=["Target at N=4: kdist ≤ 0.8× raw JAX and ≤ 0.5× Keras."]
                    if n == 4 and not late_ms
                    else [],
                )
            )
    # Figure 4 runs apart, with JAX imported first everywhere: otherwise kdist's
    # initialize() would include the JAX import that the other tools do before it.
    for n in PROCESS_COUNTS[1:]:
        samples = interleave(
            {
                tool: (lambda tool=tool, n=n: one_cluster(tool, n, 0, preimport_jax=True))
                for tool in TOOLS
            },
            runs=runs,
        )
        figures.append(
            Figure(
                f"init_after_last_arrival_n{n}",
                f"Time inside initialize after the last process arrives, N={n} (JAX imported "
                "first)",
                [Series(t, "ms", samples[t]["init_after_last_arrival_ms"]) for t in TOOLS],
                baseline="jax",
                notes=[
                    "From the last process's call of initialize to every process initialized "
                    "(max init_end − max init_start); JAX is imported before the clock starts "
                    "in every tool. Keras includes its cross-process RNG seeding (a pmap)."
                ],
            )
        )
    return figures
