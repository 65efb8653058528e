#!/usr/bin/env bash
# The whole engine on a GPU machine: builds rexnlu with CUDA (no HTTP server: the GPU machine has
# no Boost) and runs, on the GPU,
#   1. tests/ops on every backend of the build (CPU and CUDA) against the reference loops, and the
#      CUDA kernel tests (tests/cuda), the attention and link-score kernels' also under
#      compute-sanitizer racecheck, the layer-norm and link-score ones under memcheck;
#   2. model parity, GPU fp32 vs the original's outputs (the same fixtures the CPU meets): the tiny
#      model's forward cases (test_models RexParity.*) and full-size random weights at L = 128 and
#      512 (test_fullsize_original; the weights are regenerated with numpy), on CPU fp32 too;
#   2a. the tiny model at fp16 / bf16 with the default 16-bit activations and with fp32 ones
#      (REXNLU_CUDA_16BIT_ACTIVATIONS=0) beside them vs the original's outputs, printed, bounded only
#      against gross errors (RexCuda16.*); steps 3 and 4 run fp16/bf16 with fp32 activations too (_act32);
#      programmatic dependent launch (the default on sm_90+; REXNLU_CUDA_PDL=0 turns it off): the tiny
#      model bit for bit against plain launches (RexCuda16.*, fp32 and fp16), the kernel chain likewise
#      (cuda_kernels), the fp16 e2e cases without it (e2e_gpu_fp16_nopdl) and one more demo_eval_gpu configuration;
#      the exact GELU as its own kernel (REXNLU_CUDA_GELU=erf; the default at fp16 is cuBLASLt's
#      tanh-form GELU epilogue) and the epilogue at bf16 too (=tanh): two more demo_eval_gpu configurations;
#   2b. SiameseUIE's forward cases on the GPU in fp32 vs the original's (test_siamese_uie SiameseForward.*);
#   3. decoding with fp32, fp16 and bf16 weights on the GPU vs the original's e2e cases
#      (test_uie Parity.*: every case with min_abs_logit >= 1e-3 in fp32, >= 1e-2 in fp16, >= 8e-2 in bf16
#      must decode identically; the others are reported).
#   4. the trained demo model in fp16/bf16 vs fp32 on real inputs (issue 13 item 5; also with the
#      WMMA attention kernel instead of the default flash one, REXNLU_CUDA_ATTENTION=wmma): test_demo_precision
#      (st ner / st absa dev, batch 1 and 64, CUDA graphs on and off: no decision may flip far from
#      the threshold, re-runs and graph replays must not change logits) and `rexnlu eval` of the
#      same sets at batch 64 (F1 within 0.2 points of fp32). When the test fails, the same run
#      localises: REXNLU_CUDA_VERIFY=1 evals (every linear layer and attention call checked
#      against the host, "BAD" lines), and the LayerByLayer diagnostic (encoder cut after 1..4
#      layers, tensor-core attention forced off/on).
#   scripts/test_gpu_engine.sh            (SYSROOT=/tmp/sr by default, BUILD_DIR=build-gpu-engine)
#   ONLY_DEMO=1 scripts/test_gpu_engine.sh   (step 4 alone: builds rexnlu and test_demo_precision only)
#   ONLY_BENCH=1 scripts/test_gpu_engine.sh  (no tests but the PDL kernel chain: builds the benchmarks
#                                             and runs them, as BENCH=1 does after the tests; a second
#                                             call when the first would not fit the device's 10 minutes)
# Dependencies come from the prepared sysroot (oneDNN, nlohmann_json, utf8proc, CLI11, zlib,
# GoogleTest): SYSROOT_TAR=path/sysroot.tar.xz unpacks it into SYSROOT first. CUDA_ARCH defaults
# to 90 (H100/H200). REXNLU_COMMIT names the commit when the tree is a copy without .git.
# Then BENCH=1 runs bench/run_gpu_bench.sh with the same build.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${BUILD_DIR:-"$root/build-gpu-engine"}
sr=${SYSROOT:-/tmp/sr}
if [ -n "${SYSROOT_TAR:-}" ]; then mkdir -p "$sr" && tar xJf "$SYSROOT_TAR" -C "$sr"; fi
# Its GoogleTest CMake package names Debian's absolute paths: let FindGTest search GTEST_ROOT instead.
rm -rf "$sr/lib/cmake/GTest"
export CPATH="$sr/include${CPATH:+:$CPATH}" LIBRARY_PATH="$sr/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$sr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PKG_CONFIG_PATH="$sr/lib/pkgconfig"
echo "== commit ${REXNLU_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}, $(date -u '+%Y-%m-%d %H:%M UTC')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: no GPU"
start=$(date +%s)
[ "${ONLY_BENCH:-0}" = 1 ] && BENCH=1
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$sr" -DGTEST_ROOT="$sr" -DREXNLU_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DREXNLU_SERVER=OFF -DREXNLU_BUILD_TESTS=ON \
  -DREXNLU_BUILD_BENCH="${BENCH:-0}" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
