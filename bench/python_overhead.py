#!/usr/bin/env python3
"""Overhead of the Python binding against the C++ CLI on the same requests, one request per call.

    PYTHONPATH=build/python python3 bench/python_overhead.py [--cli build/apps/rexnlu] [--model DIR]
        [--texts tests/data/cli/st_ner_dev.jsonl] [--n 64] [--rounds 5] [--threads 1]

Each round runs `rexnlu bench --batch 1` (the engine's extract_batch timed in C++) and then the
same requests through rexnlu.Engine.extract and rexnlu.pipeline(...)(input, schema) from Python
(timed around each call, so argument conversion, the GIL release and building the result dicts
count), alternating to share the machine's drift. Wall clocks of two processes on a loaded machine
differ by more than the binding costs, so each round also splits single Python calls into the
engine's own time (timings=True) and the rest (binding_us per call, binding_pct of the engine's
time): that is the binding's overhead measured directly. Prints one JSON line per round (p50 and mean
latency per request of each) and a summary: the median over rounds of each, and the overhead of
each Python call over the CLI.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def load_requests(path, limit):
    requests = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                requests.append((row["text"], row["schema"]))
    return requests[:limit] if limit else requests


def cli_round(args, texts_file):
    out = subprocess.run([args.cli, "bench", "--model", args.model, "--texts", texts_file, "--n", str(args.n),
                          "--batch", "1", "--warmup", "2", "--threads", str(args.threads), "--json"],
                         check=True, capture_output=True, text=True).stdout
    latency = json.loads(out)["latency_ms"]
    return latency["p50"], latency["mean"]


def python_round(call, requests, n):
    for text, schema in requests[:2]:
        call(text, schema)  # warm-up, as the CLI's
    times = []
    for i in range(n):
        text, schema = requests[i % len(requests)]
        t0 = time.perf_counter()
        call(text, schema)
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), 1e3 * statistics.fmean(times)


def split_round(engine, requests, n):
    """In one process and one call: the call's wall time vs the engine's own (Engine.extract(...,
    timings=True)); the difference is what the binding adds (conversions, GIL, result dicts)."""
    binding, engine_s = [], []
    for i in range(n):
        text, schema = requests[i % len(requests)]
        t0 = time.perf_counter()
        r = engine.extract(text, schema, timings=True)
        wall = time.perf_counter() - t0
        inside = r["timings"]["tokenize"] + r["timings"]["forward"] + r["timings"]["decode"]
        binding.append(wall - inside)
        engine_s.append(inside)
    return 1e6 * statistics.median(binding), 100 * sum(binding) / sum(engine_s)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default=os.path.join(ROOT, "build", "apps", "rexnlu"))
    parser.add_argument("--model", default=os.path.join(ROOT, "models", "rexnlu-demo-zh-small"))
    parser.add_argument("--texts", default=os.path.join(ROOT, "tests", "data", "cli", "st_ner_dev.jsonl"))
    parser.add_argument("--n", type=int, default=64, help="requests per round (cycling over the texts)")
    parser.add_argument("--limit", type=int, default=16, help="distinct texts used (0 = all)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of the engine (both sides)")
    args = parser.parse_args()

    import rexnlu

    requests = load_requests(args.texts, args.limit)
    texts_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"rexnlu_py_overhead_{os.getpid()}.jsonl")
    with open(texts_file, "w", encoding="utf-8") as f:
        for text, schema in requests:
            f.write(json.dumps({"text": text, "schema": schema}, ensure_ascii=False) + "\n")
    engine = rexnlu.Engine(args.model, threads=args.threads)
    pipe = rexnlu.pipeline("rex-uninlu", model=args.model, threads=args.threads)
    rounds = []
    try:
        for r in range(args.rounds):
            row = {"round": r}
            for name, (p50, mean) in (
                    ("cli", cli_round(args, texts_file)),
                    ("engine_extract", python_round(engine.extract, requests, args.n)),
                    ("pipeline_call", python_round(lambda t, s: pipe(input=t, schema=s), requests, args.n))):
                row[f"{name}_p50_ms"], row[f"{name}_mean_ms"] = p50, mean
            row["binding_us"], row["binding_pct"] = split_round(engine, requests, args.n)
            rounds.append(row)
            print(json.dumps(row), flush=True)
    finally:
        os.remove(texts_file)
    keys = [k for k in rounds[0] if k != "round"]
    summary = {k: round(statistics.median(r[k] for r in rounds), 3) for k in keys}
    for name in ("engine_extract", "pipeline_call"):
        for stat in ("p50", "mean"):
            summary[f"{name}_{stat}_overhead_pct"] = round(
                100 * (summary[f"{name}_{stat}_ms"] / summary[f"cli_{stat}_ms"] - 1), 2)
    summary.update(requests=args.n, distinct_texts=len(requests), rounds=args.rounds, threads=args.threads,
                   model=os.path.basename(args.model), python=sys.version.split()[0])
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
