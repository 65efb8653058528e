#!/usr/bin/env python3
# Host emulation of src/backends/cuda/attention_fa.cu (session 9), written to check it before it
# ever ran on a GPU: the kernel's block logic transliterated (windows, the relative-row ring and
# its prefetch, C2P/P2C tile and item selection, gather, online softmax, merge), the PTX it uses
# modelled independently from the ISA's fragment layouts (ldmatrix .x4 / .x4.trans: lane 8m+r
# gives row r of matrix m, thread t receives row t/4, elements 2(t%4), 2(t%4)+1; mma m16n8k16 A /
# B / C fragments; cp.async as deferred copies), shared memory starting as NaN bytes. Each case
# is compared with a float64 reference of the attention; barriers are modelled by running the
# warps phase by phase, forward or in reverse ("rev": a cross-warp hazard between two barriers
# shows as a difference), and cp.async copies land at issue ("early": a prefetch overwriting
# data still in use shows) or at the wait (then an ldmatrix of bytes with a copy in flight counts
# as a hazard, what racecheck reports, and fails the case even where the values are never used). fp16 only (bf16 differs in the mma variant only).
# It proves the index math and layouts of this transliteration, not the CUDA text itself: keep
# the two in step when the kernel changes. Needs numpy (/usr/bin/python3 here).
#   attention_fa_emulator.py                 the battery at the end (about 20 s)
#   attention_fa_emulator.py D WQ L pattern rel_rows early|late fwd|rev
import numpy as np, sys
INT_MAX, INT_MIN = 2**31-1, -2**31
LANES = np.arange(32)

class Smem:
    def __init__(self, nbytes):
        self.buf = np.zeros(nbytes, np.uint8)
        # fill with NaN patterns: fp16 0xFFFF is NaN; fp32 0xFFFFFFFF is NaN
        self.buf[:] = 0xFF
        self.pending = []
    def h(self):
        return self.buf.view(np.float16)
    def f(self):
        return self.buf.view(np.float32)
    def i32(self):
        return self.buf.view(np.int32)

