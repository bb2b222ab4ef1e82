"""Turns initialize()'s arguments and the environment into a ClusterSpec.

Python checks the argument types (only Python knows them); everything else —
parsing, ranges, precedence, provenance — happens in the compiled core, from
one snapshot of the environment, before any side effect.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from kdist import _core


def _describe(name: str, value: object) -> str:
    return f"{name}={value!r} (argument, of type {type(value).__name__})"


def _integer_text(name: str, value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{_describe(name, value)}: expected an int. Received: {value!r}")
    return str(value.__index__())  # type: ignore[attr-defined]


def _addresses_text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return ",".join(value)
    raise TypeError(
        f"{_describe('job_addresses', value)}: expected a string of comma-separated host:port "
        f"addresses or a list of such strings. Received: {value!r}"
    )


def _seconds_text(value: object, name: str = "timeout") -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{_describe(name, value)}: expected a number of seconds (int or float). "
            f"Received: {value!r}"
        )
    return repr(float(value))


def _signals_text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return ",".join(value) if value else "none"
    raise TypeError(
        f'{_describe("stop_signals", value)}: expected signal names such as "SIGTERM,SIGUSR1" '
        f'or a list of them, or "none". Received: {value!r}'
    )


def _bool_text(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        raise TypeError(f"{_describe(name, value)}: expected True or False. Received: {value!r}")
    return "true" if value else "false"


def _string_text(name: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{_describe(name, value)}: expected a string. Received: {value!r}")


def resolve(
    job_addresses: object = None,
    num_processes: object = None,
    process_id: object = None,
    *,
    timeout: object = None,
    cluster_detection: object = None,
    preflight: object = None,
    heartbeat_timeout: object = None,
    shutdown_timeout: object = None,
    on_peer_failure: object = None,
    consistency: object = None,
    stop_signals: object = None,
    stall_timeout: object = None,
) -> _core.ClusterSpec:
    """Resolves and validates every setting; raises before any side effect.

    Raises:
        TypeError: an argument has the wrong type.
        kdist.ConfigError: a value is malformed, out of range or missing.
    """
    return _core.resolve(
        job_addresses=_addresses_text(job_addresses),
        num_processes=_integer_text("num_processes", num_processes),
        process_id=_integer_text("process_id", process_id),
        timeout=_seconds_text(timeout),
        cluster_detection=_string_text("cluster_detection", cluster_detection),
        preflight=_bool_text("preflight", preflight),
        environment=dict(os.environ),
        heartbeat_timeout=_integer_text("heartbeat_timeout", heartbeat_timeout),
        shutdown_timeout=_integer_text("shutdown_timeout", shutdown_timeout),
        on_peer_failure=_string_text("on_peer_failure", on_peer_failure),
        consistency=_string_text("consistency", consistency),
        stop_signals=_signals_text(stop_signals),
        stall_timeout=_seconds_text(stall_timeout, "stall_timeout"),
    )
