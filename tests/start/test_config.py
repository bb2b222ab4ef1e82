"""Validation of initialize()'s settings: every bad value raises before any side effect,
naming the value, where it came from and the expected form."""

from __future__ import annotations

import re

import pytest

import kdist
from helpers.support import ENVIRONMENT_SOURCES
from kdist._start import config as _config


def resolve(*args: object, **kwargs: object) -> kdist._core.ClusterSpec:
    return _config.resolve(*args, **kwargs)


# ---- addresses -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("addresses", "message"),
    [
        ("", r'job_addresses="" \(argument\): is empty; expected host:port'),
        ("   ", r'job_addresses="   " \(argument\): is empty'),
        ("10.0.0.1", r'job_addresses="10.0.0.1" \(argument\): has no port; expected host:port'),
        ("10.0.0.1:0", r"has port 0, which would let the system pick"),
        ("10.0.0.1:65536", r"has port 65536, which is out of range; expected a port in 1..65535"),
        ("10.0.0.1:99999", r"has port 99999, which is out of range"),
        ("10.0.0.1:http", r'has port "http", which is not a number'),
        (
            "fe80::1:1234",
            r"looks like an IPv6 address without brackets; write it as \[address\]:port",
        ),
        ("[fe80::1]", r"has no port"),
        ("[not-v6]:1", r'has host "not-v6", which is not a valid IPv6 address'),
        ("bad_host:1", r'has host "bad_host", which is not a valid host name'),
        ("300.1.1.1:1", r'has host "300.1.1.1", which is not a valid IPv4 address'),
        ("a:1,,b:2", r'job_addresses="a:1,,b:2" \(argument\): entry 2 of 3 is empty'),
        ("a:1,b:2,", r"entry 3 of 3 is empty"),
    ],
)
def test_bad_addresses(addresses: str, message: str) -> None:
    with pytest.raises(kdist.ConfigError, match=message):
        resolve(addresses, 2, 0)


def test_bad_address_from_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KERAS_DISTRIBUTION_JOB_ADDRESSES", "host:99999")
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape('KERAS_DISTRIBUTION_JOB_ADDRESSES="host:99999" (from the environment)'),
    ):
        resolve(None, 2, 0)


@pytest.mark.parametrize(
    "addresses",
    ["10.0.0.1:1234", "[::1]:8476", "[fe80::1%eth0]:1", "node-7.cluster.local:80", "localhost:1"],
)
def test_good_addresses(addresses: str) -> None:
    spec = resolve(addresses, 2, 1)
    assert spec.coordinator_address == addresses
    assert spec.job_addresses == [addresses]


def test_address_list_gives_the_coordinator_and_the_count() -> None:
    spec = resolve("10.0.0.1:1234, 10.0.0.2:2345,[::1]:3", None, 2)
    assert spec.coordinator_address == "10.0.0.1:1234"
    assert spec.job_addresses == ["10.0.0.1:1234", "10.0.0.2:2345", "[::1]:3"]
    assert spec.num_processes == 3
    assert spec.sources["num_processes"] == "job_addresses"


def test_address_list_may_be_a_python_list() -> None:
    spec = resolve(["10.0.0.1:1234", "10.0.0.2:2345"], None, 0)
    assert spec.num_processes == 2


def test_address_count_must_match_num_processes() -> None:
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            'job_addresses="a:1,b:2" (argument) lists 2 addresses but num_processes=3 (argument)'
        ),
    ):
        resolve("a:1,b:2", 3, 0)


# ---- integers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "message"),
    [
        (0, r"num_processes=0 \(argument\): expected a positive integer"),
        (-2, r"num_processes=-2 \(argument\): expected a positive integer"),
        (2**64, r"is out of the 64-bit range"),
    ],
)
def test_bad_num_processes(count: int, message: str) -> None:
    with pytest.raises(kdist.ConfigError, match=message):
        resolve("h:1", count, 0)


@pytest.mark.parametrize("pid", [2, -1, 100])
def test_process_id_out_of_range(pid: int) -> None:
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape(
            f"process_id={pid} (argument): expected an integer in [0, 2) because "
            "num_processes=2 (argument)"
        ),
    ):
        resolve("h:1", 2, pid)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("num_processes", True),
        ("num_processes", 2.0),
        ("process_id", False),
        ("process_id", 0.0),
        ("num_processes", "2"),
        ("process_id", "0"),
    ],
)
def test_wrong_types_are_type_errors(name: str, value: object) -> None:
    kwargs: dict[str, object] = {"job_addresses": "h:1", "num_processes": 2, "process_id": 0}
    kwargs[name] = value
    with pytest.raises(
        TypeError,
        match=rf"{name}={re.escape(repr(value))} \(argument, of type \w+\): expected an int",
    ):
        resolve(**kwargs)


