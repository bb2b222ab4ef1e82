"""kdist._core_bench, the roll call's load generator, for the tests that need it.

Users' wheels leave it out: it is built only with `-C cmake.define.KDIST_BENCH_MODULE=ON`
(scripts/test.sh and bench.sh build their wheels so). Where it is missing, the
tests that need it skip and say why; with KDIST_TEST_BENCH_MODULE=1 (the wheel under test
was built with it, as scripts/test.sh declares) a missing module fails them instead, so a
broken build cannot hide behind a skip.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

BUILD_OPTION = "-C cmake.define.KDIST_BENCH_MODULE=ON"
# Read once, at collection: tests/conftest.py clears every KDIST_* variable around each test.
_EXPECTED = os.environ.get("KDIST_TEST_BENCH_MODULE") == "1"


def expected() -> bool:
    """Whether the wheel under test was built with the bench module (KDIST_TEST_BENCH_MODULE=1)."""
    return _EXPECTED


def load() -> ModuleType:
    """kdist._core_bench, or a skip (a failure when `expected()`) that says why it is missing."""
    try:
        return importlib.import_module("kdist._core_bench")
    except ImportError as error:
        if expected():
            pytest.fail(
                "expected kdist._core_bench (KDIST_TEST_BENCH_MODULE=1: the wheel under test "
                f"was built with {BUILD_OPTION}), received ImportError: {error}; rebuild the "
                "wheel with that option",
                pytrace=False,
            )
        pytest.skip(
            "kdist._core_bench is not installed: users' wheels leave it out; install a wheel "
            f"built with {BUILD_OPTION} (scripts/test.sh does) to run this test",
            allow_module_level=True,
        )
