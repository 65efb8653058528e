"""Turns the converted train files into compact training instances (one JSON line each:
input_ids, H, rows, cols), exactly as the original data loader's tokenize_data would.

  python3 tools/train/prepare.py --raw .device/train/raw --out .device/train/instances.jsonl.gz

--weight SRC=P:V (e.g. cluener=4:2) gives a file P plain and V renamed (labels.vary) rounds instead
of the mix's counts (more only). The added rounds draw from their own RNG (seeded by --seed and SRC)
and follow the file's own instances, so the mix's instances stay byte-identical and in order; every
renamed round draws new names.
"""
import argparse
import glob
import gzip
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tokenizer import BertTokenizer  # noqa: E402
import labels as L  # noqa: E402
import rexdata as R  # noqa: E402

# Per-file caps keep the mix centred on extraction (IFLYTEK prompts are ~3 chunks of 256 tokens).
CAPS = {"train_iflytek.jsonl": 1500, "train_cail.jsonl": 3000}
# Small but task-diverse files are repeated so that every task is seen often enough.
# Two mixes: "v1" trained the bundled model; "v2" (tried, see docs/accuracy.md) adds SanWen RE and
# repeats the sample_tasks re/mrc/ner files more.
MIXES = {
    "v1": {"skip": {"train_sanwen_re.jsonl", "train_pd.jsonl", "train_tnews_full.jsonl"},
           "repeat": {"train_st_re.jsonl": 4, "train_st_ee.jsonl": 2, "train_st_absa.jsonl": 4,
                      "train_st_mrc.jsonl": 2, "train_st_tc_single_label.jsonl": 2,
                      "train_st_tc_multi_label.jsonl": 2, "train_eprstmt.jsonl": 3}},
    "v2": {"skip": {"train_pd.jsonl", "train_tnews_full.jsonl"},
           "repeat": {"train_st_re.jsonl": 6, "train_st_ee.jsonl": 2, "train_st_absa.jsonl": 4,
                      "train_st_mrc.jsonl": 4, "train_st_ner.jsonl": 3, "train_sanwen_re.jsonl": 1,
                      "train_st_tc_single_label.jsonl": 2, "train_st_tc_multi_label.jsonl": 2,
                      "train_eprstmt.jsonl": 3}},
    # v3 (demo model v2, issue 18): label-name variation (labels.py), People's Daily NER with the
    # official example's names, 4,000 CLUE TNEWS sentences; "vary" = renamed copies per sample.
    "v3": {"skip": {"train_sanwen_re.jsonl"},
           "repeat": {"train_st_re.jsonl": 4, "train_st_ee.jsonl": 2, "train_st_absa.jsonl": 4,
                      "train_st_mrc.jsonl": 2, "train_st_tc_single_label.jsonl": 2, "train_st_ner.jsonl": 3,
                      "train_st_tc_multi_label.jsonl": 2, "train_eprstmt.jsonl": 3,
                      "train_pd.jsonl": 0, "train_weibo.jsonl": 0, "train_resume.jsonl": 0},
           "vary": {"train_cluener.jsonl": ("cluener", 1), "train_pd.jsonl": ("pd", 1),
                    "train_weibo.jsonl": ("weibo", 1), "train_resume.jsonl": ("resume", 1),
                    "train_st_ner.jsonl": ("st_ner", 3)}},
}


def parse_weights(spec, mix):
    """--weight 'SRC=P:V,...' -> {file name: (plain rounds, varied rounds)}, checked against the mix."""
    out = {}
    for kv in filter(None, spec.split(",")):
        src, pv = kv.split("=")
        p, v = (int(x) for x in pv.split(":"))
        name = f"train_{src}.jsonl"
        base_p = MIXES[mix]["repeat"].get(name, 1)
        family, base_v = MIXES[mix].get("vary", {}).get(name, (None, 0))
        if name in MIXES[mix]["skip"] or p < base_p or v < base_v or (v and not family):
            what = "skips it" if name in MIXES[mix]["skip"] else f"gives it {base_p}:{base_v}" + (
                "" if family else " (no renaming family)")
            raise SystemExit(f"--weight {kv}: mix {mix} {what}; --weight can only add rounds")
        out[name] = (p, v)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", default=".device/train/raw")
    ap.add_argument("--vocab", default="models/rexuninlu_tiny/vocab.txt")
    ap.add_argument("--out", default=".device/train/instances.jsonl.gz")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--mix", default="v3", choices=sorted(MIXES))
    ap.add_argument("--weight", default="", help="SRC=P:V[,...]: P plain and V renamed rounds of train_SRC.jsonl "
                    "(at least the mix's), e.g. cluener=4:2")
    a = ap.parse_args()
    weights = parse_weights(a.weight, a.mix)
    tok = BertTokenizer(a.vocab)
    rng = random.Random(a.seed)
    files = sorted(glob.glob(f"{a.raw}/train_*.jsonl"))
    missing = set(weights) - {os.path.basename(f) for f in files}
    if missing:
        raise SystemExit(f"--weight: no {', '.join(sorted(missing))} in {a.raw}")
    n_inst = 0
    with gzip.open(a.out, "wt", encoding="utf-8") as fo:
        for path in files:
            name = os.path.basename(path)
            if name in MIXES[a.mix]["skip"]:
                continue
            samples = [json.loads(l) for l in open(path, encoding="utf-8").read().split("\n") if l.strip()]
            if name in CAPS and len(samples) > CAPS[name]:
                samples = rng.sample(samples, CAPS[name])
            k = 0
            family, n_vary = MIXES[a.mix].get("vary", {}).get(name, (None, 0))
            base_p = MIXES[a.mix]["repeat"].get(name, 1)
            rounds = [(False, rng)] * base_p + [(True, rng)] * n_vary
            if name in weights:  # added rounds: their own RNG, after the mix's own instances
                extra = random.Random(f"{a.seed}:{name}")
                rounds += [(False, extra)] * (weights[name][0] - base_p) + [(True, extra)] * (weights[name][1] - n_vary)
            for varied, r in rounds:
                for s in samples:
                    if varied:
                        s = L.vary(s, family, r)
                    for ids, H, rows, cols in R.training_instances(tok, s, r):
                        fo.write(json.dumps({"src": name[6:-6], "ids": ids, "H": H, "rows": rows, "cols": cols},
                                            separators=(",", ":")) + "\n")
                        k += 1
            print(f"{name}: {len(samples)} samples -> {k} instances", flush=True)
            n_inst += k
    print("total instances", n_inst)


if __name__ == "__main__":
    main()
