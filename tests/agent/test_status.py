"""The operator's view (issue 55): `kdist status` (JSON and table) against a two-node job on
loopback whose rendezvous is `kdist rendezvous serve --linger`: while it gathers, after a
failure and a restart, after node b is drained (SIGTERM to its agent: the job goes on with
a alone), and after it ended; /metrics of an agent (--metrics-port, asking the
rendezvous over the wire) and a real Prometheus (Debian's `prometheus`, when installed:
scripts/test.sh installs it) scraping it every second, its HTTP API answering the restarts by
cause and the processes; goodput in attempts.json against the times the job's processes
measured; bad inputs named (another job id, a token the rendezvous does not have, no
rendezvous, a metrics port in use). One job for all of it: it costs two JAX starts."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from helpers.support import PROGRAMS, Spawned, clean_env
from kdist import _core

_BOUND = 120.0  # every wait on the job
_STEPS, _FAIL_AT, _PAUSE = 160, 60, 0.05


def _start_prometheus(spawned: Spawned, folder: Path, target: int) -> int | None:
    """Prometheus scraping 127.0.0.1:`target` every second (its port; None: not installed,
    which scripts/test.sh never allows: it installs it and sets KDIST_TEST_PROMETHEUS=1)."""
    binary = shutil.which("prometheus")
    if binary is None:
        assert os.environ.get("KDIST_TEST_PROMETHEUS") != "1", "prometheus is not installed"
        return None
    port = _core.free_port()
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: kdist\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{target}']}}]\n"
    )
    spawned.start(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        clean_env(1),
    )  # fmt: skip
    return port


def _query(port: int, expression: str) -> dict[str, float]:
    """Prometheus's answer to an instant query: each series' value by its `cause` label (or
    "" without one); {} while it has none (or is not up yet)."""
    url = f"http://127.0.0.1:{port}/api/v1/query?query={urllib.parse.quote(expression)}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            answer = json.loads(response.read())
    except OSError:
        return {}
    return {r["metric"].get("cause", ""): float(r["value"][1]) for r in answer["data"]["result"]}


def _prometheus_sees(prometheus: int, processes: float, restarts: dict[str, float]) -> None:
    """Until Prometheus's HTTP API answers `processes` for kdist_processes and `restarts` for
    kdist_restarts_total (every other cause 0), from its scrapes of agent a (bounded)."""
    every = dict.fromkeys(("failure", "node_lost", "drained", "grown", "stopped"), 0.0)
    every.update(restarts)
    _wait(
        f"Prometheus's scrape of {processes:g} processes and restarts {restarts}",
        lambda: (
            _query(prometheus, 'kdist_processes{job_id="t55"}') == {"": processes}
            and _query(prometheus, 'kdist_restarts_total{node="a"}') == every
        ),
        timeout=30,
    )


def _status(
    port: int, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kdist", "status", "--rendezvous", f"127.0.0.1:{port}",
         "--job-id", "t55", *extra],
        env=env or clean_env(1), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _json_status(port: int) -> dict[str, object]:
    done = _status(port, "--json")
    assert done.returncode == 0, done.stderr
    value = json.loads(done.stdout)
    assert isinstance(value, dict)
    return value


def _steps(folder: Path, attempt: int) -> list[tuple[int, float]]:
    """Every (step, wall-clock time) the processes of `attempt` wrote."""
    found = []
    for path in folder.glob(f"steps-{attempt}-*.txt"):
        for line in path.read_text().splitlines():
            step, at = line.split()
            found.append((int(step), float(at)))
    return found


def _wait(what: str, done: object, timeout: float = _BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _metric(text: str, name: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.mark.multiprocess
def test_status_and_metrics_follow_a_job_through_a_failure_and_its_goodput_adds_up(
    tmp_path: Path,
) -> None:
    port, metrics_port = _core.free_port(), _core.free_port()
    env = clean_env(
        1, WATCH_DIR=str(tmp_path), WATCH_STEPS=str(_STEPS), WATCH_FAIL_AT=str(_FAIL_AT),
        WATCH_STEP_SECONDS=str(_PAUSE),
    )  # fmt: skip

    def agent(name: str, *extra: str) -> list[str]:
        return [
            sys.executable, "-m", "kdist", "launch", "--nodes", "1:2", "--rendezvous",
            f"127.0.0.1:{port}", "-n", "1", "--devices-per-process", "1", "--node-name", name,
            "--job-id", "t55", *extra,
            "--", sys.executable, str(PROGRAMS / "watch_job.py"),
        ]  # fmt: skip

    with Spawned(tmp_path) as spawned:
        serve = spawned.start(
            [sys.executable, "-m", "kdist", "rendezvous", "serve", "--port", str(port),
             "--host", "127.0.0.1", "--nodes", "1:2", "--job-id", "t55", "--last-call", "60",
             "--max-restarts", "1", "--linger", "60", "--log-dir", str(tmp_path / "logs")],
            clean_env(1),
        )  # fmt: skip
        # Listening before any agent starts (else agent a, finding the port free, would serve
        # the rendezvous itself, and `serve` would be refused).
        _wait("the rendezvous", lambda: "serving the nodes' rendezvous on" in serve.stderr())
        prometheus = _start_prometheus(spawned, tmp_path / "prometheus", metrics_port)
        a = spawned.start(agent("a", "--metrics-port", str(metrics_port)), env)
        # Bound where agent a listens: its address toward the rendezvous (loopback here).
        _wait("a's /metrics", lambda: "serving /metrics on" in a.stderr())
        assert f"serving /metrics on 127.0.0.1:{metrics_port}\n" in a.stderr(), a.stderr()
        # Gathering: one node of two, no attempt yet.
        _wait("node a's admission", lambda: _json_status(port)["nodes"])
        gathering = _json_status(port)
        assert gathering["schema"] == 1 and gathering["job_id"] == "t55"
        assert gathering["state"] == "gathering" and gathering["attempt"] is None
        assert [n["name"] for n in gathering["nodes"]] == ["a"]  # type: ignore[union-attr, index]
        # A metrics port in use is named before anything starts.
        taken = subprocess.run(
            [sys.executable, "-m", "kdist", "launch", "-n", "1", "--metrics-port",
             str(metrics_port), "--", sys.executable, "-c", "pass"],
            env=clean_env(1), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert taken.returncode == 2, taken.stderr
        assert f"--metrics-port {metrics_port}" in taken.stderr, taken.stderr
        b = spawned.start(agent("b"), env)
        # Attempt 1 runs after process 1's failure: the restart is counted, the step moves.
        _wait("attempt 1's steps", lambda: len(_steps(tmp_path, 1)) >= 20)
        began = time.monotonic()
        running = _json_status(port)
        answered = time.monotonic() - began
        assert running["state"] == "running", running
        assert running["attempt"] == 1 and running["processes"] == 2
        assert running["restarts"] == {"failure": 1}
        nodes = {n["name"]: n for n in running["nodes"]}  # type: ignore[union-attr]
        assert sorted(nodes) == ["a", "b"]
        assert sorted(n["processes"][0] for n in nodes.values()) == [0, 1]
        assert all(n["address"] == "127.0.0.1" and not n["draining"] for n in nodes.values())
        assert isinstance(running["step"], int) and running["step"] >= _FAIL_AT - 5
        assert set(running["goodput"]) == {  # type: ignore[arg-type]
            "productive_seconds", "starting_seconds", "restarting_seconds",
            "recomputing_seconds", "waiting_seconds", "ratio",
        }  # fmt: skip
        table = _status(port)
        assert table.returncode == 0, table.stderr
        assert "job 't55': running, attempt 1, 2 processes" in table.stdout, table.stdout
        assert "restarts: failure 1" in table.stdout and "goodput: " in table.stdout
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=20) as r:
            metrics = r.read().decode()
        assert "# TYPE kdist_restarts_total counter" in metrics, metrics
        assert _metric(metrics, "kdist_processes", job_id="t55", node="a") == 2.0, metrics
        assert _metric(metrics, "kdist_attempt", node="a") == 1.0, metrics
        assert _metric(metrics, "kdist_restarts_total", cause="failure") == 1.0, metrics
        assert _metric(metrics, "kdist_seconds_total", phase="recomputing") is not None
        if prometheus is not None:  # what it scraped, through its HTTP API
            _prometheus_sees(prometheus, 2.0, {"failure": 1.0})
        # b drained (SIGTERM to its agent) once attempt 1 is past attempt 0's newest step:
        # attempt 2 runs with a alone; the restart is counted as "drained".
        _wait("attempt 1 past step 70", lambda: max(_steps(tmp_path, 1))[0] >= 70)
        b.proc.send_signal(signal.SIGTERM)
        assert b.finish(_BOUND).returncode == 143, b.stderr()
        _wait("attempt 2 with a alone", lambda: _json_status(port)["attempt"] == 2)
        alone = _json_status(port)
        assert alone["processes"] == 1 and alone["restarts"] == {"failure": 1, "drained": 1}
        assert [n["name"] for n in alone["nodes"]] == ["a"]  # type: ignore[union-attr, index]
        if prometheus is not None:
            _prometheus_sees(prometheus, 1.0, {"failure": 1.0, "drained": 1.0})
        # Bad inputs, each named, each non-zero.
        other = _status(port, "--job-id", "other")
        assert other.returncode == 1 and 'names job id "other"' in other.stderr, other.stderr
        token = _status(port, env=clean_env(1, KDIST_ROLL_CALL_TOKEN="not-the-job-s"))
        assert token.returncode == 1 and "has a token" in token.stderr, token.stderr
        done = a.finish(_BOUND)
        ended_at = time.time()
        assert done.returncode == 0, done.stderr
        # The rendezvous outlives the job (--linger): the end is still there to read.
        finished = _json_status(port)
        assert finished["state"] == "finished" and finished["exit_status"] == 0, finished
        assert finished["attempt"] == 2
        assert finished["restarts"] == {"failure": 1, "drained": 1}
        assert [r["ended"] for r in finished["attempts"]][2] == "finished"  # type: ignore[index, union-attr]
        serve.proc.send_signal(signal.SIGINT)  # its linger cut short; it writes attempts.json
        assert serve.finish(_BOUND).returncode == 0
    shutil.rmtree(tmp_path / "prometheus", ignore_errors=True)  # its data (ended by its pid)
    nobody = _core.free_port()
    gone = _status(nobody, "--timeout", "2")
    assert gone.returncode == 69 and f"127.0.0.1:{nobody}" in gone.stderr, gone.stderr
    # Goodput against what the processes measured.
    document = json.loads((tmp_path / "logs" / "attempts.json").read_text())
    goodput = document["goodput"]
    wall = document["attempts"][-1]["ended_seconds"]
    phases = [goodput[f"{p}_seconds"] for p in
              ("productive", "starting", "restarting", "recomputing", "waiting")]  # fmt: skip
    assert sum(phases) == pytest.approx(wall, rel=1e-6)
    assert goodput["ratio"] == pytest.approx(goodput["productive_seconds"] / wall, rel=1e-6)
    # Each attempt starts at step 0 (no backups). Restarting: an attempt's newest step to the
    # next one's first; recomputing: a later attempt's steps up to the newest step an earlier
    # one reached; productive: the steps kept, and the last attempt's end.
    restarting = recomputing = kept = 0.0
    newest, last = -1, 0.0
    for attempt in range(3):
        steps = _steps(tmp_path, attempt)
        first = min(at for _, at in steps)
        if attempt:
            restarting += first - last
        passed = first if newest < 0 else min(at for step, at in steps if step == newest)
        recomputing += passed - first
        last = max(at for _, at in steps)
        kept += last - passed
        newest = max(newest, max(steps)[0])
    assert goodput["restarting_seconds"] == pytest.approx(restarting, rel=0.1, abs=0.3)
    assert goodput["recomputing_seconds"] == pytest.approx(recomputing, rel=0.1, abs=0.3)
    assert 0.9 * kept <= goodput["productive_seconds"] <= 1.1 * (kept + ended_at - last)
    print(f"kdist status --json answered a running 2-node job in {answered:.2f} s (CLI, whole)")
    print(
        f"goodput {goodput}; measured: restarting {restarting:.2f} s, recomputing "
        f"{recomputing:.2f} s, productive {kept:.2f}-{kept + ended_at - last:.2f} s"
    )
