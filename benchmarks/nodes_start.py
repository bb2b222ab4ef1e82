"""The start of a job across machines: `kdist launch --nodes` on every host against the
same job started by hand with KERAS_DISTRIBUTION_* on each host, side by side.

Hosts are network namespaces (tests/helpers/netns.py; root). Each process runs
`kdist.initialize()` and prints the wall time it returned; a run's figure is the time from
the start of the last agent (by hand: of the last process) to the last process ready.

    sudo .venv/bin/python -m benchmarks.nodes_start --nodes 2 3 --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import netns

_PROGRAM = "import time, kdist; kdist.initialize(); print('READY', time.time(), flush=True)"
_PORT = 29500


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KERAS_DISTRIBUTION_", "JAX_", "KDIST_"))
    }
    env.update(JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="1", **extra)
    return env


def _ready_after(procs: list[subprocess.Popen[str]], started: float) -> float:
    times = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        if p.returncode != 0:
            raise RuntimeError(f"a process failed ({p.returncode}):\n{err[-2000:]}")
        # A launched process's lines carry its "[id] " prefix.
        times += [
            float(line.split("READY ", 1)[1]) for line in out.splitlines() if "READY " in line
        ]
    return max(times) - started


def by_agents(hosts: list[netns.Host], port: int) -> float:
    rendezvous = f"{hosts[0].address}:{port}"
    procs = []
    started = 0.0
    for i, host in enumerate(hosts):
        args = [
            sys.executable, "-m", "kdist", "launch", "--nodes", str(len(hosts)),
            "--rendezvous", rendezvous, "-n", "1", "--node-name", f"h{i}", "--last-call", "1",
            "--", sys.executable, "-c", _PROGRAM,
        ]  # fmt: skip
        started = time.time()
        procs.append(
            subprocess.Popen(
                host.command(args),
                env=_env(KDIST_ROLL_CALL_TOKEN="benchmark-token-0123456789"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    return _ready_after(procs, started)


def by_hand(hosts: list[netns.Host], port: int) -> float:
    procs = []
    started = 0.0
    for i, host in enumerate(hosts):
        env = _env(
            KERAS_DISTRIBUTION_JOB_ADDRESSES=f"{hosts[0].address}:{port}",
            KERAS_DISTRIBUTION_NUM_PROCESSES=str(len(hosts)),
            KERAS_DISTRIBUTION_PROCESS_ID=str(i),
        )
        started = time.time()
        procs.append(
            subprocess.Popen(
                host.command([sys.executable, "-c", _PROGRAM]),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    return _ready_after(procs, started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    reason = netns.unavailable_reason()
    if reason is not None:
        print(f"skipped: {reason}")
        return 0
    print("nodes  by hand (median s)  kdist launch --nodes (median s)  ratio")
    for count in args.nodes:
        with netns.hosts(count) as hosts:
            hand, agents = [], []
            for run in range(args.runs):
                hand.append(by_hand(hosts, _PORT + 2 * run))
                agents.append(by_agents(hosts, _PORT + 2 * run + 1))
            h, a = statistics.median(hand), statistics.median(agents)
            print(f"{count:5d}  {h:19.2f}  {a:31.2f}  {a / h:5.2f}x")
            print(
                f"       runs: by hand {[round(x, 2) for x in hand]}, "
                f"agents {[round(x, 2) for x in agents]}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
