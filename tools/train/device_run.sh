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
# AVG: space-separated NAME=A+B[+...]: after training, the weight average (average.py, F16) of runs
# (a name in RUNS) or model directories, evaluated on the GPU on all eval sets (at most EVAL_S + 60 s)
# and packed like a run.
# PACK_FLOOR: a JSON file {eval set: minimum}; runs meeting every minimum are packed first.
# EVAL_DEVICE (default cuda) and EVAL_EXTRA (e.g. '--limit 3') for the BASE and AVG evaluations.
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
  python3 "$here/evaluate.py" --model "$BASE" --data "$DATA/eval" --device "${EVAL_DEVICE:-cuda}" \
      --out "$RUN/base/eval_base.json" ${EVAL_EXTRA:-} \
      > "$RUN/base.out" 2>&1 &
fi
wait
for r in $RUNS; do tail -n 20 "$RUN/${r%%:*}.out"; done
for s in ${AVG:-}; do
  name=${s%%=*}; d="$RUN/$name"; srcs=(); mkdir -p "$d"
  IFS=+ read -ra parts <<< "${s#*=}"
  for p in "${parts[@]}"; do if [ -d "$RUN/$p" ]; then srcs+=("$RUN/$p"); else srcs+=("$p"); fi; done
  cp "${srcs[0]}/config.json" "$d/" && cp "${VOCAB:-models/rexuninlu_tiny/vocab.txt}" "$d/vocab.txt"
  echo "${s#*=}" > "$d/average_of.txt"
  (python3 "$here/average.py" --out "$d/model.safetensors" "${srcs[@]/%//model.safetensors}" &&
   timeout $(( ${EVAL_S%.*} + 60 )) python3 "$here/evaluate.py" --model "$d" --data "$DATA/eval" \
       --device "${EVAL_DEVICE:-cuda}" --out "$d/eval.json" ${EVAL_EXTRA:-}) > "$RUN/$name.out" 2>&1 &
done
wait
for s in ${AVG:-}; do tail -n 14 "$RUN/${s%%=*}.out"; done
python3 "$here/pack_results.py" "$RUN" "$OUT" ${PACK_FLOOR:-}
