#!/usr/bin/env python3
"""Runs the ORIGINAL RexUniNLU encoder + head (the `rex/` package of the ModelScope model repo,
upstream commit 2926f9c; not part of this repository) on a case written by fullsize_case.py, in
float64 on the GPU machine, and saves the last hidden states and the link logits.

    python3 run_original.py ORIG_DIR CASE_DIR OUT_DIR

ORIG_DIR holds rex/model/{utils_mod,rotary,activations}.py from that commit (see README.md).
"""
import json
import os
import sys

import numpy as np
import torch


def main():
    orig, case_dir, out = sys.argv[1:4]
    sys.path.insert(0, orig)
    from rex.model.utils_mod import DebertaV2Model2dAttnMask  # noqa: E402  (original code)
    from rex.model.rotary import RotaryEmbedding  # noqa: E402
    from transformers import DebertaV2Config
    from safetensors.numpy import load_file

    cfg = json.load(open(os.path.join(case_dir, "config.json")))
    config = DebertaV2Config(**cfg)
    weights = load_file(os.path.join(case_dir, "model.safetensors"))
    config.vocab_size = weights["plm.embeddings.word_embeddings.weight"].shape[0]

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    plm = DebertaV2Model2dAttnMask(config)
    h = config.hidden_size
    ffnq, ffnk, rot = torch.nn.Linear(h, h), torch.nn.Linear(h, h), RotaryEmbedding(h)
    plm_sd = {k[len("plm."):]: torch.from_numpy(v) for k, v in weights.items() if k.startswith("plm.")}
    missing, unexpected = plm.load_state_dict(plm_sd, strict=False)
    missing = [m for m in missing if "position_ids" not in m]
    assert not missing and not unexpected, (missing, unexpected)
    ffnq.load_state_dict({"weight": torch.from_numpy(weights["ffnq.weight"]), "bias": torch.from_numpy(weights["ffnq.bias"])})
    ffnk.load_state_dict({"weight": torch.from_numpy(weights["ffnk.weight"]), "bias": torch.from_numpy(weights["ffnk.bias"])})
    rot.freqs.data.copy_(torch.from_numpy(weights["rotary_emb.freqs"]))
    os.makedirs(out, exist_ok=True)
    ref = {}
    for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
        mods = [m.to(dev, dtype).eval() for m in (plm, ffnq, ffnk, rot)]
        if dtype == torch.float32:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        for name in sorted(os.listdir(case_dir)):
            if not name.startswith("inputs_"):
                continue
            case = json.load(open(os.path.join(case_dir, name)))
            ids = torch.tensor([case["input_ids"]], device=dev)
            pos = torch.tensor([case["position_ids"]], device=dev)
            mask = torch.tensor([[[int(c) for c in row] for row in case["attention_mask"]]], device=dev)
            with torch.no_grad():
                seq = mods[0](ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids), position_ids=pos)[0]
                q = mods[3].rotate_queries_or_keys(mods[1](seq), position_ids=pos)
                k = mods[3].rotate_queries_or_keys(mods[2](seq), position_ids=pos)
                z = torch.bmm(q, k.permute(0, 2, 1))
            stem = name[len("inputs_"):-len(".json")]
            hidden, logits = seq[0].double().cpu().numpy(), z[0].double().cpu().numpy()
            if tag == "f64":  # the reference: saved
                np.save(os.path.join(out, f"original_{stem}_hidden.npy"), hidden)
                np.save(os.path.join(out, f"original_{stem}_logits.npy"), logits)
                ref[stem] = (hidden, logits)
            else:  # how far the original's own float32 run is from its float64 run
                rh, rl = ref[stem]
                print(f"{stem} original f32 vs f64: hidden max|d| {np.abs(hidden - rh).max():.3e}, "
                      f"logits max|d| {np.abs(logits - rl).max():.3e}")
            print(f"{stem} {tag}: hidden |max| {np.abs(hidden).max():.4f}, logits |max| {np.abs(logits).max():.3f}, "
                  f"links {(logits > 0).sum()}")


if __name__ == "__main__":
    main()
