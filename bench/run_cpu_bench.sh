#!/usr/bin/env bash
# CPU engines side by side in one run (issue 14): rexnlu vs ONNX Runtime fp32 / INT8 vs PyTorch eager,
# the same full-size random weights (bench/bench_cases.py) and the same prompt-shaped inputs, on
# THREADS threads pinned with taskset; then INT8's accuracy against fp32 on those inputs.
#   bench/run_cpu_bench.sh [BUILD_DIR=build] [WORK_DIR=/tmp/rexnlu_cpu_bench] [THREADS=2]
# Environment (all optional):
#   ROUNDS=3            engines alternate over the rounds (the machine is shared); best and median kept
#   MIN_SECONDS=1       timing per case and round (at least 3 forwards)
#   CASES="L128_b1 L128_b8 L512_b1"
#   PY=...              a python with torch, onnx and onnxruntime (e.g. PY=python3 on the GPU machine,
#                       which has no PyPI); default: scripts/python_env.sh onnx-baseline (pinned PyPI
#                       venv over Debian's python3-torch)
#   CPUS=0-1            the taskset CPU list (default: the first THREADS CPUs; no pinning if taskset
#                       is missing or THREADS > nproc)
#   REXNLU_PRECISIONS="fp32"   rexnlu rows, one per precision (see rexnlu_bench below)
#   ORT_VARIANTS="ort_fp32 ort_int8 ort_int8_pc"   timed ONNX Runtime variants (bench/bench_ort.py; also
#                       ort_int8_rr, ort_int8_u8; the accuracy table always shows all five)
#   TORCH=1             0 leaves out PyTorch eager
#   ORT_ACCURACY=1      0 leaves out the closing ONNX Runtime accuracy table (all five variants)
#   E2E=0               1 adds the end-to-end NER call, rexnlu per precision (needs BUILD_DIR/apps/rexnlu)
# Needs BUILD_DIR/bench/encoder_bench (-DREXNLU_BUILD_BENCH=ON). WORK_DIR keeps the weights
# (393 MB), the ONNX files (450 + 4 x 115 MB, exported and quantized once), results/ and report.txt.
source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh" onnx-baseline /tmp/rexnlu_cpu_bench "$@"
MIN_SECONDS="${MIN_SECONDS:-1}"
read -r -a CASE_NAMES <<< "${CASES:-L128_b1 L128_b8 L512_b1}"
read -r -a PRECISIONS <<< "${REXNLU_PRECISIONS:-fp32}"
read -r -a ORT_VARIANT_NAMES <<< "${ORT_VARIANTS:-ort_fp32 ort_int8 ort_int8_pc}"
[[ -x "$BUILD/bench/encoder_bench" ]] || { echo "run_cpu_bench.sh: no $BUILD/bench/encoder_bench (build with -DREXNLU_BUILD_BENCH=ON)" >&2; exit 2; }
mkdir -p "$WORK/results"

# rexnlu rows, one per precision. fp32 is encoder_bench as it is. int8 / bf16 (issue 14 items 1-2)
# come in as encoder_bench's arguments DEVICE PRECISION (cpu int8): it must print "precision" in its JSON lines
# (checked here, so that an encoder_bench that ignores the argument cannot pass fp32 off as int8),
# then REXNLU_PRECISIONS="fp32 int8 bf16" adds the rows.
rexnlu_bench() {
  local p=$1 args=("$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" "$THREADS" "$MIN_SECONDS")
  [[ $p == fp32 ]] || args+=(cpu "$p")
  local out; out=$("${PIN[@]}" "${args[@]}")
  if [[ $p != fp32 ]] && grep -qv "\"precision\":\"$p\"" <<< "$out"; then
    echo "run_cpu_bench.sh: encoder_bench did not report precision $p" >&2; exit 1
  fi
  printf '%s\n' "$out"
}

