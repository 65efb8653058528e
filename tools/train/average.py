"""Weight averaging ("model soup") of models trained from the same start: the element-wise mean
of their weights, computed in float64 and stored as F16 or F32 safetensors.

  python3 tools/train/average.py --out DIR/model.safetensors A.safetensors B.safetensors [...]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="f16", choices=["f16", "f32"])
    a = ap.parse_args()
    sds = [st_io.load(p) for p in a.inputs]
    keys = sorted(sds[0])
    for p, sd in zip(a.inputs, sds):
        if sorted(sd) != keys or any(sd[k].shape != sds[0][k].shape for k in keys):
            sys.exit(f"{p}: tensor names or shapes differ from {a.inputs[0]}")
    dt = torch.float16 if a.dtype == "f16" else torch.float32
    avg = {k: (sum(sd[k].double() for sd in sds) / len(sds)).to(dt) for k in keys}
    st_io.save(avg, a.out, metadata={"format": "pt"})
    print(f"{a.out}: mean of {len(sds)} models, {len(keys)} tensors")


if __name__ == "__main__":
    main()
