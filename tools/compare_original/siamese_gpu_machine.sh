#!/usr/bin/env bash
# SiameseUIE against the ORIGINAL ModelScope code on the GPU machine, in one device call (issue 15
# items 4 and 6): builds rexnlu with CUDA (as scripts/test_gpu_engine.sh: the prepared sysroot, no
# HTTP server), makes the full-size random model (siamese_fullsize_case.py), runs the original there
# (the machine's python3: its torch with CUDA, its transformers) for the reference outputs of
# siamese_fullsize_cases.jsonl (siamese_original.py, DEVICE=cuda: float64 on the GPU, and the
# float32 pipeline as it runs on a GPU, i.e. with its autocast), checks rexnlu against them on CUDA
# fp32 and on the CPU (test SiameseFullsize.*), then times both side by side on the GPU and on the
# CPU (bench/run_siamese_bench.sh, DEVICES="cuda cpu").
#   MODELSCOPE_SRC=DIR SYSROOT_TAR=FILE tools/compare_original/siamese_gpu_machine.sh RESULTS_DIR
# Environment: THREADS (default: every core; the original and rexnlu get the same), ROUNDS=1,
# RUNS=5, CUDA_ARCH=90, WORK (model and outputs; default /tmp/rexnlu_siamese_gpu), REXNLU_COMMIT (names the commit in a copy without .git), CASES (default
# siamese_fullsize_cases.jsonl), CMAKE_ARGS (more configure arguments). DEV=cpu rehearses it all on a machine without a GPU (no sysroot
# needed, CPU rows and references only): PY=... DEV=cpu CASES=few.jsonl siamese_gpu_machine.sh DIR.
# RESULTS_DIR gets build.log, original_refs.log, parity_{cuda_fp32,cuda_fp16,cpu_fp32}.log,
# e2e_cases.jsonl (the original's outputs there), bench.log and bench_report.txt.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
res=$(mkdir -p "${1:?usage: siamese_gpu_machine.sh RESULTS_DIR}" && cd "$1" && pwd)
src=${MODELSCOPE_SRC:?set MODELSCOPE_SRC to a modelscope checkout}
threads=${THREADS:-$(nproc)}
work=${WORK:-/tmp/rexnlu_siamese_gpu}
dir=$root/build-siamese-gpu
sr=/tmp/sr
dev=${DEV:-cuda}
py=${PY:-python3}
cases=${CASES:-siamese_fullsize_cases.jsonl}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
echo "== commit ${REXNLU_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')}, $(date -u '+%F %T UTC'), $(uname -n), $(nproc) cores"
cmake_args=(-DREXNLU_CUDA=OFF)
if [[ $dev != cpu ]]; then
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  mkdir -p "$sr" && tar xJf "${SYSROOT_TAR:?}" -C "$sr" && rm -rf "$sr/lib/cmake/GTest"
  export CPATH="$sr/include" LIBRARY_PATH="$sr/lib" LD_LIBRARY_PATH="$sr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PKG_CONFIG_PATH="$sr/lib/pkgconfig"
  cmake_args=(-DCMAKE_PREFIX_PATH="$sr" -DGTEST_ROOT="$sr" -DREXNLU_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}")
fi
mkdir -p "$work"
start=$(date +%s)
# shellcheck disable=SC2206
cmake_args+=(${CMAKE_ARGS:-})
(cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" -DREXNLU_SERVER=OFF -DREXNLU_PYTHON=OFF \
   -DREXNLU_BUILD_TESTS=ON -DREXNLU_BUILD_BENCH=OFF && cmake --build "$dir" -j"$(nproc)" --target rexnlu_cli test_siamese_uie) \
  > "$res/build.log" 2>&1 &
build=$!
# Meanwhile (not timed): the model and the original's reference outputs on the GPU.
(cd "$root/tools/compare_original" &&
  { [[ -f $work/model/model.safetensors ]] || "$py" siamese_fullsize_case.py "$work/model" "$root/tests/data/siamese_uie_tiny/vocab.txt"; } &&
  DEVICE=$dev THREADS=$threads "$py" siamese_original.py "$src" "$work/model" "$cases" "$work/model") \
  > "$res/original_refs.log" 2>&1 || { tail -n 30 "$res/original_refs.log"; echo "original: FAILED"; }
grep -v -i warn "$res/original_refs.log" | tail -n 12
cp "$work/model/e2e_cases.jsonl" "$res/" 2>/dev/null
wait $build || { tail -n 40 "$res/build.log"; echo "build: FAILED"; exit 1; }
echo "== build (beside the original's runs) took $(($(date +%s) - start)) s"
fails=0
# fp16 on the GPU is reported, not required: its states miss the 1e-4 bound by design; its end-to-end
# output is to be read against the original's own GPU run (autocast, float16 products).
combos=("$dev fp32" "cpu fp32")
if [[ $dev == cpu ]]; then combos=("cpu fp32"); else combos+=("$dev fp16"); fi
for dp in "${combos[@]}"; do
  set -- $dp
  REXNLU_SIAMESE_FULLSIZE=$work/model REXNLU_TEST_DEVICE=$1 REXNLU_TEST_PRECISION=$2 \
    "$dir/tests/siamese_uie/test_siamese_uie" --gtest_filter='SiameseFullsize.*' > "$res/parity_$1_$2.log" 2>&1 ||
    [[ $2 == fp16 ]] || fails=$((fails + 1))
  echo "== parity, rexnlu $1 $2:"; grep -E "cases|identical|DIFF|f64|^\[  (PASSED|FAILED)" "$res/parity_$1_$2.log"
done
DEVICES="$([[ $dev == cpu ]] && echo cpu || echo "$dev cpu")" PY=$py ROUNDS=${ROUNDS:-1} RUNS=${RUNS:-5} MODELSCOPE_SRC=$src \
  "$root/bench/run_siamese_bench.sh" "$dir" "$work" "$threads" > "$res/bench.log" 2>&1 || fails=$((fails + 1))
cp "$work/report.txt" "$res/bench_report.txt" 2>/dev/null
grep -E "^==|^cpu|^gpu|^load|^\|" "$res/bench.log"
echo "== $fails failed step(s), $(($(date +%s) - start)) s"
exit $((fails > 0))
