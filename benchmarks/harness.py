"""The shared machinery of every figure: interleaved runs, statistics, tables, plots.

Every figure measures its contenders in one run, interleaved (A B C A B C ...),
discards warm-up rounds, and keeps at least 7 counted samples per contender, so
machine noise hits all contenders alike and results are compared as ratios.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
MIN_COUNTED_RUNS = 7


@dataclass
class Series:
    """The counted samples of one contender in one figure, in one unit."""

    name: str
    unit: str
    samples: list[float] = field(default_factory=list)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)


@dataclass
class Figure:
    """One measured figure: a title, its series, and notes (targets, outcomes)."""

    key: str
    title: str
    series: list[Series]
    baseline: str | None = None  # ratios are given against this series' median
    notes: list[str] = field(default_factory=list)

    def ratio(self, name: str, against: str | None = None) -> float:
        by_name = {s.name: s for s in self.series}
        base = by_name[against or self.baseline or self.series[0].name]
        return by_name[name].median / base.median

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "title": self.title,
            "baseline": self.baseline,
            "notes": self.notes,
            "series": [
                {
                    "name": s.name,
                    "unit": s.unit,
                    "samples": s.samples,
                    "min": s.min,
                    "median": s.median,
                    "max": s.max,
                }
                for s in self.series
            ],
        }


def interleave(
    contenders: Mapping[str, Callable[[], Mapping[str, float]]],
    *,
    runs: int = MIN_COUNTED_RUNS,
    warmup: int = 1,
) -> dict[str, dict[str, list[float]]]:
    """Runs each contender once per round, round after round (A B C A B C ...).

    Each call returns named measurements (e.g. {"wall_ms": ..., "rss_mb": ...});
    the first `warmup` rounds are discarded. Returns contender -> measurement ->
    counted samples.
    """
    if runs < MIN_COUNTED_RUNS:
        raise ValueError(f"runs={runs}: expected at least {MIN_COUNTED_RUNS} counted runs")
    out: dict[str, dict[str, list[float]]] = {name: {} for name in contenders}
    for round_index in range(warmup + runs):
        for name, measure in contenders.items():
            values = measure()
            if round_index < warmup:
                continue
            for key, value in values.items():
                out[name].setdefault(key, []).append(value)
    return out


# Appended to a measured statement: the process's own peak RSS, from VmHWM. (A
# child's ru_maxrss is not its own: Linux carries the pre-exec high-water mark of
# the parent's address space across a vfork + exec.)
_PEAK_RSS_MARKER = "kdist-bench-vmhwm-kib="
_REPORT_PEAK_RSS = (
    "\nimport sys as _s\n"
    "_s.stderr.write('" + _PEAK_RSS_MARKER + "' + [l.split()[1] for l in "
    "open('/proc/self/status') if l.startswith('VmHWM:')][0] + '\\n')\n"
)


def python_measured(
    statement: str, env: Mapping[str, str], timeout: float
) -> tuple[float, float, int, str]:
    """Runs `python -c statement` to completion.

    Returns:
        (wall seconds from spawn to exit, the child's own peak RSS in MiB, exit
        code, stderr without the RSS report).
    """
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", statement + _REPORT_PEAK_RSS],
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        check=False,
    )
    wall = time.perf_counter() - start
    peak, kept = float("nan"), []
    for line in done.stderr.splitlines():
        if line.startswith(_PEAK_RSS_MARKER):
            peak = int(line.removeprefix(_PEAK_RSS_MARKER)) / 1024.0
        else:
            kept.append(line)
    return wall, peak, done.returncode, "\n".join(kept)


def markdown_table(figure: Figure) -> str:
    """The figure as a markdown table: min / median / max and the ratio to the baseline."""
    unit = figure.series[0].unit
    lines = [
        f"### {figure.title}",
        "",
        f"| contender | min ({unit}) | median ({unit}) | max ({unit}) "
        f"| median / {figure.baseline or figure.series[0].name} |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in figure.series:
        lines.append(
            f"| {s.name} | {s.min:.3g} | {s.median:.3g} | {s.max:.3g} "
            f"| {figure.ratio(s.name):.2f}× |"
        )
    if figure.notes:
        lines.append("")
        lines.extend(f"- {note}" for note in figure.notes)
    return "\n".join(lines)


def plot(figure: Figure, path: Path) -> bool:
    """A bar chart of medians with min-max whiskers; False where matplotlib is not installed
    (the bench extra brings it: pip install 'kdist[bench]')."""
    try:
        import matplotlib
    except ImportError:
        return False

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [s.name for s in figure.series]
    medians = [s.median for s in figure.series]
    lower = [s.median - s.min for s in figure.series]
    upper = [s.max - s.median for s in figure.series]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.3 * len(names)), 3.2))
    ax.bar(names, medians, yerr=[lower, upper], capsize=4, color="#4c72b0")
    ax.set_ylabel(figure.series[0].unit)
    ax.set_title(figure.title, fontsize=10)
    ax.tick_params(axis="x", labelrotation=20, labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def load_results(directory: Path = RESULTS) -> list[Figure]:
    """The figures results.json holds (none when there is no such file)."""
    path = directory / "results.json"
    if not path.exists():
        return []
    figures = []
    for entry in json.loads(path.read_text()):
        series = [Series(s["name"], s["unit"], list(s["samples"])) for s in entry["series"]]
        figures.append(
            Figure(entry["key"], entry["title"], series, entry["baseline"], list(entry["notes"]))
        )
    return figures


def write_results(figures: Sequence[Figure], header: str, directory: Path = RESULTS) -> Path:
    """Writes results.md (tables), results.json (every sample) and one PNG per figure."""
    directory.mkdir(parents=True, exist_ok=True)
    parts = [header]
    unplotted = []
    for figure in figures:
        png = directory / f"{figure.key}.png"
        if plot(figure, png):
            parts.append(markdown_table(figure) + f"\n\n![{figure.title}]({png.name})")
        else:
            parts.append(markdown_table(figure))
            unplotted.append(figure.key)
    if unplotted:
        print(
            f"benchmarks: matplotlib is not installed, so {', '.join(unplotted)} got tables "
            "and no charts (pip install 'kdist[bench]', or scripts/bench.sh, brings it)",
            file=sys.stderr,
        )
    (directory / "results.md").write_text("\n\n".join(parts) + "\n")
    (directory / "results.json").write_text(
        json.dumps([f.to_json() for f in figures], indent=1) + "\n"
    )
    return directory / "results.md"


@dataclass
class Member:
    """One process of a group the harness started."""

    spawned: float  # time.time() just before the spawn
    returncode: int | None  # None: killed at the harness's limit
    stdout: str
    stderr: str
    ended: float  # time.time() when it exited or was killed

    def report(self) -> dict[str, object] | None:
        """The last JSON object the process printed, if any."""
        for line in reversed(self.stdout.splitlines()):
            if line.startswith("{"):
                parsed: dict[str, object] = json.loads(line)
                return parsed
        return None


def run_group(
    commands: Sequence[Sequence[str]],
    envs: Sequence[Mapping[str, str]],
    *,
    delays: Sequence[float],
    limit: float,
) -> list[Member]:
    """Starts each command after its delay, waits for all up to `limit` seconds from
    the first spawn, kills (by pid) whatever is still running, and reaps everything."""
    begin = time.monotonic()
    procs: list[tuple[int, float, subprocess.Popen[str]]] = []
    order = sorted(range(len(commands)), key=lambda i: delays[i])
    ended: dict[int, float] = {}
    try:
        for i in order:
            pause = begin + delays[i] - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            spawned = time.time()
            proc = subprocess.Popen(
                list(commands[i]),
                env=dict(envs[i]),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            procs.append((i, spawned, proc))
        members: dict[int, Member] = {}
        for i, spawned, proc in procs:
            remaining = max(0.05, begin + limit - time.monotonic())
            try:
                out, err = proc.communicate(timeout=remaining)
                code: int | None = proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate(timeout=10)
                code = None
            ended[i] = time.time()
            members[i] = Member(spawned, code, out, err, ended[i])
        return [members[i] for i in range(len(commands))]
    finally:
        for _, _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def samples_by_count(
    counts: Sequence[int], runs: int, run_once: Callable[[int], Mapping[str, float]]
) -> dict[int, dict[str, list[float]]]:
    """Per count: each figure's values from `run_once(count)`, for `runs` counted runs
    interleaved across counts after one discarded warm-up round (the scale benchmarks:
    a run there is too long for interleave()'s minimum of counted runs)."""
    results: dict[int, dict[str, list[float]]] = {n: {} for n in counts}
    for round_index in range(1 + runs):
        for n in counts:
            values = run_once(n)
            if round_index == 0:
                continue  # the warm-up round
            for key, value in values.items():
                results[n].setdefault(key, []).append(value)
    return results


def plot_scaling(
    by_count: Mapping[int, Mapping[str, list[float]]],
    names: Sequence[str],
    path: Path,
    xlabel: str,
    title: str,
) -> bool:
    """Each named figure's median (ms) against the count, log-log, with a dotted line of
    slope 1 through the smallest count for comparison; False without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = sorted(by_count)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in names:
        medians = [1000 * statistics.median(by_count[n][name]) for n in counts]
        (line,) = ax.plot(counts, medians, marker="o", label=name.removesuffix("_s"))
        linear = [medians[0] * n / counts[0] for n in counts]
        ax.plot(counts, linear, linestyle=":", color=line.get_color(), linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ms (median; dotted: linear from the smallest)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def print_figures_main(
    doc: str, measure: Callable[[int], Sequence[Figure]], argv: list[str] | None = None
) -> int:
    """A benchmark module's `main`: `--runs N`, then each figure of `measure(N)` as a table."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=int, default=MIN_COUNTED_RUNS)
    args = parser.parse_args(argv)
    for figure in measure(args.runs):
        print(markdown_table(figure) + "\n", flush=True)
    return 0
