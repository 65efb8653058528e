"""Packs a device run for the trip back: one tar of logs/configs/eval results, plus the weights
of the best models (by CLUENER dev F1) split into 15 MB parts, within the tool's file limits
(8 files, 16 MB each, 64 MB in all). Join parts with `cat model.safetensors.part* > model.safetensors`."""
import json
import os
import sys
import tarfile

src, out = sys.argv[1], sys.argv[2]
PART = 15 * 1024 * 1024
runs = []
for name in sorted(os.listdir(src)):
    d = os.path.join(src, name)
    if not os.path.isdir(d):
        continue
    ev = {}
    if os.path.exists(f"{d}/eval.json"):
        ev = json.load(open(f"{d}/eval.json"))
    f1 = ev.get("eval", {}).get("cluener_dev", {}).get("f1", -1)
    runs.append((f1, name, d))
    print(name, "cluener f1", f1)
with tarfile.open(f"{out}/results.tar.gz", "w:gz") as t:
    for _, name, d in runs:
        for f in os.listdir(d):
            if f not in ("model.safetensors", "checkpoint.pt"):  # weights travel as parts; the checkpoint stays
                t.add(os.path.join(d, f), arcname=f"{name}/{f}")
    for f in os.listdir(src):
        if f.endswith(".out"):
            t.add(os.path.join(src, f), arcname=f)
files, total = 1, 0
for f1, name, d in sorted(runs, reverse=True):
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
