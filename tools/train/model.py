"""Trainable PyTorch definition of RexUniNLU (DeBERTa-v2 variant + rotary token-pair head).

Batched and padded: inputs are ids [B,L], position ids [B,L] and a 0/1 mask [B,L,L]; dropout is
active in train mode. Module and parameter names equal the original checkpoint's keys
(plm.embeddings.word_embeddings.weight, ..., ffnq.*, ffnk.*, rotary_emb.freqs), so
state_dict() is directly an exportable checkpoint. The math is spec sections 3-4; the fixture
test (test_model.py) checks it against the original implementation's outputs.
"""
import math

import torch
from torch import nn
import torch.nn.functional as F

EPS = 1e-7


class Embeddings(nn.Module):
    def __init__(self, vocab, hidden, dropout):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=EPS)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids):
        return self.dropout(self.LayerNorm(self.word_embeddings(ids)))


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads, dropout):
        super().__init__()
        self.heads, self.dh = heads, hidden // heads
        self.query_proj = nn.Linear(hidden, hidden)
        self.key_proj = nn.Linear(hidden, hidden)
        self.value_proj = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(dropout)
        self.pos_dropout = nn.Dropout(dropout)

    def split(self, x):  # [B,L,D] -> [B,h,L,d]
        B, L, _ = x.shape
        return x.view(B, L, self.heads, self.dh).transpose(1, 2)

    def forward(self, h, mask, rel, idx):
        # rel: [2S, D] normalised relative embeddings; idx: [B,L,L] = clamp(pos_i - pos_j + S)
        q, k, v = self.split(self.query_proj(h)), self.split(self.key_proj(h)), self.split(self.value_proj(h))
        rel = self.pos_dropout(rel)
        R = rel.shape[0]
        qr = self.query_proj(rel).view(R, self.heads, self.dh).transpose(0, 1)  # [h,2S,d]
        kr = self.key_proj(rel).view(R, self.heads, self.dh).transpose(0, 1)
        scale = float(torch.tensor(math.sqrt(self.dh * 3), dtype=torch.float32))
        att = torch.matmul(q, (k / scale).transpose(-1, -2))
        B, H, L, _ = q.shape
        gidx = idx.unsqueeze(1).expand(B, H, L, L)
        c2p = torch.gather(torch.matmul(q, kr.transpose(-1, -2).unsqueeze(0)), -1, gidx)
        p2c = torch.gather(torch.matmul(k, qr.transpose(-1, -2).unsqueeze(0)), -1, gidx.transpose(-1, -2))
        att = att + (c2p + p2c.transpose(-1, -2)) / scale
        m = mask.unsqueeze(1).bool()
        att = att.masked_fill(~m, torch.finfo(att.dtype).min)
        p = torch.softmax(att, -1).masked_fill(~m, 0.0)
        ctx = torch.matmul(self.dropout(p), v)
        return ctx.transpose(1, 2).reshape(B, L, H * self.dh)


class DenseLN(nn.Module):
    def __init__(self, d_in, d_out, dropout):
        super().__init__()
        self.dense = nn.Linear(d_in, d_out)
        self.LayerNorm = nn.LayerNorm(d_out, eps=EPS)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, resid):
        return self.LayerNorm(self.dropout(self.dense(x)) + resid)


class Attention(nn.Module):
    def __init__(self, hidden, heads, dropout):
        super().__init__()
        setattr(self, "self", SelfAttention(hidden, heads, dropout))
        self.output = DenseLN(hidden, hidden, dropout)

    def forward(self, h, mask, rel, idx):
        return self.output(getattr(self, "self")(h, mask, rel, idx), h)


