#!/usr/bin/env bash
# The main job, from a fresh clone: makes a virtual environment (.venv, or
# $KDIST_VENV), builds and installs kdist, then starts a 2-process cluster on
# loopback (2 CPU devices per process) in which each process runs
# examples/hello_cluster.py: kdist.initialize(), its process id, the global
# device list and the time initialize took.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${KDIST_VENV:-.venv}"
python="${PYTHON:-python3}"

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet .

port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM
for id in 0 1; do
  KERAS_DISTRIBUTION_JOB_ADDRESSES="127.0.0.1:$port" \
  KERAS_DISTRIBUTION_NUM_PROCESSES=2 \
  KERAS_DISTRIBUTION_PROCESS_ID=$id \
  JAX_PLATFORMS=cpu JAX_NUM_CPU_DEVICES=2 KDIST_INIT_TIMEOUT=60 \
    timeout 120 "$venv/bin/python" examples/hello_cluster.py &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit "$status"
