#!/usr/bin/env bash
# The main job, from a fresh clone: makes a virtual environment (.venv, or
# $KDIST_VENV), builds and installs kdist, then starts a 2-process cluster on
# loopback with `kdist launch` (2 CPU devices per process) in which each process
# runs examples/hello_cluster.py: kdist.initialize(), its process id, the global
# device list and the time initialize took.
source "$(dirname "$0")/venv.sh"

"$venv/bin/python" -m pip install --quiet .

exec "$venv/bin/kdist" launch -n 2 --devices-per-process 2 --timeout 120 -- \
  "$venv/bin/python" examples/hello_cluster.py
