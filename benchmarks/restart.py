"""Restarts with warm spares and JAX's compilation cache (issue 54), side by side with the
cold restart of before, in one run:

1. `kdist launch -n 2 --devices-per-process 2 --max-restarts 1` training
   tests/programs/keras_backup.py (Keras on JAX, DataParallel, save_freq "epoch"), SIGTERM
   to process 1 at batch 22: the restart (the SIGTERM -> the first batch attempt 1 trains)
   against the same job's cold launch (the launcher's start -> the first batch attempt 0
   trained), for "cold" (`--no-warm`, JAX_ENABLE_COMPILATION_CACHE=false: kdist before
   issue 54), "cache" (`--no-warm`: the cache alone) and "warm + cache" (the default).
   Target: the restart at most 0.5x the cold launch.
2. An elastic shrink on network-namespace hosts (root; benchmarks/elastic.py's recovery at
   KDIST_UNREACHABLE_TIMEOUT=3): cold against warm + cache. Target: recovery at most the
   detection + 0.5x the cold floor (its parts after the detection).
3. The first start of a `kdist launch --nodes 2` job (2 namespace hosts, keras_backup.py,
   one epoch): every agent's start -> the first batch, cold against warm + cache. Target:
   no slower.

    python -m benchmarks.run --only restart --runs 3
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks import elastic
from benchmarks.backup import INTERRUPT_AT, LIMIT_S, ROOT, STEPS_PER_EPOCH, WORKER, _report
from benchmarks.environment import child_env
from benchmarks.harness import Figure, Series

sys.path.insert(0, str(ROOT / "tests"))

from helpers import netns

# Each contender: the launcher's extra arguments and environment.
CONTENDERS: dict[str, tuple[list[str], dict[str, str]]] = {
    "cold": (["--no-warm"], {"JAX_ENABLE_COMPILATION_CACHE": "false"}),
    "cache": (["--no-warm"], {}),
    "warm + cache": ([], {}),
}
_NODES_PORT = 29700


def restart_once(contender: str) -> dict[str, float]:
    """One launch, one SIGTERM, one restart: the cold launch and the restart, in seconds."""
    extra_args, extra_env = CONTENDERS[contender]
    with tempfile.TemporaryDirectory(prefix="kdist-bench-warm-") as directory:
        root = Path(directory)
        env = child_env(
            2,
            BACKUP_DIR=str(root / "backup"),
            BACKUP_SAVE_FREQ="epoch",
            BACKUP_STEP_SLEEP="0.02",
            KERAS_HOME=str(Path(tempfile.gettempdir()) / "kdist-bench-keras-home"),
            **extra_env,
        )
        args = ["-n", "2", "--devices-per-process", "2", "--max-restarts", "1", *extra_args]
        launched = time.time()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kdist", "launch", *args, "--log-dir", str(root / "logs"),
             "--", sys.executable, WORKER],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        notes: list[str] = []
        reader = threading.Thread(target=lambda: notes.extend(proc.stderr or ()), daemon=True)
        reader.start()
        sent = 0.0
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if not sent and line.strip() == f"[0] step {INTERRUPT_AT}":
                    found = (re.search(r"\(pids ([\d, ]+)\)", note) for note in notes)
                    pids = next(m.group(1) for m in found if m)
                    sent = time.time()
                    os.kill(int(pids.split(", ")[1]), signal.SIGTERM)
            status = proc.wait(timeout=LIMIT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(10)
        if status != 0 or not sent:
            raise RuntimeError(f"kdist launch exited {status}:\n{''.join(notes)[-3000:]}")
        warm = any("attempt 1" in n and "; warm: 0, 1" in n for n in notes)
        if warm != (contender == "warm + cache"):
            raise RuntimeError(f"{contender}: attempt 1 warm={warm}:\n{''.join(notes)[-3000:]}")
        logs = root / "logs"
        first = [_report((logs / "attempt-0" / f"process-{i}.log").read_text()) for i in (0, 1)]
        second = [_report((logs / "attempt-1" / f"process-{i}.log").read_text()) for i in (0, 1)]
    skip = int(second[0]["restored_step"]) % STEPS_PER_EPOCH
    return {
        "cold launch -> first step": max(float(r["batch_ends"][0]) for r in first) - launched,
        "SIGTERM -> first new step": max(float(r["batch_ends"][skip]) for r in second) - sent,
    }


def first_start_once(contender: str, port: int) -> float:
    """`kdist launch --nodes 2` on two namespace hosts: the agents' start -> first batch."""
    extra_args, extra_env = CONTENDERS[contender]
    with tempfile.TemporaryDirectory() as tmp, netns.hosts(2) as hosts:
        folder = Path(tmp)
        env = elastic._env(folder / "backup", 3.0, "0")
        env.update(BACKUP_EPOCHS="1", **extra_env)
        outs = [folder / f"agent-{i}.out" for i in range(2)]
        started = time.time()
        procs = []
        for i in range(2):
            args = [
                sys.executable, "-m", "kdist", "launch", "--nodes", "2",
                "--rendezvous", f"{hosts[0].address}:{port}", "-n", "1", "--node-name", f"h{i}",
                "--last-call", "2", "--join-timeout", "120", *extra_args,
                "--", sys.executable, WORKER,
            ]  # fmt: skip
            with open(outs[i], "wb") as stdout:
                procs.append(
                    subprocess.Popen(
                        hosts[i].command(args), env=env, stdout=stdout, stderr=subprocess.STDOUT
                    )
                )
        codes = elastic._finish(procs)
        if codes != [0, 0]:
            raise RuntimeError(f"agents ended {codes}:\n{outs[0].read_text()[-3000:]}")
        reports = [_report(re.sub(r"(?m)^\[\d+\] ", "", out.read_text())) for out in outs]
    return max(float(r["batch_ends"][0]) for r in reports) - started


