# The preamble the side-by-side benchmark scripts share (run_cpu_bench.sh, run_siamese_bench.sh):
#   source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh" PYTHON_ENV DEFAULT_WORK_DIR "$@"
# with the script's own arguments [BUILD_DIR=build] [WORK_DIR=DEFAULT_WORK_DIR] [THREADS=2]. Sets
#   ROOT     the checkout;                BUILD, WORK, THREADS   from the arguments;
#   ROUNDS   env, default 3 (engines alternate over the rounds: the machine is shared);
#   PY       env, default scripts/python_env.sh PYTHON_ENV (PY=python3 on the GPU machine, which has no PyPI);
#   PIN      the taskset prefix: CPUS (default the first THREADS CPUs); empty if taskset is missing
#            or THREADS > nproc;
#   bench_commit   prints REXNLU_COMMIT if set (a copy of the tree), else the checkout's short commit
#                  (+local changes), or '?' without .git.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_bench_python_env=$1
BUILD="$(realpath "${3:-$ROOT/build}")"
WORK="${4:-$2}"
THREADS="${5:-2}"
ROUNDS="${ROUNDS:-3}"
PY="${PY:-$("$ROOT/scripts/python_env.sh" "$_bench_python_env")}"

PIN=()
if command -v taskset >/dev/null && (( THREADS <= $(nproc) )); then
  PIN=(taskset -c "${CPUS:-0-$((THREADS - 1))}")
fi

bench_commit() {
  [[ -n ${REXNLU_COMMIT:-} ]] && { echo "$REXNLU_COMMIT"; return; }
  echo "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+local changes')"
}
