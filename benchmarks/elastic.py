"""Elastic `kdist launch --nodes 2:3` on network-namespace hosts (root): how long the job takes
to go on after a change of machines, beside the floor of what it must do anyway.

- Recovery: three hosts train tests/programs/keras_backup.py (kdist.BackupAndRestore,
  save_freq=4); host 2's link is cut mid-training. The figure runs from the cut to the end of
  the first training step of the next attempt (2 processes), at KDIST_UNREACHABLE_TIMEOUT=3
  and at the default (20 s). Its floor: the unreachable window (the configured bound on
  naming a silent host; the figure uses the detection as measured: from the cut to the
  survivors' line naming the host unreachable) + the new process's own work until its first
  step, each part measured in that process (wall clock): Python and the imports,
  kdist.initialize (the roll call and JAX's distributed start), `import jax`, the model's
  build and the restore, the first step. What is left is kdist's own: reaping the old
  processes, the agents' reports, the rendezvous's decision, starting the new processes.
- Growth: two hosts train; a third agent starts. The figure runs from its start to the end
  of the first step of the attempt that includes it (3 processes), with --scale-up-after 1.
- No single point (issue 53, `--only elastic_etcd`): the same recovery, side by side on the
  same three hosts at KDIST_UNREACHABLE_TIMEOUT=3, for node 0's machine (process 0, JAX's
  coordinator, and the job's book) and for node 2's with `--rendezvous etcd://...` (a
  three-member etcd, one member per host: tests/helpers/etcd_cluster.py), and for node 2's
  with the embedded rendezvous; each against its floor (the detection as measured, from the
  cut to a survivor's liveness line naming the lost host, + the new process's own work until
  its first step).

    sudo .venv/bin/python -m benchmarks.run --only elastic --runs 3
    sudo .venv/bin/python -m benchmarks.run --only elastic_etcd --runs 3 --keep
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import Figure, Series

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers import etcd_cluster, netns
from helpers.support import json_objects

_PROGRAM = str(Path(__file__).resolve().parent.parent / "tests" / "programs" / "keras_backup.py")
_PORT = 29600
_BOUND = 400.0
_DEFAULT_WINDOW = 20.0  # KDIST_UNREACHABLE_TIMEOUT's default


def _env(backup_dir: Path, window: float | None, step_sleep: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KERAS_DISTRIBUTION_", "JAX_", "KDIST_", "BACKUP_"))
    }
    env.update(
        JAX_PLATFORMS="cpu",
        JAX_NUM_CPU_DEVICES="1",
        KDIST_ROLL_CALL_TOKEN="benchmark-token-0123456789",
        KERAS_BACKEND="jax",
        KERAS_HOME="/tmp/kdist-bench-keras-home",
        BACKUP_DIR=str(backup_dir),
        BACKUP_SAVE_FREQ="4",
        BACKUP_EPOCHS="3",
        BACKUP_STEP_SLEEP=step_sleep,
        PYTHONDONTWRITEBYTECODE="1",
    )
    if window is not None:
        env["KDIST_UNREACHABLE_TIMEOUT"] = f"{window:g}"
    return env


def _agent(hosts: list[netns.Host], index: int, port: int, out: Path, env: dict[str, str],
           *extra: str, rendezvous: str | None = None) -> subprocess.Popen[bytes]:  # fmt: skip
    args = [
        sys.executable, "-m", "kdist", "launch", "--nodes", "2:3",
        "--rendezvous", rendezvous or f"{hosts[0].address}:{port}", "-n", "1",
        "--node-name", f"h{index}", "--last-call", "2", "--join-timeout", "120",
        "--grace", "10", *extra, "--", sys.executable, _PROGRAM,
    ]  # fmt: skip
    with open(out, "wb") as stdout:
        return subprocess.Popen(
            hosts[index].command(args), env=env, stdout=stdout, stderr=subprocess.STDOUT
        )


def _wait_for(
    path: Path, text: str, procs: list[subprocess.Popen[bytes]], after: int = 0
) -> None:
    """Until `text` is in `path` (past its first `after` characters)."""
    deadline = time.monotonic() + _BOUND
    while text not in path.read_text(errors="replace")[after:]:
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            raise RuntimeError(f"no {text!r} in {path}:\n{path.read_text()[-3000:]}")
        time.sleep(0.05)


def _finish(procs: list[subprocess.Popen[bytes]]) -> list[int]:
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=_BOUND))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait(timeout=30))
    return codes


def _next_attempt(path: Path) -> dict[str, object]:
    """The final report of the attempt after the change (restart_count 1)."""
    reports = [r for r in json_objects(path.read_text(errors="replace")) if "marks" in r]
    final = [r for r in reports if r.get("restart_count") == 1]
    if not final:
        raise RuntimeError(f"no report of attempt 1 in {path}:\n{path.read_text()[-3000:]}")
    return final[-1]


def _parts(report: dict[str, object]) -> dict[str, float]:
    """The new process's own work until its first step, from its wall-clock marks."""
    marks = report["marks"]
    ends = report["batch_ends"]
    assert isinstance(marks, dict) and isinstance(ends, list)
    return {
        "python + imports": marks["imported"] - marks["started"],
        "kdist.initialize (roll call + JAX start)": marks["initialized"] - marks["imported"],
        "import jax, model build + restore": marks["restored"] - marks["initialized"],
        "first step": ends[0] - marks["restored"],
    }


