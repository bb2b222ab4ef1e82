"""The nodes' rendezvous at scale: kdist's rendezvous against up to 4,096 simulated machines.

The rendezvous is kdist's own, served as `kdist rendezvous serve` serves it (kdist._core.
RendezvousServer from resolved settings, with a token; benchmarks/_nodes_rendezvous.py, a
process of its own, so its memory is its own). The machines' agents come from the nodes'
load generator (cpp/load/node_load.h, through kdist._core_bench): one epoll loop in this
process, each simulated agent a real TCP connection from one of 250 loopback addresses that
opens as kdist's agent does, signs its hello with the job's token over the rendezvous's
challenge, sends an environment fingerprint, checks every reply's MAC and order, and plays
its part of a job across machines in real frames (cpp/core/rendezvous/rendezvous_wire.h).

A run is one job of N machines (--nodes N/2:N, -n 8), played through:
  1. forming: the N agents connect and say hello; the job forms when the N-th is admitted;
  2. a machine lost: agent N/2's connection closes, and every other agent reports its
     processes ended (as the liveness channel ends them); the next attempt, N - 1 nodes;
  3. a drain: agent N/3 sends its drain notice; every running agent is told to stop the
     attempt at one agreed step; they report the stop; the next attempt, N - 2 nodes, and
     the drained agent is told to end with 143;
  4. growth: a new agent joins the running job (--scale-up-after 0); every running agent is
     told to stop, reports, and every agent, the new one too, is told the next roster;
  5. the end: every agent reports success and is told the end, status 0.
Its figures (seconds, each until the last simulated agent was told):
  - form_s: from the last hello written to the last agent told its roster (the job forms
    when the last agent is admitted: this is the rendezvous's own time);
  - join_s: from the first connect to the last roster (every TCP handshake, challenge, hello
    and admission included, 256 connecting at a time);
  - lose_s: from the lost connection's close (the survivors' reports written right after)
    to the last survivor told the next roster;
  - drain_s: from the drain notice to the last agent told the agreed stop;
  - drain_reform_s: from the stopped agents' reports to the last told the next roster;
  - grow_s: from the new agent's connect to the last agent told the next roster;
  - finish_s: from the agents' reports to the last told the end;
  - mib: the rendezvous's peak resident memory above its start;
  - cpu_s: the CPU time the rendezvous spent on the whole job (user and system): what the
    figures above cost it, apart from the time it waited for a core (the load generator
    runs on the same cores).
Every run checks what each simulated agent was told (one roster per attempt, the same
attempt, node count and coordinator in every roster, each rank 0 .. count-1 held once, so
process ids are contiguous; one stop naming the attempt it runs; one end with the expected
status) and raises when it is wrong.

Usage:
    python -m benchmarks.nodes_scale [--agents 256 1024 4096] [--runs 7] [--json] [--plot PNG]
    python -m benchmarks.run --only nodes_scale --agents 256 1024 4096 --json --plot
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import harness
from benchmarks.harness import MIN_COUNTED_RUNS, Figure, Series

AGENT_COUNTS = (256, 1024, 4096)
FIGURES = ("form_s", "join_s", "lose_s", "drain_s", "drain_reform_s", "grow_s", "finish_s")
# The targets at 4,096 agents (issue "The nodes' rendezvous at 4,096 machines").
TARGETS_S = {"join_s": 2.0, "lose_s": 0.5, "drain_s": 1.0, "drain_reform_s": 1.0, "grow_s": 1.0}
PROCESSES_PER_NODE = 8
_LIMIT_S = 120.0
_TOKEN = "nodes-scale-benchmark-token-0123456789"
_REPO = Path(__file__).resolve().parent.parent
PLOT = _REPO / "benchmarks" / "results" / "nodes_scaling.png"
SAMPLES = _REPO / "benchmarks" / "results" / "nodes_scale.json"
# What a machine's agent sends (kdist/_start/environment_fingerprint.py's entries, fixed
# values): the rendezvous compares each with the first admitted machine's.
ENVIRONMENT = [
    ("python", "3.13.1"),
    ("jax", "0.7.0"),
    ("jaxlib", "0.7.0"),
    ("keras", "3.11.0"),
    ("kdist", "0.1.0"),
    ("device platform", "gpu"),
    ("local devices", "8"),
    ("XLA_FLAGS", ""),
    ("JAX settings", "jax_enable_x64=False"),
    ("script", "train.py sha256:0123456789abcdef"),
]


def _load_generator() -> Any:
    """kdist._core_bench, imported when the rendezvous is measured."""
    try:
        from kdist import _core_bench
    except ImportError as error:
        raise ImportError(
            "benchmarks/nodes_scale.py: expected kdist._core_bench, the load generator, "
            f"received {error}; users' wheels leave it out: install kdist built with "
            "-C cmake.define.KDIST_BENCH_MODULE=ON (scripts/bench.sh does)"
        ) from error
    return _core_bench


def check(
    report: Any,
    what: str,
    *,
    attempt: int | None = None,
    nodes: int | None = None,
    ended: int = 0,
    status: int | None = None,
) -> None:
    """Raises unless every simulated agent that should be told `what`'s outcome was told it
    once, nothing wrong was seen (the generator checks each roster against the others), and
    the outcome is the expected one: the attempt, the node count of every roster, how many
    were told to end and with which status."""
    problems = []
    if report.told != report.expected:
        problems.append(f"{report.told} of {report.expected} simulated agents were told")
    if report.told_twice:
        problems.append(f"{report.told_twice} were told twice")
    if report.wrong:
        problems.append(f"{report.wrong} wrong answers (first: {report.first_wrong})")
    if attempt is not None and report.attempt != attempt:
        problems.append(f"expected attempt {attempt}, received attempt {report.attempt}")
    if nodes is not None and report.node_count != nodes:
        problems.append(f"expected rosters of {nodes} nodes, received {report.node_count}")
    if report.ended != ended:
        problems.append(f"expected {ended} agents told to end, received {report.ended}")
    if status is not None and report.exit_status != status:
        problems.append(f"expected exit status {status}, received {report.exit_status}")
    if problems:
        raise RuntimeError(f"the nodes' rendezvous's {what}: " + "; ".join(problems))


class Rendezvous:
    """benchmarks/_nodes_rendezvous.py: the rendezvous in a process of its own."""

    def __init__(self, min_nodes: int, max_nodes: int, folder: Path) -> None:
        token_file = folder / "token"
        token_file.write_text(_TOKEN)
        self.log = folder / "rendezvous.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks._nodes_rendezvous",
                    str(min_nodes),
                    str(max_nodes),
                    str(token_file),
                ],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                cwd=_REPO,
            )
        ready = self.read()
        self.port = int(ready["port"])
        self.rss_before_kib = int(ready["rss_before_kib"])

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            tail = self.log.read_text()[-2000:]
            raise RuntimeError(
                "benchmarks/_nodes_rendezvous.py: expected a JSON line, received the end of "
                f"its output (status {self.process.wait(30)}); its log ends:\n{tail}"
            )
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        if self.process.stdout is not None:
            self.process.stdout.close()


def run_once(n: int) -> dict[str, float]:
    """One job of `n` simulated machines through every scenario, each checked."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="kdist-nodes-scale-") as folder:
        rendezvous = Rendezvous(max(1, n // 2), n, Path(folder))
        try:
            load = _load_generator().NodeLoad(
                "127.0.0.1",
                rendezvous.port,
                token=_TOKEN,
                job_id="bench",
                min_nodes=max(1, n // 2),
                max_nodes=n,
                processes_per_node=PROCESSES_PER_NODE,
                environment=ENVIRONMENT,
                count=n,
                timeout=_LIMIT_S,
            )
            joined = load.join()
            check(joined, "forming", attempt=0, nodes=n)
            out["form_s"], out["join_s"] = joined.after_last_hello, joined.seconds
            lost = load.lose(n // 2)
            check(lost, "re-forming after a loss", attempt=1, nodes=n - 1)
            out["lose_s"] = lost.seconds
            stop = load.drain(n // 3)
            check(stop, "drain's stop", attempt=1)
            out["drain_s"] = stop.seconds
            drained = load.stopped()
            check(
                drained, "re-forming after the drain", attempt=2, nodes=n - 2, ended=1, status=143
            )
            out["drain_reform_s"] = drained.seconds
            grown = load.grow()
            check(grown, "growth", attempt=3, nodes=n - 1)
            out["grow_s"] = grown.seconds
            finished = load.finish()
            check(finished, "end", ended=n - 1, status=0)
            out["finish_s"] = finished.seconds
            ended = rendezvous.read()
            if ended["exit_status"] != 0 or ended["attempts"] != 4:
                raise RuntimeError(
                    "the nodes' rendezvous ended with status "
                    f"{ended['exit_status']} after {ended['attempts']} attempts; expected 0 "
                    "after 4"
                )
            out["mib"] = (int(ended["peak_kib"]) - rendezvous.rss_before_kib) / 1024
            out["cpu_s"] = float(ended["cpu_s"])
            del load
        finally:
            rendezvous.close()
    return out


def samples(
    counts: Sequence[int] = AGENT_COUNTS, runs: int = MIN_COUNTED_RUNS
) -> dict[int, dict[str, list[float]]]:
    """Per count: each figure's values, for `runs` counted runs interleaved across counts
    after one discarded warm-up round."""
    return harness.samples_by_count(counts, runs, run_once)


def plot(by_count: dict[int, dict[str, list[float]]], path: Path) -> bool:
    """Each figure's median against the count (harness.plot_scaling); False without
    matplotlib."""
    return harness.plot_scaling(
        by_count,
        FIGURES,
        path,
        "machines (simulated agents)",
        "Nodes' rendezvous: each event to the last agent told",
    )


def figures(by_count: dict[int, dict[str, list[float]]]) -> list[Figure]:
    """The harness's figures: each scenario's time and the rendezvous's memory."""
    largest = f"{max(by_count)} agents"
    out = [
        Figure(
            f"nodes_scale_{name.removesuffix('_s')}",
            f"Nodes' rendezvous: {name.removesuffix('_s')}, to the last simulated agent told",
            [
                Series(f"{n} agents", "ms", [1000 * x for x in xs[name]])
                for n, xs in by_count.items()
            ],
            baseline=largest,
            notes=[f"Target at 4,096 agents: ≤ {TARGETS_S[name]:g} s."]
            if name in TARGETS_S
            else [],
        )
        for name in FIGURES
    ]
    out.append(
        Figure(
            "nodes_scale_memory",
            "Nodes' rendezvous: its peak resident memory above its start",
            [Series(f"{n} agents", "MiB", xs["mib"]) for n, xs in by_count.items()],
            baseline=largest,
        )
    )
    out.append(
        Figure(
            "nodes_scale_cpu",
            "Nodes' rendezvous: its CPU time for the whole job (every scenario)",
            [
                Series(f"{n} agents", "ms", [1000 * x for x in xs["cpu_s"]])
                for n, xs in by_count.items()
            ],
            baseline=largest,
        )
    )
    return out


def measure(
    runs: int = MIN_COUNTED_RUNS, agents: Sequence[int] = AGENT_COUNTS, plot_scaling: bool = False
) -> list[Figure]:
    """The harness's figures for `agents` (and, with plot_scaling, benchmarks/results/
    nodes_scaling.png: each figure against the agent count; every sample in
    benchmarks/results/nodes_scale.json)."""
    by_count = samples(agents, runs)
    SAMPLES.parent.mkdir(parents=True, exist_ok=True)
    SAMPLES.write_text(json.dumps({str(n): xs for n, xs in by_count.items()}, indent=1) + "\n")
    if plot_scaling and not plot(by_count, PLOT):
        print("benchmarks/nodes_scale.py: matplotlib is not installed: no plot", file=sys.stderr)
    return figures(by_count)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="+", default=list(AGENT_COUNTS))
    parser.add_argument("--runs", type=int, default=MIN_COUNTED_RUNS)
    parser.add_argument("--json", action="store_true", help="print every sample as JSON")
    parser.add_argument(
        "--plot", type=Path, help="also draw each figure against the agent count (PNG)"
    )
    args = parser.parse_args(argv)
    by_count = samples(args.agents, args.runs)
    if args.plot is not None and not plot(by_count, args.plot):
        print("benchmarks/nodes_scale.py: matplotlib is not installed: no plot", file=sys.stderr)
    if args.json:
        print(json.dumps({str(n): xs for n, xs in by_count.items()}, indent=2))
        return
    print(f"the nodes' rendezvous on loopback, {args.runs} runs (medians)")
    names = [*FIGURES, "mib", "cpu_s"]
    print(f"{'agents':>7} " + " ".join(f"{name.removesuffix('_s'):>12}" for name in names))
    for n, xs in by_count.items():
        print(f"{n:>7} " + " ".join(f"{statistics.median(xs[name]):12.4f}" for name in names))


if __name__ == "__main__":
    main()
