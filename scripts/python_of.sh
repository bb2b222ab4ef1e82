# Sourced by compat.sh and release.sh: `python_of 3.12` prints an interpreter of that
# version that runs ($PYTHON312-style override, pyenv's versions, or the PATH; a pyenv shim
# on the PATH may refuse to run), or nothing.
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
