#!/usr/bin/env bash
# ctest entry of the browser test: runs page_test.py with Python's playwright (pinned in
# tools/requirements/browser.txt, installed once into a virtual environment by
# scripts/python_env.sh) driving Debian's chromium; no browser is downloaded.
#   run_page_test.sh REXNLU_BINARY MODEL_DIR TEST_DATA_DIR SCREENSHOT.png
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x /usr/bin/chromium ]; then
  echo "chromium is missing: run scripts/install_deps.sh" >&2
  exit 1
fi
python=$("$here/../../scripts/python_env.sh" browser)
exec "$python" "$here/page_test.py" "$@"
