"""Figures 3 and 4: spawn -> every process ready, and time inside initialize after the
last process arrives; N = 1, 2, 4, 8 processes x 2 CPU devices on loopback, all spawned at
once, and with process 0 spawned 500 ms after the others."""

from __future__ import annotations

import statistics
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
    out = {
        "spawn_to_ready_s": ready - first_spawn,
        "init_after_last_arrival_ms": (init_end - last_arrival) * 1000,
    }
    if tool == "kdist":
        out.update(_phases_after_last_arrival([r for r in reports if r]))
    return out


# kdist's phases after the last arrival (startup_timings() keys), in milliseconds: the
# last process's own roll call (it waits for nobody: its hello, process 0's decision
# and "go"), then the slowest process's wait for JAX's service, its
# jax.distributed.initialize and its wait for the liveness join.
PHASES = (
    ("roll call of the last process", "roll_call_s", "last"),
    ("JAX service wait (slowest)", "service_wait_s", "max"),
    ("jax.distributed.initialize (slowest)", "jax_initialize_s", "max"),
    ("liveness join wait (slowest)", "liveness_s", "max"),
)


def _phases_after_last_arrival(reports: list[dict[str, object]]) -> dict[str, float]:
    phases = [r.get("phases") or {} for r in reports]
    last = max(range(len(reports)), key=lambda i: float(reports[i]["init_start"]))  # type: ignore[arg-type]
    out: dict[str, float] = {}
    for name, key, which in PHASES:
        values = [float(p.get(key, 0.0)) for p in phases]  # type: ignore[union-attr]
        out[name] = 1000 * (values[last] if which == "last" else max(values))
    return out


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
    return figures


def measure_after_last_arrival(runs: int) -> list[Figure]:
    """Figure 4: time inside initialize after the last arrival, and kdist's phases."""
    figures: list[Figure] = []
    # With JAX imported first everywhere: otherwise kdist's initialize() would include
    # the JAX import that the other tools do before it.
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
                    "in every tool. Keras includes its cross-process RNG seeding (a pmap).",
                    "kdist's phases (ms, medians): "
                    + ", ".join(
                        f"{name} {statistics.median(samples['kdist'][name]):.1f}"
                        for name, _, _ in PHASES
                    )
                    + "; raw JAX at its best "
                    + f"{min(samples['jax']['init_after_last_arrival_ms']):.1f}.",
                ],
            )
        )
        figures.append(
            Figure(
                f"init_phases_n{n}",
                f"kdist's phases after the last process arrives, N={n} (JAX imported first)",
                [Series(name, "ms", samples["kdist"][name]) for name, _, _ in PHASES],
                notes=[
                    "From kdist.startup_timings() in each process: the last process's roll "
                    "call (hello, process 0's decision, go), then the slowest process's wait "
                    "for process 0's JAX service, its jax.distributed.initialize and its wait "
                    "for the liveness join (which runs beside JAX's initialize)."
                ],
            )
        )
    return figures
