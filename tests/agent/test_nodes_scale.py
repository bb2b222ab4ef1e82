"""The nodes' rendezvous at 256 simulated machines: kdist's rendezvous, served as `kdist
rendezvous serve` serves it, against the nodes' load generator (cpp/load/node_load.h,
through kdist._core_bench).

The rendezvous runs in a process of its own (benchmarks/_nodes_rendezvous.py); the
simulated agents are real TCP connections in one epoll loop, each opening as kdist's
agent does, signing its hello with the job's token and checking every reply. Each
scenario asserts what every simulated agent was told (one roster, ranks 0 .. N-1 each held
once, one agreed stop, the expected end), so a wrong answer at scale is caught, not only a
slow one. No timing is asserted; the waits are bounded generously.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers import bench_module

# Only in wheels built with KDIST_BENCH_MODULE=ON: without it this module skips, saying why.
_core_bench = bench_module.load()

N = 256
TOKEN = "a token for the nodes' scale test"
TIMEOUT_S = 120.0
REPO = Path(__file__).resolve().parents[2]


class Rendezvous:
    def __init__(self, folder: Path) -> None:
        token_file = folder / "token"
        token_file.write_text(TOKEN)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks._nodes_rendezvous",
                str(N // 2),
                str(N),
                str(token_file),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=REPO,
        )
        self.port = int(self.read()["port"])

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the rendezvous ended (status {self.process.wait(30)})"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        assert self.process.stdout is not None
        self.process.stdout.close()


def told_all_once(report: Any, expected: int) -> None:
    assert report.told == report.expected == expected, report.first_wrong
    assert report.told_twice == 0
    assert report.wrong == 0, report.first_wrong


def test_forming_a_loss_a_drain_growth_and_the_end_reach_every_agent_checked(
    tmp_path: Path,
) -> None:
    rendezvous = Rendezvous(tmp_path)
    try:
        load = _core_bench.NodeLoad(
            "127.0.0.1",
            rendezvous.port,
            token=TOKEN,
            job_id="bench",
            min_nodes=N // 2,
            max_nodes=N,
            processes_per_node=8,
            environment=[("jax", "0.7.0"), ("jaxlib", "0.7.0"), ("local devices", "8")],
            count=N,
            timeout=TIMEOUT_S,
        )
        joined = load.join()
        told_all_once(joined, N)
        # One attempt, every roster of N nodes, each rank 0 .. N-1 held once (the generator
        # counts a rank held twice, or any disagreement, as wrong).
        assert (joined.attempt, joined.node_count) == (0, N)

        lost = load.lose(100)
        told_all_once(lost, N - 1)
        assert (lost.attempt, lost.node_count) == (1, N - 1)

        stop = load.drain(7)
        told_all_once(stop, N - 1)  # every running agent, the drained one too
        assert stop.attempt == 1
        drained = load.stopped()
        told_all_once(drained, N - 1)
        assert (drained.attempt, drained.node_count) == (2, N - 2)
        assert (drained.ended, drained.exit_status) == (1, 143)

        grown = load.grow()
        told_all_once(grown, N - 1)
        assert (grown.attempt, grown.node_count) == (3, N - 1)

        finished = load.finish()
        told_all_once(finished, N - 1)
        assert (finished.ended, finished.exit_status) == (N - 1, 0)
        assert rendezvous.read()["exit_status"] == 0
        assert rendezvous.process.wait(TIMEOUT_S) == 0
    finally:
        rendezvous.close()


def test_an_agent_with_another_token_is_counted_wrong_never_told(tmp_path: Path) -> None:
    rendezvous = Rendezvous(tmp_path)
    try:
        load = _core_bench.NodeLoad(
            "127.0.0.1",
            rendezvous.port,
            token="another token of sixteen bytes",
            job_id="bench",
            min_nodes=N // 2,
            max_nodes=N,
            processes_per_node=8,
            environment=[("jax", "0.7.0")],
            count=4,
            timeout=TIMEOUT_S,
        )
        joined = load.join()
        assert joined.told == 0
        assert joined.wrong == 4
        assert "refused" in joined.first_wrong
        assert "token" in joined.first_wrong
    finally:
        rendezvous.close()
