"""Time-boxed training of a small RexUniNLU model from scratch, then PyTorch evaluation and export.

  python3 tools/train/train.py --size small --minutes 6 --data .device/train --out OUT/small

Writes OUT/model.safetensors (fp32, original key names), OUT/config.json, OUT/eval.json, OUT/log.txt.
"""
import argparse
import gzip
import json
import math
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rexdata as R  # noqa: E402
import st_io  # noqa: E402
from batching import make_batch  # noqa: E402
from decode import EVAL_SETS, Predictor, score  # noqa: E402
from model import RexModel, circle_loss, config_for  # noqa: E402
from tokenizer import BertTokenizer  # noqa: E402

SIZES = {  # name -> (hidden, layers, heads, intermediate)
    "tiny": (64, 2, 4, 128),
    "small": (256, 4, 4, 1024),
    "medium": (256, 6, 4, 1024),
    "narrow": (192, 4, 4, 768),
}


def init_weights(model, std=0.02):
    for m in model.modules():
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv1d)):
            torch.nn.init.normal_(m.weight, 0, std)
            torch.nn.init.zeros_(m.bias)
        elif isinstance(m, torch.nn.Embedding):
            torch.nn.init.normal_(m.weight, 0, std)
        elif isinstance(m, torch.nn.LayerNorm):
            torch.nn.init.ones_(m.weight)
            torch.nn.init.zeros_(m.bias)


def batches(insts, max_tokens, rng):
    """Token-budget batches of similar length, in random order."""
    order = list(range(len(insts)))
    rng.shuffle(order)
    out = []
    for c in range(0, len(order), 2000):  # sort inside large random chunks
        chunk = sorted(order[c:c + 2000], key=lambda i: len(insts[i]["ids"]))
        cur = []
        for i in chunk:
            L = len(insts[i]["ids"])
            if cur and (len(cur) + 1) * max(L, len(insts[cur[-1]]["ids"])) > max_tokens:
                out.append(cur)
                cur = []
            cur.append(i)
        if cur:
            out.append(cur)
    rng.shuffle(out)
    return out


def load_jsonl(path):
    return [json.loads(l) for l in open(path, encoding="utf-8").read().split("\n") if l.strip()]


def evaluate(model, tok, device, eval_dir, log, limit=None, seconds=1e9):
    model.eval()
    pred = Predictor(model, tok, device)
    res = {}
    t_end = time.time() + seconds
    for name, kind in EVAL_SETS.items():
        if time.time() > t_end:
            log(f"eval {name}: skipped (eval time budget spent)")
            continue
        path = f"{eval_dir}/eval_{name}.jsonl"
        if not os.path.exists(path):
            continue
        samples = load_jsonl(path)[:limit]
        t = time.time()
        preds = pred.predict(samples)
        res[name] = score(kind, samples, preds)
        log(f"eval {name}: {json.dumps(res[name])} ({time.time() - t:.1f}s)")
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="small", choices=sorted(SIZES))
    ap.add_argument("--minutes", type=float, default=6.0)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: time only)")
    ap.add_argument("--data", default=".device/train")
    ap.add_argument("--vocab", default="models/rexuninlu_tiny/vocab.txt")
    ap.add_argument("--out", required=True)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch-tokens", type=int, default=16384)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--eval-limit", type=int, default=None)
    ap.add_argument("--eval-seconds", type=float, default=1e9)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    logf = open(f"{a.out}/log.txt", "w")

    def log(msg):
        print(f"[{a.size}] {msg}", flush=True)
        logf.write(msg + "\n")
        logf.flush()

    t0 = time.time()
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    tok = BertTokenizer(a.vocab)
    with gzip.open(f"{a.data}/instances.jsonl.gz", "rt", encoding="utf-8") as f:
        insts = [json.loads(l) for l in f if l.strip()]
    insts = [x for x in insts if len(x["ids"]) <= R.MAX_LEN]
    for x in insts:
        x["segs"] = R.segments(tok, x["ids"])
    log(f"{len(insts)} instances loaded in {time.time() - t0:.1f}s on {device}")

    hidden, layers, heads, inter = SIZES[a.size]
    cfg = config_for(hidden, layers, heads, inter)
    model = RexModel(cfg, dropout=a.dropout)
    init_weights(model)
    model.to(device)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"size {a.size}: hidden {hidden}, layers {layers}, heads {heads}, ffn {inter}, params {n_params}")
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.98), eps=1e-6)
    budget = a.minutes * 60
    t_start = time.time()
    step, epoch, done = 0, 0, False
    ema = None
    use_amp = device == "cuda"
    while not done:
        epoch += 1
        for b in batches(insts, a.batch_tokens, rng):
            frac = (time.time() - t_start) / budget
            if a.max_steps:
                frac = max(frac, step / a.max_steps)
            if frac >= 1:
                done = True
                break
            lr = a.lr * min(1.0, frac / 0.04) * max(0.0, (1 - frac) / 0.96 if frac > 0.04 else 1.0)
            for g in opt.param_groups:
                g["lr"] = lr
            model.train()
            items = [insts[i] for i in b]
            ids, mask, pos, valid = make_batch(tok, [x["ids"] for x in items], device, [x["segs"] for x in items])
            B, L = ids.shape
            labels = torch.zeros(B, L, L, device=device)
            bi = [k for k, x in enumerate(items) for _ in x["rows"]]
            if bi:
                labels[torch.tensor(bi, device=device),
                       torch.tensor([r for x in items for r in x["rows"]], device=device),
                       torch.tensor([c for x in items for c in x["cols"]], device=device)] = 1.0
            if use_amp:
                with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                    z = model(ids, mask, pos)
            else:
                z = model(ids, mask, pos)
            loss = circle_loss(z.float(), labels, valid.unsqueeze(2) & valid.unsqueeze(1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
            if step % 200 == 0:
                log(f"step {step} epoch {epoch} lr {lr:.2e} loss {ema:.4f} elapsed {time.time() - t_start:.0f}s")
    log(f"trained {step} steps, {epoch} epochs in {time.time() - t_start:.0f}s")

    model.float().eval()
    sd = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    st_io.save(sd, f"{a.out}/model.safetensors", metadata={"format": "pt"})
    exp_cfg = dict(cfg)
    exp_cfg["vocab_size"] = 12800  # as the original config: embeddings hold 12,800 + 4 added tokens
    json.dump(exp_cfg, open(f"{a.out}/config.json", "w"), indent=2)
    res = evaluate(model, tok, device, f"{a.data}/eval", log, a.eval_limit, a.eval_seconds)
    json.dump({"size": a.size, "params": n_params, "steps": step, "epochs": epoch, "eval": res},
              open(f"{a.out}/eval.json", "w"), indent=2)
    log(f"total {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
