#!/usr/bin/env bash
# The benchmarks, from a fresh clone: makes a virtual environment (.venv, or
# $KDIST_VENV), installs kdist with Keras and matplotlib, then times kdist, raw
# JAX and Keras side by side and writes benchmarks/results/ (results.md, results.json,
# one PNG per figure). Arguments go to `python -m benchmarks.run` (e.g. --only spawn
# --runs 9). The full run takes about 20 minutes on 2 cores.
source "$(dirname "$0")/venv.sh"

# With kdist._core_bench, the roll call's load generator (users' wheels leave it out).
"$venv/bin/python" -m pip install --quiet --constraint scripts/constraints.txt \
  -C cmake.define.KDIST_BENCH_MODULE=ON ".[bench]"
# The harness's own rules first (interleaving, warm-up, statistics, the RSS probe).
"$venv/bin/python" -m pytest -q -p no:cacheprovider benchmarks/tests
exec "$venv/bin/python" -m benchmarks.run "$@"
