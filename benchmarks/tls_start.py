"""initialize() with TLS for JAX's coordination service on, against the same start without it.

N = 2 and 4 processes on loopback, each with 1 CPU device and the same token, all spawned at
once; "tls on" is KDIST_TLS=auto (kdist's certificates: each process imports
`cryptography`, derives the job's authority and signs its own certificate beside the roll
call, and JAX's service and clients speak TLS 1.3), "tls off" is KDIST_TLS=off. Both import
JAX inside initialize(), as a program does. The figure: the job's start, from the first
process's call of initialize() to the last one's return (max init_end - min init_start).
Target: "tls on" at most 1.2x "tls off".

Usage:
    python -m benchmarks.tls_start [--runs 7]
    python -m benchmarks.run --only tls       (as figures of the harness)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from benchmarks import harness
from benchmarks.environment import child_env
from benchmarks.harness import (
    Figure,
    Series,
    interleave,
    run_group,
)
from kdist._core import free_port

MEMBER = Path(__file__).with_name("_cluster_member.py")
PROCESS_COUNTS = (2, 4)
CONTENDERS = {"tls off": "off", "tls on": "auto"}
LIMIT_S = 120.0
TARGET = 1.2


def one_start(n: int, tls: str) -> dict[str, float]:
    """One job's start; seconds from the first initialize() call to the last return."""
    port = free_port()
    commands = [
        [sys.executable, str(MEMBER), "kdist", f"127.0.0.1:{port}", str(n), str(pid), "60"]
        for pid in range(n)
    ]
    env = child_env(1, KDIST_TLS=tls, KDIST_ROLL_CALL_TOKEN="benchmark token")
    members = run_group(commands, [env] * n, delays=[0.0] * n, limit=LIMIT_S)
    reports = [m.report() for m in members]
    for member, report in zip(members, reports, strict=True):
        if member.returncode != 0 or report is None or "init_end" not in report:
            raise RuntimeError(
                f"KDIST_TLS={tls} N={n}: a process failed ({member.returncode}):\n"
                f"{member.stderr[-3000:]}"
            )
    started = min(float(r["init_start"]) for r in reports if r)  # type: ignore[arg-type]
    ended = max(float(r["init_end"]) for r in reports if r)  # type: ignore[arg-type]
    made = max(float(r["phases"].get("tls_s", 0.0)) for r in reports if r)  # type: ignore[union-attr]
    return {"start_s": ended - started, "tls_wait_ms": 1000 * made}


def measure(runs: int) -> list[Figure]:
    figures = []
    for n in PROCESS_COUNTS:
        samples = interleave(
            {name: (lambda n=n, tls=tls: one_start(n, tls)) for name, tls in CONTENDERS.items()},
            runs=runs,
        )
        figure = Figure(
            f"tls_start_n{n}",
            f"initialize() with TLS on and off, N={n} x 1 CPU device, loopback, one token",
            [Series(name, "s", samples[name]["start_s"]) for name in CONTENDERS],
            baseline="tls off",
        )
        ratio = figure.ratio("tls on")
        wait = statistics.median(samples["tls on"]["tls_wait_ms"])
        figure.notes = [
            f"Target: tls on <= {TARGET}x tls off; measured {ratio:.2f}x "
            f"({'met' if ratio <= TARGET else 'NOT met'}).",
            "From the first process's initialize() call to the last one's return; JAX is "
            "imported inside initialize() in both. The longest wait for a process's own "
            f"certificate after the roll call (made beside it): median {wait:.1f} ms.",
        ]
        figures.append(figure)
    return figures


def main(argv: list[str] | None = None) -> int:
    return harness.print_figures_main(__doc__ or "", measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
