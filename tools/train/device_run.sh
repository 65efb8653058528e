#!/bin/bash
# One device call: trains the candidate runs concurrently on the one GPU (each time-boxed),
# evaluates them in PyTorch, and packs the results into $OUT. See docs/training.md.
# RUNS: space-separated name:size:mlm_frac[:lr[:repeat[:args]]] (mlm_frac = share of MIN spent on the
# MLM warm-up; lr defaults to $LR; repeat: train.py --repeat, e.g. cluener=2; args: more train.py
# options of this run only, comma-separated, e.g. --batch-tokens=32768,--init=models/x).
# SLACK: seconds past MIN + EVAL_S after which a run is killed (default 90; its weights are
# written before the eval, so they still come back).
# BASE: a model directory evaluated alongside (PyTorch GPU, all eval sets) as the reference.
# INIT: a model directory every run starts from (--init; empty: from scratch).
# DATA: the folder holding instances.jsonl.gz and eval/. EXPORT: f32 or f16 weights.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
MIN=${MIN:-6}
RUNS=${RUNS:-"small:small:0"}
RUN=${RUN:-/tmp/rexrun}
EVAL_S=${EVAL_S:-100}
DATA=${DATA:-.device/train}
mkdir -p "$RUN" "$OUT"
nvidia-smi -L 2>/dev/null || true
for r in $RUNS; do
  IFS=: read -r name size mlm lr rep args <<< "$r"
  timeout $(python3 -c "print(int($MIN * 60 + $EVAL_S + ${SLACK:-90}))") python3 "$here/train.py" --size "$size" \
      --minutes "$MIN" --mlm-frac "$mlm" --mlm-lr "${MLM_LR:-5e-4}" --data "$DATA" --out "$RUN/$name" \
      --lr "${lr:-${LR:-5e-4}}" --eval-seconds "$EVAL_S" --export-dtype "${EXPORT:-f32}" \
      ${INIT:+--init "$INIT"} ${rep:+--repeat "$rep"} ${EXTRA:-} ${args//,/ } > "$RUN/$name.out" 2>&1 &
done
if [ -n "${BASE:-}" ]; then
  mkdir -p "$RUN/base"
  python3 "$here/evaluate.py" --model "$BASE" --data "$DATA/eval" --device cuda --out "$RUN/base/eval_base.json" \
      > "$RUN/base.out" 2>&1 &
fi
wait
for r in $RUNS; do tail -n 20 "$RUN/${r%%:*}.out"; done
python3 "$here/pack_results.py" "$RUN" "$OUT"
