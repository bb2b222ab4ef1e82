#!/usr/bin/env bash
# An aarch64 machine, emulated on x86_64 for scripts/release.sh: Debian's arm64 Python 3.11
# run by qemu-user (Debian: qemu-user-static), without touching the machine's own
# architecture setup (no dpkg --add-architecture, no binfmt_misc registration).
#
#   scripts/aarch64.sh python      prints build/aarch64/python: a program that runs the
#                                  arm64 Python 3.11 under qemu (made on first use: apt
#                                  downloads Python's arm64 packages into a private
#                                  folder, build/aarch64/sysroot)
#   scripts/aarch64.sh test WHEEL  a fresh emulated virtual environment
#                                  (build/aarch64/venv) with WHEEL and its test extra,
#                                  installed by this machine's pip for aarch64; runs the
#                                  tests that need no other process there
#
# Without binfmt_misc the kernel cannot start an arm64 program, so the emulated
# environment's sys.executable is a shell script that starts qemu (set by a .pth file), and
# its `kdist` script goes through it: the tests' fresh interpreters run emulated too.
# Extra arguments after WHEEL go to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/envs.sh
mode="${1:?usage: scripts/aarch64.sh python|test WHEEL}"
shift

root="$PWD/build/aarch64"
sysroot="$root/sysroot"
python="$root/python"

fail() {
  echo "aarch64: $*" >&2
  exit 1
}

# qemu-aarch64-static and the arm64 Python in $sysroot, once.
ensure_python() {
  if ! command -v qemu-aarch64-static > /dev/null; then
    [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null ||
      fail "expected qemu-aarch64-static (Debian: apt-get install qemu-user-static), found none and cannot install it (not root)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      qemu-user-static > /dev/null
  fi
  if [ ! -x "$sysroot/usr/bin/python3.11" ]; then
    # A private apt state for arm64: the machine's own package lists and architectures
    # stay as they are.
    local apt="$root/apt" options
    rm -rf "$apt" "$sysroot"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$sysroot"
    options=(-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
      -o Dir::State::status=/dev/null -o APT::Architecture=arm64 -o APT::Architectures::=arm64
      -o Debug::NoLocking=1 -qq)
    apt-get "${options[@]}" update 2> /dev/null
    apt-get "${options[@]}" install --download-only -y --no-install-recommends \
      python3.11 python3.11-venv libstdc++6 2> /dev/null
    for deb in "$apt"/cache/archives/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
    [ -x "$sysroot/usr/bin/python3.11" ] ||
      fail "expected Debian's arm64 python3.11 in $sysroot after apt-get download, found none"
  fi
  cat > "$python" << EOF
#!/bin/sh
# Debian's arm64 Python 3.11 under qemu-user (KDIST_AARCH64_PROGRAM: another arm64 program).
exec qemu-aarch64-static -L "$sysroot" "\${KDIST_AARCH64_PROGRAM:-$sysroot/usr/bin/python3.11}" "\$@"
EOF
  chmod +x "$python"
}

case "$mode" in
  python)
    ensure_python
    echo "$python"
    ;;
  test)
    wheel="${1:?scripts/aarch64.sh test needs an aarch64 wheel}"
    shift
    ensure_python
    venv="$root/venv"
    rm -rf "$venv"
    "$python" -m venv --without-pip "$venv"
    site="$venv/lib/python3.11/site-packages"
    # This machine's pip fetches and unpacks the aarch64 wheels (pip under emulation
    # would be slow and cannot start its own subprocesses).
    python3 -m pip install --quiet --no-compile --target "$site" --only-binary=:all: \
      --platform manylinux_2_28_aarch64 --platform manylinux2014_aarch64 \
      --python-version 3.11 --implementation cp --abi cp311 "$wheel[test]"
    # The program every fresh interpreter of the tests is started with.
    cat > "$venv/bin/python-emulated" << EOF
#!/bin/sh
KDIST_AARCH64_PROGRAM="$venv/bin/python" exec "$python" "\$@"
EOF
    cat > "$venv/bin/kdist" << EOF
#!/bin/sh
exec "$venv/bin/python-emulated" -m kdist "\$@"
EOF
    chmod +x "$venv/bin/python-emulated" "$venv/bin/kdist"
    # A .pth line, not sitecustomize.py: Debian's Python has a sitecustomize of its own.
    echo "import sys; sys.executable = '$venv/bin/python-emulated'" > "$site/kdist_emulated.pth"
    machine=$("$venv/bin/python-emulated" -c 'import platform; print(platform.machine())')
    [ "$machine" = aarch64 ] || fail "expected the emulated Python to be aarch64, received $machine"
    echo "== single-process tests under qemu-user (aarch64, $("$venv/bin/python-emulated" -V)) with $(basename "$wheel")"
    KDIST_TEST_WHEEL="$wheel" "$venv/bin/python-emulated" -m pytest \
      "${no_cluster_tests[@]}" -p no:cacheprovider "$@"
    ;;
  *)
    fail "usage: scripts/aarch64.sh python|test WHEEL"
    ;;
esac
