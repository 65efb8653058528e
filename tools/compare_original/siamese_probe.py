#!/usr/bin/env python3
"""Prints the ORIGINAL SiameseUIE pipeline's head/tail logits at chosen text characters for one
hint of one e2e case, from its float32 and its float64 run (the logits the pipeline itself
decides on: captured from the model's fast_inference inside the pipeline's own batching and
padding) on the case's first schema level. Used to check a decision that sits on the 0.5 threshold (docs/parity.md, ee/金融舆情-3).

    siamese_probe.py MODELSCOPE_SRC MODEL_DIR CASES_JSONL CASE_ID HINT CHAR_END [CHAR_END ...]
"""
import json
import sys

import torch

from siamese_original import install_original, load_model


def main():
    src, model_dir, cases_path, case_id, hint = sys.argv[1:6]
    ends = {int(x) for x in sys.argv[6:]}
    case = next(c for c in map(json.loads, open(cases_path, encoding="utf-8")) if c["id"] == case_id)
    model_cls, pre_cls, pipe_cls = install_original(src)
    pre = pre_cls(model_dir)
    enc = pre([case["text"]])[0]
    for name, dtype in (("f32", torch.float32), ("f64", torch.float64)):
        model = load_model(model_cls, model_dir, dtype)
        pipe = pipe_cls(model=model, preprocessor=pre)
        seen = []
        inner = model.fast_inference

        def capture(seq, masks, hint_ids, hint_masks):
            head, tail = inner(seq, masks, hint_ids, hint_masks)
            seen.append((hint_ids.tolist(), tail.tolist(), head.tolist()))
            return head, tail

        model.fast_inference = capture
        # Level 0 only (every type a leaf): the same hints, batching and padding as the case's first
        # level, without the recursion that follows it.
        pipe(case["text"], schema={t: None for t in case["schema"]})
        want = pre([hint])[0].ids
        for ids, tails, heads in seen:
            for row, tail, head in zip(ids, tails, heads):
                if row[:len(want)] != want or any(row[len(want):]):
                    continue
                for t, (start, end) in enumerate(enc.offsets):
                    if end in ends:
                        print(f"{name}: token {t} [{start}, {end}) tail {tail[t]:.9f} head {head[t]:.9f}")
                break
            else:
                continue
            break


if __name__ == "__main__":
    main()
