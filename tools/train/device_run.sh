#!/bin/bash
# One device call: trains the candidate runs concurrently on the one GPU (each time-boxed),
# evaluates them in PyTorch, and packs the results into $OUT. See docs/training.md.
# RUNS: space-separated name:size:mlm_frac triples (mlm_frac = share of MIN spent on the MLM warm-up).
set -u
export PYTHONUNBUFFERED=1
MIN=${MIN:-6}
RUNS=${RUNS:-"small:small:0"}
RUN=${RUN:-/tmp/rexrun}
EVAL_S=${EVAL_S:-100}
mkdir -p "$RUN" "$OUT"
nvidia-smi -L 2>/dev/null || true
for r in $RUNS; do
  IFS=: read -r name size mlm <<< "$r"
  timeout $(python3 -c "print(int($MIN * 60 + $EVAL_S + 70))") python3 tools/train/train.py --size "$size" \
      --minutes "$MIN" --mlm-frac "$mlm" --mlm-lr "${MLM_LR:-5e-4}" --data .device/train --out "$RUN/$name" \
      --lr "${LR:-5e-4}" --eval-seconds "$EVAL_S" ${EXTRA:-} > "$RUN/$name.out" 2>&1 &
done
wait
for r in $RUNS; do tail -n 16 "$RUN/${r%%:*}.out"; done
python3 tools/train/pack_results.py "$RUN" "$OUT"
