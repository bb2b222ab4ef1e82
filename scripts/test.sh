#!/usr/bin/env bash
# The whole test suite, from a fresh clone: makes a virtual environment (.venv, or
# $KDIST_VENV) with Python 3.13 (scripts/venv.sh), where pip brings JAX, Keras and Orbax at
# scripts/constraints.txt's pins; builds kdist's wheel and installs it with its test dependencies;
# builds and runs the C++ unit tests under ASan/UBSan; runs each fuzz target
# briefly; runs ruff and mypy --strict; then runs pytest against the installed
# package (with real MPI launchers), then the Slurm tests on a real single-node Slurm and
# on a real two-node one (scripts/slurm.sh [--nodes 2]: started for them and stopped after,
# unless it was already up), then
# Keras's own distribution tests against kdist (scripts/keras_upstream.sh), then the
# compat tests on Python 3.11 at the oldest JAX and Keras and at the newest for 3.11
# (scripts/compat.sh). Before the main pytest run, the release (scripts/release.sh): the
# portable wheels and the sdist, checked, and a quick test on Python 3.11, 3.12 and 3.13.
# Each stage ends with "== <stage>: N s", the whole with "== total: N s".
# Extra arguments go to the main pytest run.
source "$(dirname "$0")/venv.sh"

# stage NAME [DETAIL]: ends the stage before it (printing its time) and starts NAME.
stage_name=
stage_started=$SECONDS
stage() {
  [ -z "$stage_name" ] || echo "== $stage_name: $((SECONDS - stage_started)) s"
  stage_name=${1:-}
  stage_started=$SECONDS
  [ -z "$stage_name" ] || echo "== $stage_name${2:+ $2}"
}
stage "Setup" "(the virtual environment: $("$venv/bin/python" -V); kdist's wheel, its test dependencies)"
stage_started=0 # the virtual environment's own making included

