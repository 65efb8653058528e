"""PyTorch inference pipeline (spec sections 6-7) and the evaluation metrics of docs/accuracy.md.

Batched across samples level by level, but every sample sees exactly the forward passes the
original pipeline makes (one per hint chunk and text window, prefixes in discovery order),
so the results equal an unbatched run up to float rounding.
"""
import math

import numpy as np
import torch

import rexdata as R
from batching import make_batch


def legal_paths(schema, prefix=()):
    out = set()
    for k, v in schema.items():
        if v:
            out |= legal_paths(v, prefix + (k,))
        else:
            out.add(prefix + (k,))
    return out


def _sig(x):
    return 1.0 / (1.0 + math.exp(-x))


class _State:
    def __init__(self, tok, sample):
        self.text = sample["text"]
        self.schema = sample["schema"]
        self.legal = legal_paths(self.schema)
        self.mode = "cls" if "[CLASSIFY]" in self.text else ("multi_cls" if "[MULTICLASSIFY]" in self.text else "ext")
        self.marker = "[CLASSIFY]" if self.mode == "cls" else "[MULTICLASSIFY]"
        self.ids, self.offs = tok.tokenize(self.text)
        self.out = []


class Predictor:
    def __init__(self, model, tok, device, max_batch_tokens=32768, max_len=R.MAX_LEN, stride=R.STRIDE,
                 hint_max_len=R.HINT_MAX_LEN, max_prefixes=64):
        self.model, self.tok, self.device = model, tok, device
        self.max_batch_tokens = max_batch_tokens
        self.max_len, self.stride, self.hint_max_len = max_len, stride, hint_max_len
        # Guard against an untrained model linking everything (the original has no cap; a trained
        # model stays far below it, see docs/accuracy.md).
        self.max_prefixes = max_prefixes

    @torch.no_grad()
    def _forward(self, seqs):
        """Returns one numpy logit matrix [L,L] per input sequence."""
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        res = [None] * len(seqs)
        i = 0
        while i < len(order):
            L = len(seqs[order[i]])
            j = i
            while j < len(order) and (j - i + 1) * len(seqs[order[j]]) <= self.max_batch_tokens:
                j += 1
            j = max(j, i + 1)
            idx = order[i:j]
            ids, mask, pos, _ = make_batch(self.tok, [seqs[k] for k in idx], self.device)
            z = self.model(ids, mask, pos).float().cpu().numpy()
            for b, k in enumerate(idx):
                n = len(seqs[k])
                res[k] = z[b, :n, :n]
            i = j
        return res

    def _run(self, states, blank):
        maps = [{(): st.schema} for st in states]
        while True:
            jobs = []  # (state index, chunk index, char_map, window)
            for si, st in enumerate(states):
                if not maps[si]:
                    continue
                level_types = {pt: list(sub.keys()) for pt, sub in maps[si].items()}
                for ci, (hint, cm) in enumerate(R.build_hints(self.tok, level_types, hint_max_len=self.hint_max_len)):
                    wins = R.windows(self.tok, hint, st.ids, st.offs, stride=0 if st.mode != "ext" else self.stride,
                                     max_len=self.max_len)
                    if st.mode != "ext":
                        wins = wins[:1]
                    for w in wins:
                        jobs.append((si, ci, cm, w))
            if not jobs:
                return
            logits = self._forward([j[3]["input_ids"] for j in jobs])
            nxt = [dict() for _ in states]
            cands = [dict() for _ in states]  # cls: chunk -> best (conf_sum, path)
            for (si, ci, cm, w), z in zip(jobs, logits):
                st = states[si]
                if st.mode == "ext":
                    self._decode_ext(st, maps[si], nxt[si], cm, w, z)
                else:
                    self._decode_cls(st, maps[si], nxt[si], cands[si], ci, cm, w, z, blank)
            for si, st in enumerate(states):
                if st.mode == "cls" and cands[si]:
                    best = max(cands[si].values(), key=lambda c: c[0])
                    st.out.append(best[1])
            maps = nxt

    def _decode_ext(self, st, level_map, nxt, cm, w, z):
        H, offs, text = w["H"], w["offsets"], st.text
        link = z > 0
        type_idx = R.type_token_index(w, cm)
        rr, cc = np.nonzero(link[H:, H:])
        spans = [(int(r) + H, int(c) + H) for r, c in zip(rr, cc) if r <= c]
        for head, tail in spans:
            for (pt, t), ti in type_idx.items():
                if not (link[head, ti] and link[ti, tail]):
                    continue
                cs, ce = offs[head][0], offs[tail][1]
                while cs < len(text) and text[cs] == " ":
                    cs += 1
                span = text[cs:ce]
                sub = level_map[pt][t]
                key = pt + ((t, span, (cs, ce)),)
                if sub and (len(nxt) < self.max_prefixes or key in nxt):
                    nxt[key] = sub
                path = [{"type": x[0].strip(), "span": x[1], "offset": list(x[2])} for x in pt]
                path.append({"type": t, "span": span, "offset": [cs, ce]})
                if tuple(p["type"] for p in path) in st.legal:
                    st.out.append(path)

    def _decode_cls(self, st, level_map, nxt, cands, ci, cm, w, z, blank):
        H = w["H"]
        if H >= len(w["input_ids"]) or w["input_ids"][H] != self.tok.vocab[st.marker]:
            return
        c = H
        best = None
        for (pt, t), ti in R.type_token_index(w, cm).items():
            ok = z[c, c] > 0 and z[c, ti] > 0 and z[ti, c] > 0
            if not (ok or blank):
                continue
            conf = round((_sig(z[c, c]) + _sig(z[ti, c]) + _sig(z[c, ti])) / 3, 4)
            sub = level_map[pt][t]
            if sub:
                nxt[pt + ((t, st.marker, (0, len(st.marker)), conf),)] = sub
            path = [{"type": x[0], "span": x[1], "offset": list(x[2]), "confidence": x[3]} for x in pt]
            path.append({"type": t, "span": st.marker, "offset": [0, len(st.marker)], "confidence": conf})
            if tuple(p["type"] for p in path) not in st.legal:
                continue
            if st.mode == "multi_cls":
                st.out.append(path)
            else:
                s = sum(p["confidence"] for p in path)
                if best is None or s > best[0]:
                    best = (s, path)
        if best is not None and (ci not in cands or best[0] > cands[ci][0]):
            cands[ci] = best

    def predict(self, samples):
        states = [_State(self.tok, s) for s in samples]
        self._run(states, blank=False)
        redo = [st for st in states if st.mode != "ext" and not st.out]
        if redo:
            self._run(redo, blank=True)
        results = []
        for st in states:
            out = st.out
            if st.mode != "ext" and out:
                means = [sum(p["confidence"] for p in path) / len(path) for path in out]
                if st.mode == "cls":
                    out = [out[means.index(max(means))]]
                else:
                    keep = [i for i, m in enumerate(means) if m > 0.9] or [means.index(max(means))]
                    out = [out[i] for i in keep]
                out = [[{k: v for k, v in p.items() if k != "confidence"} for p in path] for path in out]
            results.append(out)
        return results


