#!/usr/bin/env bash
# Keras's own distribution tests, unmodified, against kdist (and against Keras alone).
#
#   scripts/keras_upstream.sh [kdist|keras|both] [PYTEST ARGS...]     (default: both)
#
# Fetches the sdist of the Keras version installed in the virtual environment
# ($KDIST_VENV or .venv) with pip (cached under build/keras-upstream/), takes out
# keras/src/distribution/distribution_lib_test.py and
# keras/src/backend/jax/distribution_lib_test.py, and runs them on 8 CPU devices through
# the adapter in tests/keras_upstream/ (kdist_keras_upstream.py says which tests cannot
# apply and which fail on a documented difference, each with its reason). "keras" runs
# them against Keras alone, as Keras's CI does; "kdist" with the public names served by
# kdist. Any other failure fails the script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${KDIST_VENV:-.venv}"
mode="${1:-both}"
[ $# -gt 0 ] && shift
version=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("keras"))')
cache="build/keras-upstream"
sdist="$cache/keras-$version.tar.gz"
root="$cache/$version"
if [ ! -f "$sdist" ]; then
  mkdir -p "$cache"
  "$venv/bin/python" -m pip download --quiet --no-deps --no-binary :all: \
    --dest "$cache" "keras==$version"
fi
files=(keras/src/distribution/distribution_lib_test.py keras/src/backend/jax/distribution_lib_test.py)
if [ ! -f "$root/${files[1]}" ]; then
  rm -rf "$root" && mkdir -p "$root"
  tar -xzf "$sdist" -C "$root" --strip-components=1 "${files[@]/#/keras-$version/}"
fi

run() {
  echo "== Keras $version's distribution tests, public names served by $1"
  env KERAS_BACKEND=jax KERAS_HOME="$PWD/$cache/keras-home" JAX_PLATFORMS=cpu \
    JAX_NUM_CPU_DEVICES=8 PYTHONPATH="$PWD/tests/keras_upstream" \
    "$venv/bin/python" -m pytest -c tests/keras_upstream/pytest.ini --rootdir "$root" \
    -p no:cacheprovider --serve="$1" "${files[@]/#/$root/}" "${@:2}"
}
case "$mode" in
  kdist | keras) run "$mode" "$@" ;;
  both) run keras "$@" && run kdist "$@" ;;
  *)
    echo "usage: scripts/keras_upstream.sh [kdist|keras|both] [PYTEST ARGS...]" >&2
    exit 2
    ;;
esac
