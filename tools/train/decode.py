"""PyTorch inference pipeline (spec sections 6-7) and the evaluation metrics of docs/accuracy.md.

Batched across samples level by level, but every sample sees exactly the forward passes the
original pipeline makes (one per hint chunk and text window, prefixes in discovery order),
so the results equal an unbatched run up to float rounding.
"""
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


def _skip_spaces(text, cs):
    """The original moves a span's start past leading spaces (its tail offset stays)."""
    while cs < len(text) and text[cs] == " ":
        cs += 1
    return cs


def _sig32(x):
    x = np.float32(x)
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


def _mean3(a, b, c):
    """(p1 + p2 + p3) / 3 in float32, as the original's 0-d torch tensors compute it, rounded to 4."""
    return round(float((_sig32(a) + _sig32(b) + _sig32(c)) / np.float32(3.0)), 4)


class _State:
    def __init__(self, tok, sample):
        self.text = sample["text"]
        self.schema = sample["schema"]
        self.legal = legal_paths(self.schema)
        self.mode = "cls" if "[CLASSIFY]" in self.text else ("multi_cls" if "[MULTICLASSIFY]" in self.text else "ext")
        self.marker = "[CLASSIFY]" if self.mode == "cls" else "[MULTICLASSIFY]"
        self.ids, self.offs = tok.tokenize(self.text)
        self.out = []           # ext: output paths
        self.class_paths = []   # cls / multi_cls: (types, confidences) before the final selection
        self.mtext, self.insertions = self.text, 0  # cls: the text with the markers the original inserts


class _Votes:
    """pred_info of one hint chunk in classification: occurrences per label path, first-seen order."""

    def __init__(self):
        self.keys = {}

    def add(self, types, confs):
        self.keys.setdefault(types, []).append(confs)

    def best(self):
        """[CLASSIFY]: one key -> its first occurrence; several -> per key the mean of each item over
        its occurrences, and the largest sum wins (first on ties)."""
        if not self.keys:
            return None
        if len(self.keys) == 1:
            types, occ = next(iter(self.keys.items()))
            return types, occ[0]
        means = [(types, [sum(col) / len(occ) for col in zip(*occ)]) for types, occ in self.keys.items()]
        return _best_by_sum(means)

    def firsts(self):
        return [(types, occ[0]) for types, occ in self.keys.items()]