class Intermediate(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.dense = nn.Linear(hidden, inter)

    def forward(self, x):
        return F.gelu(self.dense(x))


class Layer(nn.Module):
    def __init__(self, hidden, heads, inter, dropout):
        super().__init__()
        self.attention = Attention(hidden, heads, dropout)
        self.intermediate = Intermediate(hidden, inter)
        self.output = DenseLN(inter, hidden, dropout)

    def forward(self, h, mask, rel, idx):
        a = self.attention(h, mask, rel, idx)
        return self.output(self.intermediate(a), a)


class ConvLayer(nn.Module):
    def __init__(self, hidden, dropout):
        super().__init__()
        self.conv = nn.Conv1d(hidden, hidden, 3, padding=1)
        self.LayerNorm = nn.LayerNorm(hidden, eps=EPS)
        self.dropout = nn.Dropout(dropout)

    def forward(self, emb, h, input_mask):
        # Padding is zeroed before the conv so that a padded batch equals unpadded batch-1 runs
        # (inference never pads; the conv would otherwise read [PAD] embeddings at the edge).
        c = self.conv((emb * input_mask).transpose(1, 2)).transpose(1, 2) * input_mask
        return self.LayerNorm(h + self.dropout(F.gelu(c))) * input_mask


class Encoder(nn.Module):
    def __init__(self, cfg, dropout):
        super().__init__()
        D = cfg["hidden_size"]
        self.span = cfg.get("position_buckets", 256)
        self.layer = nn.ModuleList(Layer(D, cfg["num_attention_heads"], cfg["intermediate_size"], dropout)
                                   for _ in range(cfg["num_hidden_layers"]))
        self.rel_embeddings = nn.Embedding(2 * self.span, D)
        self.LayerNorm = nn.LayerNorm(D, eps=EPS)
        self.conv = ConvLayer(D, dropout)

    def forward(self, emb, mask, pos):
        input_mask = (mask.sum(1) > 0).unsqueeze(-1).to(emb.dtype)  # column sums
        idx = (pos.unsqueeze(2) - pos.unsqueeze(1) + self.span).clamp(0, 2 * self.span - 1)
        rel = self.LayerNorm(self.rel_embeddings.weight)
        h = emb
        for i, layer in enumerate(self.layer):
            h = layer(h, mask, rel, idx)
            if i == 0:
                h = self.conv(emb, h, input_mask)
        return h


class Plm(nn.Module):
    def __init__(self, cfg, dropout):
        super().__init__()
        self.embeddings = Embeddings(cfg["vocab_size"], cfg["hidden_size"], dropout)
        self.encoder = Encoder(cfg, dropout)

    def forward(self, ids, mask, pos):
        return self.encoder(self.embeddings(ids), mask, pos)


class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        freqs = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.freqs = nn.Parameter(freqs, requires_grad=False)

    def forward(self, x, pos):
        theta = pos.unsqueeze(-1).to(x.dtype) * self.freqs  # [B,L,D/2]
        theta = theta.repeat_interleave(2, -1)
        x2 = torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2)
        return x * theta.cos() + x2 * theta.sin()


class RexModel(nn.Module):
    """cfg: the config.json dict with vocab_size = the embedding rows (12,804 with added tokens)."""

    def __init__(self, cfg, dropout=0.0):
        super().__init__()
        self.cfg = dict(cfg)
        self.plm = Plm(cfg, dropout)
        D = cfg["hidden_size"]
        self.ffnq = nn.Linear(D, D)
        self.ffnk = nn.Linear(D, D)
        self.rotary_emb = Rotary(D)

    def forward(self, ids, mask, pos, return_hidden=False):
        h = self.plm(ids, mask, pos)
        q = self.rotary_emb(self.ffnq(h), pos)
        k = self.rotary_emb(self.ffnk(h), pos)
        z = torch.matmul(q, k.transpose(-1, -2))
        return (z, h) if return_hidden else z


def circle_loss(logits, labels, valid):
    """The original RexModel.circle_loss (multilabel categorical CE over all L*L cells).

    valid [B,L,L] excludes padding cells (the original counts them as negatives; excluding them
    only removes terms for tokens that do not exist)."""
    B = logits.shape[0]
    y = labels.reshape(B, -1)
    p = logits.reshape(B, -1).float()
    p = p.masked_fill(~valid.reshape(B, -1), -1e12)
    p = (1 - 2 * y) * p
    p_neg = p - y * 1e12
    p_pos = (p - (1 - y) * 1e12).masked_fill(~valid.reshape(B, -1), -1e12)
    zeros = torch.zeros_like(p[:, :1])
    neg = torch.logsumexp(torch.cat([p_neg, zeros], -1), -1)
    pos = torch.logsumexp(torch.cat([p_pos, zeros], -1), -1)
    return (neg + pos).mean()


def config_for(hidden, layers, heads, inter, vocab=12804):
    """config.json of the original format for a model of this size."""
    return {
        "model_type": "deberta-v2", "architectures": ["DebertaV2ForMaskedLM"],
        "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
        "max_position_embeddings": 512, "relative_attention": True, "position_buckets": 256,
        "norm_rel_ebd": "layer_norm", "share_att_key": True, "pos_att_type": "c2p|p2c",
        "conv_kernel_size": 3, "conv_act": "gelu", "layer_norm_eps": 1e-07,
        "max_relative_positions": -1, "position_biased_input": False,
        "num_attention_heads": heads, "num_hidden_layers": layers, "type_vocab_size": 0,
        "vocab_size": vocab,
    }