targets="test_ops test_kernels_cuda test_models test_fullsize_original test_uie test_demo_precision test_siamese_uie rexnlu_cli"
[ "${ONLY_DEMO:-0}" = 1 ] && targets="test_demo_precision rexnlu_cli test_kernels_cuda"
[ "${ONLY_BENCH:-0}" = 1 ] && targets="test_kernels_cuda"
[ "${BENCH:-0}" = 1 ] && targets="$targets encoder_bench bench_kernels_cuda"
# shellcheck disable=SC2086
cmake --build "$dir" -j"$(nproc)" --target $targets 2>&1 | grep -E "error|warning|Error" ; test "${PIPESTATUS[0]}" = 0 || exit 1
echo "== build took $(($(date +%s) - start)) s"

fails=0
if [ "${ONLY_BENCH:-0}" = 1 ]; then
  # The kernels with programmatic dependent launch bit for bit against plain launches, before the -nopdl row.
  "$dir/tests/cuda/test_kernels_cuda" --gtest_filter='Gpu.ProgrammaticDependentLaunch*' | tail -n 8 || fails=$((fails + 1))
  "$dir/tests/cuda/bench_kernels_cuda" || fails=$((fails + 1))
  "$root/bench/run_gpu_bench.sh" "$dir" || fails=$((fails + 1))
  # Where an L128 b32 fp16 call spends its time besides the kernels (issue 13: ~0.5 ms of 2.8),
  # where Nsight Systems is installed; informational, never a failure.
  nsys_bin=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -n 1)
  if [ -n "$nsys_bin" ]; then
    w=/tmp/rexnlu_nsys
    python3 "$root/bench/bench_cases.py" "$w" L128_b32 > /dev/null 2>&1 &&
      timeout 120 "$nsys_bin" profile -o "$w/b32" --force-overwrite true "$dir/bench/encoder_bench" "$w/model" \
        "$w/cases.json" 1 0.3 cuda fp16 > "$w/profile.log" 2>&1 &&
      timeout 90 "$nsys_bin" stats --report cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum "$w/b32.nsys-rep" 2>&1 |
      head -n 120 || echo "nsys: the profile failed (see $w/profile.log)"
  else
    echo "nsys: not installed here (no profile of the host gap)"
  fi
  exit $((fails > 0))
fi
step() {  # step NAME command...: runs it, prints its last lines, counts failures
  local name=$1; shift
  echo "== $name"
  if "$@" > "$dir/$name.log" 2>&1; then grep -E "^\[  (PASSED|SKIPPED) |parity|fullsize|max scaled|tests? ran|samples, .*forwards|^(reference|candidate): " "$dir/$name.log" | tail -n 40; echo "   ok"
  else tail -n 60 "$dir/$name.log"; echo "   FAILED"; fails=$((fails + 1)); return 1; fi
}
# 4 first: the demo model in reduced precision (ONLY_DEMO=1 stops after it).
demo_eval() {  # set precision [env...] -> "f1 tp fp fn"
  local set=$1 p=$2; shift 2
  env "$@" "$dir/apps/rexnlu" eval --data "$root/tests/data/demo_eval/${set}_dev.jsonl" --model "$root/models/rexnlu-demo-zh-small" \
    --device cuda --precision "$p" --batch-size 64 --json --no-progress 2>/dev/null |
    python3 -c 'import json,sys; x=json.load(sys.stdin)["results"]["extraction"]; print("%.4f %d %d %d" % (x["f1"], x["tp"], x["fp"], x["fn"]))' 2>/dev/null
}
if ! step demo_precision_gpu env REXNLU_TEST_DEVICE=cuda "$dir/tests/uie/test_demo_precision" \
    --gtest_filter='DemoModelPrecision.ReducedPrecision*'; then
  grep -E "samples,|far flip|sample .* differs" "$dir/demo_precision_gpu.log" | head -n 40
  echo "-- localisation: every linear layer and attention call of 64 samples checked against the host (REXNLU_CUDA_VERIFY=1)"
  for set in st_absa st_ner; do
    for p in fp16 bf16; do
      REXNLU_CUDA_VERIFY=1 "$dir/apps/rexnlu" eval --data "$root/tests/data/demo_eval/${set}_dev.jsonl" --limit 64 \
        --model "$root/models/rexnlu-demo-zh-small" --device cuda --precision $p --batch-size 64 --json --no-progress \
        > /dev/null 2> "$dir/verify_${set}_$p.log"
      echo "   $set $p: $(grep -c '^VERIFY' "$dir/verify_${set}_$p.log") checks, $(grep -c ' BAD$' "$dir/verify_${set}_$p.log") BAD"
      grep ' BAD$' "$dir/verify_${set}_$p.log" | head -n 4
    done
  done
  echo "-- localisation: fp16 rexnlu eval with the tensor-core attention never / always (REXNLU_CUDA_MMA_ATTENTION)"
  for set in st_absa st_ner; do
    for e in 0 1; do echo "   $set fp16 batch 64, REXNLU_CUDA_MMA_ATTENTION=$e: $(demo_eval $set fp16 REXNLU_CUDA_MMA_ATTENTION=$e)"; done
  done
  step demo_layers_gpu env REXNLU_TEST_DEVICE=cuda REXNLU_TEST_DIAG=1 "$dir/tests/uie/test_demo_precision" \
    --gtest_filter='DemoModelPrecision.LayerByLayer'
  grep -E "^layers|recorded" "$dir/demo_layers_gpu.log"