def recovery_once(
    window: float | None,
    port: int,
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, float]:
    """One cut; `args` and `env`: the agents' extra arguments and variables
    (benchmarks/restart.py's contenders)."""
    with tempfile.TemporaryDirectory() as tmp, netns.hosts(3) as hosts:
        folder = Path(tmp)
        agent_env = {**_env(folder / "backup", window, "0.2"), **(env or {})}
        outs = [folder / f"agent-{i}.out" for i in range(3)]
        procs = [_agent(hosts, i, port, outs[i], agent_env, *(args or [])) for i in range(3)]
        _wait_for(outs[0], "step 10\n", procs)
        seen = len(outs[0].read_text(errors="replace"))
        cut = time.time()
        hosts[2].set_link(False)
        # The survivors name the silent host (their liveness channel's line): the detection.
        _wait_for(outs[0], " is unreachable since ", procs[:2], after=seen)
        named = time.time()
        codes = _finish(procs)
        if codes != [0, 0, 69]:
            raise RuntimeError(f"agents ended {codes}:\n{outs[0].read_text()[-3000:]}")
        report = _next_attempt(outs[0])
    ends = report["batch_ends"]
    assert isinstance(ends, list)
    parts = _parts(report)
    return {
        "recovery": ends[0] - cut,
        "detection (cut -> the host named unreachable)": named - cut,
        "window (the configured bound)": window if window is not None else _DEFAULT_WINDOW,
        **parts,
    }


def takeover_once(store: str, lost: str, port: int) -> dict[str, float]:
    """One cut at KDIST_UNREACHABLE_TIMEOUT=3: `lost` is "node 0" (process 0's machine, which
    also holds the job's book) or "node 2"; `store` "etcd" (a member on every host) or
    "embedded" (node 0's agent serves the book: node 2 only)."""
    with tempfile.TemporaryDirectory() as tmp, netns.hosts(3) as hosts:
        folder = Path(tmp)
        with contextlib.ExitStack() as stack:
            rendezvous = None
            if store == "etcd":
                cluster = stack.enter_context(etcd_cluster.cluster_on(hosts, folder / "etcd"))
                rendezvous = cluster.endpoints()
            env = _env(folder / "backup", 3.0, "0.2")
            outs = [folder / f"agent-{i}.out" for i in range(3)]
            extra = ("--job-id", f"bench-{port}")
            procs = [
                _agent(hosts, i, port, outs[i], env, *extra, rendezvous=rendezvous)
                for i in range(3)
            ]
            ranks = _ranks(outs, procs)
            cut_host = ranks[0] if lost == "node 0" else ranks[2]
            watch = ranks[1]  # a survivor either way
            _wait_for(outs[watch], "step 10\n", procs)
            seen = len(outs[watch].read_text(errors="replace"))
            cut = time.time()
            hosts[cut_host].set_link(False)
            _wait_for(outs[watch], " is unreachable since ", [procs[watch]], after=seen)
            named = time.time()
            codes = _finish(procs)
            expected = [0, 0, 0]
            expected[cut_host] = 69
            if codes != expected:
                tails = "\n".join(
                    f"== agent {i}:\n{out.read_text(errors='replace')[-3000:]}"
                    for i, out in enumerate(outs)
                )
                raise RuntimeError(f"{store}, {lost}: agents ended {codes}:\n{tails}")
            report = _next_attempt(outs[watch])
    ends = report["batch_ends"]
    assert isinstance(ends, list)
    return {
        "recovery": ends[0] - cut,
        "detection (cut -> the host named unreachable)": named - cut,
        **_parts(report),
    }


def _ranks(outs: list[Path], procs: list[subprocess.Popen[bytes]]) -> list[int]:
    """The host of each node of attempt 0, by rank ("attempt 0: node R of 3 (hI)")."""
    deadline = time.monotonic() + _BOUND
    while True:
        found = {}
        for i, out in enumerate(outs):
            for rank in range(3):
                if f"attempt 0: node {rank} of 3 (h{i})" in out.read_text(errors="replace"):
                    found[rank] = i
        if len(found) == 3:
            return [found[r] for r in range(3)]
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            raise RuntimeError("attempt 0 did not form:\n" + outs[0].read_text()[-3000:])
        time.sleep(0.05)


