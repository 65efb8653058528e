#!/usr/bin/env bash
# Creates (once) the Python virtual environment for one purpose and prints the path of its python.
#   scripts/python_env.sh NAME        # NAME = a file tools/requirements/NAME.txt
# Each purpose has its own pinned requirements from PyPI (docs/dependencies.md says which and why);
# none of them is needed to build or run rexnlu. The environment is built on Debian's python3 with
# its site packages visible (Debian's numpy and torch), under $REXNLU_VENV_ROOT (default: .venv/ in
# the checkout, git-ignored), and rebuilt only when the requirements file changes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=${1:?usage: scripts/python_env.sh NAME (one of tools/requirements/*.txt)}
req="$root/tools/requirements/$name.txt"
[ -f "$req" ] || { echo "python_env.sh: no requirements file $req" >&2; exit 2; }
venv="${REXNLU_VENV_ROOT:-$root/.venv}/$name"
stamp="$venv/.requirements-installed"
if ! cmp -s "$req" "$stamp" 2>/dev/null; then
  if [ ! -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; then
    echo "python_env.sh: Debian's python3 with venv is missing: run scripts/install_deps.sh" >&2
    exit 1
  fi
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$req" >&2
  cp "$req" "$stamp"
fi
echo "$venv/bin/python"