def _series(name: str, samples: list[float]) -> Series:
    return Series(name, "s", [round(s, 3) for s in samples])


def measure(runs: int) -> list[Figure]:
    count = max(1, min(runs, 3))  # each run is a training job of 20-40 s
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in CONTENDERS}
    for _ in range(count):
        for name in CONTENDERS:  # interleaved
            samples[name].append(restart_once(name))
    series = []
    for name in CONTENDERS:
        for part in ("cold launch -> first step", "SIGTERM -> first new step"):
            series.append(_series(f"{name}: {part}", [s[part] for s in samples[name]]))
    medians = {
        name: {part: statistics.median(s[part] for s in runs_) for part in runs_[0]}
        for name, runs_ in samples.items()
    }
    cold_start = medians["cold"]["cold launch -> first step"]
    notes = [
        f"{name}: restart / cold launch (the cold contender's, medians) = "
        f"{medians[name]['SIGTERM -> first new step'] / cold_start:.2f}x"
        for name in CONTENDERS
    ]
    figures = [
        Figure(
            "restart_warm",
            "kdist launch -n 2 --max-restarts 1: SIGTERM -> first new step against the cold "
            "launch -> first step (Keras, 2 x 2 CPU devices)",
            series,
            notes=[*notes, "Target: warm + cache at most 0.5x the cold launch."],
        )
    ]
    reason = netns.unavailable_reason()
    if reason is not None:
        print(f"restart: the --nodes figures skipped: {reason}", file=sys.stderr)
        return figures
    figures += _elastic_figures(count)
    return figures


def _elastic_figures(count: int) -> list[Figure]:
    recovered: dict[str, list[dict[str, float]]] = {"cold": [], "warm + cache": []}
    started: dict[str, list[float]] = {"cold": [], "warm + cache": []}
    for i in range(count):
        for j, name in enumerate(recovered):
            extra_args, extra_env = CONTENDERS[name]
            recovered[name].append(
                elastic.recovery_once(
                    3.0, elastic._PORT + 60 + 4 * i + j, args=extra_args, env=extra_env
                )
            )
            started[name].append(first_start_once(name, _NODES_PORT + 4 * i + j))
    after_detection = [
        "python + imports",
        "kdist.initialize (roll call + JAX start)",
        "import jax, model build + restore",
        "first step",
    ]
    detection = "detection (cut -> the host named unreachable)"
    median = statistics.median
    cold_floor = median(sum(r[p] for p in after_detection) for r in recovered["cold"])
    warm_detection = median(r[detection] for r in recovered["warm + cache"])
    warm_recovery = median(r["recovery"] for r in recovered["warm + cache"])
    target = warm_detection + 0.5 * cold_floor
    series = [
        _series(f"{name}: {part}", [r[part] for r in runs_])
        for name, runs_ in recovered.items()
        for part in ["recovery", detection, *after_detection]
    ]
    return [
        Figure(
            "restart_elastic_shrink",
            "kdist launch --nodes 2:3, a host's link cut -> first step of the next attempt "
            "(KDIST_UNREACHABLE_TIMEOUT=3), cold against warm + cache",
            series,
            notes=[
                f"warm + cache recovery {warm_recovery:.2f} s against the target detection + "
                f"0.5x the cold floor = {warm_detection:.2f} + 0.5 x {cold_floor:.2f} = "
                f"{target:.2f} s (medians; the floor: the new process's own parts after the "
                "detection, as benchmarks/elastic.py measures them)"
            ],
        ),
        Figure(
            "restart_nodes_first_start",
            "kdist launch --nodes 2 (2 namespace hosts): the agents' start -> the first batch",
            [_series(name, values) for name, values in started.items()],
            baseline="cold",
            notes=[
                "Target: warm + cache no slower than cold (the spares import while the "
                "agents join; a process whose spare is not ready yet waits for it)."
            ],
        ),
    ]
