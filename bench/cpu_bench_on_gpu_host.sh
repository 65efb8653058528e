#!/usr/bin/env bash
# bench/run_cpu_bench.sh on the GPU machine's CPU in one device call (it has cmake, gcc and a python
# with torch + onnxruntime, but none of our apt packages): builds the CPU engine against the
# dependency sysroot (SYSROOT_TAR, as scripts/test_gpu_engine.sh does; no CUDA, no HTTP server),
# prepares the weights and the ONNX files while it builds, then
#   1. tests/ops (the int8 / bf16 kernels against their references, packed vs plain weights) and
#      the full-size int8 / bf16 link-sign test (test_fullsize_original; FULLSIZE_FILTER, a gtest
#      filter, picks other tests of it, e.g. the fp32 parity) on this CPU;
#   2. the side-by-side benchmark at 2 threads (CASES, ROUNDS, TORCH as run_cpu_bench.sh takes them);
#   3. the same at 16 threads, one round, if BUDGET_S (default 270) seconds are not yet spent.
# E2E=1 adds the end-to-end NER call to both (run_cpu_bench.sh; builds rexnlu_cli too).
# BREAKDOWN=1 adds, after step 2, where fp32's forward goes on this CPU (bench/dnnl_breakdown.py: oneDNN's
# matmul calls vs the rest): L128 b1 at 2 pinned threads and at 1, L128 b8 at 2; then bench/matmul_split (oneDNN's
# own 2-thread split of the 128-row products vs one primitive per thread); about 80 s; builds both tools.
#   bench/cpu_bench_on_gpu_host.sh OUT_DIR      (SYSROOT_TAR=.device/sysroot.tar.xz)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?OUT_DIR}
budget=${BUDGET_S:-270}
start=$(date +%s)
sr=/tmp/sr work=/tmp/w build=/tmp/b
mkdir -p "$sr" "$work" "$out"
tar xJf "${SYSROOT_TAR:?}" -C "$sr" && rm -rf "$sr/lib/cmake/GTest"
export CPATH="$sr/include" LIBRARY_PATH="$sr/lib" LD_LIBRARY_PATH="$sr/lib" PKG_CONFIG_PATH="$sr/lib/pkgconfig"
export CASES=${CASES:-"L128_b1 L128_b8"} PY=python3
# every CPU precision by default: this script exists to compare them with ONNX Runtime on the issue's machine
export REXNLU_PRECISIONS=${REXNLU_PRECISIONS:-"fp32 int8 bf16"} ORT_VARIANTS=${ORT_VARIANTS:-"ort_fp32 ort_int8 ort_int8_pc"}
# shellcheck disable=SC2086
(python3 "$root/bench/bench_cases.py" "$work" $CASES && python3 "$root/bench/bench_ort.py" prepare "$work" 16) \
  > "$out/prepare.log" 2>&1 &
prep=$!
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$sr" -DGTEST_ROOT="$sr" -DREXNLU_CUDA=OFF \
  -DREXNLU_SERVER=OFF -DREXNLU_BUILD_TESTS=ON -DREXNLU_BUILD_BENCH=ON > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
e2e_target=$([[ ${E2E:-0} == 1 ]] && echo rexnlu_cli)  # E2E=1: run_cpu_bench.sh's end-to-end NER call
peak_target=$([[ ${BREAKDOWN:-0} == 1 ]] && echo fp32_peak matmul_split)
cmake --build "$build" -j"$(nproc)" --target encoder_bench test_ops test_fullsize_original $e2e_target $peak_target > "$out/build.log" 2>&1 \
  || { grep -E "error" "$out/build.log" | head -20; exit 1; }
echo "== built in $(($(date +%s) - start)) s"
"$build/tests/ops/test_ops" > "$out/test_ops.log" 2>&1; echo "== test_ops rc $?"; grep -E "^cpu,|kernel here|PASSED|FAILED" "$out/test_ops.log" | sort -u
wait $prep || { tail -20 "$out/prepare.log"; exit 1; }
echo "== prepared at $(($(date +%s) - start)) s"
ln -sfn "$work/model" "$build/fullsize_case"  # the same generator and seed as test_fullsize_original's case
"$build/tests/models/test_fullsize_original" --gtest_filter="${FULLSIZE_FILTER:-*Int8*:*Bf16*}" > "$out/fullsize.log" 2>&1
echo "== fullsize rc $?"; grep -E "fullsize|PASSED|FAILED" "$out/fullsize.log"
ORT_ACCURACY=0 bash "$root/bench/run_cpu_bench.sh" "$build" "$work" 2 > "$out/bench2.log" 2>"$out/bench2.err"
echo "== 2 threads rc $? at $(($(date +%s) - start)) s"; cat "$out/bench2.log"
if [[ ${BREAKDOWN:-0} == 1 ]]; then
  # L128 b1 at 2 threads and at 1 (does the second thread halve it here?), then b8 at 2 (M = 1024 products)
  for run in "0-1 2 L128_b1" "0 1 L128_b1" "0-1 2 L128_b8"; do
    read -r cpus n name <<< "$run"
    taskset -c "$cpus" python3 "$root/bench/dnnl_breakdown.py" "$build" "$work/model" "$work/cases.json" "$n" 2 "$name"
  done > "$out/breakdown.log" 2>&1
  taskset -c 0-1 "$build/bench/matmul_split" 2 7 256 >> "$out/breakdown.log" 2>&1
  echo "== fp32 breakdown rc $? at $(($(date +%s) - start)) s"; cat "$out/breakdown.log"
fi
left=$((budget - ($(date +%s) - start)))
if (( left > 40 )); then
  ROUNDS=1 TORCH=0 ORT_ACCURACY=0 timeout "$left" bash "$root/bench/run_cpu_bench.sh" "$build" "$work" 16 > "$out/bench16.log" 2>"$out/bench16.err"
  echo "== 16 threads rc $? at $(($(date +%s) - start)) s"; cat "$out/bench16.log"
else
  echo "== 16 threads skipped ($left s left)"
fi