fi
# The same with fp32 activations (REXNLU_CUDA_16BIT_ACTIVATIONS=0; the default stores them in 16 bits: cuda_backend.h).
step demo_precision_gpu_act32 env REXNLU_TEST_DEVICE=cuda REXNLU_CUDA_16BIT_ACTIVATIONS=0 "$dir/tests/uie/test_demo_precision" \
  --gtest_filter='DemoModelPrecision.ReducedPrecision*' || grep -E "samples,|far flip" "$dir/demo_precision_gpu_act32.log" | head -n 20
# The same with the WMMA attention kernel (the default is the flash one: backends/cuda/ops.h); the
# evals below run the default three times: the flash kernel's ptxas-miscompiled loop made about
# 1 in 3 die with a sticky CUDA error before session 10's work-around (docs/parity.md).
step demo_precision_gpu_wmma env REXNLU_TEST_DEVICE=cuda REXNLU_CUDA_ATTENTION=wmma "$dir/tests/uie/test_demo_precision" \
  --gtest_filter='DemoModelPrecision.ReducedPrecision*' || grep -E "samples,|far flip" "$dir/demo_precision_gpu_wmma.log" | head -n 20
# The same sets through `rexnlu eval` at batch 64: fp16 / bf16 F1 within 0.2 points of fp32.
echo "== demo_eval_gpu (rexnlu eval, batch 64, F1 tp fp fn)"
for set in st_ner st_absa; do
  ref=$(demo_eval $set fp32 X=1)
  echo "   $set fp32: $ref"
  for p in fp16 bf16; do
    for v in REXNLU_CUDA_GRAPHS=1 REXNLU_CUDA_GRAPHS=0 REXNLU_CUDA_16BIT_ACTIVATIONS=0 REXNLU_CUDA_ATTENTION=wmma \
             REXNLU_CUDA_ATTENTION=fa REXNLU_CUDA_ATTENTION=fa REXNLU_CUDA_PDL=0 REXNLU_CUDA_GELU=erf REXNLU_CUDA_GELU=tanh; do
      got=$(demo_eval $set $p $v)
      verdict=$(python3 -c 'import sys; a,b=float(sys.argv[1].split()[0] or "nan"),float(sys.argv[2].split()[0] or "nan"); print("ok" if abs(a-b)<=0.002 else "FAILED (more than 0.2 points)")' "${ref:-nan}" "${got:-nan}" 2>/dev/null || echo FAILED)
      echo "   $set $p $v: $got  $verdict"
      [ "$verdict" = ok ] || fails=$((fails + 1))
    done
  done
done
if [ "${ONLY_DEMO:-0}" = 1 ]; then
  # The kernels at the demo model's batch-64 shapes (large-M 16-bit products, 64-prompt attention, run-to-run bits).
  step kernels_at_demo_batch_shapes "$dir/tests/cuda/test_kernels_cuda" \
    --gtest_filter='Gpu.GemmMatchesCpuAtLargeBatchRowCounts:Gpu.DisentangledAttentionIsDeterministicAtDemoBatchShapes'
  echo "== $fails failed step(s)"
  exit $((fails > 0))
