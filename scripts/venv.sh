# Sourced by demo.sh, test.sh, bench.sh and dev.sh: the repository root as the working folder,
# and $venv, the main virtual environment (.venv, or $KDIST_VENV), made when missing with
# $PYTHON, else with Python $MAIN_PYTHON (scripts/envs.sh: 3.13, where the newest JAX runs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/envs.sh
venv="${KDIST_VENV:-.venv}"
if [ -z "${PYTHON:-}" ] && [ -x "$venv/bin/python" ] &&
  ! "$venv/bin/python" -c "import sys; sys.exit(sys.version_info[:2] != (${MAIN_PYTHON/./, }))"; then
  echo "venv: $venv has $("$venv/bin/python" -V), expected Python $MAIN_PYTHON (the main suite's); remove $venv to make it again, or set PYTHON to keep another" >&2
  exit 1
fi
main_python="${PYTHON:-}"
if [ ! -x "$venv/bin/python" ] && [ -z "$main_python" ]; then
  main_python=$(require_python "$MAIN_PYTHON" "the main virtual environment ($venv)")
fi
make_venv "$venv" "$main_python"
