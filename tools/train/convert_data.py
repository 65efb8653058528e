"""Converts the public data sets in ../shared/data into the RexUniNLU sample format.

Every output line is {"id", "text", "info_list", "schema"} exactly as the model repo's
sample_tasks files (offsets are [start, end) code points, span == text[start:end]).
Files are written to a git-ignored folder (default .device/train/raw) and are never committed.

  python3 tools/train/convert_data.py --data ../shared/data --out .device/train/raw
  python3 tools/train/convert_data.py --data ../shared/data --out .device/train/large --large
      (only the larger held-out evaluation sets of large_evals(); the default output is unchanged)

Train files come only from data whose license allows redistribution of a model trained on it
(see models/rexnlu-demo-zh-small/README.md); DuIE is converted for evaluation only, and so are the
--large sets (ASTE, ChnSentiCorp, DuEE and MSRA are research / non-commercial only: local files, never
committed or shipped).
"""
import argparse
import ast
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import labels as L  # noqa: E402

CLUENER_TYPES = {"name": "人名", "address": "地址", "book": "书名", "company": "公司", "game": "游戏",
                 "government": "政府", "movie": "电影", "organization": "组织机构", "position": "职位",
                 "scene": "景点"}
WEIBO_TYPES = {"PER.NAM": "人名", "PER.NOM": "人物泛称", "LOC.NAM": "地名", "LOC.NOM": "地点泛称",
               "GPE.NAM": "行政区", "GPE.NOM": "行政区泛称", "ORG.NAM": "机构名", "ORG.NOM": "机构泛称"}
RESUME_TYPES = {"NAME": "人名", "CONT": "国籍", "RACE": "民族", "TITLE": "职称", "EDU": "学历",
                "ORG": "组织机构", "PRO": "专业", "LOC": "地名"}
PD_TYPES = {"PER": "人物", "LOC": "地理位置", "ORG": "组织机构"}  # People's Daily: the official example's names
SENTIMENT = {"Positive": "正向情感", "Negative": "负向情感"}
# sample_tasks absa's path types; ASTE polarity strings differ by file (train/test POS.., dev Positive..)
ABSA_POLARITY = {"POS": "正向情感(情感词)", "Positive": "正向情感(情感词)", "NEG": "负向情感(情感词)",
                 "Negative": "负向情感(情感词)", "NEU": "中性情感(情感词)", "Neutral": "中性情感(情感词)"}


def read_lines(path):
    with open(path, encoding="utf-8-sig") as f:
        return [l for l in f.read().split("\n") if l.strip()]


def read_jsonl(path):
    return [json.loads(l) for l in read_lines(path)]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{path}: {len(rows)}")


def ent(t, text, s, e):
    assert 0 <= s < e <= len(text), (t, s, e)
    return {"type": t, "span": text[s:e], "offset": [s, e]}


def cluener(path, prefix, names=CLUENER_TYPES):
    """names: CLUENER type -> type name; types not in names are left out (schema and gold)."""
    rows = []
    schema = {v: None for v in dict.fromkeys(names.values())}
    for k, d in enumerate(read_jsonl(path)):
        text, info = d["text"], []
        for t, mentions in d.get("label", {}).items():
            if t not in names:
                continue
            for m, spans in mentions.items():
                for s, e in spans:
                    assert text[s:e + 1] == m
                    item = [ent(names[t], text, s, e + 1)]
                    if item not in info:  # merged types (official names) can repeat a mention
                        info.append(item)
        info.sort(key=lambda x: x[0]["offset"])
        rows.append({"id": f"{prefix}-{k}", "text": text, "info_list": info, "schema": schema})
    return rows


def bio_sentences(path, weibo):
    """Yields lists of (char, tag) from a CoNLL-style char file (blank line between sentences)."""
    sent = []
    for line in open(path, encoding="utf-8").read().split("\n"):
        parts = line.split()
        if not parts:
            if sent:
                yield sent
            sent = []
            continue
        ch, tag = (parts[0], parts[-1]) if len(parts) >= 2 else (" ", parts[0])
        if weibo:
            ch = ch[:-1] if len(ch) > 1 else ch  # weibo chars carry a trailing segment digit
        sent.append((ch, tag))
    if sent:
        yield sent


