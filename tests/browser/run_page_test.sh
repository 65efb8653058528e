#!/usr/bin/env bash
# ctest entry of the browser test: installs playwright-core from the committed lockfile (npm ci,
# into the git-ignored node_modules, only when the lockfile changed) and runs page_test.mjs.
#   run_page_test.sh REXNLU_BINARY MODEL_DIR TEST_DATA_DIR SCREENSHOT.png
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x /usr/bin/chromium ]; then
  echo "chromium is missing: run scripts/install_deps.sh" >&2
  exit 1
fi
stamp="$here/node_modules/.lock-installed"
if ! cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$here/package-lock.json" "$stamp"
fi
exec node "$here/page_test.mjs" "$@"
