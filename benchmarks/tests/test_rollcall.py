"""The roll-call benchmark runs the real coordinator against the C++ load generator."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo, for benchmarks/

_core_bench = pytest.importorskip(
    "kdist._core_bench",
    reason="users' wheels leave out kdist._core_bench; install kdist built with "
    "-C cmake.define.KDIST_BENCH_MODULE=ON (scripts/bench.sh does)",
)

from benchmarks import rollcall  # noqa: E402

import kdist  # noqa: E402
from kdist import _core  # noqa: E402


def test_a_small_roll_call_completes_and_measures_process_zero() -> None:
    run = rollcall.roll_call(64, timeout=30.0)
    assert 0 < run.seconds < 30
    assert 0 <= run.after_last_hello <= run.seconds
    assert run.memory_mib >= 0


def test_the_load_generator_times_out_naming_the_waiting() -> None:
    port = _core.free_port()  # nothing listens there
    request = _core.Request()
    request.job_addresses, request.num_processes, request.process_id = f"127.0.0.1:{port}", "4", "1"
    spec = _core.resolve(request, {})
    with pytest.raises(kdist.RendezvousTimeoutError, match="3 of 3 simulated processes"):
        _core_bench.run_roll_call_load(spec, "127.0.0.1", port, count=3, timeout=0.3)


def test_the_codec_is_not_in_the_public_extension() -> None:
    assert not hasattr(_core, "decode_reply")
    assert not hasattr(_core, "run_roll_call_load")