def tagged(path, types, prefix, weibo=False):
    rows = []
    schema = {v: None for v in types.values()}
    for k, sent in enumerate(bio_sentences(path, weibo)):
        text = "".join(c for c, _ in sent)
        if len(text) != len(sent):
            continue
        info, start, cur = [], None, None

        def close(end):
            if cur is not None:
                info.append([ent(types[cur], text, start, end)])

        for i, (_, tag) in enumerate(sent):
            p, t = (tag.split("-", 1) + [None])[:2] if tag != "O" else ("O", None)
            if p in ("B", "S") or (p in ("I", "M", "E") and t != cur):
                close(i)
                start, cur = i, t
            elif p == "O":
                close(i)
                cur = None
            if p in ("E", "S"):
                close(i + 1)
                cur = None
        close(len(sent))
        rows.append({"id": f"{prefix}-{k}", "text": text, "info_list": info, "schema": schema})
    return rows


def classify(prefix, items, labels, marker="[CLASSIFY]"):
    """items: (text, [label...]) -> classification samples with the marker first."""
    schema = {l: None for l in labels}
    rows = []
    for k, (text, gold) in enumerate(items):
        t = marker + text
        rows.append({"id": f"{prefix}-{k}", "text": t,
                     "info_list": [[ent(g, t, 0, len(marker))] for g in gold], "schema": schema})
    return rows


def tnews(path, names, prefix):
    items = [(d["sentence"], [names[str(d["label"])]]) for d in read_jsonl(path)]
    return classify(prefix, items, sorted(set(names.values())))


TNEWS_FULL_CAP = 4000  # CLUE TNEWS dev sentences in the training mix (train_tnews_full)


def tnews_names(D):
    return {d["label"]: d["label_zh"] for d in read_jsonl(f"{D}/fewclue/tnews/label_index2en2zh.json")}


def fewclue_tnews_texts(D):
    return {d["sentence"] for f in ("train_few_all", "dev_few_all", "test_public")
            for d in read_jsonl(f"{D}/fewclue/tnews/{f}.json")}


def tnews_clue_split(path, names, exclude, cap, seed=42):
    """CLUE TNEWS dev (10,000) without any text of the FewCLUE TNEWS files: (`cap` random items,
    the rest in file order without the texts of those, which occur more than once in the file)."""
    items = [(d["sentence"], [names[str(d["label"])]]) for d in read_jsonl(path) if d["sentence"] not in exclude]
    picked = [items[i] for i in random.Random(seed).sample(range(len(items)), min(cap, len(items)))]
    seen = {t for t, _ in picked}
    return picked, [it for it in items if it[0] not in seen]


def tnews_full(path, names, prefix, exclude, cap, seed=42):
    """CLUE TNEWS dev (10,000) as training data, without any text of the FewCLUE TNEWS files
    (whose dev_few_all is an evaluation set), capped at `cap` random sentences."""
    return classify(prefix, tnews_clue_split(path, names, exclude, cap, seed)[0], sorted(set(names.values())))


def eprstmt(path, prefix):
    items = [(d["sentence"], [SENTIMENT[d["label"]]]) for d in read_jsonl(path)]
    return classify(prefix, items, sorted(SENTIMENT.values()))


def iflytek(path, prefix, labels):
    items = [(d["sentence"], [d["label_des"]]) for d in read_jsonl(path)]
    return classify(prefix, items, labels)


def cail(root, prefix, max_docs_frac=0.85, held_out=False):
    """held_out: the last 15% of documents instead (evaluation only; large_evals)."""
    rows = []
    for domain in ("divorce", "labor", "loan"):
        d = f"{root}/{domain}"
        tags = read_lines(f"{d}/tags.txt")
        names = read_lines(f"{d}/selectedtags.txt")
        tag2name = dict(zip(tags, names))
        docs = read_jsonl(f"{d}/data_small_selected.json")
        cut = int(len(docs) * max_docs_frac)
        docs = docs[cut:] if held_out else docs[:cut]  # the last 15% of documents stay unseen in training
        items = [(s["sentence"], [tag2name[t] for t in s["labels"]]) for doc in docs for s in doc if s["labels"]]
        rows += classify(f"{prefix}-{domain}", items, names, marker="[MULTICLASSIFY]")
    return rows


