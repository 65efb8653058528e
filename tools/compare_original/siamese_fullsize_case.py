#!/usr/bin/env python3
"""Deterministic full-size SiameseUIE model directory: random weights of the real config
(nlp_structbert_siamese-uie_chinese-base: BERT base, 12 layers = 6 lower + 6 joint, 768 wide,
12 heads, FFN 3,072, 512 positions, 2 token types, vocab 21,128), generated from the same integer
hash as fullsize_case.py so that any machine builds bit-identical float32 weights.

    python3 siamese_fullsize_case.py OUT_DIR VOCAB_TXT    # writes config.json, vocab.txt, model.safetensors

Random BERT layers at full scale make all tokens alike after 12 layers (head logits within +-0.02
of each other): the attention output projections are scaled by 0.2 so that tokens keep their own
states (logits then spread by about 0.6), and the head/tail biases are 0.2 so that about 5% of the
tokens pass the pipeline's 0.5 threshold (as a trained model finds a few spans; zero bias
would pass about a third and the schema recursion would explode). Only numpy is needed.
"""
import json
import os
import shutil
import sys

import numpy as np

from fullsize_case import initial_values, layer_tensors, uniform, write_safetensors

CONFIG = {
    "model_type": "bert", "architectures": ["SiameseUieModel"], "vocab_size": 21128, "hidden_size": 768,
    "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512,
    "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
}
LOWER = 6  # the original's set_crossattention_layer(6): the last 6 layers become the joint stack


def tensor_list():
    h, f, v = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["vocab_size"]
    e = "plm.embeddings."
    t = [(e + "word_embeddings.weight", [v, h]), (e + "position_embeddings.weight", [CONFIG["max_position_embeddings"], h]),
         (e + "token_type_embeddings.weight", [CONFIG["type_vocab_size"], h]),
         (e + "LayerNorm.weight", [h]), (e + "LayerNorm.bias", [h])]
    layers = [f"plm.encoder.layer.{i}." for i in range(LOWER)]
    layers += [f"crossattention.layer.{i}." for i in range(CONFIG["num_hidden_layers"] - LOWER)]
    for p in layers:
        t += layer_tensors(p, ("query", "key", "value"), h, f)
    t += [("plm.pooler.dense.weight", [h, h]), ("plm.pooler.dense.bias", [h])]
    t += [("head_clsf.weight", [1, h]), ("head_clsf.bias", [1]), ("tail_clsf.weight", [1, h]), ("tail_clsf.bias", [1])]
    return t


def make_weights():
    out = {}
    for stream, (name, shape) in enumerate(tensor_list()):
        u = uniform(stream + 5001, int(np.prod(shape)))
        if name in ("head_clsf.bias", "tail_clsf.bias"):
            v = np.full(shape, 0.2)
        elif "attention.output.dense.weight" in name:  # small: tokens stay apart through 12 layers
            v = initial_values(name, shape, 0.2 * u)
        else:
            v = initial_values(name, shape, u)
        out[name] = np.asarray(v, dtype=np.float32).reshape(shape)
    return out


def main():
    out, vocab = sys.argv[1:3]
    os.makedirs(out, exist_ok=True)
    n = sum(1 for _ in open(vocab, encoding="utf-8"))
    if n != CONFIG["vocab_size"]:
        raise SystemExit(f"{vocab}: {n} entries, the real model has {CONFIG['vocab_size']}")
    shutil.copyfile(vocab, os.path.join(out, "vocab.txt"))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=1)
    write_safetensors(os.path.join(out, "model.safetensors"), make_weights())


if __name__ == "__main__":
    main()
