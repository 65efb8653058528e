"""Padded batches of RexUniNLU inputs: ids, position ids and the 2D prompt-isolation mask."""
import torch

import rexdata as R


def make_batch(tok, seqs, device, segs=None, multiple=8):
    """seqs: list of input_id lists. segs: optional precomputed (pos, pseg, tseg) per seq.

    Padding as the original collate: ids 0, position ids continue after the last one, mask rows
    and columns of padding 0."""
    if segs is None:
        segs = [R.segments(tok, s) for s in seqs]
    L = max(len(s) for s in seqs)
    L += (multiple - L % multiple) % multiple
    B = len(seqs)
    ids = torch.zeros(B, L, dtype=torch.long)
    pos = torch.zeros(B, L, dtype=torch.long)
    ps = torch.full((B, L), -1, dtype=torch.long)
    ts = torch.full((B, L), -1, dtype=torch.long)
    lens = torch.zeros(B, dtype=torch.long)
    for b, (s, (p, a, t)) in enumerate(zip(seqs, segs)):
        n = len(s)
        ids[b, :n] = torch.tensor(s)
        pos[b, :n] = torch.tensor(p)
        pos[b, n:] = torch.arange(p[-1] + 1, p[-1] + 1 + L - n)
        ps[b, :n] = torch.tensor(a)
        ts[b, :n] = torch.tensor(t)
        lens[b] = n
    ids, pos, ps, ts, lens = (x.to(device) for x in (ids, pos, ps, ts, lens))
    valid = torch.arange(L, device=device).unsqueeze(0) < lens.unsqueeze(1)  # [B,L]
    hint = ps >= 0
    diff_p = ps.unsqueeze(2) != ps.unsqueeze(1)
    tt = ts >= 0
    diff_t = tt.unsqueeze(2) & tt.unsqueeze(1) & (ts.unsqueeze(2) != ts.unsqueeze(1))
    block = hint.unsqueeze(2) & hint.unsqueeze(1) & (diff_p | diff_t)
    mask = valid.unsqueeze(2) & valid.unsqueeze(1) & ~block
    return ids, mask.long(), pos, valid
