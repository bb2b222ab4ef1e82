"""What serving /metrics costs a job's steps (issue 55): `kdist launch -n 2` of
tests/programs/watch_job.py (each process calls kdist.should_stop at every step and writes
each step's wall-clock time) without `--metrics-port`, and with it while a scraper reads
/metrics every 0.1 s (150x Prometheus's default rate of one scrape in 15 s). The figure: the
median time between two steps of a process, over every step of both processes after the
first 20. Target: "with" within noise of "without" (no measurable step time).

Usage:
    python -m benchmarks.metrics_cost [--runs 7]
    python -m benchmarks.run --only metrics       (as figures of the harness)
"""

from __future__ import annotations

import itertools
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

from benchmarks import harness
from benchmarks.environment import child_env
from benchmarks.harness import Figure, Series, interleave
from kdist._core import free_port

PROGRAM = Path(__file__).resolve().parent.parent / "tests" / "programs" / "watch_job.py"
STEPS = 400
STEP_SECONDS = "0.005"
SKIPPED_STEPS = 20  # the first steps: JAX and the channel still settling
SCRAPE_SECONDS = 0.1
LIMIT_S = 180.0
CONTENDERS = ("without --metrics-port", "with --metrics-port, scraped every 0.1 s")


def one_job(metrics: bool) -> dict[str, float]:
    """One job of 2 processes; the median step interval (ms) and the scrapes it answered."""
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        args = [sys.executable, "-m", "kdist", "launch", "-n", "2"]
        if metrics:
            args += ["--metrics-port", str(port)]
        env = child_env(
            1,
            WATCH_DIR=tmp,
            WATCH_STEPS=str(STEPS),
            WATCH_STEP_SECONDS=STEP_SECONDS,
            WATCH_FAIL_AT="-1",
        )
        job = subprocess.Popen(
            [*args, "--", sys.executable, str(PROGRAM)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        scrapes = [0]
        done = threading.Event()
        scraper = threading.Thread(target=_scrape, args=(port, done, scrapes), daemon=True)
        if metrics:
            scraper.start()
        try:
            _, err = job.communicate(timeout=LIMIT_S)
        finally:
            done.set()
            if job.poll() is None:
                job.kill()
                job.wait(timeout=30)
        if metrics:
            scraper.join(timeout=5)
        if job.returncode != 0:
            raise RuntimeError(f"the job failed ({job.returncode}):\n{err.decode()[-3000:]}")
        gaps = []
        for path in Path(tmp).glob("steps-0-*.txt"):
            times = [float(line.split()[1]) for line in path.read_text().splitlines()]
            kept = times[SKIPPED_STEPS:]
            gaps += [b - a for a, b in itertools.pairwise(kept)]
    if not gaps:
        raise RuntimeError("the job wrote no steps")
    return {"step_ms": 1000 * statistics.median(gaps), "scrapes": float(scrapes[0])}


def _scrape(port: int, done: threading.Event, scrapes: list[int]) -> None:
    url = f"http://127.0.0.1:{port}/metrics"
    while not done.wait(SCRAPE_SECONDS):
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if b"kdist_step" in answer.read():
                    scrapes[0] += 1
        except OSError:
            continue  # not serving yet, or done


def measure(runs: int) -> list[Figure]:
    samples = interleave(
        {name: (lambda metrics=(i == 1): one_job(metrics)) for i, name in enumerate(CONTENDERS)},
        runs=runs,
    )
    figure = Figure(
        "metrics_step_cost",
        f"median step interval of kdist launch -n 2 ({STEP_SECONDS} s sleep a step, "
        f"{STEPS} steps), without and with --metrics-port",
        [Series(name, "ms", samples[name]["step_ms"]) for name in CONTENDERS],
        baseline=CONTENDERS[0],
    )
    ratio = figure.ratio(CONTENDERS[1])
    scraped = statistics.median(samples[CONTENDERS[1]]["scrapes"])
    figure.notes = [
        f"with / without: {ratio:.3f}x (target: no measurable step time); the scraper read "
        f"/metrics {scraped:.0f} times a job (median), every {SCRAPE_SECONDS} s."
    ]
    return [figure]


def main(argv: list[str] | None = None) -> int:
    return harness.print_figures_main(__doc__ or "", measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
