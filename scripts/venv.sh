# Sourced by demo.sh, test.sh and bench.sh: the repository root as the working folder,
# and $venv, a virtual environment (.venv, or $KDIST_VENV) made with $PYTHON (python3)
# when missing, with an up-to-date pip.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${KDIST_VENV:-.venv}"
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
