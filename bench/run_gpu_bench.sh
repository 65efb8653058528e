#!/usr/bin/env bash
# rexnlu on the GPU (fp32, fp16, bf16 weights) vs PyTorch on the same GPU (eager fp32, fp16
# autocast, torch.compile fp16 in default mode and with CUDA graphs), in one run, on the same
# full-size random weights and prompt-shaped inputs (bench/bench_cases.py): encoder + link head at
# L = 128 batch 1, 8, 32 and L = 512 batch 1, 8. Prints a table of times and of speed ratios vs
# torch.compile with CUDA graphs.
#   bench/run_gpu_bench.sh BUILD_DIR [WORK_DIR=/tmp/rexnlu_gpu_bench]
# Needs BUILD_DIR/bench/encoder_bench from a CUDA build (scripts/test_gpu_engine.sh with BENCH=1
# makes it) and python3 with torch and numpy. TORCH_MODES / CASES / MIN_SECONDS override the defaults;
# SKIP_ROWS="wmma act32" leaves out those rows of earlier kernels (each costs a pass over the cases).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(realpath "$1")"
WORK="${2:-/tmp/rexnlu_gpu_bench}"
CASES="${CASES:-L128_b1 L128_b8 L128_b32 L512_b1 L512_b8}"
MODES="${TORCH_MODES:-eager_fp32,autocast_fp16,compile_fp16,compile_fp16_graphs}"
MIN_SECONDS="${MIN_SECONDS:-1}"
SKIP_ROWS=" ${SKIP_ROWS:-} "
mkdir -p "$WORK"
# shellcheck disable=SC2086
python3 "$ROOT/bench/bench_cases.py" "$WORK" $CASES
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)" >&2
: > "$WORK/results.jsonl"
for p in fp32 fp16 bf16; do
  "$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" 1 "$MIN_SECONDS" cuda "$p" >> "$WORK/results.jsonl"
done
# The same without CUDA graph replay: what the recording saves.
REXNLU_CUDA_GRAPHS=0 "$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" 1 "$MIN_SECONDS" cuda fp16 >> "$WORK/results.jsonl"
# fp16 through forward_links, what extraction asks: only the links above the threshold come back
# (60 keeps ~1 % of the cells of these random weights; the demo model links ~0.1 %).
REXNLU_BENCH_LINK_THRESHOLD=60 "$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" 1 "$MIN_SECONDS" cuda fp16 >> "$WORK/results.jsonl"
# fp16 without programmatic dependent launch of our kernels (REXNLU_CUDA_PDL=0, backends/cuda/types.cuh;
# the default on sm_90+ since session 12): what overlapping each launch with its predecessor's tail saves.
REXNLU_CUDA_PDL=0 "$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" 1 "$MIN_SECONDS" cuda fp16 >> "$WORK/results.jsonl"
# fp16 with the exact GELU as its own kernel (REXNLU_CUDA_GELU=erf) instead of cuBLASLt's tanh-form
# epilogue on the FFN-up product (the default at fp16/bf16 since session 12): what the fusion saves.
REXNLU_CUDA_GELU=erf "$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" 1 "$MIN_SECONDS" cuda fp16 >> "$WORK/results.jsonl"
# fp16 with the flash attention's key split turned off (REXNLU_CUDA_FA_SPLIT=off; by default the keys
# of each row block are split over 2-4 blocks where the grid has fewer blocks than SMs: L512 b1).
REXNLU_CUDA_FA_SPLIT=off "$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" 1 "$MIN_SECONDS" cuda fp16 >> "$WORK/results.jsonl"
# fp16 with the flash attention's position terms always through shared memory (REXNLU_CUDA_FA_SHUFFLE=off;
# by default a warp whose rows and keys run contiguously gathers them by shuffles): what that saves.
REXNLU_CUDA_FA_SHUFFLE=off "$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" 1 "$MIN_SECONDS" cuda fp16 >> "$WORK/results.jsonl"
# fp16 / bf16 with the WMMA attention kernel instead of the default flash one (backends/cuda/ops.h).
[[ $SKIP_ROWS == *" wmma "* ]] || for p in fp16 bf16; do
  REXNLU_CUDA_ATTENTION=wmma "$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" 1 "$MIN_SECONDS" cuda "$p" >> "$WORK/results.jsonl"
done
# fp16 / bf16 with fp32 activations (REXNLU_CUDA_16BIT_ACTIVATIONS=0): what the default 16-bit ones save.
[[ $SKIP_ROWS == *" act32 "* ]] || for p in fp16 bf16; do
  REXNLU_CUDA_16BIT_ACTIVATIONS=0 "$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" 1 "$MIN_SECONDS" cuda "$p" >> "$WORK/results.jsonl"
done
python3 "$ROOT/bench/bench_torch_gpu.py" "$WORK/model" "$WORK/cases.json" "$MODES" "$MIN_SECONDS" >> "$WORK/results.jsonl"
python3 - "$WORK/results.jsonl" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
engines = list(dict.fromkeys(r["engine"] for r in rows))
cases = list(dict.fromkeys(r["name"] for r in rows))
by = {(r["engine"], r["name"]): r for r in rows}
base = "torch-compile_fp16_graphs"
print(f"\nmedian ms per call (encoder + link head, logits copied to the host); ratio = {base} / engine")
print(f"{'engine':28} " + " ".join(f"{c:>17}" for c in cases))
for e in engines:
    cells = []
    for c in cases:
        r = by.get((e, c))
        b = by.get((base, c))
        cells.append(f"{r['ms_median']:8.3f} ({b['ms_median'] / r['ms_median']:5.2f}x)" if r and b else
                     (f"{r['ms_median']:8.3f}        " if r else f"{'-':>17}"))
    print(f"{e:28} " + " ".join(cells))
print("\nagreement: sum|Z| of sequence 0 relative to torch eager fp32")
for c in cases:
    ref = by.get(("torch-eager_fp32", c))
    if ref:
        print(f"  {c:9} " + "  ".join(f"{e}: {abs(by[(e, c)]['logits_abs_sum'] - ref['logits_abs_sum']) / ref['logits_abs_sum']:.1e}"
                                      for e in engines if (e, c) in by))
# Programmatic dependent launch and the flash attention's shuffles must not change a bit: the -nopdl
# and -noshuffle rows' sum|Z| equal their default row's.
bad = 0
for e in engines:
    for suffix in ("-nopdl", "-noshuffle"):
        if not e.endswith(suffix) or e[:-len(suffix)] not in engines:
            continue
        d = e[:-len(suffix)]
        pairs = [c for c in cases if (e, c) in by and (d, c) in by]
        differ = [c for c in pairs if by[(e, c)]["logits_abs_sum"] != by[(d, c)]["logits_abs_sum"]]
        print(f"\n{e} vs {d}: sum|Z| of sequence 0 identical in {len(pairs) - len(differ)} of {len(pairs)} cases"
              + (f"; DIFFERS in {' '.join(differ)}" if differ else ""))
        bad += len(differ)
sys.exit(1 if bad else 0)
PYEOF
