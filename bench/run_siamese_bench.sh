#!/usr/bin/env bash
# SiameseUIE end to end, side by side in one run (issue 15 item 6): rexnlu vs the ORIGINAL ModelScope
# pipeline on the same full-size random weights (tools/compare_original/siamese_fullsize_case.py) and
# the same requests: a NER call (3 types, one level) and a 2-level relation call, one request at a
# time as users call the original, on THREADS threads pinned with taskset; engines alternate over
# ROUNDS rounds (the machine is shared).
#   MODELSCOPE_SRC=DIR bench/run_siamese_bench.sh [BUILD_DIR=build] [WORK_DIR=/tmp/rexnlu_siamese_bench] [THREADS=2]
# MODELSCOPE_SRC: a checkout of github.com/modelscope/modelscope (the folder holding modelscope/).
# Environment: ROUNDS=3, RUNS=5 (timed calls per request and round, after one warm-up call),
#   DEVICES="cpu": "cuda cpu" on a GPU machine adds, per request, the original on the GPU as its
#   pipeline runs there (model on the GPU, its own torch.cuda.amp.autocast: float16 matrix products)
#   and rexnlu --device cuda at each of CUDA_PRECISIONS="fp32 fp16"; PY and CPUS as in bench_common.sh.
# WORK_DIR keeps the model (409 MB), the requests, results/*.jsonl and report.txt (with a summary table).
source "$(dirname "${BASH_SOURCE[0]}")/bench_common.sh" original /tmp/rexnlu_siamese_bench "$@"
RUNS="${RUNS:-5}"
read -r -a DEVICE_NAMES <<< "${DEVICES:-cpu}"
read -r -a CUDA_PRECISION_NAMES <<< "${CUDA_PRECISIONS:-fp32 fp16}"
SRC="${MODELSCOPE_SRC:?set MODELSCOPE_SRC to a modelscope checkout}"
[[ -x "$BUILD/apps/rexnlu" ]] || { echo "run_siamese_bench.sh: no $BUILD/apps/rexnlu" >&2; exit 2; }
mkdir -p "$WORK/results"
[[ -f "$WORK/model/model.safetensors" ]] ||
  (cd "$ROOT/tools/compare_original" && "$PY" siamese_fullsize_case.py "$WORK/model" "$ROOT/tests/data/siamese_uie_tiny/vocab.txt")

# The requests: texts and schemas of the model card's kinds (from the fixture cases).
"$PY" - "$ROOT/tests/data/siamese_uie_tiny/e2e_cases.jsonl" "$WORK" <<'PY'
import json, sys
cases = {c["id"]: c for c in map(json.loads, open(sys.argv[1], encoding="utf-8"))}
with open(f"{sys.argv[2]}/requests.jsonl", "w", encoding="utf-8") as both:
    for name, cid in (("ner", "ner_1944"), ("re", "re/coae2016-460")):
        line = json.dumps({"id": name, "text": cases[cid]["text"], "schema": cases[cid]["schema"]}, ensure_ascii=False) + "\n"
        both.write(line)
        with open(f"{sys.argv[2]}/{name}.jsonl", "w", encoding="utf-8") as f:
            f.write(line)
PY

# One rexnlu row: `rexnlu bench --json` of one request file, as one JSON line with the engine named.
rexnlu_row() {  # rexnlu_row ENGINE REQUESTS [rexnlu options...]
  local engine=$1 requests=$2; shift 2
  "${PIN[@]}" "$BUILD/apps/rexnlu" bench --model "$WORK/model" --texts "$requests" --threads "$THREADS" \
    --n "$RUNS" --warmup 1 --json "$@" | "$PY" -c 'import json, sys; r = json.load(sys.stdin); r["engine"] = sys.argv[1]; print(json.dumps(r))' "$engine"
}

{
  echo "== bench/run_siamese_bench.sh $(date -u +%FT%TZ) on $(uname -n), commit $(bench_commit)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; threads $THREADS, pinned: ${PIN[*]:-no}; rounds $ROUNDS x $RUNS calls; devices ${DEVICE_NAMES[*]}"
  if [[ " ${DEVICE_NAMES[*]} " == *" cuda "* ]]; then
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo '?'); $("$PY" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)')"
  fi
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  rm -f "$WORK"/results/*.jsonl
  for round in $(seq "$ROUNDS"); do
    for dev in "${DEVICE_NAMES[@]}"; do
      # The original: one process (one model load) for both requests, RUNS calls each.
      "${PIN[@]}" "$PY" "$ROOT/bench/siamese_original_bench.py" "$SRC" "$WORK/model" "$WORK/requests.jsonl" "$THREADS" "$RUNS" "$dev" |
        tee -a "$WORK/results/original_$dev.jsonl" | sed "s/^/round $round /"
      for name in ner re; do
        if [[ $dev == cpu ]]; then
          rexnlu_row "rexnlu cpu fp32" "$WORK/$name.jsonl" | tee -a "$WORK/results/rexnlu_cpu_fp32.jsonl" | sed "s/^/round $round /"
        else
          for p in "${CUDA_PRECISION_NAMES[@]}"; do
            rexnlu_row "rexnlu $dev $p" "$WORK/$name.jsonl" --device "$dev" --precision "$p" |
              tee -a "$WORK/results/rexnlu_${dev}_$p.jsonl" | sed "s/^/round $round /"
          done
        fi
      done
    done
  done
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  # Summary: per request and engine, the best round (original: median of RUNS calls; rexnlu: p50).
  "$PY" - "$WORK"/results/*.jsonl <<'PY'
import json, sys
rows = {}
for path in sys.argv[1:]:
    for r in map(json.loads, open(path, encoding="utf-8")):
        request = r.get("id") or r["texts"].rsplit("/", 1)[-1].split(".")[0]
        ms = r["median_ms"] if "median_ms" in r else r["latency_ms"]["p50"]
        key = (request, r["engine"])
        rows[key] = (min(ms, rows[key][0]) if key in rows else ms, r["paths"] // (1 if "median_ms" in r else r["requests"]))
print("| request | engine | ms per call (best round) | paths |")
print("|---|---|---|---|")
for (request, engine), (ms, paths) in sorted(rows.items()):
    print(f"| {request} | {engine} | {ms:.1f} | {paths} |")
PY
} | tee "$WORK/report.txt"