class Emu:
    def __init__(self, D, WQ, early_land, reverse):
        self.D, self.WQ = D, WQ
        self.early, self.reverse = early_land, reverse
        self.hazards = 0  # ldmatrix reads of bytes with a cp.async in flight (copies landing late)
        self.WK = 4 // WQ
        self.KW = 32 if WQ == 4 else 16
        self.Bk = self.KW * self.WK
        self.Bq = 16 * WQ
        self.Rw = self.Bq + self.Bk
        self.Ring = self.Bq + 2 * self.Bk
        self.Ldh = D + 8
        self.Ldf = self.Rw + 8
        self.Nt = self.KW // 8
        self.Kd = D // 16
        self.Kt = self.Bk // 16
        self.Pr = D // 8
        self.k = 0
        self.v = self.k + 2 * self.Bk * self.Ldh * 2
        self.kr = self.v + 2 * self.Bk * self.Ldh * 2
        self.qr = self.kr + self.Ring * self.Ldh * 2
        self.posk = self.qr + self.Ring * self.Ldh * 2
        self.p2c = self.posk + 2 * self.Bk * 4
        self.c2p = self.p2c + (self.Bk * self.Ldf * 4 if self.WK == 1 else 0)
        self.p2c_base = self.p2c if self.WK == 1 else self.c2p
        self.bytes = self.c2p + 4 * 16 * self.Ldf * 4
        self.Ldo = D + 4
        self.merge_ml = 4 * 16 * self.Ldo * 4

    # --- primitives ---
    def cp16(self, dst, src_vals, full):  # src_vals: 8 fp16 values
        vals = np.asarray(src_vals, np.float16) if full else np.zeros(8, np.float16)
        assert dst % 16 == 0
        op = ('h', dst // 2, vals.copy())
        if self.early: self.apply(op)
        else: self.sm.pending.append(op)
    def cp4(self, dst, val, full):
        assert dst % 4 == 0
        op = ('i', dst // 4, np.int32(val if full else 0))
        if self.early: self.apply(op)
        else: self.sm.pending.append(op)
    def apply(self, op):
        kind, at, vals = op
        if kind == 'h': self.sm.h()[at:at + 8] = vals
        else: self.sm.i32()[at] = vals
    def wait_all(self):
        for op in self.sm.pending: self.apply(op)
        self.sm.pending = []
    def ldsm(self, addrs, trans=False):
        # addrs: 32 byte addresses (lane l gives row l%8 of matrix l//8); returns regs (32, 4, 2) fp16
        h = self.sm.h()
        assert all(a % 16 == 0 for a in addrs)
        # A read of bytes that a copy still in flight writes is a race (compute-sanitizer racecheck
        # reports it on the GPU even where the values read are never used).
        for op in self.sm.pending:
            if op[0] == 'h' and any(op[1] < a // 2 + 8 and a // 2 < op[1] + 8 for a in addrs):
                self.hazards += 1
        mats = np.stack([np.stack([h[addrs[8 * m + r] // 2: addrs[8 * m + r] // 2 + 8] for r in range(8)]) for m in range(4)])  # (4, 8, 8)
        out = np.zeros((32, 4, 2), np.float16)
        g, q = LANES >> 2, LANES & 3
        for m in range(4):
            M = mats[m].T if trans else mats[m]
            out[:, m, 0] = M[g, 2 * q]
            out[:, m, 1] = M[g, 2 * q + 1]
        return out
    @staticmethod
    def mma(d, a, b0, b1):
        # d: (32, 4) f32; a: (32, 4, 2) f16 regs; b0, b1: (32, 2)
        g, q = LANES >> 2, LANES & 3
        A = np.zeros((16, 16), np.float32); B = np.zeros((16, 8), np.float32)
        for l in range(32):
            G, Q = l >> 2, l & 3
            A[G, 2 * Q:2 * Q + 2] = a[l, 0]; A[G + 8, 2 * Q:2 * Q + 2] = a[l, 1]
            A[G, 2 * Q + 8:2 * Q + 10] = a[l, 2]; A[G + 8, 2 * Q + 8:2 * Q + 10] = a[l, 3]
            B[2 * Q:2 * Q + 2, G] = b0[l]; B[2 * Q + 8:2 * Q + 10, G] = b1[l]
        C = A.astype(np.float64) @ B.astype(np.float64)
        d[:, 0] += C[g, 2 * q]; d[:, 1] += C[g, 2 * q + 1]
        d[:, 2] += C[g + 8, 2 * q]; d[:, 3] += C[g + 8, 2 * q + 1]

def clamp_rel(x, R): return min(max(x, 0), R - 1)
def clamp_rel_v(x, R): return np.minimum(np.maximum(x, 0), R - 1)

def run_block(E, seq, h, i0):
    """seq: dict with q,k,v (L x H*D fp16), qr,kr (R x H*D), pos (L), mask (L x L), scale, R. returns out rows."""
    D, WQ, WK, KW, Bk, Bq, Rw, Ring, Ldh, Ldf, Nt, Kd, Kt, Pr = (E.D, E.WQ, E.WK, E.KW, E.Bk, E.Bq, E.Rw, E.Ring,
        E.Ldh, E.Ldf, E.Nt, E.Kd, E.Kt, E.Pr)
    E.sm = Smem(E.bytes)
    L = len(seq['pos']); R = seq['R']; half = R // 2
    nq = min(Bq, L - i0)
    sl2 = np.float32(1.4426950408889634 / seq['scale'])
    q = seq['q'][:, h * D:(h + 1) * D]; k = seq['k'][:, h * D:(h + 1) * D]; v = seq['v'][:, h * D:(h + 1) * D]
    qr = seq['qr'][:, h * D:(h + 1) * D]; kr = seq['kr'][:, h * D:(h + 1) * D]
    pos = seq['pos']; mask = seq['mask']
    warps = list(range(4))
    order = warps[::-1] if E.reverse else warps
    st = {'ring_lo': 0, 'ring_hi': -1}

    def fetch_chunk(c, buf):
        j0 = c * Bk
        for e in range(Bk * Pr):
            r, p = e // Pr, e % Pr
            ok = j0 + r < L
            src = j0 + r if ok else 0
            off = ((buf * Bk + r) * Ldh + p * 8) * 2
            E.cp16(E.k + off, k[src, p * 8:p * 8 + 8], ok)
            E.cp16(E.v + off, v[src, p * 8:p * 8 + 8], ok)
        for tid in range(Bk):
            E.cp4(E.posk + (buf * Bk + tid) * 4, pos[min(j0 + tid, L - 1)], j0 + tid < L)
    def fetch_rel_rows(lo, hi):
        n = hi - lo + 1
        for e in range(max(n, 0) * Pr):
            r, p = lo + e // Pr, e % Pr
            assert 0 <= r < R
            off = ((r % Ring) * Ldh + p * 8) * 2
            E.cp16(E.kr + off, kr[r, p * 8:p * 8 + 8], True)
            E.cp16(E.qr + off, qr[r, p * 8:p * 8 + 8], True)
    def fetch_window(lo, hi):
        rl, rh = st['ring_lo'], st['ring_hi']
        fetch_rel_rows(lo, min(hi, rl - 1))
        fetch_rel_rows(max(lo, rh + 1), hi)
        joins = rl <= rh and hi >= rl - 1 and lo <= rh + 1 and max(hi, rh) - min(lo, rl) + 1 <= Ring
        if joins: st['ring_lo'], st['ring_hi'] = min(lo, rl), max(hi, rh)
        else: st['ring_lo'], st['ring_hi'] = lo, hi

    # prologue: Q
    for e in range(Bq * Pr):
        r, p = e // Pr, e % Pr
        E.cp16(E.c2p + (r * Ldh + p * 8) * 2, q[min(i0 + r, L - 1), p * 8:p * 8 + 8], r < nq)
    qrows = pos[i0:i0 + nq]
    qmn, qmx = int(qrows.min()), int(qrows.max())
    W = {}
    for w in warps:
        wq = w if WQ == 4 else 0
        kw = 0 if WQ == 4 else w
        rows = [pos[i0 + r] for r in range(16 * wq, min(16 * wq + 16, nq))]
        wqmn = min(rows) if rows else INT_MAX; wqmx = max(rows) if rows else INT_MIN
        g = LANES >> 2
        pq = [pos[i0 + np.minimum(16 * wq + g + 8 * rr, nq - 1)] for rr in range(2)]
        W[w] = dict(wq=wq, kw=kw, wqmn=wqmn, wqmx=wqmx, warp_rows=wqmn <= wqmx, pq=pq,
                    o=np.zeros((D // 8, 32, 4), np.float32), m=np.full((2, 32), -np.inf, np.float32),
                    l=np.zeros((2, 32), np.float32))
    def tile_ranges(c):
        tmn, tmx = [], []
        for t in range(Kt):
            ks = [pos[j] for j in range(c * Bk + 16 * t, min(c * Bk + 16 * t + 16, L))]
            tmn.append(min(ks) if ks else INT_MAX); tmx.append(max(ks) if ks else INT_MIN)
        return tmn, tmx
    def load_mask(c, w):
        wq, kw = W[w]['wq'], W[w]['kw']
        g, qd = LANES >> 2, LANES & 3
        mk = np.zeros((2, Nt, 2, 32), np.uint32)
        for rr in range(2):
            il = 16 * wq + g + 8 * rr
            for n in range(Nt):
                for e in range(2):
                    j = c * Bk + kw * KW + 8 * n + 2 * qd + e
                    ok = (il < nq) & (j < L)
                    mk[rr, n, e] = np.where(ok, mask[np.minimum(i0 + il, L - 1), np.minimum(j, L - 1)], 0)
        return mk
    nc = (L + Bk - 1) // Bk
    ctmn, ctmx = tile_ranges(0)
    mk_next = {w: load_mask(0, w) for w in warps}
    fetch_chunk(0, 0)
    kmn, kmx = min(ctmn), max(ctmx)
    lo, hi = clamp_rel(qmn - kmx + half, R), clamp_rel(qmx - kmn + half, R)
    fetch_window(lo, min(hi, lo + Rw - 1))
    qf = {}
    stats = {'sync_fetch': 0, 'prefetch': 0, 'subs': 0}
    for c in range(nc):
        cur = c & 1
        kmn, kmx = min(ctmn), max(ctmx)
        rlo, rhi = clamp_rel(qmn - kmx + half, R), clamp_rel(qmx - kmn + half, R)
        nsub = (rhi - rlo) // Rw + 1
        E.wait_all()  # + barrier
        if c == 0:
            for w in order:
                wq = W[w]['wq']
                qf[w] = [E.ldsm([E.c2p + ((16 * wq + (l & 15)) * Ldh + kk * 16 + (l >> 4) * 8) * 2 for l in range(32)]) for kk in range(Kd)]
        if rlo < st['ring_lo'] or min(rhi, rlo + Rw - 1) > st['ring_hi']:
            stats['sync_fetch'] += 1
            fetch_window(rlo, min(rhi, rlo + Rw - 1)); E.wait_all()
        ntmn, ntmx = list(ctmn), list(ctmx)
        if c + 1 < nc:
            ntmn, ntmx = tile_ranges(c + 1)
            fetch_chunk(c + 1, cur ^ 1)
        mk = {}
        for w in warps:
            mk[w] = mk_next[w]
            if c + 1 < nc: mk_next[w] = load_mask(c + 1, w)
        kbuf = E.k + cur * Bk * Ldh * 2
        vbuf = E.v + cur * Bk * Ldh * 2
        S, PK = {}, {}
        g, qd = LANES >> 2, LANES & 3
        for w in order:
            kw = W[w]['kw']
            s = np.zeros((Nt, 32, 4), np.float32)
            for n2 in range(Nt // 2):
                rowaddr = [kbuf + ((kw * KW + 16 * n2 + (l & 7) + (l >> 4) * 8) * Ldh + ((l >> 3) & 1) * 8) * 2 for l in range(32)]
                for kk in range(Kd):
                    bb = E.ldsm([a + kk * 32 for a in rowaddr])
                    E.mma(s[2 * n2], qf[w][kk], bb[:, 0], bb[:, 1])
                    E.mma(s[2 * n2 + 1], qf[w][kk], bb[:, 2], bb[:, 3])
            S[w] = s
            pki = E.sm.i32()
            PK[w] = np.array([[pki[E.posk // 4 + cur * Bk + kw * KW + 8 * n + 2 * qd + e] for e in range(2)] for n in range(Nt)])  # (Nt,2,32)
        stats['subs'] = max(stats['subs'], nsub)
        for sub in range(nsub):
            r0 = rlo + sub * Rw; nr = min(Rw, rhi - r0 + 1)
            if sub > 0:
                if r0 < st['ring_lo'] or r0 + nr - 1 > st['ring_hi']:
                    fetch_window(r0, r0 + nr - 1); E.wait_all()
            def ring_row(tile, base):
                return [base + (((r0 + 16 * tile + (l & 7) + (l >> 4) * 8) % Ring) * Ldh + ((l >> 3) & 1) * 8) * 2 for l in range(32)]
            f = E.sm.f()
            def c2p_w_store(w, t, acc):
                base = E.c2p // 4 + w * 16 * Ldf
                for m in range(2):
                    col = 16 * t + 8 * m + 2 * qd
                    for l in range(32):
                        f[base + g[l] * Ldf + col[l]] = acc[m][l, 0]; f[base + g[l] * Ldf + col[l] + 1] = acc[m][l, 1]
                        f[base + (g[l] + 8) * Ldf + col[l]] = acc[m][l, 2]; f[base + (g[l] + 8) * Ldf + col[l] + 1] = acc[m][l, 3]
            def p2c_store(kt, t, acc):
                base = E.p2c_base // 4
                for m in range(2):
                    col = 16 * t + 8 * m + 2 * qd
                    for l in range(32):
                        f[base + (16 * kt + g[l]) * Ldf + col[l]] = acc[m][l, 0]; f[base + (16 * kt + g[l]) * Ldf + col[l] + 1] = acc[m][l, 1]
                        f[base + (16 * kt + g[l] + 8) * Ldf + col[l]] = acc[m][l, 2]; f[base + (16 * kt + g[l] + 8) * Ldf + col[l] + 1] = acc[m][l, 3]
            def c2p_p2c(w, do_c2p=True, do_p2c=True):
                kw = W[w]['kw']
                wkmn, wkmx = (kmn, kmx) if WK == 1 else (ctmn[kw], ctmx[kw])
                if do_c2p and W[w]['warp_rows'] and wkmn <= wkmx:
                    lo = max(clamp_rel(W[w]['wqmn'] - wkmx + half, R) - r0, 0)
                    hi = min(clamp_rel(W[w]['wqmx'] - wkmn + half, R) - r0, nr - 1)
                    t = lo >> 4
                    while lo <= hi and t <= hi >> 4:
                        acc = [np.zeros((32, 4), np.float32) for _ in range(2)]
                        addr = ring_row(t, E.kr)
                        for kk in range(Kd):
                            bb = E.ldsm([a + kk * 32 for a in addr])
                            E.mma(acc[0], qf[w][kk], bb[:, 0], bb[:, 1]); E.mma(acc[1], qf[w][kk], bb[:, 2], bb[:, 3])
                        c2p_w_store(w, t, acc)
                        t += 1
                if not do_p2c: return
                tlo, tn, items = [0] * Kt, [0] * Kt, 0
                for t in range(Kt):
                    if ctmn[t] > ctmx[t] or (WK > 1 and t != kw): continue
                    lo = max(clamp_rel(qmn - ctmx[t] + half, R) - r0, 0)
                    hi = min(clamp_rel(qmx - ctmn[t] + half, R) - r0, nr - 1)
                    if lo > hi: continue
                    tlo[t], tn[t] = lo >> 4, (hi >> 4) - (lo >> 4) + 1
                    items += tn[t]
                it = 0 if WK > 1 else w
                while it < items:
                    kt, t = 0, it
                    for u in range(Kt - 1):
                        if kt == u and t >= tn[u]: t -= tn[u]; kt = u + 1
                    t += tlo[kt]
                    acc = [np.zeros((32, 4), np.float32) for _ in range(2)]
                    ka = [kbuf + ((16 * kt + (l & 15)) * Ldh + (l >> 4) * 8) * 2 for l in range(32)]
                    addr = ring_row(t, E.qr)
                    for kk in range(Kd):
                        af = E.ldsm([a + kk * 32 for a in ka]); bb = E.ldsm([a + kk * 32 for a in addr])
                        E.mma(acc[0], af, bb[:, 0], bb[:, 1]); E.mma(acc[1], af, bb[:, 2], bb[:, 3])
                    p2c_store(kt, t, acc)
                    it += 1 if WK > 1 else 4
            def gather(w, ac=True, ap=True):
                kw = W[w]['kw']
                base = E.c2p // 4 + w * 16 * Ldf
                for rr in range(2):
                    for n in range(Nt):
                        for e in range(2):
                            idx = clamp_rel_v(W[w]['pq'][rr] - PK[w][n, e] + half, R) - r0
                            jl = kw * KW + 8 * n + 2 * qd + e
                            ok = (idx >= 0) & (idx < nr)
                            for l in range(32):
                                if ok[l]:
                                    S[w][n, l, 2 * rr + e] += (f[base + (g[l] + 8 * rr) * Ldf + idx[l]] if ac else 0) + (f[E.p2c_base // 4 + jl[l] * Ldf + idx[l]] if ap else 0)
            if WK == 1:
                for w in order: c2p_p2c(w)
                for w in order: gather(w)
            else:
                for w in order:
                    c2p_p2c(w, True, False); gather(w, True, False); c2p_p2c(w, False, True); gather(w, False, True)
        if c + 1 < nc:  # the next first window, after the barrier that ends this chunk's ring reads
            nmn, nmx = min(ntmn), max(ntmx)
            lo = clamp_rel(qmn - nmx + half, R); hi = min(clamp_rel(qmx - nmn + half, R), lo + Rw - 1)
            stats['prefetch'] += 1
            fetch_window(lo, hi)
        for w in order:
            s = S[w]; Wd = W[w]; kw = Wd['kw']
            for rr in range(2):
                x = np.where(mk[w][rr].transpose(0, 2, 1) != 0, s[:, :, 2 * rr:2 * rr + 2] * sl2, -np.inf).astype(np.float32)  # (Nt,32,2)
                mx = x.max(axis=(0, 2))
                mx = np.maximum(mx, mx[LANES ^ 1]); mx = np.maximum(mx, mx[LANES ^ 2])
                m_new = np.maximum(Wd['m'][rr], mx)
                with np.errstate(invalid='ignore'):
                    alpha = np.where(m_new == -np.inf, 1.0, np.exp2(Wd['m'][rr] - m_new)).astype(np.float32)
                    p = np.where(x == -np.inf, 0.0, np.exp2(x - m_new[None, :, None])).astype(np.float32)
                s[:, :, 2 * rr:2 * rr + 2] = p
                Wd['l'][rr] = Wd['l'][rr] * alpha + p.sum(axis=(0, 2))
                Wd['m'][rr] = m_new
                Wd['o'][:, :, 2 * rr:2 * rr + 2] *= alpha[None, :, None]
            for ks in range(KW // 16):
                pa = np.zeros((32, 4, 2), np.float16)
                pa[:, 0] = s[2 * ks][:, 0:2]; pa[:, 1] = s[2 * ks][:, 2:4]
                pa[:, 2] = s[2 * ks + 1][:, 0:2]; pa[:, 3] = s[2 * ks + 1][:, 2:4]
                row = [vbuf + ((kw * KW + 16 * ks + (l & 7) + ((l >> 3) & 1) * 8) * Ldh + (l >> 4) * 8) * 2 for l in range(32)]
                for np_ in range(D // 16):
                    bb = E.ldsm([a + np_ * 32 for a in row], trans=True)
                    E.mma(Wd['o'][2 * np_], pa, bb[:, 0], bb[:, 1]); E.mma(Wd['o'][2 * np_ + 1], pa, bb[:, 2], bb[:, 3])
        ctmn, ctmx = ntmn, ntmx
    assert not E.sm.pending
    out = np.full((nq, D), np.nan, np.float32)
    g, qd = LANES >> 2, LANES & 3
    for w in warps:
        Wd = W[w]
        for rr in range(2):
            Wd['l'][rr] = Wd['l'][rr] + Wd['l'][rr][LANES ^ 1]
            Wd['l'][rr] = Wd['l'][rr] + Wd['l'][rr][LANES ^ 2]
    if WK == 1:
        for w in warps:
            Wd = W[w]
            for rr in range(2):
                il = 16 * Wd['wq'] + g + 8 * rr
                inv = np.where(Wd['l'][rr] > 0, 1.0 / np.where(Wd['l'][rr] > 0, Wd['l'][rr], 1), 0)
                for l in range(32):
                    if il[l] >= nq: continue
                    for n in range(D // 8):
                        out[il[l], 8 * n + 2 * qd[l]] = np.float16(Wd['o'][n][l, 2 * rr] * inv[l])
                        out[il[l], 8 * n + 2 * qd[l] + 1] = np.float16(Wd['o'][n][l, 2 * rr + 1] * inv[l])
    else:
        for r in range(nq):
            rr, gg = (0, r) if r < 8 else (1, r - 8)
            ms = [W[w]['m'][rr][4 * gg] for w in warps]
            M = max(ms)
            num = np.zeros(D, np.float64); den = 0.0
            if M != -np.inf:
                for w in warps:
                    fct = np.exp2(ms[w] - M)
                    orow = np.zeros(D)
                    for qq in range(4):
                        for n in range(D // 8):
                            orow[8 * n + 2 * qq] = W[w]['o'][n][4 * gg + qq, 2 * rr]
                            orow[8 * n + 2 * qq + 1] = W[w]['o'][n][4 * gg + qq, 2 * rr + 1]
                    num += fct * orow; den += fct * W[w]['l'][rr][4 * gg]
            out[r] = (num / den if den > 0 else np.zeros(D)).astype(np.float16)
    return out, stats

def reference(seq, h, D):
    q = seq['q'][:, h * D:(h + 1) * D].astype(np.float64); k = seq['k'][:, h * D:(h + 1) * D].astype(np.float64)
    v = seq['v'][:, h * D:(h + 1) * D].astype(np.float64)
    qr = seq['qr'][:, h * D:(h + 1) * D].astype(np.float64); kr = seq['kr'][:, h * D:(h + 1) * D].astype(np.float64)
    pos = seq['pos']; R = seq['R']
    idx = np.clip(pos[:, None] - pos[None, :] + R // 2, 0, R - 1)
    S = q @ k.T + np.einsum('id,ijd->ij', q, kr[idx]) + np.einsum('jd,ijd->ij', k, qr[idx])
    S /= seq['scale']
    m = seq['mask'] != 0
    S = np.where(m, S, -np.inf)
    mx = S.max(axis=1, keepdims=True)
    P = np.where(m, np.exp(S - np.where(np.isfinite(mx), mx, 0)), 0)
    den = P.sum(axis=1, keepdims=True)
    P = np.where(den > 0, P / np.where(den > 0, den, 1), 0)
    return P @ v

def make_seq(L, D, H, R, pattern, seed):
    rng = np.random.default_rng(seed)
    pos, seg, p, sg = [], [], 0, 0
    for t in range(L):
        if pattern != 'contig' and t > 0 and rng.integers(23) == 0: sg += 1; p = int(rng.integers(5))
        if pattern == 'scatter' and rng.integers(8) == 0: p = int(rng.integers(800))
        seg.append(sg); pos.append(p); p += 1
    pos = np.array(pos); seg = np.array(seg)
    mask = ((seg[:, None] == seg[None, :]) | (seg[None, :] == sg)).astype(np.uint8)
    if L > 3: mask[2, :] = 0
    f = lambda *s: rng.uniform(-2, 2, s).astype(np.float16)
    return dict(q=f(L, H * D), k=f(L, H * D), v=f(L, H * D), qr=f(R, H * D), kr=f(R, H * D), pos=pos, mask=mask,
                scale=np.float32(np.sqrt(D * 3.0)), R=R)

def run_case(D, WQ, L, pattern, R, early, rev):
    seq = make_seq(L, D, 1, R, pattern, L * 7 + D)
    ref = reference(seq, 0, D)
    E = Emu(D, WQ, early, rev)
    worst = 0.0; allstats = []
    for i0 in range(0, L, 16 * WQ):
        out, stats = run_block(E, seq, 0, i0)
        allstats.append(stats)
        want = ref[i0:i0 + out.shape[0]]
        err = np.abs(out - want) / np.maximum(1, np.abs(want))
        worst = max(worst, np.inf if np.isnan(err).any() else float(err.max()))
    print(f"D={D} WQ={WQ} L={L} {pattern} rel_rows={R} early={early} rev={rev}: worst {worst:.3g}, hazards {E.hazards}; windows per chunk "
          f"<= {max(s['subs'] for s in allstats)}, synchronous window fetches {sum(s['sync_fetch'] for s in allstats)}, "
          f"prefetched windows {sum(s['prefetch'] for s in allstats)}")
    return worst if E.hazards == 0 else np.inf

if __name__ == '__main__':
    if len(sys.argv) > 1:
        a = sys.argv
        run_case(int(a[1]), int(a[2]), int(a[3]), a[4], int(a[5]), a[6] == 'early', a[7] == 'rev')
        sys.exit(0)
    bad = 0
    for D in (16, 64):
        for WQ in (4, 1):
            for L, pattern, R, early, rev in ((1, 'seg', 512, True, True), (17, 'scatter', 512, False, True),
                                              (77, 'seg', 512, True, False), (130, 'contig', 512, True, True),
                                              (130, 'scatter', 512, True, True), (100, 'seg', 16, False, True),
                                              (77, 'scatter', 64, True, True)):
                bad += run_case(D, WQ, L, pattern, R, early, rev) > 2e-3  # fp16 output + P rounding
    print("FAILED" if bad else "all cases within 2e-3")
    sys.exit(1 if bad else 0)
