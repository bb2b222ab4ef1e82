"""Spawn -> all processes ready: kdist vs raw jax.distributed vs Keras.

N processes (2 CPU devices each) are spawned at once on loopback; each starts
the distributed runtime its own way, lists the global devices, and prints the
moment it was ready. A run's figure is the time from the first spawn to the
last process ready. Variants are interleaved run by run, so a slow moment of
the machine hits them all alike.

Usage:
    python benchmarks/startup.py [--processes 2 4 8] [--runs 7] [--variants kdist jax keras]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

# What each variant's process runs; it prints {"ready": <CLOCK_MONOTONIC seconds>}.
_CHILD = {
    "kdist": """
import kdist
kdist.initialize()
import jax
""",
    "jax": """
import os, jax
jax.distributed.initialize(
    os.environ["KERAS_DISTRIBUTION_JOB_ADDRESSES"],
    int(os.environ["KERAS_DISTRIBUTION_NUM_PROCESSES"]),
    int(os.environ["KERAS_DISTRIBUTION_PROCESS_ID"]),
)
""",
    "keras": """
import os
os.environ["KERAS_BACKEND"] = "jax"
import keras
keras.distribution.initialize()
import jax
""",
}
_READY = """
import json, time
devices = jax.devices()
assert len(devices) == {expected}, devices
print(json.dumps({{"ready": time.monotonic()}}), flush=True)
"""
VARIANTS = tuple(_CHILD)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(port: int, n: int, pid: int, devices: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KERAS_DISTRIBUTION_", "KDIST_", "JAX_", "XLA_"))
    }
    env.update(
        JAX_PLATFORMS="cpu",
        JAX_NUM_CPU_DEVICES=str(devices),
        KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
        KERAS_DISTRIBUTION_NUM_PROCESSES=str(n),
        KERAS_DISTRIBUTION_PROCESS_ID=str(pid),
        KDIST_INIT_TIMEOUT="120",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def spawn_to_ready(variant: str, n: int, devices: int = 2, timeout: float = 180) -> float:
    """Seconds from the first spawn to the last of `n` processes ready."""
    code = _CHILD[variant] + _READY.format(expected=n * devices)
    port = _free_port()
    procs: list[subprocess.Popen[str]] = []
    start = time.monotonic()
    try:
        for pid in range(n):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", code],
                    env=_env(port, n, pid, devices),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        ready = []
        for proc in procs:
            out, err = proc.communicate(timeout=max(1.0, start + timeout - time.monotonic()))
            if proc.returncode != 0:
                raise RuntimeError(f"{variant} process failed ({proc.returncode}):\n{err[-3000:]}")
            ready.append(json.loads(out.strip().splitlines()[-1])["ready"])
        return max(ready) - start
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def measure(
    processes: Sequence[int] = (2, 4, 8),
    variants: Sequence[str] = VARIANTS,
    runs: int = 7,
    devices: int = 2,
) -> dict[str, dict[str, dict[str, object]]]:
    """Runs every (N, variant) `runs` times, interleaved, and returns
    {str(N): {variant: {"min", "median", "max", "runs": [...]}}} in seconds."""
    samples: dict[int, dict[str, list[float]]] = {n: {v: [] for v in variants} for n in processes}
    for _ in range(runs):
        for n in processes:
            for variant in variants:
                samples[n][variant].append(spawn_to_ready(variant, n, devices))
    return {
        str(n): {
            v: {
                "min": min(xs),
                "median": statistics.median(xs),
                "max": max(xs),
                "runs": [round(x, 4) for x in xs],
            }
            for v, xs in by_variant.items()
        }
        for n, by_variant in samples.items()
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    figures = measure(args.processes, args.variants, args.runs, args.devices)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"spawn -> all ready, {args.devices} CPU devices per process, {args.runs} runs (s)")
    print(f"{'N':>3}  {'variant':<7} {'min':>7} {'median':>7} {'max':>7}")
    for n, by_variant in figures.items():
        for variant, f in by_variant.items():
            print(f"{n:>3}  {variant:<7} {f['min']:7.3f} {f['median']:7.3f} {f['max']:7.3f}")
        if "kdist" in by_variant:
            base = by_variant["kdist"]["median"]
            for other in ("jax", "keras"):
                if other in by_variant:
                    ratio = float(base) / float(by_variant[other]["median"])
                    print(f"{n:>3}  kdist / {other} median: {ratio:.2f}")


if __name__ == "__main__":
    main()
