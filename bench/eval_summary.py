#!/usr/bin/env python3
"""One markdown row per `rexnlu eval --json` report: the set, its score (F1, or accuracy for
single-label classification) and tp/fp/fn, for each report directory given (one column each).

    python3 bench/eval_summary.py DIR1 [DIR2 ...]     # DIRs hold NAME.json reports
"""
import json
import os
import sys


def score(path):
    try:
        r = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        return "missing"
    cells = []
    for kind, s in r.items():
        if not isinstance(s, dict) or "f1" not in s:
            continue
        value = s["accuracy"] if kind == "classification" and "accuracy" in s else s["f1"]
        counts = f" ({s['tp']}/{s['fp']}/{s['fn']})" if kind != "classification" else ""
        cells.append(f"{value:.4f}{counts}")
    return "; ".join(cells) or "?"


def main():
    dirs = sys.argv[1:]
    names = sorted({f[:-5] for d in dirs if os.path.isdir(d) for f in os.listdir(d) if f.endswith(".json")})
    print("| set | " + " | ".join(os.path.basename(os.path.normpath(d)) for d in dirs) + " |")
    print("| --- |" + " ---: |" * len(dirs))
    for n in names:
        print(f"| {n} | " + " | ".join(score(os.path.join(d, n + ".json")) for d in dirs) + " |")


if __name__ == "__main__":
    main()
