"""Property check of initialize()'s validation, run in a fresh interpreter.

For arbitrary arguments and KERAS_DISTRIBUTION_* / KDIST_* values, the
validation step of kdist.initialize() either resolves to a consistent spec or
raises kdist.ConfigError / TypeError — never another exception, never a hang
(each example has a deadline), and JAX is never imported. Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kdist
from kdist._start import config as _config

EXAMPLES = int(sys.argv[1]) if len(sys.argv) > 1 else 500
VARIABLES = (
    "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "KERAS_DISTRIBUTION_NUM_PROCESSES",
    "KERAS_DISTRIBUTION_PROCESS_ID",
    "KDIST_INIT_TIMEOUT",
    "KDIST_CLUSTER_DETECTION",
    "KDIST_PREFLIGHT",
)

good_address = st.builds(
    "{}:{}".format,
    st.sampled_from(["127.0.0.1", "localhost", "[::1]", "node-1.cluster", "10.0.0.7"]),
    st.integers(1, 65535),
)
address_text = st.one_of(
    good_address,
    st.lists(good_address, min_size=1, max_size=4).map(",".join),
    st.text(max_size=40),
    st.from_regex(r"\A(\[[0-9a-f:]{0,12}\]|[a-z0-9.\-]{0,12}|[0-9.]{0,15})(:[0-9]{0,6})?\Z"),
    st.lists(st.from_regex(r"\A[a-z0-9.]{1,8}:[0-9]{1,5}\Z"), max_size=4).map(",".join),
)
anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
)
# What an environment can hold: no NUL, no lone surrogates.
env_characters = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
settings_text = st.one_of(
    st.text(env_characters, max_size=16),
    st.integers(-5, 10).map(str),
    address_text.filter(lambda t: "\x00" not in t and t.isprintable()),
)
environment = st.dictionaries(st.sampled_from(VARIABLES), settings_text, max_size=3)

outcomes = {"resolved": 0, "ConfigError": 0, "TypeError": 0}


def mostly(well_typed: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """Well-typed values nine times in ten, anything at all otherwise."""
    # (Hypothesis favours the ends of a range, so "anything" sits in the middle.)
    return st.integers(0, 9).flatmap(lambda i: anything if i == 5 else well_typed)


@settings(
    max_examples=EXAMPLES,
    deadline=timedelta(milliseconds=500),
    suppress_health_check=list(HealthCheck),
    database=None,
    derandomize=True,
)
@given(
    job_addresses=mostly(st.one_of(st.none(), address_text, st.lists(address_text, max_size=3))),
    num_processes=mostly(st.one_of(st.none(), st.integers(1, 4), st.integers(-3, 8))),
    process_id=mostly(st.one_of(st.none(), st.integers(0, 3), st.integers(-3, 8))),
    timeout=mostly(st.one_of(st.none(), st.floats(allow_nan=True), st.integers(-1, 100))),
    cluster_detection=mostly(
        st.one_of(st.none(), st.sampled_from(["auto", "none", "AUTO"]), st.text(max_size=8))
    ),
    preflight=mostly(st.one_of(st.none(), st.booleans())),
    env=environment,
)
def check(**kwargs: object) -> None:
    env = kwargs.pop("env")
    assert isinstance(env, dict)
    for name in VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(env)
    try:
        spec = _config.resolve(**kwargs)
    except kdist.ConfigError as error:
        assert str(error), "a ConfigError without a message"
        outcomes["ConfigError"] += 1
        return
    except TypeError as error:
        assert "expected" in str(error), str(error)
        outcomes["TypeError"] += 1
        return
    assert spec.num_processes >= 1
    assert 0 <= spec.process_id < spec.num_processes
    assert spec.num_processes == 1 or spec.coordinator_address is not None
    assert spec.timeout > 0
    outcomes["resolved"] += 1


check()
print(json.dumps({"outcomes": outcomes, "jax_imported": "jax" in sys.modules}))
