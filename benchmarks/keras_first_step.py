"""Figure: spawn -> first training step done, for a small Keras model (JAX backend) on
N = 2 and 4 processes x 2 CPU devices, started with keras.distribution.initialize() or
with kdist.initialize(); both sides import Keras, build the same model and train it
with DataParallel. Also each side's phases (medians): Keras import, initialize, build,
first step."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from benchmarks.environment import child_env
from benchmarks.harness import Figure, Series, interleave, run_group
from kdist._core import free_port

TRAINER = Path(__file__).with_name("_keras_trainer.py")
TOOLS = ("kdist", "keras")
PROCESS_COUNTS = (2, 4)
LIMIT_S = 180.0
# (name, start stamp, end stamp); "spawned" is the harness's own stamp.
PHASES = (
    ("import keras", "spawned", "imported"),
    ("initialize", "init_start", "init_end"),
    ("build model", "init_end", "built"),
    ("first step", "built", "first_step"),
)


def one_job(tool: str, n: int) -> dict[str, float]:
    port = free_port()
    commands = [
        [sys.executable, str(TRAINER), tool, f"127.0.0.1:{port}", str(n), str(pid)]
        for pid in range(n)
    ]
    members = run_group(commands, [child_env(2)] * n, delays=[0.0] * n, limit=LIMIT_S)
    reports = []
    for member in members:
        report = member.report()
        if member.returncode != 0 or report is None:
            raise RuntimeError(
                f"{tool} N={n}: a process failed ({member.returncode}):\n{member.stderr[-3000:]}"
            )
        reports.append({**{k: float(v) for k, v in report.items()}, "spawned": member.spawned})
    first_spawn = min(r["spawned"] for r in reports)
    out = {"spawn_to_first_step_s": max(r["first_step"] for r in reports) - first_spawn}
    for name, start, end in PHASES:
        # The slowest process's phase: the job waits for it.
        out[name] = max(r[end] - r[start] for r in reports)
    return out


def measure(runs: int) -> list[Figure]:
    figures: list[Figure] = []
    for n in PROCESS_COUNTS:
        samples = interleave(
            {tool: (lambda tool=tool, n=n: one_job(tool, n)) for tool in TOOLS}, runs=runs
        )
        figures.append(
            Figure(
                f"keras_first_step_n{n}",
                f"Spawn → first Keras training step done, N={n} × 2 CPU devices",
                [Series(t, "s", samples[t]["spawn_to_first_step_s"]) for t in TOOLS],
                baseline="keras",
                notes=[
                    "Both sides import Keras, build and compile the same model and run one "
                    "DataParallel train_on_batch; they differ in initialize() only "
                    "(kdist.initialize + kdist.DataParallel vs keras.distribution.initialize "
                    "+ Keras's DataParallel). Target at N=4: kdist ≤ 0.8× Keras.",
                    "Phase medians (s, slowest process): "
                    + "; ".join(
                        f"{tool}: "
                        + ", ".join(
                            f"{name} {statistics.median(samples[tool][name]):.3f}"
                            for name, _, _ in PHASES
                        )
                        for tool in TOOLS
                    ),
                ],
            )
        )
        figures.append(
            Figure(
                f"keras_first_step_phases_n{n}",
                f"Phases of the start of a Keras job, N={n} (slowest process, median)",
                [
                    Series(f"{tool}: {name}", "s", samples[tool][name])
                    for tool in TOOLS
                    for name, _, _ in PHASES
                ],
                notes=[
                    "Each phase as the slowest process spent it. kdist's initialize includes "
                    "its roll call and the job seed; Keras's includes its gRPC retry and its "
                    "cross-process seed sum (a pmap)."
                ],
            )
        )
    return figures
