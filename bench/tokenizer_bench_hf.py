#!/usr/bin/env python3
"""Baseline for tokenizer_bench: HF tokenizers 0.23.2 (the Rust library, through its official Python
bindings from PyPI) with the same BERT tokenizer of the RexUniNLU checkpoint (tests/text/
make_hf_cases.py builds its tokenizer.json), single thread, same texts. From the repository root:
  "$(scripts/python_env.sh hf-tokenizers)" bench/tokenizer_bench_hf.py [TEXTS_JSONL]
TEXTS_JSONL defaults to ../shared/data/cluener2020/train.json (as tokenizer_bench's); the rayon
pool gets RAYON_NUM_THREADS threads, 1 unless set.
encode_batch runs the whole list in one call, so it shows the Rust code's speed with little
binding overhead; encode (one call per text) adds the per-call cost of the bindings.
"""
import json
import os
import sys
import time
from pathlib import Path

os.environ['RAYON_NUM_THREADS'] = os.environ.get('RAYON_NUM_THREADS') or '1'  # before rayon starts

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests' / 'text'))
from make_hf_cases import DEFAULT_CONFIG, NEW_VERSION, load_tokenizers, tokenizer_json  # noqa: E402

texts_path = sys.argv[1] if len(sys.argv) > 1 else str(ROOT.parent / 'shared' / 'data' / 'cluener2020' / 'train.json')
with open(texts_path, encoding='utf-8') as f:
    texts = [json.loads(line)['text'] for line in f.read().split('\n') if line]
size = sum(len(t.encode('utf-8')) for t in texts)
tok = load_tokenizers(NEW_VERSION).Tokenizer.from_str(tokenizer_json(DEFAULT_CONFIG))


def measure(what, one_pass):
    """Whole passes over the texts until 2 s have passed (after one warm-up pass)."""
    tokens = one_pass()
    start = time.perf_counter()
    passes = 0
    while True:
        tokens = one_pass()
        passes += 1
        seconds = time.perf_counter() - start
        if seconds >= 2:
            break
    per_pass = seconds / passes
    print(f'{what:<34} {len(texts) / per_pass:12.0f} {tokens / per_pass:14.0f} {size / per_pass / 1e6:10.1f} '
          f'{per_pass / len(texts) * 1e6:12.2f}')


print(f'texts: {len(texts)} from {texts_path} ({size / 1e6:.2f} MB UTF-8), HF tokenizers {NEW_VERSION}, '
      f'RAYON_NUM_THREADS={os.environ["RAYON_NUM_THREADS"]}')
print(f'{"what":<34} {"texts/s":>12} {"tokens/s":>14} {"MB/s":>10} {"us/text":>12}')
measure('encode_batch(texts) [CLS] t [SEP]', lambda: sum(len(e) for e in tok.encode_batch(texts)))
measure('encode(text) [CLS] t [SEP]', lambda: sum(len(tok.encode(t)) for t in texts))
