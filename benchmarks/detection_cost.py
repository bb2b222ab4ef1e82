"""What scheduler detection under "auto" costs the start on a machine that is no TPU host.

Usage: python -m benchmarks.detection_cost [--runs 3000]

Times kdist's resolve step (kdist._start.config.resolve, the first step of initialize():
the environment snapshot, this machine's TPU chips, the core's resolve with every detector
of the "auto" table) for a job described explicitly and for nothing configured, as medians
over --runs calls, and the import of what initialize() loads. Run it once against the
installed kdist and once against another copy (PYTHONPATH=<folder holding that kdist>) to
compare two versions side by side: docs/configuration.md quotes the figures for issue 45
(before and after the Cloud TPU detectors).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from collections.abc import Callable


def _median_us(call: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3000)
    args = parser.parse_args()
    os.environ.pop("GCE_METADATA_IP", None)
    started = time.perf_counter()
    from kdist._start import config, initialize  # noqa: F401  (what initialize() loads)

    imported_ms = (time.perf_counter() - started) * 1000
    import kdist

    def nothing() -> None:
        with contextlib.suppress(kdist.ConfigError):
            config.resolve()

    explicit = _median_us(
        lambda: config.resolve(job_addresses="127.0.0.1:1234", num_processes=2, process_id=0),
        args.runs,
    )
    print(
        f"kdist at {os.path.dirname(kdist.__file__)}: import of initialize() {imported_ms:.1f} ms; "
        f"resolve, explicit job, auto: {explicit:.1f} us; resolve, nothing configured, auto: "
        f"{_median_us(nothing, args.runs):.1f} us (medians of {args.runs})"
    )


if __name__ == "__main__":
    main()
