"""Model inputs and training labels built the way RexUniNLU builds them.

- hints: spec 5.1 (split_hint_by_level of the original data loader / trainer)
- windows: spec 5.2 (pre-0.23 tokenizers overflow semantics, stride 32 / 0)
- positions and 2D mask: spec 5.3-5.4 (build_position_ids_attn_mask), expressed as per-token
  prefix/type segment ids so that a batch mask can be built with tensor ops
- labels: the original data loader's _get_labels (links head->tail, head->[TYPE], [TYPE]->tail)
"""
import random

HINT_MAX_LEN = 256
PREFIX_STRING_MAX_LEN = 125
INFO_TYPE_MAX_LEN = 125
MAX_LEN = 512
STRIDE = 32
MARKERS = ("[CLASSIFY]", "[MULTICLASSIFY]")


def prefix_string(prefix_tuple):
    return ",".join(f"{x[0]}: {x[1]}" for x in prefix_tuple)


def build_hints(tok, level_hint_map, rng=None, hint_max_len=HINT_MAX_LEN):
    """level_hint_map: {prefix_tuple: iterable of types}. Returns [(hint, {(pt, type): char_pos})].

    rng shuffles the prefix order as the original does in training; None keeps discovery order
    (what the engine does at inference). Types are always sorted by code point."""
    prefix_tuples = list(level_hint_map.keys())
    if rng is not None:
        rng.shuffle(prefix_tuples)
    chunks, char_map = [], {}
    hint, n = "", 2
    for pt in prefix_tuples:
        types = sorted(level_hint_map[pt])
        ps = prefix_string(pt)
        lp = tok.ntok(ps)
        if lp > PREFIX_STRING_MAX_LEN:
            continue
        first = True
        for t in types:
            lt = tok.ntok(t)
            if lt > INFO_TYPE_MAX_LEN:
                continue
            if (first and n + lp + lt > hint_max_len) or (not first and n + lt > hint_max_len):
                if hint:
                    chunks.append((hint, char_map))
                hint, char_map = "[PREFIX]" + ps, {}
                char_map[(pt, t)] = len(hint)
                hint += "[TYPE]" + t
                n = 2 + lp + lt
            else:
                if first:
                    hint += "[PREFIX]" + ps
                    n += lp
                char_map[(pt, t)] = len(hint)
                hint += "[TYPE]" + t
                n += lt
            first = False
    if hint:
        chunks.append((hint, char_map))
    return chunks


def windows(tok, hint, text_ids, text_offs, stride=STRIDE, max_len=MAX_LEN):
    """[CLS] hint [SEP] text_window [SEP] for every overflow window (spec 5.2).

    Returns a list of dicts: input_ids, offsets (hint part: offsets in hint; text part: in text), H."""
    h_ids, h_offs = tok.tokenize(hint)
    m = max_len - 3 - len(h_ids)
    n = len(text_ids)
    starts = [0]
    if n > m:
        starts, s = [], 0
        while True:
            starts.append(s)
            if s + m >= n:
                break
            s += m - stride
    out = []
    for s in starts:
        e = min(s + m, n)
        ids = [tok.cls_id] + h_ids + [tok.sep_id] + text_ids[s:e] + [tok.sep_id]
        offs = [(0, 0)] + list(h_offs) + [(0, 0)] + list(text_offs[s:e]) + [(0, 0)]
        out.append({"input_ids": ids, "offsets": offs, "H": len(h_ids) + 2})
    return out


def segments(tok, input_ids):
    """Position ids (spec 5.3) and per-token prefix / type segment ids for the mask (spec 5.4).

    pseg[i] = index of the prefix segment token i belongs to, -1 for [CLS], [SEP]s and text.
    tseg[i] = global index of its type segment, -1 for prefix-string tokens and non-hint tokens."""
    P, T, SEP = tok.vocab["[PREFIX]"], tok.vocab["[TYPE]"], tok.sep_id
    pseg, tseg = [-1], [-1]
    pi, ti, state = -1, -1, "cls"
    for t in input_ids[1:]:
        if state != "text":
            if t == P:
                pi += 1
                state = "prefix"
            elif t == T:
                ti += 1
                state = "type"
            elif t == SEP:
                state = "text"
        if state == "text":
            pseg.append(-1)
            tseg.append(-1)
        else:
            pseg.append(pi)
            tseg.append(ti if state == "type" else -1)
    # positions: [CLS]=0, prefix tokens 1..lp, every type of that prefix restarts at 1+lp
    pos = [0]
    i, L = 1, len(input_ids)
    while i < L and pseg[i] >= 0:
        p = pseg[i]
        k = 1
        while i < L and pseg[i] == p and tseg[i] < 0:
            pos.append(k)
            k += 1
            i += 1
        base = k
        while i < L and pseg[i] == p:
            t, k = tseg[i], base
            while i < L and pseg[i] == p and tseg[i] == t:
                pos.append(k)
                k += 1
                i += 1
    nxt = max(pos) + 1
    pos += list(range(nxt, nxt + L - i))
    return pos, pseg, tseg


