"""Packs a device run for the trip back: one tar of logs/configs/eval results, plus the weights
of the best models (by CLUENER dev F1) split into 15 MB parts, within the tool's file limits
(8 files, 16 MB each, 64 MB in all). Join parts with `cat model.safetensors.part* > model.safetensors`.

  python3 pack_results.py RUN_DIR OUT_DIR [FLOOR.json]

FLOOR.json ({eval set: minimum of its f1 / accuracy}): runs that meet every minimum are packed
first. summary.tsv (in the tar and printed) holds every run's numbers per set."""
import json
import os
import sys
import tarfile

src, out = sys.argv[1], sys.argv[2]
floor = json.load(open(sys.argv[3])) if len(sys.argv) > 3 else {}
PART = 15 * 1024 * 1024
runs = []
for name in sorted(os.listdir(src)):
    d = os.path.join(src, name)
    if not os.path.isdir(d):
        continue
    ev = {}
    for fn in ("eval.json", "eval_base.json"):  # a run's, or BASE's
        if os.path.exists(f"{d}/{fn}"):
            ev = json.load(open(f"{d}/{fn}"))
    ev = ev.get("eval", ev)  # train.py nests the sets under "eval"; evaluate.py (AVG, BASE) does not
    m = {k: v.get("f1", v.get("accuracy")) for k, v in ev.items()}
    below = [k for k, lo in floor.items() if m.get(k, -1) < lo]
    runs.append((not below, m.get("cluener_dev", -1), name, d, m))
    print(name, "cluener f1", m.get("cluener_dev", -1), "below floor: " + ",".join(below) if below else "")
sets = sorted({k for r in runs for k in r[4]})
with open(f"{src}/summary.tsv", "w") as f:
    f.write("\t".join(["run", "meets_floor"] + sets) + "\n")
    for ok, _, name, _, m in runs:
        f.write("\t".join([name, str(ok)] + [f"{m[k]:.4f}" if k in m else "-" for k in sets]) + "\n")
print(open(f"{src}/summary.tsv").read())
with tarfile.open(f"{out}/results.tar.gz", "w:gz") as t:
    t.add(f"{src}/summary.tsv", arcname="summary.tsv")
    for *_, name, d, _ in runs:
        for f in os.listdir(d):
            if f not in ("model.safetensors", "checkpoint.pt"):  # weights travel as parts; the checkpoint stays
                t.add(os.path.join(d, f), arcname=f"{name}/{f}")
    for f in os.listdir(src):
        if f.endswith(".out"):
            t.add(os.path.join(src, f), arcname=f)
files, total = 1, 0
for *_, name, d, _ in sorted(runs, key=lambda r: r[:2], reverse=True):
    p = f"{d}/model.safetensors"
    if not os.path.exists(p):
        continue
    size = os.path.getsize(p)
    nparts = -(-size // PART)
    if files + nparts > 8 or total + size > 60 * 1024 * 1024:
        print("not returned:", name, size)
        continue
    with open(p, "rb") as fi:
        for k in range(nparts):
            with open(f"{out}/{name}.safetensors.part{k}", "wb") as fo:
                fo.write(fi.read(PART))
    files += nparts
    total += size
    print("returned:", name, size, "bytes in", nparts, "parts")
