"""`kdist bench` through `kdist launch`: every process times its initialize(), process 0
prints the table (or JSON) with one record per process."""

from __future__ import annotations

import json
import os
import sys

import pytest

from helpers.support import clean_env, free_port, run_processes

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


def test_bench_reports_a_process_whose_record_never_arrives_and_still_shuts_down() -> None:
    # Process 1 joins the job and starts its backend but sends no record; process 0
    # must give up after one initialize() timeout (not one per process), say which
    # record is missing, and shut down so that both exit.
    port = free_port()
    code = (
        "import os, sys, kdist\n"
        "from kdist._cli import bench as _bench\n"
        "if os.environ['KERAS_DISTRIBUTION_PROCESS_ID'] == '0':\n"
        "    sys.exit(_bench.run(as_json=True, timeout=None))\n"
        "kdist.initialize()\n"
        "kdist.get_device_count()  # every process starts its backend together\n"
        "kdist.shutdown()\n"
    )
    envs = [
        clean_env(
            KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
            KERAS_DISTRIBUTION_NUM_PROCESSES="2",
            KERAS_DISTRIBUTION_PROCESS_ID=str(i),
            KDIST_INIT_TIMEOUT="10",
        )
        for i in range(2)
    ]
    coordinator, silent = run_processes([[sys.executable, "-c", code]] * 2, envs, timeout=90)
    assert coordinator.returncode == 1, coordinator.describe()
    assert "kdist bench: no record from process 1 within 10 s" in coordinator.stderr
    assert "Traceback" not in coordinator.stderr, coordinator.describe()
    assert coordinator.stdout.strip() == "", "no table without every record"
    assert silent.returncode == 0, silent.describe()
    assert coordinator.seconds < 60, coordinator.describe()


@pytest.mark.parametrize("value", ["1000000", "0.5"])
def test_bench_timeout_accepts_what_the_core_accepts(value: str) -> None:
    from kdist._cli.main import build_parser
    from kdist._start import config as _config

    assert build_parser().parse_args(["bench", "--timeout", value]).timeout == float(value)
    assert _config.resolve("127.0.0.1:1", 2, 1, timeout=float(value)).timeout == float(value)


@pytest.mark.parametrize("value", ["1000000.5", "0", "-1", "nan", "inf", "soon"])
def test_bench_timeout_refuses_what_the_core_refuses(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import kdist
    from kdist._cli.main import build_parser
    from kdist._start import config as _config

    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["bench", "--timeout", value])
    assert exit_info.value.code == 2
    assert (
        f"argument --timeout: expected a positive number of seconds (at most 1000000), "
        f"got {value!r}" in capsys.readouterr().err
    )
    if value != "soon":
        with pytest.raises(kdist.ConfigError, match=r"expected a positive number of seconds"):
            _config.resolve("127.0.0.1:1", 2, 1, timeout=float(value))
