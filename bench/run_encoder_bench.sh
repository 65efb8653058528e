#!/usr/bin/env bash
# rexnlu encoder + link head vs the PyTorch eager fp32 reference (tools/torch_reference), same
# full-size random weights (tools/compare_original/fullsize_case.py: real config, 12 layers, 768
# wide, vocab 12,804) and the same inputs, in one run; then the measured fp32 peak.
#   bench/run_encoder_bench.sh [BUILD_DIR=build] [WORK_DIR=/tmp/rexnlu_encoder_bench] [THREADS=2]
# Needs: BUILD_DIR/bench/{encoder_bench,fp32_peak}, /usr/bin/python3 with torch and numpy.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(realpath "${1:-$ROOT/build}")"
WORK="${2:-/tmp/rexnlu_encoder_bench}"
THREADS="${3:-2}"
PY=/usr/bin/python3
mkdir -p "$WORK"

if [[ ! -f "$WORK/model/model.safetensors" ]]; then
  echo "generating full-size random weights in $WORK/model ..." >&2
  "$PY" "$ROOT/tools/compare_original/fullsize_case.py" "$WORK/model" >&2
fi

# Cases: batch 1 at L = 64..512, and batch 8 / 32 at L = 128. Prompt-shaped inputs (custom
# position ids, sibling types masked from each other) as fullsize_case.make_inputs builds them.
"$PY" - "$ROOT" "$WORK/cases.json" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[1] + "/tools/compare_original")
from fullsize_case import make_inputs
cases = []
for name, L, batch in (("L64_b1", 64, 1), ("L128_b1", 128, 1), ("L256_b1", 256, 1), ("L512_b1", 512, 1),
                       ("L128_b8", 128, 8), ("L128_b32", 128, 32)):
    c = make_inputs(L, 3, 4, 1000 + L)
    c.update(name=name, batch=batch)
    cases.append(c)
json.dump(cases, open(sys.argv[2], "w"))
PYEOF

echo "== $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$BUILD/bench/encoder_bench" "$WORK/model" "$WORK/cases.json" "$THREADS" > "$WORK/rexnlu.jsonl"
# Debian's OpenBLAS 0.3.21 does not know recent Xeons (e.g. model 207) and falls back to its SSE3
# "Prescott" kernels, which PyTorch then uses for every matmul. Time PyTorch as installed AND with
# the AVX-512 kernels forced, and compare rexnlu with the faster of the two.
# (As installed, PyTorch is too slow to time every case: only the two small ones.)
"$PY" "$ROOT/tools/torch_reference/bench_torch.py" "$WORK/model" "$WORK/cases.json" "$THREADS" 3 L64_b1,L128_b1 > "$WORK/pytorch_default.jsonl"
OPENBLAS_CORETYPE=SkylakeX "$PY" "$ROOT/tools/torch_reference/bench_torch.py" "$WORK/model" "$WORK/cases.json" "$THREADS" > "$WORK/pytorch_skylakex.jsonl"
"$BUILD/bench/fp32_peak" "$THREADS" > "$WORK/peak.txt"
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$PY" - "$WORK" <<'PYEOF'
import json, re, sys
w = sys.argv[1]
rex = {r["name"]: r for r in map(json.loads, open(w + "/rexnlu.jsonl"))}
pt_default = {r["name"]: r for r in map(json.loads, open(w + "/pytorch_default.jsonl"))}
pt_forced = {r["name"]: r for r in map(json.loads, open(w + "/pytorch_skylakex.jsonl"))}
pt = {n: min([r for r in (pt_default.get(n), pt_forced[n]) if r], key=lambda r: r["ms_median"]) for n in pt_forced}
peak_lines = open(w + "/peak.txt").read().splitlines()
peak = max(float(re.search(r"([\d.]+) GFLOP/s", l).group(1)) for l in peak_lines)
print("\n".join(peak_lines))
print(f"\n{'case':10} {'batch':>5} {'L':>4} {'rexnlu ms':>10} {'torch dflt':>11} {'torch avx512':>12} {'speedup':>8} "
      f"{'seq/s rexnlu':>13} {'seq/s torch':>12} {'GFLOP/s':>8} {'% peak':>7} {'logits agree':>13}")
for name, r in rex.items():
    p = pt[name]
    gfs = r["gflop"] / (r["ms_median"] * 1e-3)
    agree = abs(r["logits_abs_sum"] - p["logits_abs_sum"]) / p["logits_abs_sum"]
    print(f"{name:10} {r['batch']:5d} {r['L']:4d} {r['ms_median']:10.1f} {pt_default[name]['ms_median'] if name in pt_default else float('nan'):11.1f} "
          f"{pt_forced[name]['ms_median']:12.1f} "
          f"{p['ms_median'] / r['ms_median']:7.2f}x {r['batch'] / r['ms_median'] * 1e3:13.1f} "
          f"{p['batch'] / p['ms_median'] * 1e3:12.1f} {gfs:8.1f} {100 * gfs / peak:6.1f}% {agree:13.1e}")
print(f"\nms = median wall time of one forward (encoder + link head); GFLOP/s = FLOPs rexnlu executes / time;"
      f" % peak = share of the best measured FMA peak ({peak:.1f} GFLOP/s, {len(peak_lines) and 'fp32_peak'}).")
print("torch dflt = PyTorch as installed (OpenBLAS picks its kernels itself); torch avx512 = OPENBLAS_CORETYPE=SkylakeX;")
print("speedup = faster PyTorch / rexnlu. logits agree = relative difference of sum|Z| of sequence 0.")
PYEOF