def aste_row(line, id_):
    """One ABSADatasets ASTE line ("t o k e n s####[((a0, a1), (o0, o1), polarity), ...]", inclusive
    token indices) -> a sample in sample_tasks absa's form: the text gets the "#" prefix that stands
    for an implicit aspect ((-1, -1)), paths are [属性词, <polarity>情感(情感词)]."""
    sent, triplets = line.split("####")
    toks = sent.split(" ")
    starts = [1]
    for t in toks:
        starts.append(starts[-1] + len(t))
    text = "#" + "".join(toks)
    schema = {"属性词": {v: None for v in dict.fromkeys(ABSA_POLARITY.values())}}

    def span(s, e):
        return (0, 1) if (s, e) == (-1, -1) else (starts[s], starts[e + 1])

    info = []
    for a, o, pol in ast.literal_eval(triplets):
        path = [ent("属性词", text, *span(*a)), ent(ABSA_POLARITY[pol], text, *span(*o))]
        if path not in info:
            info.append(path)
    return {"id": id_, "text": text, "info_list": info, "schema": schema}


def aste(path, prefix):
    return [aste_row(l, f"{prefix}-{k}") for k, l in enumerate(read_lines(path))]


def chnsenticorp(path, prefix):
    """ChnSentiCorp dev.tsv (qid, label, text_a; 1 = positive) as EPRSTMT-style [CLASSIFY] samples."""
    lines = read_lines(path)
    assert lines[0].split("\t") == ["qid", "label", "text_a"], (path, lines[0])
    items = []
    for l in lines[1:]:
        _, label, text = l.split("\t", 2)
        items.append((text, [SENTIMENT["Positive" if label == "1" else "Negative"]]))
    return classify(prefix, items, sorted(SENTIMENT.values()))


def duee(path, schema_path, prefix):
    """DuEE 1.0 in sample_tasks ee's form: schema {"<event type>(事件触发词)": {role: null}} (all 65 types),
    one path [trigger, argument] per argument, [trigger] alone for an event without arguments."""
    schema = {f'{s["event_type"]}(事件触发词)': {r["role"]: None for r in s["role_list"]}
              for s in read_jsonl(schema_path)}
    rows = []
    for k, d in enumerate(read_jsonl(path)):
        text, info = d["text"], []
        for ev in d["event_list"]:
            t0 = ev["trigger_start_index"]
            trig = ent(f'{ev["event_type"]}(事件触发词)', text, t0, t0 + len(ev["trigger"]))
            paths = [[trig, ent(a["role"], text, a["argument_start_index"],
                                a["argument_start_index"] + len(a["argument"]))] for a in ev["arguments"]]
            for path_ in paths or [[trig]]:
                if path_ not in info:
                    info.append(path_)
        rows.append({"id": f"{prefix}-{k}", "text": text, "info_list": info, "schema": schema})
    return rows


def large_evals(D):
    """Larger held-out evaluation sets (1,000+ texts, so that one decision is <= 0.1 point) for the
    tasks whose sample_tasks dev sets have ~100 texts. None is in the training mix, except 21 of the
    1,222 CAIL sentences (court boilerplate that also occurs in training documents).
    The sample_tasks sources themselves (zjabsa, AFQMC, COAE2016, CAIL2018, ...) are not in
    ../shared/data, so these are the nearest held-out sets of the same task and schema form:"""
    return {
        # st ner's schema (人物 / 地理位置 / 组织机构); MSRA test, 4,365 news sentences, no overlap with pd
        "msra_ner_test": tagged(f"{D}/msra_ner/test.txt", PD_TYPES, "msra-test"),
        # st absa's schema and "#" implicit aspect; restaurant reviews (st absa: e-commerce), 2,783 texts
        "absa_aste_dev": aste(f"{D}/absa_zh_aste/dev.txt", "aste-dev"),
        # binary sentiment [CLASSIFY] as EPRSTMT; 1,200 texts (the nearest held-out single-label set:
        # st tc_single_label is AFQMC sentence matching, which is not in ../shared/data)
        "chnsenticorp_dev": chnsenticorp(f"{D}/chnsenticorp/dev.tsv", "chnsenticorp-dev"),
        # TNEWS [CLASSIFY], 15 labels: the CLUE TNEWS dev sentences that train_tnews_full leaves out
        "tnews_clue_heldout": classify("tnews-clue-heldout", tnews_clue_split(
            f"{D}/tnews_clue/dev.json", tnews_names(D), fewclue_tnews_texts(D), TNEWS_FULL_CAP)[1],
            sorted(set(tnews_names(D).values()))),
        # st ee's form with DuEE's 65 event types (st ee: 19 financial announcement types), 1,498 texts
        "duee_dev": duee(f"{D}/duee1/dev.json", f"{D}/duee1/event_schema.json", "duee-dev"),
        # [MULTICLASSIFY] as st tc_multi_label; the CAIL2019 documents held out of training
        "cail_heldout": cail(f"{D}/cail2019_elements", "cail-heldout", held_out=True),
    }


