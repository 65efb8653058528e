#!/usr/bin/env python3
"""PyTorch on the GPU, the baselines of bench/run_gpu_bench.sh: the same model directory and cases
file as bench/encoder_bench (tools/torch_reference/rex_torch.py, the original's computation), in
the modes a PyTorch user has. Prints one JSON object per mode and case (engine "torch-<mode>").

    python3 bench/bench_torch_gpu.py MODEL_DIR CASES_JSON MODES [min_seconds=1] [name,name..]

MODES (comma-separated): eager_fp32, autocast_fp16, compile_fp16 (torch.compile default mode
under fp16 autocast), compile_fp16_graphs (mode "reduce-overhead": CUDA graphs).
Each timed call runs encoder + head and copies the logits to the host (as rexnlu's forward does),
so the time includes that copy; warm-up calls (compilation, graph capture) are not timed. Each mode
is timed twice: with ids, positions and masks already on the GPU (engine "torch-<mode>"), and
uploaded from host tensors inside the timed call ("torch-<mode>-hostin"), which is what rexnlu's
timed call does with its host inputs.
"""
import json
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "torch_reference"))
from rex_torch import RexTorch  # noqa: E402


def runner(model, mode):
    if mode == "eager_fp32":
        return lambda *a: model(*a)
    if mode == "autocast_fp16":
        def run(*a):
            with torch.autocast("cuda", dtype=torch.float16):
                return model(*a)
        return run
    compiled = torch.compile(model, mode="reduce-overhead" if mode == "compile_fp16_graphs" else "default")

    def run(*a):
        with torch.autocast("cuda", dtype=torch.float16):
            return compiled(*a)
    return run


def main():
    model_dir, cases_path, modes = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    min_seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    only = set(sys.argv[5].split(",")) if len(sys.argv) > 5 else None
    model = RexTorch.from_pretrained(model_dir).cuda()
    with open(cases_path) as f:
        cases = json.load(f)
    print(f"pytorch {torch.__version__} on {torch.cuda.get_device_name()}", file=sys.stderr)
    for mode in modes:
        run = runner(model, mode)
        with torch.inference_mode():
            for c in cases:
                if only is not None and c["name"] not in only:
                    continue
                B = c["batch"]
                host = (torch.tensor(c["input_ids"]).expand(B, -1).contiguous(),
                        torch.tensor(c["position_ids"]).expand(B, -1).contiguous(),
                        torch.tensor([[ch == "1" for ch in r] for r in c["attention_mask"]]).expand(B, -1, -1).contiguous())
                ids, pos, mask = (t.cuda() for t in host)
                t0 = time.perf_counter()
                for _ in range(3):  # warm-up: compilation, autotuning, graph capture
                    z = run(ids, pos, mask)[1].float().cpu()
                warm_s = time.perf_counter() - t0
                # First with the inputs already on the GPU (the rows of every earlier session), then
                # from the host as a user's tokenizer leaves them, uploaded inside the timed call
                # ("-hostin"), as rexnlu's forward uploads its host inputs inside its timed call.
                for suffix, call in (("", lambda: run(ids, pos, mask)),
                                     ("-hostin", lambda: run(*(t.cuda() for t in host)))):
                    ms = []
                    start = time.perf_counter()
                    while len(ms) < 10 or time.perf_counter() - start < min_seconds:
                        t0 = time.perf_counter()
                        z = call()[1].float().cpu()
                        ms.append((time.perf_counter() - t0) * 1e3)
                        if len(ms) >= 2000:
                            break
                    ms.sort()
                    print(json.dumps({"engine": "torch-" + mode + suffix, "name": c["name"], "batch": B,
                                      "L": len(c["input_ids"]), "ms_median": ms[len(ms) // 2], "ms_min": ms[0],
                                      "reps": len(ms), "warmup_s": round(warm_s, 1),
                                      "logits_abs_sum": z[0].abs().sum().item()}), flush=True)


if __name__ == "__main__":
    main()