fi
step ops_all_backends "$dir/tests/ops/test_ops"
step cuda_kernels "$dir/tests/cuda/test_kernels_cuda"
# Shared-memory races in the attention and link-score kernels, and out-of-bounds accesses in the
# link-score and layer-norm kernels at small shapes (compute-sanitizer, where the toolkit has it);
# Gpu.DisentangledAttentionFlash* includes the flash kernel's small split test
# (Gpu.DisentangledAttentionFlashSplitSmall).
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
small_links='Gpu.LinkScoresBatchOneL128:Gpu.LinkScoresOddLengthsAndManySequences:Gpu.LinkScoresUnalignedRowsAndShortDims'
if [ -n "$cs" ]; then
  step kernels_racecheck "$cs" --tool racecheck --error-exitcode 1 "$dir/tests/cuda/test_kernels_cuda" \
    --gtest_filter="Gpu.DisentangledAttentionFlash*:Gpu.DisentangledAttentionTensorCoresTinyModel:$small_links"
  step kernels_memcheck "$cs" --tool memcheck --error-exitcode 1 "$dir/tests/cuda/test_kernels_cuda" \
    --gtest_filter="Gpu.LayerNorm*:$small_links"
else
  echo "== kernels_racecheck, kernels_memcheck: skipped (no compute-sanitizer)"
fi
step tiny_parity_gpu_fp32 env REXNLU_TEST_DEVICE=cuda "$dir/tests/models/test_models" --gtest_filter='RexParity.*'
step tiny_gpu_16bit_activations "$dir/tests/models/test_models" --gtest_filter='RexCuda16.*'
python3 "$root/tools/compare_original/fullsize_case.py" "$dir/fullsize_case" > "$dir/fullsize_case.log" 2>&1 || { cat "$dir/fullsize_case.log"; fails=$((fails + 1)); }
step fullsize_gpu_fp32 env REXNLU_TEST_DEVICE=cuda "$dir/tests/models/test_fullsize_original"
step fullsize_cpu_fp32 "$dir/tests/models/test_fullsize_original"
for p in fp32 fp16 bf16; do
  step "e2e_gpu_$p" env REXNLU_TEST_DEVICE=cuda REXNLU_TEST_PRECISION=$p "$dir/tests/uie/test_uie" --gtest_filter='Parity.*'
done
# Programmatic dependent launch (the default on sm_90+ since session 12): the fp16 e2e cases without it,
# REXNLU_CUDA_PDL=0 (its bit-for-bit tests: Gpu.ProgrammaticDependentLaunch* in cuda_kernels, RexCuda16.* above).
step e2e_gpu_fp16_nopdl env REXNLU_TEST_DEVICE=cuda REXNLU_TEST_PRECISION=fp16 REXNLU_CUDA_PDL=0 \
  "$dir/tests/uie/test_uie" --gtest_filter='Parity.*'
for p in fp16 bf16; do
  step "e2e_gpu_${p}_act32" env REXNLU_TEST_DEVICE=cuda REXNLU_TEST_PRECISION=$p REXNLU_CUDA_16BIT_ACTIVATIONS=0 \
    "$dir/tests/uie/test_uie" --gtest_filter='Parity.*'
done
step siamese_forward_gpu_fp32 env REXNLU_TEST_DEVICE=cuda "$dir/tests/siamese_uie/test_siamese_uie" --gtest_filter='SiameseForward.*'
step cli_gpu "$dir/apps/rexnlu" extract "北大西洋议会春季会议26日在西班牙巴塞罗那闭幕。" --schema '{"人物":null,"地理位置":null,"组织机构":null}' \
  --model "$root/models/rexuninlu_tiny" --device cuda --precision fp16
cat "$dir/cli_gpu.log"
# The bf16 near-threshold case (docs/parity.md): every span with its probability on CPU fp32 and
# GPU fp32/fp16/bf16, to see which link flips and by how much.
for dp in "cpu fp32" "cuda fp32" "cuda fp16" "cuda bf16"; do
  set -- $dp
  echo "-- ner/cf108c98 on $1 $2:"
  "$dir/apps/rexnlu" extract "人事制度改革、分配制度改革、后勤管理改革在1992年下半年全部完成。" \
    --schema '{"人物":null,"地理位置":null,"组织机构":null}' --model "$root/models/rexuninlu_tiny" --device "$1" --precision "$2" 2>&1 | head -c 1500
  echo
done
echo "== $fails failed step(s)"
if [ "${BENCH:-0}" = 1 ]; then
  "$dir/tests/cuda/bench_kernels_cuda" || fails=$((fails + 1))
  "$root/bench/run_gpu_bench.sh" "$dir" || fails=$((fails + 1))
fi
exit $((fails > 0))
