#!/usr/bin/env python3
"""Checks rex_torch.py against the original implementation's outputs on the tiny model
(tests/data/rexuninlu_tiny/forward_cases.jsonl): each case alone in float64 and float32, and all
24 cases as one padded float32 batch. Exits non-zero on any mismatch.

    /usr/bin/python3 tools/torch_reference/test_rex_torch.py
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rex_torch import RexTorch  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOL = {torch.float64: 1e-7, torch.float32: 1e-4}  # |diff| / max(1, |ref|)


def load_cases():
    with open(os.path.join(ROOT, "tests/data/rexuninlu_tiny/forward_cases.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def tensors(c):
    mask = torch.tensor([[ch == "1" for ch in row] for row in c["attention_mask"]])
    return torch.tensor(c["input_ids"]), torch.tensor(c["position_ids"]), mask


def scaled_err(got, ref):
    ref = torch.as_tensor(ref, dtype=torch.float64)
    return ((got.double() - ref).abs() / ref.abs().clamp(min=1.0)).max().item()


def main():
    torch.set_num_threads(2)
    cases = load_cases()
    base = RexTorch.from_pretrained(os.path.join(ROOT, "models/rexuninlu_tiny"))
    failures = []
    with torch.no_grad():
        for dtype in (torch.float64, torch.float32):
            model = base.to(dtype)
            worst = [0.0, 0.0]
            for c in cases:
                ids, pos, mask = tensors(c)
                h, z = model(ids[None], pos[None], mask[None])
                eh, ez = scaled_err(h[0], c["hidden"]), scaled_err(z[0], c["logits"])
                worst = [max(worst[0], eh), max(worst[1], ez)]
                if eh > TOL[dtype] or ez > TOL[dtype]:
                    failures.append(f"{c['id']} {dtype}: hidden {eh:.3g} logits {ez:.3g}")
            print(f"alone {dtype}: max scaled error hidden {worst[0]:.3g}, logits {worst[1]:.3g}")

        # All cases in one right-padded float32 batch.
        model = base.to(torch.float32)
        Lmax = max(len(c["input_ids"]) for c in cases)
        B = len(cases)
        ids = torch.zeros(B, Lmax, dtype=torch.long)
        pos = torch.zeros(B, Lmax, dtype=torch.long)
        mask = torch.zeros(B, Lmax, Lmax, dtype=torch.bool)
        lengths = []
        for b, c in enumerate(cases):
            i, p, m = tensors(c)
            L = len(i)
            ids[b, :L], pos[b, :L], mask[b, :L, :L] = i, p, m
            lengths.append(L)
        h, z = model(ids, pos, mask, lengths)
        worst = [0.0, 0.0]
        for b, c in enumerate(cases):
            L = lengths[b]
            eh, ez = scaled_err(h[b, :L], c["hidden"]), scaled_err(z[b, :L, :L], c["logits"])
            worst = [max(worst[0], eh), max(worst[1], ez)]
            if eh > TOL[torch.float32] or ez > TOL[torch.float32]:
                failures.append(f"{c['id']} padded batch: hidden {eh:.3g} logits {ez:.3g}")
        print(f"padded batch of {B} float32: max scaled error hidden {worst[0]:.3g}, logits {worst[1]:.3g}")

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("OK: all", len(cases), "cases match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