SANWEN_ENT = {"Person": "人物", "Location": "地理位置", "Organization": "组织机构", "Thing": "物品", "Time": "时间",
              "Metric": "数量", "Abstract": "抽象概念"}
SANWEN_REL = {"Located": "位于", "Part-Whole": "组成部分", "Family": "亲属", "General-Special": "从属类别",
              "Social": "社会关系", "Use": "使用", "Ownership": "拥有", "Create": "创作", "Near": "邻近"}


def sanwen(root, prefix):
    """SanWen doc-level RE (brat) -> sentence-level RE samples in the RexUniNLU format: one sample per
    sentence holding a relation whose two arguments are contiguous, non-pronoun mentions inside it.
    Path = [subject (Arg1, its entity type), object ("relation(object type)")]; the schema is every
    (subject type, relation, object type) seen. Line breaks (hard wraps) are removed from the text."""
    docs = []
    for split in ("Validation", "Testing"):
        d = f"{root}/{split}"
        for name in sorted(f for f in os.listdir(d) if f.endswith(".txt")):
            text = open(f"{d}/{name}", encoding="utf-8").read()
            ents, rels = {}, []
            for line in open(f"{d}/{name[:-4]}.ann", encoding="utf-8").read().split("\n"):
                parts = line.split("\t")
                if line.startswith("T") and len(parts) >= 2:
                    f = parts[1].split(" ")
                    if len(f) == 3 and ";" not in parts[1]:
                        ents[parts[0]] = (f[0].split("-")[0], f[0], int(f[1]), int(f[2]))
                elif line.startswith("R") and len(parts) >= 2:
                    f = parts[1].split(" ")
                    rels.append((f[0], f[1].split(":")[1], f[2].split(":")[1]))
            docs.append((f"{split}-{name[:-4]}", text, ents, rels))
    rows, schema = [], {}
    for doc_id, text, ents, rels in docs:
        keep = [i for i, ch in enumerate(text) if ch not in "\r\n"]  # new index -> old index
        old2new = {o: n for n, o in enumerate(keep)}
        flat = "".join(text[i] for i in keep)
        bounds, start = [], 0  # sentence [start, end) in flat
        for i, ch in enumerate(flat):
            if ch in "。！？!?；;" or i == len(flat) - 1:
                bounds.append((start, i + 1))
                start = i + 1
        per_sent = {}
        for r, a1, a2 in rels:
            if a1 not in ents or a2 not in ents or r not in SANWEN_REL:
                continue
            (t1, f1, s1, e1), (t2, f2, s2, e2) = ents[a1], ents[a2]
            if "Pronoun" in f1 or "Pronoun" in f2 or t1 not in SANWEN_ENT or t2 not in SANWEN_ENT:
                continue
            if any(k not in old2new for k in (s1, e1 - 1, s2, e2 - 1)):
                continue
            n1, n2 = (old2new[s1], old2new[e1 - 1] + 1), (old2new[s2], old2new[e2 - 1] + 1)
            if n1[1] - n1[0] != e1 - s1 or n2[1] - n2[0] != e2 - s2:
                continue  # a wrap inside the mention
            sent = [k for k, (a, b) in enumerate(bounds) if a <= min(n1[0], n2[0]) and max(n1[1], n2[1]) <= b]
            if not sent:
                continue
            a, b = bounds[sent[0]]
            st, ot, rel = SANWEN_ENT[t1], SANWEN_ENT[t2], SANWEN_REL[r]
            schema.setdefault(st, {})[f"{rel}({ot})"] = None
            st_text = flat[a:b]
            path = [ent(st, st_text, n1[0] - a, n1[1] - a), ent(f"{rel}({ot})", st_text, n2[0] - a, n2[1] - a)]
            info = per_sent.setdefault((a, b), [])
            if path not in info:
                info.append(path)
        for (a, b), info in sorted(per_sent.items()):
            rows.append({"id": f"{prefix}-{doc_id}-{a}", "text": flat[a:b], "info_list": info})
    for r in rows:
        r["schema"] = schema
    return rows


