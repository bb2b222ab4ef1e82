#!/usr/bin/env bash
# The main job, from a fresh clone: makes a virtual environment (.venv, or
# $KDIST_VENV), builds and installs kdist with Keras and the backup extra (Orbax, for
# kdist.BackupAndRestore), then starts a 2-process
# cluster on loopback with `kdist launch` (2 CPU devices per process) in which
# each process trains one Keras model with kdist.DataParallel
# (examples/keras_train.py) and prints its initialize time, the job seed and its
# per-epoch losses, which agree across the processes.
#
# A second run skips the build when the installed kdist was built from the same
# sources and pins (a digest of pyproject.toml, CMakeLists.txt, scripts/constraints.txt, cpp/
# and python/, kept in the virtual environment). It prints how long it took.
started=$SECONDS
source "$(dirname "$0")/venv.sh"

digest_file="$venv/kdist-source.sha256"
digest=$(find pyproject.toml CMakeLists.txt scripts/constraints.txt cpp python -type f \
  -not -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum)
if [ -f "$digest_file" ] && [ "$(cat "$digest_file")" = "$digest" ] \
  && "$venv/bin/python" -c "import kdist, keras, orbax.checkpoint" 2> /dev/null; then
  echo "demo: kdist in $venv is already built from these sources; not rebuilding"
else
  echo "demo: building and installing kdist with Keras and Orbax into $venv (a few minutes the first time)"
  rm -f "$digest_file"
  "$venv/bin/python" -m pip install --quiet --constraint scripts/constraints.txt ".[keras,backup,tls]"
  echo "$digest" > "$digest_file"
fi

export KERAS_BACKEND=jax
status=0
"$venv/bin/kdist" launch -n 2 --devices-per-process 2 --timeout 180 -- \
  "$venv/bin/python" examples/keras_train.py || status=$?
echo "demo: took $((SECONDS - started)) s (exit status $status)"
exit "$status"
