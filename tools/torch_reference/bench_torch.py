#!/usr/bin/env python3
"""PyTorch eager fp32 baseline for bench/encoder_bench.cpp: same model directory, same cases file,
same timing loop. Prints one JSON object per case (engine "pytorch").

    /usr/bin/python3 tools/torch_reference/bench_torch.py MODEL_DIR CASES_JSON [threads=2] [min_seconds=3] [name,name..]
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rex_torch import RexTorch  # noqa: E402


def main():
    model_dir, cases_path = sys.argv[1], sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    min_seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 3.0
    only = set(sys.argv[5].split(",")) if len(sys.argv) > 5 else None
    torch.set_num_threads(threads)
    model = RexTorch.from_pretrained(model_dir)
    with open(cases_path) as f:
        cases = json.load(f)
    print(f"pytorch {torch.__version__}: {torch.get_num_threads()} threads", file=sys.stderr)
    with torch.inference_mode():
        for c in cases:
            if only is not None and c["name"] not in only:
                continue
            B = c["batch"]
            ids = torch.tensor(c["input_ids"]).expand(B, -1).contiguous()
            pos = torch.tensor(c["position_ids"]).expand(B, -1).contiguous()
            mask = torch.tensor([[ch == "1" for ch in r] for r in c["attention_mask"]]).expand(B, -1, -1).contiguous()
            for _ in range(1):  # warm-up
                _, z = model(ids, pos, mask)
            ms = []
            start = time.perf_counter()
            while len(ms) < 3 or time.perf_counter() - start < min_seconds:
                t0 = time.perf_counter()
                _, z = model(ids, pos, mask)
                ms.append((time.perf_counter() - t0) * 1e3)
                if len(ms) >= 200:
                    break
            ms.sort()
            print(json.dumps({"engine": "pytorch", "name": c["name"], "batch": B, "L": len(c["input_ids"]),
                              "ms_median": ms[len(ms) // 2], "ms_min": ms[0], "reps": len(ms),
                              "logits_abs_sum": z[0].abs().sum().item()}), flush=True)


if __name__ == "__main__":
    main()