def test_numpy_integers_are_integers() -> None:
    import numpy as np

    spec = resolve("h:1", np.int64(2), np.int32(1))
    assert (spec.num_processes, spec.process_id) == (2, 1)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("KERAS_DISTRIBUTION_NUM_PROCESSES", "two"),
        ("KERAS_DISTRIBUTION_NUM_PROCESSES", ""),
        ("KERAS_DISTRIBUTION_NUM_PROCESSES", "1.5"),
        ("KERAS_DISTRIBUTION_PROCESS_ID", "one"),
        ("KERAS_DISTRIBUTION_PROCESS_ID", ""),
        ("KERAS_DISTRIBUTION_PROCESS_ID", "0.0"),
    ],
)
def test_bad_environment_integers_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv("KERAS_DISTRIBUTION_JOB_ADDRESSES", "h:1")
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "2")
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "0")
    monkeypatch.setenv(variable, value)
    with pytest.raises(
        kdist.ConfigError, match=re.escape(f'{variable}="{value}" (from the environment): ')
    ):
        resolve()


# ---- precedence and provenance ---------------------------------------------------------


def test_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERAS_DISTRIBUTION_JOB_ADDRESSES", "envhost:1")
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "4")
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "3")
    spec = resolve("arghost:2", None, 1)
    assert spec.coordinator_address == "arghost:2"
    assert spec.num_processes == 4
    assert spec.process_id == 1
    assert spec.sources == {
        **ENVIRONMENT_SOURCES,
        "job_addresses": "argument",
        "process_id": "argument",
        "timeout": "default",
    }


def test_nothing_configured_lists_the_ways() -> None:
    with pytest.raises(kdist.ConfigError, match="found no cluster configuration") as info:
        resolve()
    message = str(info.value)
    for way in (
        "job_addresses=",
        "KERAS_DISTRIBUTION_NUM_PROCESSES",
        "kdist launch",
        "num_processes=1",
    ):
        assert way in message