def dense_mask(pseg, tseg):
    """The 2D 0/1 mask of spec 5.4 as a list of lists (used by tests and the CPU path)."""
    L = len(pseg)
    m = [[1] * L for _ in range(L)]
    for i in range(L):
        for j in range(L):
            if pseg[i] >= 0 and pseg[j] >= 0:
                if pseg[i] != pseg[j] or (tseg[i] >= 0 and tseg[j] >= 0 and tseg[i] != tseg[j]):
                    m[i][j] = 0
    return m


def type_token_index(win, char_map):
    """{(pt, type): token index of its [TYPE]} for one window (via hint offsets)."""
    by_char = {}
    for i in range(win["H"]):
        by_char[win["offsets"][i][0]] = i
    return {k: by_char[c] for k, c in char_map.items() if c in by_char}


def get_labels(text, win, level_hint_map, char_map):
    """rows, cols of positive links, exactly as data_loader._get_labels."""
    offs, H = win["offsets"], win["H"]
    text_range = (offs[H][0], offs[-2][1])
    c2t = {}
    for i in range(H, len(offs)):
        for j in range(offs[i][0], offs[i][1]):
            c2t[j] = i
    type_idx = type_token_index(win, char_map)
    rows, cols = [], []
    for pt, types in level_hint_map.items():
        for t, ents in types.items():
            if (pt, t) not in type_idx:
                continue
            ti = type_idx[(pt, t)]
            for e in ents:
                h, tl = e["offset"][0], e["offset"][1] - 1
                if not (h >= text_range[0] and tl <= text_range[1]):
                    continue
                while h not in c2t and h <= len(text):
                    h += 1
                while tl not in c2t and tl >= 0:
                    tl -= 1
                if h > len(text) or tl < 0:
                    continue
                th, tt = c2t[h], c2t[tl]
                rows += [th, th, ti]
                cols += [tt, ti, tt]
    return rows, cols


def schema_at(schema, prefix_tuple):
    for x in prefix_tuple:
        schema = schema[x[0]]
    return schema


def training_instances(tok, sample, rng, text_cache=None):
    """All (input_ids, H, rows, cols) instances of one sample, as the original tokenize_data.

    negative_sampling_rate is 1 in the original: every sibling type of the schema is in the
    prompt, so at each level every schema type of each gold prefix appears (positives + negatives)."""
    text = sample["text"]
    schema = sample.get("schema")
    if schema is None:
        raise ValueError(f"{sample.get('id')}: sample without schema")
    is_cls = any(m in text for m in MARKERS)
    text_ids, text_offs = tok.tokenize(text)

    def depth(s):
        return 0 if not s else 1 + max(depth(v) for v in s.values())

    by_level = {}
    for info in sample["info_list"]:
        for i in range(len(info)):
            lst = by_level.setdefault(i, [])
            if info[:i + 1] not in lst:
                lst.append(info[:i + 1])
    out = []
    level_map = {(): {k: [] for k in schema}}
    for level in range(depth(schema)):
        next_map = {}
        for info in by_level.get(level, []):
            pt = tuple((x["type"], x["span"], tuple(x["offset"])) for x in info[:-1])
            level_map.setdefault(pt, {}).setdefault(info[-1]["type"], []).append(
                {"span": info[-1]["span"], "offset": info[-1]["offset"]})
            npt = pt + ((info[-1]["type"], info[-1]["span"], tuple(info[-1]["offset"])),)
            sub = schema_at(schema, npt)
            if sub:
                nm = next_map.setdefault(npt, {})
                for k in sub:
                    nm.setdefault(k, [])
        for hint, char_map in build_hints(tok, level_map, rng):
            wins = windows(tok, hint, text_ids, text_offs, stride=0 if is_cls else STRIDE)
            if is_cls:
                wins = wins[:1]  # the marker is only in window 0 (see docs/training.md)
            for w in wins:
                rows, cols = get_labels(text, w, level_map, char_map)
                out.append((w["input_ids"], w["H"], rows, cols))
        level_map = next_map
        if not level_map:
            break
    return out
