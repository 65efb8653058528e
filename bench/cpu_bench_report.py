#!/usr/bin/env python3
"""The side-by-side table of bench/run_cpu_bench.sh: every engine's rounds (WORK_DIR/results/ENGINE.jsonl,
one JSON line per case and round) merged into best and median per case, with the speed relative to
ONNX Runtime INT8 (per tensor), the reference the rexnlu int8 work is measured against.

    python3 bench/cpu_bench_report.py WORK_DIR ENGINE [ENGINE ...]     # in this order
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cases import combine  # noqa: E402

LABELS = {"ort_fp32": "ONNX Runtime fp32", "ort_int8": "ONNX Runtime INT8 (per tensor)",
          "ort_int8_pc": "ONNX Runtime INT8 (per channel)", "ort_int8_rr": "ONNX Runtime INT8 (reduce_range)",
          "ort_int8_u8": "ONNX Runtime INT8 (U8U8)", "pytorch": "PyTorch eager fp32"}
BASE = "ort_int8"


def label(engine):
    if engine.startswith("rexnlu_"):
        return "rexnlu " + engine[len("rexnlu_"):]
    return LABELS.get(engine, engine)


def main():
    work, engines = sys.argv[1], sys.argv[2:]
    res = {e: combine(os.path.join(work, "results", e + ".jsonl")) for e in engines}
    names = list(next(iter(res.values())))
    base, torch = res.get(BASE), res.get("pytorch")
    print(f"\n{'case':8} {'B':>2} {'L':>4} | {'engine':32} | {'best ms':>8} {'median':>8} | "
          f"{'vs ORT INT8':>13} | {'seq/s':>6} | {'sum|Z| vs torch':>15}")
    for n in names:
        for e in engines:
            r = res[e].get(n)
            if r is None:
                print(f"{n:8} {'':>2} {'':>4} | {label(e):32} | {'missing':>8}")
                continue
            rel = f"{'':>13}"
            if base and n in base:
                rel = f"{base[n]['ms_min'] / r['ms_min']:5.2f}x {base[n]['ms_median'] / r['ms_median']:5.2f}x"
            agree = f"{'':>15}"
            if torch and n in torch and e != "pytorch":
                t = torch[n]["logits_abs_sum"]
                agree = f"{abs(r['logits_abs_sum'] - t) / t:15.1e}"
            print(f"{n:8} {r['batch']:2d} {r['L']:4d} | {label(e):32} | {r['ms_min']:8.1f} {r['ms_median']:8.1f} | "
                  f"{rel} | {r['batch'] / r['ms_min'] * 1e3:6.2f} | {agree}")
        print()
    rounds = sorted({r["rounds"] for e in res.values() for r in e.values()})
    print(f"ms: one forward (encoder + link head, batch B); best = fastest forward over all rounds ({'/'.join(map(str, rounds))}"
          f" rounds), median = median of the rounds' medians. vs ORT INT8 = ORT INT8 time / engine time")
    print("(best, median): above 1 = faster than ORT INT8. seq/s from the best time. sum|Z| vs torch = relative")
    print("difference of sum |link logits| of sequence 0 against PyTorch (a cheap check that all engines ran the same model).")


if __name__ == "__main__":
    main()
