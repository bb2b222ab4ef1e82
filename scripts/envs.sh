# Sourced by every script that makes a virtual environment or runs pytest (venv.sh for
# demo.sh, test.sh, bench.sh and dev.sh; compat.sh, release.sh, aarch64.sh): the Pythons,
# the one way to make a virtual environment, and the pytest selection they share.

# The Python the main suite runs on (scripts/venv.sh): the newest the project supports, so
# that the JAX it tests is the newest JAX users get (JAX 0.11 and later need Python 3.12+).
MAIN_PYTHON=3.13

# The tests that start no cluster: what dev.sh runs by default and the release runs with
# each wheel (`multiprocess`, `launcher` and `slurm` mark those that do; pyproject.toml).
no_cluster_tests=(-m "not multiprocess and not launcher and not slurm")

# `python_of 3.12` prints an interpreter of that version that runs ($PYTHON312-style
# override, pyenv's versions, or the PATH; a pyenv shim on the PATH may refuse to run), or
# nothing.
python_of() {
  local override="PYTHON${1/./}" candidate
  for candidate in ${!override:-} \
    $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/python3 2> /dev/null | sort -rV) \
    $(command -v "python$1" || true); do
    if "$candidate" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$1'.split('.'))))" \
      2> /dev/null; then
      echo "$candidate"
      return
    fi
  done
}

# `require_python 3.13 WHAT` prints python_of 3.13, or fails naming what to install and
# what needs it.
require_python() {
  local python
  python=$(python_of "$1") || true
  if [ -z "$python" ]; then
    echo "expected a Python $1 interpreter for $2 (pyenv's versions, python$1 on the PATH or \$PYTHON${1/./}), found none; install Python $1 (e.g. pyenv install $1)" >&2
    return 1
  fi
  echo "$python"
}

# `make_venv DIR PYTHON`: a virtual environment at DIR made with the interpreter PYTHON
# unless one is there, with an up-to-date pip.
make_venv() {
  [ -x "$1/bin/python" ] || "$2" -m venv "$1"
  "$1/bin/python" -m pip install --quiet --upgrade pip
}