def duie(path, schema_path, prefix):
    schema = {}
    for s in read_jsonl(schema_path):
        schema.setdefault(s["subject_type"], {})[f'{s["predicate"]}({s["object_type"]["@value"]})'] = None
    rows = []
    for k, d in enumerate(read_jsonl(path)):
        text, info = d["text"], []
        for spo in d["spo_list"]:
            subj, obj = spo["subject"], spo["object"]["@value"]
            s, o = text.find(subj), text.find(obj)
            if s < 0 or o < 0 or not subj or not obj:
                continue
            rel = f'{spo["predicate"]}({spo["object_type"]["@value"]})'
            path_ = [ent(spo["subject_type"], text, s, s + len(subj)), ent(rel, text, o, o + len(obj))]
            if path_ not in info:
                info.append(path_)
        rows.append({"id": f"{prefix}-{k}", "text": text, "info_list": info, "schema": schema})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default=".device/train/raw")
    ap.add_argument("--large", action="store_true",
                    help="write only the larger evaluation sets of large_evals() (use another --out)")
    a = ap.parse_args()
    D, O = a.data, a.out
    os.makedirs(O, exist_ok=True)
    if a.large:
        for k, rows in large_evals(D).items():
            write_jsonl(f"{O}/eval_{k}.jsonl", rows)
        return
    names = tnews_names(D)
    ifly = read_jsonl(f"{D}/fewclue/iflytek/train_few_all.json") + read_jsonl(f"{D}/fewclue/iflytek/dev_few_all.json")
    ifly_labels = sorted({d["label_des"] for d in ifly})

    train = {
        "cluener": cluener(f"{D}/cluener2020/train.json", "cluener-train"),
        "weibo": tagged(f"{D}/weibo_ner/weiboNER_2nd_conll.train", WEIBO_TYPES, "weibo-train", weibo=True),
        "resume": tagged(f"{D}/resume_ner/train.char.bmes", RESUME_TYPES, "resume-train"),
        "tnews": tnews(f"{D}/fewclue/tnews/train_few_all.json", names, "tnews-train"),
        "eprstmt": eprstmt(f"{D}/fewclue/eprstmt/train_few_all.json", "eprstmt-train"),
        "iflytek": iflytek(f"{D}/fewclue/iflytek/train_few_all.json", "iflytek-train", ifly_labels),
        "cail": cail(f"{D}/cail2019_elements", "cail-train"),
        "sanwen_re": sanwen(f"{D}/sanwen_re", "sanwen"),
        "pd": tagged(f"{D}/peoples_daily_ner/example.dev", PD_TYPES, "pd-dev")
        + tagged(f"{D}/peoples_daily_ner/example.test", PD_TYPES, "pd-test"),
        "tnews_full": tnews_full(f"{D}/tnews_clue/dev.json", names, "tnews-clue", fewclue_tnews_texts(D),
                                 cap=TNEWS_FULL_CAP),
    }
    for task in ("ner", "re", "ee", "absa", "mrc", "tc_single_label", "tc_multi_label"):
        train[f"st_{task}"] = read_jsonl(f"{D}/rexuninlu/sample_tasks/{task}/train.json")
    evals = {
        "cluener_dev": cluener(f"{D}/cluener2020/dev.json", "cluener-dev"),
        # the official RexUniNLU example's names (人物 / 地理位置 / 组织机构; the other types left out)
        "cluener_dev_official": cluener(f"{D}/cluener2020/dev.json", "cluener-dev-official", L.OFFICIAL),
        # paraphrased names never used in training (labels.HELD_OUT)
        "cluener_dev_paraphrase": cluener(f"{D}/cluener2020/dev.json", "cluener-dev-paraphrase", L.HELD_OUT),
        "duie_dev": duie(f"{D}/duie2/duie_dev.json", f"{D}/duie2/duie_schema.json", "duie-dev"),
        "tnews_dev": tnews(f"{D}/fewclue/tnews/dev_few_all.json", names, "tnews-dev"),
        "eprstmt_dev": eprstmt(f"{D}/fewclue/eprstmt/dev_few_all.json", "eprstmt-dev"),
    }
    for task in ("ner", "re", "ee", "absa", "mrc", "tc_single_label", "tc_multi_label"):
        evals[f"st_{task}_dev"] = read_jsonl(f"{D}/rexuninlu/sample_tasks/{task}/dev.json")
    for k, rows in train.items():
        write_jsonl(f"{O}/train_{k}.jsonl", rows)
    for k, rows in evals.items():
        write_jsonl(f"{O}/eval_{k}.jsonl", rows)


if __name__ == "__main__":
    main()
