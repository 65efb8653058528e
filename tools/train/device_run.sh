#!/bin/bash
# One device call: trains the candidate sizes concurrently on the one GPU (each time-boxed),
# evaluates them in PyTorch, and packs the results into $OUT. See docs/training.md.
set -u
export PYTHONUNBUFFERED=1
MIN=${MIN:-6}
SIZES=${SIZES:-"narrow small medium"}
RUN=${RUN:-/tmp/rexrun}
mkdir -p "$RUN" "$OUT"
nvidia-smi -L 2>/dev/null || true
for s in $SIZES; do
  timeout $(( ${MIN%.*} * 60 + 170 )) python3 tools/train/train.py --size "$s" --minutes "$MIN" \
      --data .device/train --out "$RUN/$s" --lr "${LR:-5e-4}" --eval-seconds 100 > "$RUN/$s.out" 2>&1 &
done
wait
for s in $SIZES; do tail -n 16 "$RUN/$s.out"; done
python3 tools/train/pack_results.py "$RUN" "$OUT"
