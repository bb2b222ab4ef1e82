"""`kdist bench` through `kdist launch`: every process times its initialize(), process 0
prints the table (or JSON) with one record per process."""

from __future__ import annotations

import json
import os
import sys

import pytest

from support import clean_env, run_processes

pytestmark = pytest.mark.multiprocess

KDIST = [sys.executable, "-m", "kdist"]


def launch_bench(*bench_args: str, n: int = 2) -> tuple[int | None, list[str], str]:
    (result,) = run_processes(
        [
            [
                *KDIST,
                "launch",
                "-n",
                str(n),
                "--devices-per-process",
                "2",
                "--timeout",
                "120",
                "--",
                *KDIST,
                "bench",
                *bench_args,
            ]
        ],
        [clean_env(KDIST_INIT_TIMEOUT="60")],
        timeout=150,
    )
    lines = [line.removeprefix("[0] ") for line in result.stdout.splitlines()]
    assert not any(line.startswith("[1] ") for line in lines), "only process 0 prints"
    return result.returncode, lines, result.describe()


def test_bench_json_has_one_record_per_process() -> None:
    code, lines, described = launch_bench("--json", n=3)
    assert code == 0, described
    records = json.loads(next(line for line in lines if line.startswith("[")))
    assert [r["process_id"] for r in records] == [0, 1, 2]
    assert len({r["pid"] for r in records}) == 3
    for record in records:
        assert record["local_devices"] == 2
        assert record["global_devices"] == 6
        assert record["host"] == os.uname().nodename
        for phase in ("roll_call_s", "jax_import_wait_s", "jax_initialize_s", "total_s"):
            assert 0 <= record[phase] < 60, (phase, record)
        assert record["arrived"] <= record["ready"]
        assert record["total_s"] >= record["roll_call_s"]


def test_bench_table() -> None:
    code, lines, described = launch_bench()
    assert code == 0, described
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("process"))
    assert lines[header].split() == [
        "process",
        "host",
        "pid",
        "arrival",
        "wait",
        "import",
        "jax",
        "init",
        "ready",
        "devices",
    ]
    rows = [lines[header + 2].split(), lines[header + 3].split()]
    assert [row[0] for row in rows] == ["0", "1"]
    assert all(row[-1] == "2/4" for row in rows)
    assert lines[header + 4].startswith("2 processes: the last arrived")


def test_bench_without_a_cluster_fails_with_the_reason() -> None:
    (result,) = run_processes([[*KDIST, "bench"]], [clean_env()], timeout=60)
    assert result.returncode == 1, result.describe()
    assert "kdist bench: initialize failed: ConfigError: kdist.initialize() found no cluster" in (
        result.stderr
    )
