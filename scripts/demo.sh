#!/usr/bin/env bash
# The main job, from a fresh clone: makes a virtual environment (.venv, or
# $KDIST_VENV), builds and installs kdist with Keras, then starts a 2-process
# cluster on loopback with `kdist launch` (2 CPU devices per process) in which
# each process trains one Keras model with kdist.DataParallel
# (examples/keras_train.py) and prints its initialize time, the job seed and its
# per-epoch losses, which agree across the processes.
source "$(dirname "$0")/venv.sh"

"$venv/bin/python" -m pip install --quiet ".[keras]"

export KERAS_BACKEND=jax
exec "$venv/bin/kdist" launch -n 2 --devices-per-process 2 --timeout 180 -- \
  "$venv/bin/python" examples/keras_train.py