# System tools some tests need: GoogleTest (the C++ unit tests), clang/libFuzzer (fuzz
# targets), iproute2 and nftables (multi-host tests in network namespaces), etcd (Debian's
# etcd-server and etcd-client, 3.4: the tests of `--rendezvous etcd://`; the package's own
# service is never started, the tests start their members), prometheus (a real server scrapes
# an agent's /metrics in tests/agent/test_status.py, started and ended by the test). Installed when missing and
# running as root; otherwise those parts say why they cannot run.
if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
  missing=()
  [ -f /usr/include/gtest/gtest.h ] || missing+=(googletest libgtest-dev)
  command -v clang++ > /dev/null || missing+=(clang libclang-rt-14-dev)
  command -v ip > /dev/null || missing+=(iproute2)
  command -v nft > /dev/null || missing+=(nftables)
  { command -v etcd && command -v etcdctl; } > /dev/null || missing+=(etcd-server etcd-client)
  command -v prometheus > /dev/null || missing+=(prometheus)  # tests/agent/test_status.py
  if [ ${#missing[@]} -gt 0 ]; then
    # policy-rc.d exiting 101: no package's service starts (etcd-server's would take 2379,
    # prometheus's 9090).
    policy=/usr/sbin/policy-rc.d
    made_policy=
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
      trap 'rm -f "$policy"' EXIT
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
    if [ -n "$made_policy" ]; then
      rm -f "$policy"
      trap - EXIT
    fi
  fi
fi

# nlohmann-json: the header-only JSON library the core reads TF_CONFIG with (CMake finds
# it in this environment for the C++ tests and fuzz targets; pip builds get it from
# pyproject.toml).
"$venv/bin/python" -m pip install --quiet cmake ninja nlohmann-json
# kdist goes in from the wheel `pip wheel` builds, as users get it, plus the roll call's
# load generator kdist._core_bench (KDIST_BENCH_MODULE=ON; users' wheels leave it out), which
# the scale tests need: KDIST_TEST_BENCH_MODULE=1 tells them it must be there.
rm -rf build/wheelhouse
"$venv/bin/python" -m pip wheel --quiet --no-deps -C cmake.define.KDIST_BENCH_MODULE=ON \
  --wheel-dir build/wheelhouse .
wheel=$(ls build/wheelhouse/kdist-*.whl)
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"
# The backup extra (Orbax) for the BackupAndRestore tests (they skip, saying so, without it);
# JAX, Keras and Orbax at the versions scripts/constraints.txt pins.
"$venv/bin/python" -m pip install --quiet --constraint scripts/constraints.txt "$wheel[test,backup]"
export KDIST_TEST_WHEEL="$PWD/$wheel"
# KerasHub for tests/keras_models/test_keras_hub.py, without TensorFlow: keras-hub's requirements pull
# TensorFlow through tensorflow-text, but importing it and building backbones needs only
# regex and tokenizers besides what Keras brings (its kagglehub, sentencepiece and
# tensorflow-text serve presets and tokenizers, which the tests do not use).
"$venv/bin/python" -m pip install --quiet --no-deps "keras-hub==0.32.0" regex tokenizers
export KDIST_TEST_BENCH_MODULE=1
# As root, Prometheus was installed above: tests/agent/test_status.py must not run without it.
[ "$(id -u)" != 0 ] || export KDIST_TEST_PROMETHEUS=1

stage "C++ unit tests" "(GoogleTest, AddressSanitizer + UndefinedBehaviorSanitizer)"
"$venv/bin/cmake" -S . -B build/cpp-tests -G Ninja -DKDIST_BUILD_TESTS=ON -DKDIST_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_MAKE_PROGRAM="$PWD/$venv/bin/ninja" > /dev/null
"$venv/bin/cmake" --build build/cpp-tests
"$venv/bin/ctest" --test-dir build/cpp-tests --output-on-failure -j2 --no-tests=error

stage "Fuzz targets" "(bounded; scripts/fuzz.sh SECONDS runs them longer)"
CMAKE="$PWD/$venv/bin/cmake" bash scripts/fuzz.sh "${KDIST_FUZZ_SECONDS:-4}"

stage "Static checks" "(ruff, mypy --strict on the installed package with its generated stubs, the C++ core's include graph)"
"$venv/bin/ruff" check python/kdist tests benchmarks
"$venv/bin/ruff" format --check python/kdist
"$venv/bin/mypy" --strict -p kdist
# cpp/core's wings by their includes (arrows with counts, floors; tests/package/test_cpp_includes.py
# checks the same rules): printed in CI's log, and a broken rule fails here naming file:line.
"$venv/bin/python" tests/package/cpp_include_graph.py cpp/core

stage "MPI launchers" "(for tests/clusters/test_launchers.py; scripts/compat.sh: own environments)"
bash scripts/compat.sh launchers
export KDIST_TEST_MPI_ROOT="$PWD/build/mpi"
# The release's portable wheels (zig; cp311 and cp312-abi3), checked, and a quick test on
# each Python they serve (3.11, 3.12, 3.13), without the plain gcc build of the sdist: CI's
# time. The whole suite runs below on 3.13 (the gcc build, abi3 like the release's), and the
# compat tests on 3.11 with the release's cp311 wheel. dist/ as release.sh writes it.
stage "Release" "(the portable wheels and the sdist, checked and tested: scripts/release.sh)"
KDIST_RELEASE_TESTS=quick bash scripts/release.sh
export KDIST_TEST_ABI3_WHEEL="$PWD/$(ls dist/kdist-*-cp312-abi3-*_x86_64.whl)"
cp311_wheel="$PWD/$(ls dist/kdist-*-cp311-cp311-*_x86_64.whl)"

stage "Python tests" "(against the installed package, on $("$venv/bin/python" -V))"
"$venv/bin/python" -m pytest -m "not slurm" "$@"

stage "Slurm" "(a real single-node cluster on loopback, then a two-node one in network namespaces: scripts/slurm.sh, their start and stop included, and the tests on each)"
# Installed when missing and running as root; where a cluster cannot start, its tests skip and
# say why. A cluster this stage starts is stopped after its tests (by pid, with the namespaces,
# bridge and /etc/hosts lines it made), also when they fail.
for slurm_run in "1 tests/clusters/test_slurm.py" "2 tests/clusters/test_slurm_multinode.py"; do
  read -r nodes tests <<< "$slurm_run"
  part_started=$SECONDS
  slurm_ours=
  if ! bash scripts/slurm.sh status --nodes "$nodes" > /dev/null 2>&1; then
    slurm_ours=1
    trap "bash scripts/slurm.sh stop --nodes $nodes" EXIT
    bash scripts/slurm.sh start --nodes "$nodes" > /dev/null || true
  fi
  "$venv/bin/python" -m pytest -m slurm "$tests"
  if [ -n "$slurm_ours" ]; then
    bash scripts/slurm.sh stop --nodes "$nodes"
    trap - EXIT
  fi
  echo "Slurm, $nodes node(s): $((SECONDS - part_started)) s, the cluster's start and stop included"
done

stage "Keras's own distribution tests" "(from its sdist: Keras alone, then served by kdist)"
KDIST_VENV="$venv" bash scripts/keras_upstream.sh both

stage "Compatibility" "(the compat tests on Python 3.11: the oldest supported JAX and Keras, and the newest for 3.11)"
bash scripts/compat.sh py311 "$cp311_wheel"
stage ""
echo "== total: $SECONDS s"
