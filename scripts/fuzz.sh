#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/<name>/<name>_fuzz.cc, clang with ASan + UBSan) and
# runs each for SECONDS (default 5) from its seed corpus fuzz/<name>/corpus/ (the
# detectors' is tests/fixtures/schedulers, through a link). New inputs go to a scratch
# folder, not into the repository. Needs clang and libclang-rt (Debian:
# apt-get install clang libclang-rt-14-dev); installs them when run as root.
# Usage: scripts/fuzz.sh [SECONDS] [NAME...]   (NAME: address, detectors, roll_call_wire, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-5}"; shift || true
if ! command -v clang++ > /dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a > /dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-14-dev > /dev/null
  else
    echo "fuzz.sh: clang with libFuzzer is missing (apt-get install clang libclang-rt-14-dev)" >&2
    exit 1
  fi
fi
cmake_bin="${CMAKE:-cmake}"
# nlohmann-json (header only, for TF_CONFIG): CMake looks in the Python beside $CMAKE
# when that is a virtual environment's (installing it there when missing), then in
# $KDIST_VENV or .venv, then in the system (nlohmann-json3-dev).
python_args=()
venv_python="$(dirname "$cmake_bin")/python"
if [ -x "$venv_python" ]; then
  "$venv_python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("nlohmann_json") is None)' \
    || "$venv_python" -m pip install --quiet nlohmann-json
  python_args=(-DPython_EXECUTABLE="$venv_python")
fi
"$cmake_bin" -S . -B build/fuzz -DKDIST_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ "${python_args[@]}" > /dev/null
"$cmake_bin" --build build/fuzz -j2 > /dev/null
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for folder in fuzz/*/; do names+=("$(basename "$folder")"); done
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
total=0
for name in "${names[@]}"; do
  target="${name}_fuzz"
  mkdir -p "$scratch/$target"
  log="$scratch/$target.log"
  if ! build/fuzz/"$target" -max_total_time="$seconds" -print_final_stats=1 \
       -artifact_prefix="$scratch/$target-" "$scratch/$target" "fuzz/$name/corpus/" > "$log" 2>&1; then
    cat "$log" >&2
    echo "fuzz.sh: $target found a failure; the input is in $scratch (copied to build/fuzz/)" >&2
    cp "$scratch/$target-"* build/fuzz/ 2>/dev/null || true
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  total=$((total + runs))
  printf '%-22s %10s executions in %ss, no failure\n' "$target" "$runs" "$seconds"
done
echo "total: $total executions"