def test_single_process_needs_no_coordinator() -> None:
    spec = resolve(num_processes=1)
    assert spec.coordinator_address is None
    assert spec.job_addresses == []
    assert spec.process_id == 0
    assert spec.sources["process_id"] == "default"
    assert spec.sources["job_addresses"] == "not set"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("h:1", None, 0), "names the coordinator but the number of processes is not set"),
        ((None, 2, 0), r"num_processes=2 \(argument\) needs the coordinator's address"),
        (("h:1", 2, None), "process_id is not set for a job of 2 processes"),
    ],
)
def test_missing_pieces(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(kdist.ConfigError, match=message):
        resolve(*args)


# ---- timeout, preflight, detection -----------------------------------------------------


def test_timeout_from_argument_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve(num_processes=1, timeout=2.5).timeout == 2.5
    monkeypatch.setenv("KDIST_INIT_TIMEOUT", "7")
    spec = resolve(num_processes=1)
    assert (spec.timeout, spec.sources["timeout"]) == (7.0, "KDIST_INIT_TIMEOUT")
    assert resolve(num_processes=1).timeout == 7.0
    assert resolve(num_processes=1, timeout=1).timeout == 1.0


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, kdist.ConfigError, r"timeout=0.0 \(argument\): expected a positive number of seconds"),
        (-1, kdist.ConfigError, "is negative"),
        (float("inf"), kdist.ConfigError, "is not finite"),
        (True, TypeError, "expected a number of seconds"),
        ("30", TypeError, "expected a number of seconds"),
    ],
)
def test_bad_timeouts(value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        resolve(num_processes=1, timeout=value)


def test_bad_environment_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KDIST_INIT_TIMEOUT", "5min")
    with pytest.raises(
        kdist.ConfigError,
        match=re.escape('KDIST_INIT_TIMEOUT="5min" (from the environment): is not a number'),
    ):
        resolve(num_processes=1)


def test_preflight(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve(num_processes=1).preflight is True
    assert resolve(num_processes=1, preflight=False).preflight is False
    monkeypatch.setenv("KDIST_PREFLIGHT", "0")
    assert resolve(num_processes=1).preflight is False
    monkeypatch.setenv("KDIST_PREFLIGHT", "sometimes")
    with pytest.raises(
        kdist.ConfigError, match=r'KDIST_PREFLIGHT="sometimes" \(from the environment\)'
    ):
        resolve(num_processes=1)
    with pytest.raises(TypeError, match="expected True or False"):
        resolve(num_processes=1, preflight=1)


def test_the_roll_call_variable_and_its_former_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KDIST_ROLL_CALL", "off")
    spec = resolve(num_processes=1)
    assert spec.preflight is False and spec.sources["preflight"] == "KDIST_ROLL_CALL"
    monkeypatch.setenv("KDIST_PREFLIGHT", "no")  # agrees: the new name is the source
    assert resolve(num_processes=1).sources["preflight"] == "KDIST_ROLL_CALL"
    monkeypatch.setenv("KDIST_PREFLIGHT", "on")
    with pytest.raises(
        kdist.ConfigError,
        match="KDIST_PREFLIGHT is the former name of KDIST_ROLL_CALL: set only KDIST_ROLL_CALL",
    ):
        resolve(num_processes=1)


def test_cluster_detection_names_the_valid_modes() -> None:
    assert resolve(num_processes=1, cluster_detection="none").cluster_detection == "none"
    with pytest.raises(
        kdist.ConfigError,
        match=r'cluster_detection="nope" \(argument\): is not a known cluster detection mode; '
        r'expected one of "auto", "none"',
    ):
        resolve(num_processes=1, cluster_detection="nope")


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "KDIST_HEARTBEAT_TIMEOUT",
            "0",
            r'KDIST_HEARTBEAT_TIMEOUT="0" \(from the environment\): '
            r"expected a whole number of seconds from 1 to 1000000 \(JAX takes whole seconds\)",
        ),
        ("KDIST_SHUTDOWN_TIMEOUT", "2.5", r'KDIST_SHUTDOWN_TIMEOUT="2.5" \(from the environment\)'),
        (
            "KDIST_ON_PEER_FAILURE",
            "abort",
            r'KDIST_ON_PEER_FAILURE="abort" \(from the environment\): '
            r'expected "exit"',
        ),
    ],
)
def test_after_start_settings_are_checked_before_any_side_effect(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(kdist.ConfigError, match=message):
        resolve("127.0.0.1:1", 2, 0)


def test_after_start_settings_resolve_with_their_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KDIST_SHUTDOWN_TIMEOUT", "30")
    monkeypatch.setenv("KDIST_ON_PEER_FAILURE", " Ignore ")
    spec = resolve("127.0.0.1:1", 2, 0, heartbeat_timeout=12)
    assert (spec.heartbeat_timeout, spec.shutdown_timeout, spec.on_peer_failure) == (
        12,
        30,
        "ignore",
    )
    assert spec.sources["heartbeat_timeout"] == "argument"
    assert spec.sources["shutdown_timeout"] == "KDIST_SHUTDOWN_TIMEOUT"
    assert spec.sources["on_peer_failure"] == "KDIST_ON_PEER_FAILURE"
    with pytest.raises(TypeError, match=r"heartbeat_timeout=1\.5 .*expected an int"):
        resolve("127.0.0.1:1", 2, 0, heartbeat_timeout=1.5)
    # Part of what every process must agree on.
    assert spec.fingerprint != resolve("127.0.0.1:1", 2, 0).fingerprint


def test_unreachable_timeout_resolves_with_its_source(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = resolve("127.0.0.1:1", 2, 0)
    assert (spec.unreachable_timeout, spec.sources["unreachable_timeout"]) == (20, "default")
    monkeypatch.setenv("KDIST_UNREACHABLE_TIMEOUT", "6.5")
    from_env = resolve("127.0.0.1:1", 2, 0)
    assert (from_env.unreachable_timeout, from_env.sources["unreachable_timeout"]) == (
        6.5,
        "KDIST_UNREACHABLE_TIMEOUT",
    )
    from_argument = resolve("127.0.0.1:1", 2, 0, unreachable_timeout=8)
    assert (from_argument.unreachable_timeout, from_argument.sources["unreachable_timeout"]) == (
        8,
        "argument",
    )
    # Part of what every process must agree on.
    assert from_env.fingerprint != spec.fingerprint


def test_unreachable_timeout_follows_a_short_heartbeat_by_default() -> None:
    spec = resolve("127.0.0.1:1", 2, 0, heartbeat_timeout=12)
    assert spec.unreachable_timeout == 6
    assert spec.sources["unreachable_timeout"] == "default (half of heartbeat_timeout)"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "soon",
            r'KDIST_UNREACHABLE_TIMEOUT="soon" \(from the environment\): .*expected a '
            r"number of seconds of at least 1",
        ),
        (
            "0.5",
            r'KDIST_UNREACHABLE_TIMEOUT="0.5" \(from the environment\): expected a number '
            r"of seconds of at least 1",
        ),
        ("-3", r"expected a number of seconds of at least 1"),
        (
            "100",
            r'KDIST_UNREACHABLE_TIMEOUT="100" \(from the environment\): is not below '
            r"heartbeat_timeout \(100 s, from default\): JAX's heartbeat would end the job first, "
            r"by SIGABRT.*raise heartbeat_timeout \(KDIST_HEARTBEAT_TIMEOUT\) above it",
        ),
    ],
)
def test_unreachable_timeout_is_checked_before_any_side_effect(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv("KDIST_UNREACHABLE_TIMEOUT", value)
    with pytest.raises(kdist.ConfigError, match=message):
        resolve("127.0.0.1:1", 2, 0)


def test_unreachable_timeout_below_a_raised_heartbeat_is_accepted() -> None:
    spec = resolve("127.0.0.1:1", 2, 0, heartbeat_timeout=300, unreachable_timeout=150)
    assert spec.unreachable_timeout == 150
    with pytest.raises(
        kdist.ConfigError,
        match=r"unreachable_timeout=150(\.0)? \(argument\): is not "
        r"below heartbeat_timeout \(100 s, from default\)",
    ):
        resolve("127.0.0.1:1", 2, 0, unreachable_timeout=150)


def test_stop_signals_and_stall_timeout_arguments() -> None:
    spec = resolve("127.0.0.1:1", 2, 0)
    assert (spec.stop_signals, spec.stall_timeout) == (["SIGTERM"], None)
    assert (spec.sources["stop_signals"], spec.sources["stall_timeout"]) == ("default", "default")
    spec = resolve("127.0.0.1:1", 2, 0, stop_signals="usr1,SIGTERM", stall_timeout=90)
    assert (spec.stop_signals, spec.stall_timeout) == (["SIGUSR1", "SIGTERM"], 90.0)
    assert (spec.sources["stop_signals"], spec.sources["stall_timeout"]) == ("argument", "argument")
    assert resolve("127.0.0.1:1", 2, 0, stop_signals=["SIGUSR2", "SIGINT"]).stop_signals == [
        "SIGUSR2",
        "SIGINT",
    ]
    assert resolve("127.0.0.1:1", 2, 0, stop_signals="none").stop_signals == []
    assert resolve("127.0.0.1:1", 2, 0, stall_timeout=2.5).stall_timeout == 2.5
    with pytest.raises(
        TypeError,
        match=r"stop_signals=15 \(argument, of type int\): expected a string of comma-separated "
        "signal names",
    ):
        resolve("127.0.0.1:1", 2, 0, stop_signals=15)
    with pytest.raises(
        TypeError,
        match=r"stall_timeout='30' \(argument, of type str\): expected a number of seconds",
    ):
        resolve("127.0.0.1:1", 2, 0, stall_timeout="30")
    with pytest.raises(TypeError, match=r"stall_timeout=True .*expected a number of seconds"):
        resolve("127.0.0.1:1", 2, 0, stall_timeout=True)
    with pytest.raises(kdist.ConfigError, match=r'stop_signals="SIGKILL" \(argument\)'):
        resolve("127.0.0.1:1", 2, 0, stop_signals="SIGKILL")


def test_a_keyword_that_names_no_setting_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'timout'"):
        resolve("127.0.0.1:1", 2, 0, timout=3)


def test_the_request_is_filled_once_from_the_settings_table() -> None:
    """Every setting of the table is a field of the bound Request (None: not passed), and
    the core resolves a Request built by hand like one filled by config.resolve()."""
    request = kdist._core.Request()
    for name, _ in _config._SETTINGS:
        assert getattr(request, name) is None, name
    request.job_addresses, request.num_processes, request.process_id = "127.0.0.1:1", "2", "1"
    request.stall_timeout = "12"
    spec = kdist._core.resolve(request, {})
    assert (spec.num_processes, spec.process_id, spec.stall_timeout) == (2, 1, 12.0)
    assert spec.fingerprint == resolve("127.0.0.1:1", 2, 1, stall_timeout=12).fingerprint
    request.stall_timeout = None
    assert kdist._core.resolve(request, {}).sources["stall_timeout"] == "default"


# ---- every value with its own source -------------------------------------------------------

# Each setting set through its own variable, to a value no other setting shares: a value or
# a source given to the wrong setting (two settings swapped anywhere between the core and
# Python) shows as a difference.
OWN_VARIABLES = {
    "job_addresses": ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "127.0.0.1:1234"),
    "num_processes": ("KERAS_DISTRIBUTION_NUM_PROCESSES", "3"),
    "process_id": ("KERAS_DISTRIBUTION_PROCESS_ID", "2"),
    "timeout": ("KDIST_INIT_TIMEOUT", "77"),
    "cluster_detection": ("KDIST_CLUSTER_DETECTION", "none"),
    "preflight": ("KDIST_ROLL_CALL", "off"),
    "local_device_ids": ("KDIST_LOCAL_DEVICE_IDS", "0,1"),
    "coordinator_bind_address": ("JAX_COORDINATOR_BIND_ADDRESS", "127.0.0.2:1234"),
    "collectives_address": ("KDIST_COLLECTIVES_ADDRESS", "127.0.0.3"),
    "heartbeat_timeout": ("KDIST_HEARTBEAT_TIMEOUT", "91"),
    "shutdown_timeout": ("KDIST_SHUTDOWN_TIMEOUT", "203"),
    "unreachable_timeout": ("KDIST_UNREACHABLE_TIMEOUT", "13"),
    "on_peer_failure": ("KDIST_ON_PEER_FAILURE", "ignore"),
    "consistency": ("KDIST_CONSISTENCY", "strict"),
    "stop_signals": ("KDIST_STOP_SIGNALS", "SIGUSR1,SIGTERM"),
    "stall_timeout": ("KDIST_STALL_TIMEOUT", "45"),
    "tls": ("KDIST_TLS", "required"),
    "restart_count": ("KDIST_RESTART_COUNT", "4"),
}


