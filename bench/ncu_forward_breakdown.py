#!/usr/bin/env python3
"""Where one GPU forward's time goes, kernel by kernel, measured in the real forward (not in
isolation as tests/cuda/bench_kernels_cuda does): runs encoder_bench on ONE case under Nsight
Compute (ncu, duration metric only, clocks and caches left alone), then sums the kernels' GPU
durations per forward and sets them beside the wall time encoder_bench measured without ncu.

  python3 bench/ncu_forward_breakdown.py BUILD MODEL_DIR CASES_JSON CASE PRECISION [NCU]

CASES_JSON as written by bench/bench_cases.py; CASE one of its names (e.g. L128_b32). The wall
time comes from a plain encoder_bench run of that case first (min 0.5 s). Under ncu each kernel
runs alone (serialised, no launch overlap), so the kernel sum is the GPU's busy time per
forward; wall minus that sum is time the GPU waits (host work, launch gaps, copies: copies are
not kernels and are not counted). Only where ncu can read the GPU (docs/benchmarks.md says where
it ran); the GPU machine's ncu is /usr/local/cuda/bin/ncu or on the PATH.
"""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

# Kernel name -> group; first match wins. cuBLASLt's kernels have many names (nvjet_*, sm90_xmma_*,
# cutlass_*, its split-K reduction); everything of cuBLASLt is one group, checked first (a product with
# the GELU epilogue is named *gelubias*).
GROUPS = [
    ("GEMM (cuBLASLt)", r"nvjet|xmma|cutlass|gemm|splitKreduce|cublas"),  # first: "gelubias" GEMMs too
    ("attention", r"attention_\w*kernel"),  # the flash kernel, its key split's merge, the mma / plain ones
    ("layer norm", r"layer_norm"),
    ("GELU", r"gelu"),
    ("link scores", r"link_scores"),
    ("rotary", r"rotary"),
    ("embedding", r"embedding_kernel"),
    ("conv", r"conv1d"),
    ("zero rows / convert", r"zero_rows|convert_kernel"),
]


def group_of(name):
    for g, pat in GROUPS:
        if re.search(pat, name, re.IGNORECASE):
            return g
    return "other"


def one_case(cases_json, name, out):
    cases = json.load(open(cases_json))
    picked = [c for c in cases if c["name"] == name]
    if not picked:
        sys.exit(f"{cases_json}: no case named {name} (have: {' '.join(c['name'] for c in cases)})")
    json.dump(picked, open(out, "w"))


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    build, model, cases_json, case, precision = sys.argv[1:6]
    ncu = sys.argv[6] if len(sys.argv) > 6 else (shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    bench = os.path.join(build, "bench", "encoder_bench")
    tmp = tempfile.mkdtemp(prefix="ncu_fwd_")
    case_file = os.path.join(tmp, "case.json")
    one_case(cases_json, case, case_file)

    plain = subprocess.run([bench, model, case_file, "1", "0.5", "cuda", precision], capture_output=True, text=True)
    if plain.returncode != 0:
        sys.exit(f"encoder_bench failed: {plain.stderr[-2000:]}")
    row = [json.loads(l) for l in plain.stdout.splitlines() if l.startswith("{")][-1]
    wall_ms = row["ms_median"]

    # min_seconds 0: the warm-up forward(s) (recorded into a CUDA graph where graphs are on) and a
    # few timed ones (5 forwards in all with session 27's encoder_bench), each run kernel by kernel under ncu.
    log = os.path.join(tmp, "ncu.csv")
    cmd = [ncu, "--csv", "--log-file", log, "--metrics", "gpu__time_duration.sum", "--print-units", "base",
           "--clock-control", "none", "--cache-control", "none", "--graph-profiling", "node",
           bench, model, case_file, "1", "0", "cuda", precision]
    prof = subprocess.run(cmd, capture_output=True, text=True)
    if prof.returncode != 0 or not os.path.exists(log):
        sys.exit(f"ncu failed (rc {prof.returncode}): {prof.stderr[-3000:]}")
    text = open(log).read()
    start = text.find('"ID"')
    if start < 0:
        sys.exit(f"ncu wrote no kernel table: {text[-2000:]}")
    kernels = []  # (name, ns) in launch order
    for r in csv.DictReader(io.StringIO(text[start:])):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "ns")
        ns = value * {"ns": 1, "nsecond": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}.get(unit, 1)
        kernels.append((r["Kernel Name"], ns))
    # Each forward ends with its one link-score kernel (the head's last kernel). The kernels after
    # one forward's link scores, up to and including the next one's, are exactly one forward; the
    # first forward (with the weights' load-time conversions before it) is left out. (Until
    # session 27 the forwards began at the embedding gather, which the embeddings' layer norm
    # now does itself: the script had stopped finding any forward.)
    ends = [i for i, (n, _) in enumerate(kernels) if "link_scores" in n]
    if len(ends) < 2:
        sys.exit(f"{len(ends)} link_scores kernel(s) among the {len(kernels)} profiled: not a RexUniNLU forward?")
    fwd = kernels[ends[0] + 1:ends[-1] + 1]
    forwards = len(ends) - 1
    by_group, by_name, count = defaultdict(float), defaultdict(float), defaultdict(int)
    for n, ns in fwd:
        by_group[group_of(n)] += ns / forwards
        short = re.sub(r"\([^()]*\)$", "", n.replace("(anonymous namespace)::", "")).removeprefix("void ")[:90]
        by_name[short] += ns / forwards
        count[short] += 1
    busy_us = sum(by_group.values()) / 1e3
    print(f"case {case}, {precision}: {len(fwd)} kernels over {forwards} forwards ({len(fwd) // forwards} per forward)")
    print(f"wall (encoder_bench, no ncu, median): {wall_ms * 1e3:8.1f} us")
    print(f"GPU kernels, sum per forward (ncu):   {busy_us:8.1f} us ({100 * busy_us / (wall_ms * 1e3):.0f} % of the wall time)")
    print(f"not in a kernel (host, copies, gaps): {wall_ms * 1e3 - busy_us:8.1f} us\n")
    print(f"{'group':24} {'us/forward':>10} {'share':>6}")
    for g, ns in sorted(by_group.items(), key=lambda kv: -kv[1]):
        print(f"{g:24} {ns / 1e3:10.1f} {100 * ns / 1e3 / busy_us:5.0f}%")
    print(f"\n{'kernel':90} {'per fwd':>7} {'us/fwd':>8}")
    for n, ns in sorted(by_name.items(), key=lambda kv: -kv[1])[:25]:
        print(f"{n:90} {count[n] / forwards:7.1f} {ns / 1e3:8.1f}")


if __name__ == "__main__":
    main()
