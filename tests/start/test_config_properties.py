"""Property test (hypothesis) of initialize()'s validation, in a fresh interpreter so
that "never imports JAX" is observable."""

from __future__ import annotations

import sys

from helpers.support import PROGRAMS, clean_env, run_processes


def test_any_input_resolves_or_raises_a_config_or_type_error_without_jax() -> None:
    (result,) = run_processes(
        [[sys.executable, str(PROGRAMS / "validation_properties.py"), "600"]],
        [clean_env()],
        timeout=300,
    )
    assert result.returncode == 0, result.describe()
    report = result.report()
    assert report["jax_imported"] is False
    outcomes = report["outcomes"]
    assert isinstance(outcomes, dict)
    # The strategies reach every outcome, so the property is exercised on all of them.
    assert outcomes["resolved"] > 0 and outcomes["ConfigError"] > 0 and outcomes["TypeError"] > 0
