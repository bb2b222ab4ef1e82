"""Runs the benchmark figures side by side and writes benchmarks/results/.

Usage: python -m benchmarks.run [--only import,devices] [--runs 7] [--keep] [--json]
       python -m benchmarks.run --only nodes_scale --agents 256 1024 4096 --json --plot
"""

from __future__ import annotations

import argparse
import inspect
import json
import platform
import sys
import time
from collections.abc import Callable

from benchmarks import (
    channel,
    device_listing,
    elastic,
    import_cost,
    keras_first_step,
    liveness,
    metrics_cost,
    misconfig,
    nodes_scale,
    restart,
    rollcall,
    spawn_ready,
    stopping,
    testing_cost,
    tls_start,
)
from benchmarks.harness import (
    MIN_COUNTED_RUNS,
    RESULTS,
    Figure,
    load_results,
    markdown_table,
    write_results,
)

FIGURES: dict[str, Callable[[int], list[Figure]]] = {
    "import": import_cost.measure,
    "devices": device_listing.measure,
    "spawn": spawn_ready.measure,
    "arrival": spawn_ready.measure_after_last_arrival,
    "misconfig": misconfig.measure,
    "rollcall": rollcall.measure,
    "channel": channel.measure,
    "keras": keras_first_step.measure,
    "liveness": liveness.measure,
    "stopping": stopping.measure,
    "testing": testing_cost.measure,
    "elastic": elastic.measure,  # root: network namespaces (skipped otherwise)
    "elastic_etcd": elastic.measure_no_single_point,  # root, etcd-server (issue 53)
    "restart": restart.measure,  # warm spares and the compile cache; --nodes parts: root
    "tls": tls_start.measure,
    "nodes_scale": nodes_scale.measure,  # the nodes' rendezvous at 256 to 4,096 machines
    "metrics": metrics_cost.measure,  # what --metrics-port costs the steps (issue 55)
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time kdist against raw JAX and Keras, side by side, in one run.",
        epilog="Example: python -m benchmarks.run --only import --runs 9",
    )
    parser.add_argument(
        "--only",
        default=",".join(FIGURES),
        help=f"comma-separated figures to run (default: all of {', '.join(FIGURES)})",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=MIN_COUNTED_RUNS,
        help=f"counted runs per contender (at least {MIN_COUNTED_RUNS}; "
        "one warm-up run is discarded)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the figures of the last run (results.json) that this run does not measure",
    )
    parser.add_argument(
        "--agents",
        type=int,
        nargs="+",
        metavar="N",
        help="nodes_scale's simulated machine counts (default: "
        f"{' '.join(map(str, nodes_scale.AGENT_COUNTS))})",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the measured figures as JSON (every sample) instead of tables",
    )
    parser.add_argument(
        "--plot",
        action="store_true",
        help="also draw each scaling figure against its count (nodes_scale: "
        "benchmarks/results/nodes_scaling.png)",
    )
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(FIGURES))
    if unknown:
        parser.error(f"unknown figure(s) {unknown}; expected some of {sorted(FIGURES)}")
    # Options only some groups take: each is passed to the groups whose measure() has it.
    extra = {"agents": args.agents, "plot_scaling": args.plot or None}
    for option, value in extra.items():
        takers = [n for n in chosen if option in inspect.signature(FIGURES[n]).parameters]
        if value is not None and not takers:
            flag = "--plot" if option == "plot_scaling" else f"--{option}"
            parser.error(f"{flag} is for nodes_scale; --only {args.only} does not measure it")

    started = time.time()
    # Figures by key; with --keep, those of the last run that this one does not measure stay.
    figures: dict[str, Figure] = {f.key: f for f in load_results()} if args.keep else {}
    measured: list[Figure] = []
    for name in chosen:
        print(f"== {name}", file=sys.stderr, flush=True)
        accepted = inspect.signature(FIGURES[name]).parameters
        options = {k: v for k, v in extra.items() if v is not None and k in accepted}
        for figure in FIGURES[name](args.runs, **options):
            figures[figure.key] = figure
            measured.append(figure)
            if not args.json:
                print(markdown_table(figure) + "\n", flush=True)
        # Written after every group, so a failure later keeps what was measured.
        write_results(list(figures.values()), _header(started, chosen, args))
    if args.json:
        print(json.dumps([f.to_json() for f in measured], indent=1))
    print(f"wrote {RESULTS / 'results.md'}", file=sys.stderr)
    return 0


def _header(started: float, chosen: list[str], args: argparse.Namespace) -> str:
    import importlib.metadata as md
    import os

    runs, keep = args.runs, args.keep
    flags = (f" --agents {' '.join(map(str, args.agents))}" if args.agents else "") + (
        " --plot" if args.plot else ""
    )

    return (
        "# kdist benchmark results\n\n"
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))} on "
        f"{platform.machine()} Linux, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, jax {md.version('jax')}, keras {md.version('keras')}, "
        f"kdist {md.version('kdist')}. {runs} counted runs per contender, interleaved, "
        "after one discarded warm-up round. Command: `python -m benchmarks.run "
        f"--only {','.join(chosen)} --runs {runs}{flags}{' --keep' if keep else ''}`"
        + (" (figures of other groups are from an earlier run)." if keep else ".")
    )


if __name__ == "__main__":
    raise SystemExit(main())
