#!/usr/bin/env bash
# SiameseUIE end to end, side by side in one run (issue 15 item 6): rexnlu vs the ORIGINAL ModelScope
# pipeline (PyTorch eager, float32) on the same full-size random weights
# (tools/compare_original/siamese_fullsize_case.py) and the same requests: a NER call (3 types,
# one level) and a 2-level relation call, one request at a time as users call the original, on
# THREADS threads pinned with taskset; engines alternate over ROUNDS rounds (the machine is shared).
#   MODELSCOPE_SRC=DIR bench/run_siamese_bench.sh [BUILD_DIR=build] [WORK_DIR=/tmp/rexnlu_siamese_bench] [THREADS=2]
# MODELSCOPE_SRC: a checkout of github.com/modelscope/modelscope (the folder holding modelscope/).
# Environment: ROUNDS=3, RUNS=5 (timed calls per request and round, after one warm-up call).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(realpath "${1:-$ROOT/build}")"
WORK="${2:-/tmp/rexnlu_siamese_bench}"
THREADS="${3:-2}"
ROUNDS="${ROUNDS:-3}"
RUNS="${RUNS:-5}"
SRC="${MODELSCOPE_SRC:?set MODELSCOPE_SRC to a modelscope checkout}"
PY="${PY:-$("$ROOT/scripts/python_env.sh" original)}"
[[ -x "$BUILD/apps/rexnlu" ]] || { echo "run_siamese_bench.sh: no $BUILD/apps/rexnlu" >&2; exit 2; }
mkdir -p "$WORK"
[[ -f "$WORK/model/model.safetensors" ]] ||
  (cd "$ROOT/tools/compare_original" && "$PY" siamese_fullsize_case.py "$WORK/model" "$ROOT/tests/data/siamese_uie_tiny/vocab.txt")
PIN=()
if command -v taskset >/dev/null && (( THREADS <= $(nproc) )); then PIN=(taskset -c "${CPUS:-0-$((THREADS - 1))}"); fi

# The requests: texts and schemas of the model card's kinds (from the fixture cases).
"$PY" - "$ROOT/tests/data/siamese_uie_tiny/e2e_cases.jsonl" "$WORK" <<'PY'
import json, sys
cases = {c["id"]: c for c in map(json.loads, open(sys.argv[1], encoding="utf-8"))}
for name, cid in (("ner", "ner_1944"), ("re", "re/coae2016-460")):
    with open(f"{sys.argv[2]}/{name}.jsonl", "w", encoding="utf-8") as f:
        f.write(json.dumps({"id": name, "text": cases[cid]["text"], "schema": cases[cid]["schema"]}, ensure_ascii=False) + "\n")
PY

{
  echo "== bench/run_siamese_bench.sh $(date -u +%FT%TZ) on $(uname -n), commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD || echo '+local changes')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; threads $THREADS, pinned: ${PIN[*]:-no}; rounds $ROUNDS x $RUNS calls"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  for round in $(seq "$ROUNDS"); do
    for name in ner re; do
      "${PIN[@]}" "$PY" "$ROOT/bench/siamese_original_bench.py" "$SRC" "$WORK/model" "$WORK/$name.jsonl" "$THREADS" "$RUNS" |
        sed "s/^/round $round original /"
      "${PIN[@]}" "$BUILD/apps/rexnlu" bench --model "$WORK/model" --texts "$WORK/$name.jsonl" --threads "$THREADS" \
        --n "$RUNS" --warmup 1 --json | sed "s/^/round $round rexnlu $name /"
    done
  done
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$WORK/report.txt"
