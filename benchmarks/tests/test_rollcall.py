"""The roll-call benchmark runs against the real coordinator through kdist._core_bench."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo, for benchmarks/

from benchmarks import rollcall

from kdist import ConfigError, _core, _core_bench


def test_a_small_roll_call_completes() -> None:
    assert 0 < rollcall.roll_call_seconds(3, timeout=30.0) < 30


def test_the_codec_speaks_the_core_s_types() -> None:
    spec = _core.resolve("127.0.0.1:1", "2", "1", None, None, None, {})
    hello = _core_bench.encode_hello(spec, "bench", "sim", 1)
    assert _core_bench.frame_size(hello[: _core_bench.FRAME_HEADER_SIZE]) == len(hello)
    with pytest.raises(ConfigError):
        _core_bench.decode_reply(hello)  # a hello is not a reply
    assert not hasattr(_core, "decode_reply")
