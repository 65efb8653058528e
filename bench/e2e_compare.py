#!/usr/bin/env python3
"""Compares the original pipeline's outputs (tools/compare_original/e2e_original.py: lines
{"text", "output"}) with `rexnlu extract --input` outputs (lines {"id", "output"}), line by line,
as sets of paths of (type, span, offset) items (probabilities ignored).

    python3 bench/e2e_compare.py ORIGINAL.jsonl REXNLU.jsonl     # prints "identical N / M texts"
"""
import json
import sys


def paths(output):
    return {tuple((i["type"], i["span"], tuple(i["offset"])) for i in p) for p in output}


def main():
    a = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
    b = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8") if l.strip()]
    same = sum(paths(x["output"]) == paths(y.get("output", [])) for x, y in zip(a, b))
    n_a, n_b = sum(len(x["output"]) for x in a), sum(len(y.get("output", [])) for y in b)
    print(f"identical {same} / {len(a)} texts (paths: original {n_a}, rexnlu {n_b})"
          + ("" if len(a) == len(b) else f"; LINE COUNTS DIFFER {len(a)} vs {len(b)}"))


if __name__ == "__main__":
    main()
