"""One owner per rule: ports, durations, addresses and free ports come from the core, and
the command line and the benchmarks' codec go through it."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

import kdist
from helpers import bench_module
from helpers.support import has_ipv6_loopback, run_python
from kdist import _core
from kdist._cli.main import build_parser


def _bindable(family: socket.AddressFamily, host: str, port: int) -> bool:
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, port))
    return True


def test_free_port_is_free_on_ipv4_and_ipv6_loopback() -> None:
    for _ in range(5):
        port = _core.free_port()
        assert 0 < port < 65536
        assert _bindable(socket.AF_INET, "127.0.0.1", port)
        if has_ipv6_loopback():
            assert _bindable(socket.AF_INET6, "::1", port)


def test_free_port_skips_a_port_taken_on_ipv4_loopback_only() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        held = taken.getsockname()[1]
        assert all(_core.free_port() != held for _ in range(50))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "0",
            "'0' would let the system pick a different port on each process; expected a port in "
            "1..65535",
        ),
        ("70000", "'70000' is out of range; expected a port in 1..65535"),
        ("http", "'http' is not a number; expected a port in 1..65535"),
    ],
)
def test_the_port_option_gives_the_core_s_reason(
    text: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["launch", "-n", "2", "--port", text, "--", "true"])
    assert f"argument --port: {reason}" in capsys.readouterr().err
    assert (
        build_parser().parse_args(["launch", "-n", "2", "--port", "8476", "--", "true"]).port
        == 8476
    )


def test_durations_and_ports_parse_in_the_core() -> None:
    assert _core.parse_timeout_seconds("2.5") == 2.5
    assert _core.parse_port("65535") == 65535
    with pytest.raises(
        kdist.ConfigError, match=r"^expected a positive number of seconds \(at most 1000000\)$"
    ):
        _core.parse_timeout_seconds("0")
    with pytest.raises(kdist.ConfigError, match=r"^is empty; expected a port in 1\.\.65535$"):
        _core.parse_port("")


def test_the_cli_and_the_load_generator_stay_out_of_import_kdist() -> None:
    result = run_python(
        "import sys, kdist._cli.main\n"
        "print(sorted(m for m in sys.modules if m.startswith('kdist')))\n"
    )
    assert result.returncode == 0, result.describe()
    assert "_core" not in result.stdout and "jax" not in result.stdout
    assert not hasattr(_core, "run_roll_call_load")
    assert not hasattr(_core, "DeviceCache")


def test_the_load_generator_has_its_own_stub() -> None:
    bench_module.load()
    stub = subprocess.run(
        [
            sys.executable,
            "-c",
            "import kdist, pathlib; "
            "print((pathlib.Path(kdist.__file__).parent / '_core_bench.pyi').read_text())",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "def run_roll_call_load(spec: kdist._core.ClusterSpec" in stub
    assert "class RollCallLoadReport" in stub


def test_the_verdict_events_the_launcher_reads_are_the_ones_the_core_writes() -> None:
    from kdist._local_job.process import FAILURE_EVENTS, VerdictEvent

    assert [event.value for event in VerdictEvent] == _core.verdict_event_names()
    assert "unreachable" in {event.value for event in FAILURE_EVENTS}