def measure_no_single_point(runs: int) -> list[Figure]:
    """Node 0's machine lost against node 2's, with etcd, and node 2's with the embedded
    rendezvous, interleaved run by run on the same hosts (one figure each)."""
    reason = netns.unavailable_reason() or etcd_cluster.unavailable_reason()
    if reason is not None:
        print(f"elastic_etcd: skipped: {reason}", file=sys.stderr)
        return []
    count = max(1, min(runs, 3))
    contenders = [("etcd", "node 0"), ("etcd", "node 2"), ("embedded", "node 2")]
    samples: dict[tuple[str, str], list[dict[str, float]]] = {c: [] for c in contenders}
    for i in range(count):
        for j, (store, lost) in enumerate(contenders):
            samples[(store, lost)].append(takeover_once(store, lost, _PORT + 60 + 3 * i + j))
    parts = ["python + imports", "kdist.initialize (roll call + JAX start)",
             "import jax, model build + restore", "first step"]  # fmt: skip
    figures = [
        _figure(
            f"elastic_takeover_{store}_{lost.replace(' ', '')}",
            f"{lost}'s machine link cut -> first step of the next attempt (3 -> 2 hosts), "
            f"{'--rendezvous etcd://' if store == 'etcd' else 'the embedded rendezvous'}, "
            "KDIST_UNREACHABLE_TIMEOUT=3",
            samples[(store, lost)],
            "recovery",
            ["detection (cut -> the host named unreachable)", *parts],
        )
        for store, lost in contenders
    ]
    zero = figures[0].series[0].median
    two = figures[1].series[0].median
    figures[0].notes.append(
        f"node 0's loss / node 2's (etcd, medians): {zero / two:.2f}x (target 1.1x); "
        f"node 0's loss / its floor: {zero / figures[0].series[1].median:.2f}x (target 1.3x)"
    )
    return figures


def growth_once(port: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, netns.hosts(3) as hosts:
        folder = Path(tmp)
        env = _env(folder / "backup", 3.0, "0.5")
        outs = [folder / f"agent-{i}.out" for i in range(3)]
        procs = [_agent(hosts, i, port, outs[i], env, "--scale-up-after", "1") for i in range(2)]
        _wait_for(outs[0], "step 4\n", procs)
        started = time.time()
        procs.append(_agent(hosts, 2, port, outs[2], env))
        codes = _finish(procs)
        if codes != [0, 0, 0]:
            raise RuntimeError(f"agents ended {codes}:\n{outs[0].read_text()[-3000:]}")
        report = _next_attempt(outs[2])
    ends = report["batch_ends"]
    marks = report["marks"]
    assert isinstance(ends, list) and isinstance(marks, dict)
    return {
        "growth": ends[0] - started,
        "until the new attempt's processes start": marks["started"] - started,
        **_parts(report),
    }


def _figure(key: str, title: str, runs: list[dict[str, float]], total: str,
            floor_parts: list[str]) -> Figure:  # fmt: skip
    series = {name: Series(name, "s") for name in runs[0]}
    floor = Series("floor (sum of the parts)", "s")
    for run in runs:
        for name, value in run.items():
            series[name].samples.append(round(value, 3))
        floor.samples.append(round(sum(run[p] for p in floor_parts), 3))
    figure = Figure(key, title, [series[total], floor, *(series[p] for p in runs[0] if p != total)])
    figure.notes.append(
        f"{total} / floor (medians): {series[total].median / floor.median:.2f}x; floor = "
        + " + ".join(floor_parts)
    )
    return figure


def measure(runs: int) -> list[Figure]:
    reason = netns.unavailable_reason()
    if reason is not None:
        print(f"elastic: skipped: {reason}", file=sys.stderr)
        return []
    count = max(1, min(runs, 3))  # each run is a whole training job of 30-70 s
    figures = []
    parts = ["python + imports", "kdist.initialize (roll call + JAX start)",
             "import jax, model build + restore", "first step"]  # fmt: skip
    for window in (3.0, None):
        label = f"KDIST_UNREACHABLE_TIMEOUT={window:g}" if window else "the default window (20 s)"
        samples = [
            recovery_once(window, _PORT + 2 * i + (0 if window else 20)) for i in range(count)
        ]
        figures.append(
            _figure(
                f"elastic_recovery_{'3s' if window else 'default'}",
                f"host link cut -> first step of the next attempt (3 -> 2 hosts), {label}",
                samples,
                "recovery",
                ["detection (cut -> the host named unreachable)", *parts],
            )
        )
    grown = [growth_once(_PORT + 40 + i) for i in range(count)]
    figures.append(
        _figure(
            "elastic_growth",
            "a third agent's start -> first step with it (2 -> 3 hosts, --scale-up-after 1)",
            grown,
            "growth",
            parts,
        )
    )
    return figures
