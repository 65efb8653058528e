#!/usr/bin/env python3
"""Deterministic full-size RexUniNLU test case: random weights of the real config and real-shaped
prompt inputs, generated from an integer hash so that two machines (this one, and the GPU machine
that runs the original implementation) build bit-identical float32 weights without copying 393 MB.

    python3 fullsize_case.py OUT_DIR          # writes config.json, model.safetensors, inputs_L128.json, inputs_L512.json

Only numpy is needed. Used by tools/compare_original/README.md.
"""
import json
import os
import struct
import sys

import numpy as np

CONFIG = {
    "model_type": "deberta-v2", "architectures": ["DebertaV2ForMaskedLM"], "vocab_size": 12800,
    "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
    "hidden_act": "gelu", "max_position_embeddings": 512, "relative_attention": True,
    "position_buckets": 256, "max_relative_positions": -1, "pos_att_type": "c2p|p2c",
    "share_att_key": True, "norm_rel_ebd": "layer_norm", "conv_kernel_size": 3, "conv_act": "gelu",
    "position_biased_input": False, "type_vocab_size": 0, "layer_norm_eps": 1e-7,
    "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
}
ROWS = 12804  # 12,800 vocab entries + [PREFIX] [TYPE] [CLASSIFY] [MULTICLASSIFY]
M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def uniform(stream: int, n: int) -> np.ndarray:
    """n values in [-1, 1) from splitmix64 of (stream << 40) + i; float64, exact on any machine."""
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) + np.uint64(stream << 40) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (2.0 ** -53) * 2.0 - 1.0


def layer_tensors(p, qkv, h, f):
    """(name, shape) of one post-LN encoder layer under prefix p, its q/k/v projections named qkv."""
    t = []
    for m in qkv:
        t += [(p + f"attention.self.{m}.weight", [h, h]), (p + f"attention.self.{m}.bias", [h])]
    t += [(p + "attention.output.dense.weight", [h, h]), (p + "attention.output.dense.bias", [h])]
    t += [(p + "attention.output.LayerNorm.weight", [h]), (p + "attention.output.LayerNorm.bias", [h])]
    t += [(p + "intermediate.dense.weight", [f, h]), (p + "intermediate.dense.bias", [f])]
    t += [(p + "output.dense.weight", [h, f]), (p + "output.dense.bias", [h])]
    t += [(p + "output.LayerNorm.weight", [h]), (p + "output.LayerNorm.bias", [h])]
    return t


def tensor_list():
    h, f, n = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["num_hidden_layers"]
    t = [("plm.embeddings.word_embeddings.weight", [ROWS, h])]
    t += [("plm.embeddings.LayerNorm.weight", [h]), ("plm.embeddings.LayerNorm.bias", [h])]
    for i in range(n):
        t += layer_tensors(f"plm.encoder.layer.{i}.", ("query_proj", "key_proj", "value_proj"), h, f)
    t += [("plm.encoder.rel_embeddings.weight", [2 * CONFIG["position_buckets"], h])]
    t += [("plm.encoder.LayerNorm.weight", [h]), ("plm.encoder.LayerNorm.bias", [h])]
    t += [("plm.encoder.conv.conv.weight", [h, h, 3]), ("plm.encoder.conv.conv.bias", [h])]
    t += [("plm.encoder.conv.LayerNorm.weight", [h]), ("plm.encoder.conv.LayerNorm.bias", [h])]
    t += [("ffnq.weight", [h, h]), ("ffnq.bias", [h]), ("ffnk.weight", [h, h]), ("ffnk.bias", [h])]
    t += [("rotary_emb.freqs", [h // 2])]
    return t


def initial_values(name, shape, u):
    """A tensor's values from its uniform draws u in [-1, 1): LayerNorm gains near 1, small biases,
    embeddings as drawn, Linear / Conv1d weights scaled by fan-in (activations stay O(1))."""
    if "LayerNorm.weight" in name:
        return 1.0 + 0.1 * u
    if name.endswith(".bias"):
        return 0.1 * u
    if "embeddings" in name:
        return u
    fan_in = int(np.prod(shape[1:]))
    return u * np.sqrt(3.0 / fan_in)


def make_weights():
    out = {}
    for stream, (name, shape) in enumerate(tensor_list()):
        n = int(np.prod(shape))
        u = uniform(stream + 1, n)
        if name == "rotary_emb.freqs":  # as RotaryEmbedding computes it, in float32
            h = CONFIG["hidden_size"]
            v = (1.0 / (np.float32(10000) ** (np.arange(0, h, 2, dtype=np.float32) / np.float32(h)))).astype(np.float32)
        else:
            v = initial_values(name, shape, u)
        out[name] = np.asarray(v, dtype=np.float32).reshape(shape)
    return out


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def make_inputs(L, n_types, type_len, seed):
    """A level-0 style prompt: [CLS] [PREFIX] ([TYPE] t..)*n [SEP] text.. [SEP] with spec 5.3/5.4
    position ids and 2D mask. Ids are hashed, not real words: the network does not care."""
    rnd = ((uniform(seed, 4 * L) + 1) / 2 * (12800 - 104)).astype(np.int64) + 104
    ids, pos, seg = [1, 12800], [0, 1], [None, "p"]
    k = 0
    for t in range(n_types):
        for j in range(type_len):
            ids.append(12801 if j == 0 else int(rnd[k])); k += 1
            pos.append(2 + j); seg.append(t)
    ids.append(2); pos.append(max(pos) + 1); seg.append(None)
    while len(ids) < L - 1:
        ids.append(int(rnd[k])); k += 1
        pos.append(pos[-1] + 1); seg.append(None)
    ids.append(2); pos.append(pos[-1] + 1); seg.append(None)
    mask = np.ones((L, L), dtype=np.int64)
    for i in range(L):
        for j in range(L):
            if isinstance(seg[i], int) and isinstance(seg[j], int) and seg[i] != seg[j]:
                mask[i, j] = 0  # sibling types do not see each other
    return {"input_ids": ids, "position_ids": pos, "attention_mask": ["".join(map(str, r)) for r in mask]}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=1)
    write_safetensors(os.path.join(out, "model.safetensors"), make_weights())
    for L, n_types, type_len, seed in ((128, 3, 4, 1001), (512, 3, 4, 1002)):
        case = make_inputs(L, n_types, type_len, seed)
        assert len(case["input_ids"]) == L
        with open(os.path.join(out, f"inputs_L{L}.json"), "w") as f:
            json.dump(case, f)
        print(f"L={L}: max position id {max(case['position_ids'])}")


if __name__ == "__main__":
    main()