# ---------------------------------------------------------------------------------- metrics
def _path_key(path):
    return tuple((p["type"], p["span"], tuple(p["offset"])) for p in path)


def _triple_key(path):
    # DuIE: offsets in the converted gold are first occurrences, so compare text, not offsets
    return tuple((p["type"], p["span"]) for p in path)


def score(kind, samples, preds):
    """kind: 'ext' (strict path micro-F1 with offsets), 'rel' (path micro-F1 on type+text),
    'cls' (accuracy of the single predicted label), 'multi' (label micro-F1)."""
    if kind == "cls":
        ok = 0
        for s, p in zip(samples, preds):
            gold = s["info_list"][0][-1]["type"] if s["info_list"] else None
            ok += int(bool(p) and p[0][-1]["type"] == gold)
        return {"accuracy": ok / max(1, len(samples)), "n": len(samples)}
    tp = fp = fn = 0
    for s, p in zip(samples, preds):
        if kind == "multi":
            g = {x[-1]["type"] for x in s["info_list"]}
            q = {x[-1]["type"] for x in p}
        else:
            f = _triple_key if kind == "rel" else _path_key
            g = {f(x) for x in s["info_list"]}
            q = {f(x) for x in p}
        tp += len(g & q)
        fp += len(q - g)
        fn += len(g - q)
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"f1": f1, "precision": prec, "recall": rec, "tp": tp, "fp": fp, "fn": fn, "n": len(samples)}


EVAL_SETS = {  # file stem in the eval folder -> metric kind (most important first)
    "cluener_dev": "ext", "tnews_dev": "cls", "eprstmt_dev": "cls",
    "st_ner_dev": "ext", "st_absa_dev": "ext", "st_tc_single_label_dev": "cls", "st_tc_multi_label_dev": "multi",
    "st_re_dev": "ext", "st_mrc_dev": "ext", "st_ee_dev": "ext", "duie_dev": "rel",
}
