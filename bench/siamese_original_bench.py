#!/usr/bin/env python3
"""Times the ORIGINAL ModelScope SiameseUIE pipeline (PyTorch eager, float32 model) end to end on
request lines {"text", "schema"}: one call per request as users make it, `runs` calls each, the
median printed as a JSON line per request. bench/run_siamese_bench.sh runs it against rexnlu.

    siamese_original_bench.py MODELSCOPE_SRC MODEL_DIR REQUESTS_JSONL THREADS RUNS [DEVICE=cpu]

DEVICE cuda: the pipeline with device='gpu' as modelscope runs it: the model on the GPU, and the
pipeline's own torch.cuda.amp.autocast() around each forward (float16 matrix products).
"""
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "compare_original"))
from siamese_original import install_original, load_model  # noqa: E402


def main():
    src, model_dir, requests_path, threads, runs = sys.argv[1:6]
    device = sys.argv[6] if len(sys.argv) > 6 else "cpu"
    torch.set_num_threads(int(threads))
    model_cls, pre_cls, pipe_cls = install_original(src)
    pipe = pipe_cls(model=load_model(model_cls, model_dir, torch.float32), preprocessor=pre_cls(model_dir),
                    device=device)
    engine = ("original (PyTorch eager fp32, CPU)" if device == "cpu" else
              f"original (PyTorch eager, {device}, the pipeline's autocast fp16) torch {torch.__version__}")
    for line in open(requests_path, encoding="utf-8"):
        if not line.strip():
            continue
        r = json.loads(line)
        pipe(r["text"], schema=r["schema"])  # warm-up
        times, paths = [], 0
        for _ in range(int(runs)):
            t0 = time.perf_counter()
            paths = len(pipe(r["text"], schema=r["schema"])["output"])
            times.append(time.perf_counter() - t0)
        print(json.dumps({"id": r.get("id"), "engine": engine, "threads": int(threads),
                          "median_ms": 1e3 * statistics.median(times), "min_ms": 1e3 * min(times), "paths": paths}),
              flush=True)


if __name__ == "__main__":
    main()
