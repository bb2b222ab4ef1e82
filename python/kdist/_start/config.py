"""Turns initialize()'s arguments and the environment into a ClusterSpec.

Python checks the argument types (only Python knows them); everything else —
parsing, ranges, precedence, provenance — happens in the compiled core, from
one snapshot of the environment, before any side effect.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from kdist import _core
from kdist._start.accelerators import tpu_chip_nodes


def _describe(name: str, value: object) -> str:
    return f"{name}={value!r} (argument, of type {type(value).__name__})"


def _integer_text(name: str, value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{_describe(name, value)}: expected an int. Received: {value!r}")
    return str(value.__index__())  # type: ignore[attr-defined]


def _addresses_text(name: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return ",".join(value)
    raise TypeError(
        f"{_describe(name, value)}: expected a string of comma-separated host:port "
        f"addresses or a list of such strings. Received: {value!r}"
    )


def _seconds_text(name: str, value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{_describe(name, value)}: expected a number of seconds (int or float). "
            f"Received: {value!r}"
        )
    return repr(float(value))


def _signals_text(name: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return ",".join(value) if value else "none"
    raise TypeError(
        f"{_describe(name, value)}: expected a string of comma-separated signal names "
        f'("SIGTERM,SIGUSR1", or "none") or a list of such names. Received: {value!r}'
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


# Every setting of initialize(), in the order its type is checked: the name of its
# keyword (and of its _core.Request field), and what checks the Python type and turns the
# value into the core's text form (None: not passed). A new setting is one row here, its
# field and Resolve step in the core, and initialize()'s keyword.
_SETTINGS: tuple[tuple[str, Callable[[str, object], str | None]], ...] = (
    ("job_addresses", _addresses_text),
    ("num_processes", _integer_text),
    ("process_id", _integer_text),
    ("timeout", _seconds_text),
    ("cluster_detection", _string_text),
    ("preflight", _bool_text),
    ("heartbeat_timeout", _integer_text),
    ("shutdown_timeout", _integer_text),
    ("on_peer_failure", _string_text),
    ("consistency", _string_text),
    ("stop_signals", _signals_text),
    ("stall_timeout", _seconds_text),
    ("unreachable_timeout", _seconds_text),
    ("tls", _string_text),
)
_NAMES = frozenset(name for name, _ in _SETTINGS)


def resolve(
    job_addresses: object = None,
    num_processes: object = None,
    process_id: object = None,
    **settings: object,
) -> _core.ClusterSpec:
    """Resolves and validates every setting; raises before any side effect.

    Args:
        job_addresses: initialize()'s `job_addresses`.
        num_processes: initialize()'s `num_processes`.
        process_id: initialize()'s `process_id`.
        **settings: initialize()'s other keywords, by the names in `_SETTINGS`
            (`timeout`, `cluster_detection`, `preflight`, `heartbeat_timeout`,
            `shutdown_timeout`, `on_peer_failure`, `consistency`,
            `stop_signals`, `stall_timeout`, `unreachable_timeout`, `tls`); a
            value of None is not passed.

    Raises:
        TypeError: an argument has the wrong type, or a keyword names no setting.
        kdist.ConfigError: a value is malformed, out of range or missing.
    """
    unknown = sorted(set(settings) - _NAMES)
    if unknown:
        raise TypeError(f"resolve() got an unexpected keyword argument {unknown[0]!r}")
    given = {
        "job_addresses": job_addresses,
        "num_processes": num_processes,
        "process_id": process_id,
        **settings,
    }
    request = _core.Request()
    for name, text in _SETTINGS:
        setattr(request, name, text(name, given.get(name)))
    # The TPU chips decide whether "auto" asks the GCE metadata server (gce_tpu).
    return _core.resolve(request, dict(os.environ), tpu_chip_nodes())
