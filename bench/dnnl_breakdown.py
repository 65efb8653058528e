#!/usr/bin/env python3
"""Where rexnlu's fp32 CPU forward spends its time, on a machine without perf (the GPU host's Xeon):
encoder_bench once as it is (the forward's time), then once under ONEDNN_VERBOSE=1, which logs every
oneDNN matmul primitive's execution time (the linear layers: q|k|v, attention output, intermediate with
its GELU, output, the link head's q|k). Per shape: calls per forward, median and best ms, GFLOP/s;
their sum per forward against the forward's time; the rest is what oneDNN does not log (the attention's
own kernels, the conv's and the link scores' sgemm calls, layer norms, rotary, copies, thread waits).

    python3 bench/dnnl_breakdown.py BUILD_DIR MODEL_DIR CASES_JSON [THREADS=2] [MIN_SECONDS=2] [CASE=L128_b1]

Pinning is the caller's (taskset -c 0-1 python3 ...). BUILD_DIR/bench/fp32_peak, where built, gives the
measured FMA peak for the shares.
"""
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(cmd, env=None):
    return subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout


def result_line(out):
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit("dnnl_breakdown.py: encoder_bench printed no result line")


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    build, model, cases_path = sys.argv[1:4]
    threads = sys.argv[4] if len(sys.argv) > 4 else "2"
    seconds = sys.argv[5] if len(sys.argv) > 5 else "2"
    case = sys.argv[6] if len(sys.argv) > 6 else "L128_b1"
    with open(cases_path) as f:
        cases = [c for c in json.load(f) if c["name"] == case]
    if not cases:
        raise SystemExit(f"dnnl_breakdown.py: no case {case} in {cases_path}")
    bench = os.path.join(build, "bench", "encoder_bench")
    peak = os.path.join(build, "bench", "fp32_peak")
    with tempfile.NamedTemporaryFile("w", suffix=".json") as one:
        json.dump(cases, one)
        one.flush()
        plain = result_line(run([bench, model, one.name, threads, seconds]))
        env = dict(os.environ, ONEDNN_VERBOSE="1")
        verbose_out = run([bench, model, one.name, threads, seconds], env)
    verbose = result_line(verbose_out)
    forwards = verbose["reps"] + 1  # encoder_bench's warm-up forward is logged too
    times = collections.defaultdict(list)
    for line in verbose_out.splitlines():
        # oneDNN 2.x: onednn_verbose,exec,cpu,matmul,IMPL,...,PROBLEM,MS (3.x adds fields before "exec")
        f = line.split(",")
        if f[0] == "onednn_verbose" and "exec" in f[:4] and "matmul" in f[:6]:
            gelu = "+gelu" if "gelu" in line else ""  # the intermediate layer's post-op
            times[(f[f.index("matmul") + 1] + gelu, f[-2])].append(float(f[-1]))
    if not times:
        raise SystemExit("dnnl_breakdown.py: no matmul lines under ONEDNN_VERBOSE=1 (no oneDNN matmul in this build?)")

    print(f"case {case}, {threads} threads; forward (no verbose): best {plain['ms_min']:.1f} ms, "
          f"median {plain['ms_median']:.1f} ms, {plain['gflop']:.2f} GFLOP ({plain['reps']} forwards); "
          f"under ONEDNN_VERBOSE: median {verbose['ms_median']:.1f} ms ({forwards} forwards logged)")
    if os.path.exists(peak):
        print(run([peak, threads]).strip().splitlines()[-1])
    print(f"{'oneDNN matmul (impl, MxK:KxN)':58} {'calls':>5} {'med ms':>7} {'best ms':>7} {'GFLOP/s':>8} {'ms/fwd':>7}")
    total_med = total_best = 0.0
    for (impl, problem), t in sorted(times.items(), key=lambda kv: -sum(kv[1])):
        calls = len(t) / forwards
        dims = [int(x) for x in problem.split(":")[0].split("x") + problem.split(":")[1].split("x")[1:]]
        flop = 2.0 * dims[0] * dims[1] * dims[2]
        med, best = statistics.median(t), min(t)
        total_med += med * calls
        total_best += best * calls
        print(f"{impl + ' ' + problem:58} {calls:5.1f} {med:7.3f} {best:7.3f} {flop / med * 1e-6:8.1f} {med * calls:7.2f}")
    fwd = verbose["ms_median"]
    print(f"matmul per forward: {total_med:.1f} ms from the medians ({100 * total_med / fwd:.0f}% of the logged "
          f"forward's median {fwd:.1f} ms), {total_best:.1f} ms from the best calls; "
          f"everything else: {fwd - total_med:.1f} ms ({100 * (fwd - total_med) / fwd:.0f}%)")


if __name__ == "__main__":
    main()
