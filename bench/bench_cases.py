#!/usr/bin/env python3
"""The shared inputs of the encoder benchmarks (run_encoder_bench.sh, run_cpu_bench.sh): full-size
random weights (tools/compare_original/fullsize_case.py: real config, 12 layers, 768 wide, vocab
12,804) in WORK_DIR/model, written once, and a cases file of prompt-shaped inputs (custom position
ids, sibling types masked from each other, as fullsize_case.make_inputs builds them), one case per
NAME = L<length>_b<batch>; a batch repeats the same sequence.

    python3 bench/bench_cases.py WORK_DIR NAME [NAME ...]    # writes WORK_DIR/cases.json

Also the helper that merges the JSON lines of several rounds (combine). Needs only numpy.
"""
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "compare_original"))
from fullsize_case import make_inputs  # noqa: E402


def ensure_model(work):
    """WORK/model with config.json + model.safetensors, generated once (about 1 min, 393 MB)."""
    model = os.path.join(work, "model")
    if not os.path.isfile(os.path.join(model, "model.safetensors")):
        print(f"generating full-size random weights in {model} ...", file=sys.stderr)
        subprocess.run([sys.executable, os.path.join(ROOT, "tools/compare_original/fullsize_case.py"), model],
                       check=True, stdout=sys.stderr)
    return model


def make_case(name):
    m = re.fullmatch(r"L(\d+)_b(\d+)", name)
    if not m:
        raise SystemExit(f"bench_cases.py: case name {name!r} is not L<length>_b<batch>")
    L, batch = int(m.group(1)), int(m.group(2))
    c = make_inputs(L, 3, 4, 1000 + L)  # same sequence for every batch size at one L
    c.update(name=name, batch=batch)
    return c


def combine(path):
    """JSON lines of several rounds -> {case name: record} with the best ms_min over the rounds and
    the median of the rounds' ms_median."""
    by = {}
    with open(path) as f:
        for r in map(json.loads, filter(str.strip, f)):
            by.setdefault(r["name"], []).append(r)
    out = {}
    for n, rs in by.items():
        r = dict(rs[0])
        r["ms_min"] = min(x["ms_min"] for x in rs)
        r["ms_median"] = statistics.median(x["ms_median"] for x in rs)
        r["rounds"] = len(rs)
        out[n] = r
    return out


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    ensure_model(work)
    with open(os.path.join(work, "cases.json"), "w") as f:
        json.dump([make_case(n) for n in sys.argv[2:]], f)


if __name__ == "__main__":
    main()
