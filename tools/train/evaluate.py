"""PyTorch evaluation of a model directory on the converted eval files (docs/accuracy.md).

  python3 tools/train/evaluate.py --model models/rexnlu-demo-zh-small --data .device/train/eval --out eval.json
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
from decode import EVAL_SETS, Predictor, score  # noqa: E402
from model import RexModel  # noqa: E402
from tokenizer import BertTokenizer  # noqa: E402


def load_model(model_dir):
    cfg = json.load(open(f"{model_dir}/config.json"))
    sd = st_io.load(f"{model_dir}/model.safetensors")
    cfg["vocab_size"] = sd["plm.embeddings.word_embeddings.weight"].shape[0]
    m = RexModel(cfg).eval()
    m.load_state_dict(sd, strict=True)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/rexnlu-demo-zh-small")
    ap.add_argument("--data", default=".device/train/eval")
    ap.add_argument("--out", default=None)
    ap.add_argument("--sets", default=",".join(EVAL_SETS))
    ap.add_argument("--limit", type=int, default=None, help="the first N samples of each set only (rehearsals)")
    ap.add_argument("--device", default="cpu", help="cpu (strict float32) or cuda (TF32 allowed, as train.py's eval)")
    a = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = a.device == "cuda"
    tok = BertTokenizer(f"{a.model}/vocab.txt")
    pred = Predictor(load_model(a.model).to(a.device), tok, a.device,
                     max_batch_tokens=8192 if a.device == "cpu" else 32768)  # cuda: as train.py's eval
    res = {}
    for name in a.sets.split(","):
        samples = [json.loads(l) for l in open(f"{a.data}/eval_{name}.jsonl", encoding="utf-8").read().split("\n")
                   if l.strip()][:a.limit]
        t = time.time()
        with torch.no_grad():
            res[name] = score(EVAL_SETS[name], samples, pred.predict(samples))
        print(name, json.dumps(res[name]), f"{time.time() - t:.1f}s", flush=True)
        if a.out:  # after every set, so that a run stopped by a time limit keeps what it has
            json.dump(res, open(a.out, "w"), indent=2)


if __name__ == "__main__":
    main()