def _best_by_sum(cands):
    best = None
    for c in cands:
        if best is None or sum(c[1]) > sum(best[1]):
            best = c
    return best


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

    def _cls_windows(self, st, hint):
        """Windows of one hint chunk in classification (stride 0, spec 7 "long texts"): windows j >= 1
        get the marker id in front of their text part and lose their last text token, and the marker
        is inserted into the text at the window's start. Later chunks and levels re-tokenize the
        mutated text, and each window is decoded against the text as it was after its insertion."""
        ids, offs = (st.ids, st.offs) if st.insertions == 0 else self.tok.tokenize(st.mtext)
        wins = R.windows(self.tok, hint, ids, offs, stride=0, max_len=self.max_len)
        m = len(st.marker)
        for j, w in enumerate(wins):
            H, L = w["H"], len(w["input_ids"])
            if j > 0 and L >= H + 2:
                s = w["offsets"][H][0]
                w["input_ids"] = (w["input_ids"][:H] + [self.tok.vocab[st.marker]] + w["input_ids"][H:-2]
                                  + [w["input_ids"][-1]])
                w["offsets"] = (w["offsets"][:H] + [(s + (j - 1) * m, s + j * m)]
                                + [(a + j * m, b + j * m) for a, b in w["offsets"][H:-2]] + [w["offsets"][-1]])
                pos = min(max(s, 0), len(st.mtext))
                st.mtext = st.mtext[:pos] + st.marker + st.mtext[pos:]
                st.insertions += 1
            w["text"] = st.mtext
        return wins

    def _run(self, states, blank):
        maps = [{(): st.schema} for st in states]
        for st in states:
            st.mtext, st.insertions = st.text, 0
        while True:
            jobs = []  # (state index, chunk index, char_map, window)
            for si, st in enumerate(states):
                if not maps[si]:
                    continue
                level_types = {pt: list(sub.keys()) for pt, sub in maps[si].items()}
                for ci, (hint, cm) in enumerate(R.build_hints(self.tok, level_types, hint_max_len=self.hint_max_len)):
                    if st.mode == "ext":
                        wins = R.windows(self.tok, hint, st.ids, st.offs, stride=self.stride, max_len=self.max_len)
                    else:
                        wins = self._cls_windows(st, hint)
                    for w in wins:
                        jobs.append((si, ci, cm, w))
            if not jobs:
                return
            logits = self._forward([j[3]["input_ids"] for j in jobs])
            nxt = [dict() for _ in states]
            votes = [dict() for _ in states]  # cls: chunk index -> _Votes, in chunk order
            for (si, ci, cm, w), z in zip(jobs, logits):
                st = states[si]
                if st.mode == "ext":
                    self._decode_ext(st, maps[si], nxt[si], cm, w, z)
                else:
                    self._decode_cls(st, maps[si], nxt[si], votes[si].setdefault(ci, _Votes()), cm, w, z, blank)
            for si, st in enumerate(states):
                if st.mode == "cls":
                    best = _best_by_sum([b for b in (v.best() for v in votes[si].values()) if b is not None])
                    if best is not None:
                        st.class_paths.append(best)
                elif st.mode == "multi_cls":
                    for v in votes[si].values():
                        st.class_paths.extend(v.firsts())
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
                cs, ce = _skip_spaces(text, offs[head][0]), offs[tail][1]
                span = text[cs:ce]
                sub = level_map[pt][t]
                key = pt + ((t, span, (cs, ce)),)
                if sub and (len(nxt) < self.max_prefixes or key in nxt):
                    nxt[key] = sub
                path = [{"type": x[0].strip(), "span": x[1], "offset": list(x[2])} for x in pt]
                path.append({"type": t, "span": span, "offset": [cs, ce]})
                if tuple(p["type"] for p in path) in st.legal:
                    st.out.append(path)

    def _decode_cls(self, st, level_map, nxt, votes, cm, w, z, blank):
        """Every span linked to a type, as in extraction, scored with the transposed cells (the
        original reads probs[0, col, row]); only spans that read as the marker vote. Blank mode scores
        every type on the marker token without thresholds."""
        H, offs, text, L = w["H"], w["offsets"], w["text"], len(w["input_ids"])
        type_idx = R.type_token_index(w, cm)
        found = []  # (head, tail, (pt, t), confidence)
        if blank:
            if H < L:
                found = [(H, H, k, _mean3(z[H, H], z[ti, H], z[H, ti])) for k, ti in type_idx.items()]
        else:
            link = z > 0
            rr, cc = np.nonzero(link[H:, H:])
            for r, c in zip(rr, cc):
                r, c = int(r) + H, int(c) + H
                if r > c:
                    continue
                for k, ti in type_idx.items():
                    if link[r, ti] and link[ti, c]:
                        found.append((r, c, k, _mean3(z[c, r], z[ti, r], z[c, ti])))
        for head, tail, (pt, t), conf in found:
            cs, ce = _skip_spaces(text, offs[head][0]), offs[tail][1]
            if cs >= len(text):  # the original's IndexError drops it
                continue
            span = text[cs:ce]
            sub = level_map[pt][t]
            key = pt + ((t, span, (cs, ce), conf),)
            if sub and key not in nxt:  # even a span that is not the marker recurses, as in the original
                nxt[key] = sub
            if span != st.marker:
                continue
            marked = [x for x in pt if x[1] == st.marker]  # only the marker items form the label path
            types = tuple(x[0].strip() for x in marked) + (t,)
            if types in st.legal:
                votes.add(types, [x[3] for x in marked] + [conf])

    def predict(self, samples):
        states = [_State(self.tok, s) for s in samples]
        self._run(states, blank=False)
        redo = [st for st in states if st.mode != "ext" and not st.class_paths]
        if redo:
            self._run(redo, blank=True)
        results = []
        for st in states:
            if st.mode == "ext":
                results.append(st.out)
                continue
            out = []
            if st.class_paths:
                means = [sum(c) / len(c) for _, c in st.class_paths]
                top = means.index(max(means))
                keep = [top] if st.mode == "cls" else ([i for i, m in enumerate(means) if m > 0.9] or [top])
                n = len(st.marker)
                out = [[{"type": t, "span": st.marker, "offset": [0, n]} for t in st.class_paths[i][0]] for i in keep]
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
    "cluener_dev": "ext", "cluener_dev_official": "ext", "cluener_dev_paraphrase": "ext",
    "tnews_dev": "cls", "eprstmt_dev": "cls",
    "st_ner_dev": "ext", "st_absa_dev": "ext", "st_tc_single_label_dev": "cls", "st_tc_multi_label_dev": "multi",
    "st_re_dev": "ext", "st_mrc_dev": "ext", "st_ee_dev": "ext", "duie_dev": "rel",
}
