#!/usr/bin/env bash
# The flash attention kernel on a GPU machine (docs/attention_fa_notes.md): builds the standalone
# kernel project (scripts/test_gpu.sh: test_kernels_cuda and bench_kernels_cuda only) with
# GoogleTest from the prepared sysroot, then
#   1. the flash kernel's tests (Gpu.*AttentionFlash*): against the CPU, unsplit and through the
#      dispatch with the automatic key split (Gpu.DisentangledAttentionFlashMatchesCpu, head_dim 16:
#      Gpu.DisentangledAttentionFlashHeadDim16); the key split (REXNLU_CUDA_FA_SPLIT, other bits)
#      against the CPU and within tolerance of the unsplit kernel, the automatic pick, split off
#      (Gpu.DisentangledAttentionFlashSplitSmall, Gpu.AttentionFlashSplitModelShapes);
#   2. the kernel benchmark: its columns "attention fa by grid: split auto (rows, parts) / split off",
#      "attention fa unsplit, 64 rows / 16 rows" and "attention fa split forced, 64 rows x 2 / x 4
#      parts", microseconds per layer;
#   3. compute-sanitizer racecheck of the small split test (it runs the unsplit kernel, both
#      shapes, and the split, 2 and 4 parts), where the toolkit has it (last: a command cut short
#      by a time limit loses the least there; RACECHECK_FILTER picks other tests).
#   SYSROOT_TAR=.device/sysroot.tar.xz scripts/fa_gpu.sh     (SYSROOT=/tmp/sr, BUILD_DIR=/tmp/bfa)
# Through the device tool: carry [".device/sysroot.tar.xz"].
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sr=${SYSROOT:-/tmp/sr}
dir=${BUILD_DIR:-/tmp/bfa}
if [ -n "${SYSROOT_TAR:-}" ]; then mkdir -p "$sr" && tar xJf "$SYSROOT_TAR" -C "$sr"; fi
fails=0
start=$(date +%s)
BUILD_DIR="$dir" GTEST_DIR="$sr" bash "$root/scripts/test_gpu.sh" --gtest_filter='Gpu.*AttentionFlash*' || fails=$((fails + 1))
echo "== build and tests took $(($(date +%s) - start)) s"
"$dir/tests/bench_kernels_cuda" || fails=$((fails + 1))
echo "== bench done at $(($(date +%s) - start)) s"
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
if [ -n "$cs" ]; then
  racecheck() {  # seconds, test filter; a timeout is reported as such (not a race)
    timeout "$1" "$cs" --tool racecheck --error-exitcode 1 "$dir/tests/test_kernels_cuda" \
      --gtest_filter="$2" 2>&1 | tail -n 4
    local rc=${PIPESTATUS[0]}
    if [ "$rc" = 124 ]; then echo "== racecheck $2: timed out after $1 s (no verdict)"; fi
    test "$rc" = 0 || fails=$((fails + 1))
  }
  racecheck 150 "${RACECHECK_FILTER:-Gpu.DisentangledAttentionFlashSplitSmall}"
else
  echo "== racecheck: skipped (no compute-sanitizer)"
fi
echo "== $fails failed step(s), $(($(date +%s) - start)) s"
exit $((fails > 0))
