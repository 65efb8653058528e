#!/usr/bin/env bash
# The flash attention kernel's code variants on a GPU machine (REXNLU_CUDA_FA_VARIANT,
# docs/attention_fa_notes.md): builds the standalone kernel project (scripts/test_gpu.sh:
# test_kernels_cuda and bench_kernels_cuda only) with GoogleTest from the prepared sysroot, then
#   1. the flash kernel's tests: against the CPU, and every variant bit for bit against the default
#      (Gpu.DisentangledAttentionFlash*, Gpu.AttentionFlashVariants*), the key split (variant
#      split: other bits) against the CPU and within tolerance of the default
#      (Gpu.DisentangledAttentionFlashSplitSmall, Gpu.AttentionFlashVariantsSplitModelShapes);
#   2. compute-sanitizer racecheck of the small variants test and of the small split test, where
#      the toolkit has it;
#   3. the kernel benchmark: its columns "attention fa by grid, variant gather / paired / early"
#      and "variant split: by grid / 64 rows x 2 / x 4 parts" against "attention fa, by grid" (the default), microseconds per layer.
#   SYSROOT_TAR=.device/sysroot.tar.xz scripts/fa_variants_gpu.sh     (SYSROOT=/tmp/sr, BUILD_DIR=/tmp/bfa)
# Through the device tool: carry [".device/sysroot.tar.xz"].
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sr=${SYSROOT:-/tmp/sr}
dir=${BUILD_DIR:-/tmp/bfa}
if [ -n "${SYSROOT_TAR:-}" ]; then mkdir -p "$sr" && tar xJf "$SYSROOT_TAR" -C "$sr"; fi
fails=0
start=$(date +%s)
BUILD_DIR="$dir" GTEST_DIR="$sr" bash "$root/scripts/test_gpu.sh" \
  --gtest_filter='Gpu.DisentangledAttentionFlash*:Gpu.AttentionFlashVariants*' || fails=$((fails + 1))
echo "== build and tests took $(($(date +%s) - start)) s"
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
if [ -n "$cs" ]; then
  racecheck() {  # seconds, test filter; a timeout is reported as such (not a race)
    timeout "$1" "$cs" --tool racecheck --error-exitcode 1 "$dir/tests/test_kernels_cuda" \
      --gtest_filter="$2" 2>&1 | tail -n 4
    local rc=${PIPESTATUS[0]}
    if [ "$rc" = 124 ]; then echo "== racecheck $2: timed out after $1 s (no verdict)"; fi
    test "$rc" = 0 || fails=$((fails + 1))
  }
  racecheck 150 'Gpu.DisentangledAttentionFlashVariantsSameBitsSmall'
  racecheck 100 'Gpu.DisentangledAttentionFlashSplitSmall'
else
  echo "== racecheck: skipped (no compute-sanitizer)"
fi
"$dir/tests/bench_kernels_cuda" || fails=$((fails + 1))
echo "== $fails failed step(s), $(($(date +%s) - start)) s"
exit $((fails > 0))
