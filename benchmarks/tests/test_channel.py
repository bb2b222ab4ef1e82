"""The channel benchmark runs kdist's hub against the channel's load generator."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo, for benchmarks/

_core_bench = pytest.importorskip(
    "kdist._core_bench",
    reason="users' wheels leave out kdist._core_bench; install kdist built with "
    "-C cmake.define.KDIST_BENCH_MODULE=ON (scripts/bench.sh does)",
)

from benchmarks import channel  # noqa: E402

from kdist import _core  # noqa: E402


def test_a_small_run_measures_every_figure() -> None:
    figures = channel.run_once(65, idle_s=0.2)
    for name in channel.FIGURES:
        assert 0 < figures[name] < 60, name
    assert figures["idle_bytes"] == 0
    assert figures["mib"] >= 0


def test_a_wrong_answer_is_an_error_not_a_figure() -> None:
    report = SimpleNamespace(
        told=3, expected=4, told_twice=0, other=0, lowest=7, highest=8, first_other=""
    )
    with pytest.raises(RuntimeError, match=r"3 of 4 simulated processes were told.*7 to 8"):
        channel.check(report, "stop agreement")


def test_the_channel_load_generator_is_not_in_the_public_extension() -> None:
    assert not hasattr(_core, "ChannelLoad")
