#!/usr/bin/env bash
# The contributor's fast loop: rebuilds kdist into the virtual environment (.venv, or
# $KDIST_VENV) without build isolation, so scikit-build-core reuses its CMake build folder
# and only what changed recompiles, installs it as users get it (tests run against the
# installed package), then runs pytest: by default the tests that start no cluster
# ($no_cluster_tests, scripts/envs.sh); extra arguments replace that selection. The Slurm
# tests: bash scripts/dev.sh -m slurm tests/clusters/test_slurm.py (they start scripts/slurm.sh's
# cluster when it is installed and not up, and stop it after); on two nodes (root):
# bash scripts/dev.sh -m slurm tests/clusters/test_slurm_multinode.py.
#   bash scripts/dev.sh                        # the fast selection
#   bash scripts/dev.sh tests/start/test_config.py   # one module
# The whole suite, with the C++ tests, fuzzing and static checks: bash scripts/test.sh.
source "$(dirname "$0")/venv.sh"

# Build requirements in the environment itself (pyproject.toml's [build-system]).
"$venv/bin/python" -m pip install --quiet "scikit-build-core>=0.10" "nanobind>=2.4" \
  "nlohmann-json>=3.11" cmake ninja
started=$SECONDS
"$venv/bin/python" -m pip install --quiet --no-build-isolation --no-deps --force-reinstall .
"$venv/bin/python" -c "import jax, keras, pytest, xdist, orbax.checkpoint, cryptography, grpc, prometheus_client" 2> /dev/null \
  || "$venv/bin/python" -m pip install --quiet --no-build-isolation \
    --constraint scripts/constraints.txt ".[test,backup]"
echo "dev: kdist rebuilt and installed in $((SECONDS - started)) s"

if [ $# -eq 0 ]; then
  set -- "${no_cluster_tests[@]}"
fi
exec "$venv/bin/python" -m pytest -q "$@"
