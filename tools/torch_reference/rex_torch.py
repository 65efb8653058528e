#!/usr/bin/env python3
"""RexUniNLU (DeBERTa-v2 Rex variant + rotary link head) in plain PyTorch, written from
shared/docs/rexuninlu_spec.md sections 3 and 4. It is the eager-mode baseline the C++ engine is
benchmarked against and the starting point for training code.

Computation follows the original's structure on purpose (Qr/Kr projected every forward, c2p/p2c
gathered from full [L, 512] products), so that its cost is the original's cost.

Batches: sequences are right-padded to a common length. `lengths` tells the model where each one
ends; padded tokens are zeroed before the k=3 conv, so padding never changes a real token.

    model = RexTorch.from_pretrained(model_dir)            # config.json + model.safetensors
    hidden, logits = model(ids, position_ids, mask2d, lengths)
"""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def load_safetensors(path):
    """{name: torch.Tensor} from a safetensors file (numpy only; no safetensors package needed)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64, "I32": np.int32}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        arr = np.frombuffer(data, dtype=dtypes[meta["dtype"]], count=(b - a) // np.dtype(dtypes[meta["dtype"]]).itemsize, offset=a)
        out[name] = torch.from_numpy(arr.reshape(meta["shape"]).copy())
    return out


class DisentangledSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query_proj = nn.Linear(hidden, hidden)
        self.key_proj = nn.Linear(hidden, hidden)
        self.value_proj = nn.Linear(hidden, hidden)

    def split(self, x):  # [B, L, H] -> [B, heads, L, d]
        B, L, _ = x.shape
        return x.view(B, L, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, h, mask2d, rel_emb, rel_idx):
        # h [B,L,H]; mask2d [B,L,L] bool; rel_emb [512,H] (already LayerNorm'ed); rel_idx [B,L,L] long
        q, k, v = self.split(self.query_proj(h)), self.split(self.key_proj(h)), self.split(self.value_proj(h))
        # share_att_key: the SAME projections (with bias) give Qr and Kr.
        qr = self.split(self.query_proj(rel_emb).unsqueeze(0))[0]  # [heads, 512, d]
        kr = self.split(self.key_proj(rel_emb).unsqueeze(0))[0]
        scale = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float, device=h.device) * 3).to(h.dtype)  # float32 sqrt, as the original
        scores = torch.matmul(q, k.transpose(-1, -2) / scale)
        idx = rel_idx.unsqueeze(1).expand(-1, self.heads, -1, -1)  # [B, heads, L, L]
        c2p = torch.gather(torch.matmul(q, kr.transpose(-1, -2)), -1, idx)  # Q_i . Kr[idx(i,j)]
        # p2c: K_j . Qr[idx(i,j)] with the SAME idx(i,j) = pos_i - pos_j + 256 (spec 3): gather
        # row j of K.Qr^T at idx(i,j), i.e. gather with idx^T and transpose back.
        p2c = torch.gather(torch.matmul(k, qr.transpose(-1, -2)), -1, idx.transpose(-1, -2)).transpose(-1, -2)
        scores = scores + c2p / scale + p2c / scale
        # XSoftmax: masked -> finfo.min, softmax, masked -> 0 (fully masked rows become zeros)
        m = mask2d.unsqueeze(1)
        probs = torch.softmax(scores.masked_fill(~m, torch.finfo(scores.dtype).min), dim=-1).masked_fill(~m, 0.0)
        ctx = torch.matmul(probs, v)  # [B, heads, L, d]
        B, _, L, _ = ctx.shape
        return ctx.transpose(1, 2).reshape(B, L, -1)


class Layer(nn.Module):
    def __init__(self, hidden, heads, inter, eps):
        super().__init__()
        self.attention = DisentangledSelfAttention(hidden, heads)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_ln = nn.LayerNorm(hidden, eps=eps)
        self.inter = nn.Linear(hidden, inter)
        self.out = nn.Linear(inter, hidden)
        self.out_ln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, h, mask2d, rel_emb, rel_idx):
        a = self.attn_ln(self.attn_out(self.attention(h, mask2d, rel_emb, rel_idx)) + h)
        return self.out_ln(self.out(F.gelu(self.inter(a))) + a)  # exact erf GELU


class RexTorch(nn.Module):
    def __init__(self, cfg, vocab_rows):
        super().__init__()
        H, eps = cfg["hidden_size"], cfg["layer_norm_eps"]
        self.att_span = cfg["position_buckets"]
        self.word_embeddings = nn.Embedding(vocab_rows, H)
        self.emb_ln = nn.LayerNorm(H, eps=eps)
        self.layers = nn.ModuleList(
            Layer(H, cfg["num_attention_heads"], cfg["intermediate_size"], eps) for _ in range(cfg["num_hidden_layers"]))
        self.rel_embeddings = nn.Parameter(torch.zeros(2 * self.att_span, H))
        self.rel_ln = nn.LayerNorm(H, eps=eps)
        self.conv = nn.Conv1d(H, H, cfg["conv_kernel_size"], padding=(cfg["conv_kernel_size"] - 1) // 2)
        self.conv_ln = nn.LayerNorm(H, eps=eps)
        self.ffnq = nn.Linear(H, H)
        self.ffnk = nn.Linear(H, H)
        self.register_buffer("freqs", torch.zeros(H // 2))

    # checkpoint name -> our parameter name
    @staticmethod
    def _rename(name, n_layers):
        fixed = {
            "plm.embeddings.word_embeddings.weight": "word_embeddings.weight",
            "plm.embeddings.LayerNorm.weight": "emb_ln.weight", "plm.embeddings.LayerNorm.bias": "emb_ln.bias",
            "plm.encoder.rel_embeddings.weight": "rel_embeddings",
            "plm.encoder.LayerNorm.weight": "rel_ln.weight", "plm.encoder.LayerNorm.bias": "rel_ln.bias",
            "plm.encoder.conv.conv.weight": "conv.weight", "plm.encoder.conv.conv.bias": "conv.bias",
            "plm.encoder.conv.LayerNorm.weight": "conv_ln.weight", "plm.encoder.conv.LayerNorm.bias": "conv_ln.bias",
            "rotary_emb.freqs": "freqs",
        }
        if name in fixed:
            return fixed[name]
        if name.startswith(("ffnq.", "ffnk.")):
            return name
        for i in range(n_layers):
            p = f"plm.encoder.layer.{i}."
            if name.startswith(p):
                rest = name[len(p):]
                for a, b in (("attention.self.", "attention."), ("attention.output.dense.", "attn_out."),
                             ("attention.output.LayerNorm.", "attn_ln."), ("intermediate.dense.", "inter."),
                             ("output.dense.", "out."), ("output.LayerNorm.", "out_ln.")):
                    if rest.startswith(a):
                        return f"layers.{i}.{b}{rest[len(a):]}"
        raise KeyError(f"unexpected checkpoint tensor {name}")

    @classmethod
    def from_pretrained(cls, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        tensors = load_safetensors(os.path.join(model_dir, "model.safetensors"))
        model = cls(cfg, tensors["plm.embeddings.word_embeddings.weight"].shape[0])
        state = {cls._rename(k, cfg["num_hidden_layers"]): v for k, v in tensors.items()}
        missing, unexpected = model.load_state_dict(state, strict=True), None
        del missing, unexpected
        return model.eval()

    def rope(self, x, pos):
        # theta[t, 2m] = theta[t, 2m+1] = pos_t * freqs[m]; adjacent pairs rotate (GPT-J style)
        theta = pos.to(self.freqs.dtype).unsqueeze(-1) * self.freqs
        theta = torch.stack((theta, theta), dim=-1).flatten(-2)  # repeat_interleave(2, -1): torch 1.13 mis-exports it
        x2 = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)  # rotate_half, interleaved
        return x * theta.cos() + x2 * theta.sin()

    def forward(self, ids, pos, mask2d, lengths=None):
        """ids, pos [B,L] long; mask2d [B,L,L] (0/1); lengths [B] or None (no padding).
        Returns hidden [B,L,H] and link logits Z [B,L,L]."""
        B, L = ids.shape
        mask2d = mask2d.bool()
        valid = torch.ones(B, L, dtype=torch.bool, device=ids.device) if lengths is None else \
            torch.arange(L, device=ids.device).unsqueeze(0) < torch.as_tensor(lengths, device=ids.device).unsqueeze(1)
        mask2d = mask2d & valid.unsqueeze(1) & valid.unsqueeze(2)
        emb = self.emb_ln(self.word_embeddings(ids))
        input_mask = (mask2d.sum(-2) > 0).unsqueeze(-1).to(emb.dtype)  # column sums of the 2D mask
        rel_idx = torch.clamp(pos.unsqueeze(-1) - pos.unsqueeze(-2) + self.att_span, 0, 2 * self.att_span - 1)
        rel_emb = self.rel_ln(self.rel_embeddings)
        h = emb
        for i, layer in enumerate(self.layers):
            h = layer(h, mask2d, rel_emb, rel_idx)
            if i == 0:  # ConvLayer on the embedding output, residual = layer-0 output
                x = emb * valid.unsqueeze(-1).to(emb.dtype)  # padding must not enter the conv window
                c = self.conv(x.transpose(1, 2)).transpose(1, 2) * input_mask
                h = self.conv_ln(h + F.gelu(c)) * input_mask
        q, k = self.rope(self.ffnq(h), pos), self.rope(self.ffnk(h), pos)
        return h, torch.matmul(q, k.transpose(-1, -2))  # no 1/sqrt(d) scaling