def test_every_setting_reports_its_own_variable_and_value(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, value in OWN_VARIABLES.values():
        monkeypatch.setenv(variable, value)
    spec = resolve()
    # The collectives' interface is the address's alternative (both set is an error).
    assert spec.sources == {
        **{name: variable for name, (variable, _) in OWN_VARIABLES.items()},
        "collectives_interface": "default",
    }
    assert (spec.collectives_address, spec.collectives_interface) == ("127.0.0.3", None)
    assert spec.job_addresses == ["127.0.0.1:1234"]
    assert (spec.num_processes, spec.process_id, spec.timeout) == (3, 2, 77)
    assert (spec.cluster_detection, spec.preflight) == ("none", False)
    assert spec.local_device_ids == [0, 1]
    assert spec.coordinator_bind_address == "127.0.0.2:1234"
    assert (spec.heartbeat_timeout, spec.shutdown_timeout) == (91, 203)
    assert spec.unreachable_timeout == 13
    assert (spec.on_peer_failure, spec.consistency) == ("ignore", "strict")
    assert (spec.stop_signals, spec.stall_timeout) == (["SIGUSR1", "SIGTERM"], 45)
    assert spec.tls == "required"
    assert spec.restart_count == 4


def test_arguments_variables_and_defaults_each_keep_their_own_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Neighbouring settings from three different kinds of source."""
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "3")
    monkeypatch.setenv("KDIST_INIT_TIMEOUT", "77")
    monkeypatch.setenv("KDIST_SHUTDOWN_TIMEOUT", "203")
    monkeypatch.setenv("KDIST_CONSISTENCY", "off")
    monkeypatch.setenv("KDIST_STALL_TIMEOUT", "45")
    spec = resolve(
        "127.0.0.1:1234",
        process_id=2,
        cluster_detection="none",
        heartbeat_timeout=91,
        on_peer_failure="ignore",
        stop_signals=("SIGUSR1",),
    )
    assert spec.sources == {
        "job_addresses": "argument",
        "num_processes": "KERAS_DISTRIBUTION_NUM_PROCESSES",
        "process_id": "argument",
        "timeout": "KDIST_INIT_TIMEOUT",
        "cluster_detection": "argument",
        "preflight": "default",
        "local_device_ids": "default",
        "coordinator_bind_address": "default",
        "collectives_address": "default",
        "collectives_interface": "default",
        "heartbeat_timeout": "argument",
        "shutdown_timeout": "KDIST_SHUTDOWN_TIMEOUT",
        "unreachable_timeout": "default",
        "on_peer_failure": "argument",
        "consistency": "KDIST_CONSISTENCY",
        "stop_signals": "argument",
        "stall_timeout": "KDIST_STALL_TIMEOUT",
        "restart_count": "default",
    }
    assert (spec.heartbeat_timeout, spec.shutdown_timeout, spec.timeout) == (91, 203, 77)
    assert (spec.stop_signals, spec.stall_timeout) == (["SIGUSR1"], 45)