{
  echo "== bench/run_cpu_bench.sh $(date -u +%FT%TZ) on $(uname -n), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+local changes')"
  echo "threads $THREADS, pinned: ${PIN[*]:-no (taskset missing or THREADS > nproc)}; rounds $ROUNDS x >= $MIN_SECONDS s per case; cases ${CASE_NAMES[*]}"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$PY" "$ROOT/bench/engine_info.py" "$THREADS"
  echo "rexnlu: $BUILD/bench/encoder_bench"
  "$PY" "$ROOT/bench/bench_cases.py" "$WORK" "${CASE_NAMES[@]}"
  echo
  "${PIN[@]}" "$PY" "$ROOT/bench/bench_ort.py" prepare "$WORK" "$THREADS"

  ENGINES=()
  for p in "${PRECISIONS[@]}"; do ENGINES+=("rexnlu_$p"); done
  ENGINES+=("${ORT_VARIANT_NAMES[@]}")
  [[ "${TORCH:-1}" == 0 ]] || ENGINES+=(pytorch)
  for e in "${ENGINES[@]}"; do : > "$WORK/results/$e.jsonl"; done
  for round in $(seq "$ROUNDS"); do
    for p in "${PRECISIONS[@]}"; do rexnlu_bench "$p" >> "$WORK/results/rexnlu_$p.jsonl"; done
    for v in "${ORT_VARIANT_NAMES[@]}"; do
      "${PIN[@]}" "$PY" "$ROOT/bench/bench_ort.py" time "$WORK" "$v" "$THREADS" "$MIN_SECONDS" >> "$WORK/results/$v.jsonl"
    done
    if [[ "${TORCH:-1}" != 0 ]]; then
      "${PIN[@]}" "$PY" "$ROOT/tools/torch_reference/bench_torch.py" "$WORK/model" "$WORK/cases.json" "$THREADS" "$MIN_SECONDS" >> "$WORK/results/pytorch.jsonl"
    fi
    echo "   round $round of $ROUNDS done $(date -u +%T), load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  done
  if [[ "${E2E:-0}" == 1 ]]; then
    # The end-to-end NER call (tokenizer, prompt, forward, decode), text by text, per precision:
    # `rexnlu bench --batch 1` on the full-size weights with the tiny model's vocabulary (12,800
    # tokens, as the full-size config), the first 16 texts of tests/data/cli/st_ner_dev.jsonl.
    e2e="$WORK/model_e2e"
    mkdir -p "$e2e"
    ln -sf "$WORK/model/config.json" "$WORK/model/model.safetensors" "$e2e/"
    cp "$ROOT/models/rexuninlu_tiny/"{vocab.txt,tokenizer_config.json,special_tokens_map.json} "$e2e/"
    head -16 "$ROOT/tests/data/cli/st_ner_dev.jsonl" > "$WORK/e2e_texts.jsonl"
    echo "end-to-end NER call, rexnlu only (rexnlu bench --batch 1, 16 texts x ${ROUNDS} rounds, pinned):"
    for p in "${PRECISIONS[@]}"; do
      "${PIN[@]}" "$BUILD/apps/rexnlu" bench --model "$e2e" --precision "$p" --threads "$THREADS" \
        --texts "$WORK/e2e_texts.jsonl" --n $((16 * ROUNDS)) --warmup 3 --json > "$WORK/results/e2e_$p.json"
      "$PY" -c "import json,sys; b=json.load(open(sys.argv[1])); print('  rexnlu %-5s p50 %8.1f ms  mean %8.1f ms  (%d calls)' % (sys.argv[2], b['latency_ms']['p50'], b['latency_ms']['mean'], b['requests']))" "$WORK/results/e2e_$p.json" "$p"
    done
  fi
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

  "$PY" "$ROOT/bench/cpu_bench_report.py" "$WORK" "${ENGINES[@]}"
  [[ "${ORT_ACCURACY:-1}" == 0 ]] || "${PIN[@]}" "$PY" "$ROOT/bench/bench_ort.py" accuracy "$WORK" "$THREADS"
} | tee "$WORK/report.txt"
