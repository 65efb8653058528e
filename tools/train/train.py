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


class MlmHead(torch.nn.Module):
    """BERT-style MLM head for the warm-up only (not exported): dense + gelu + LayerNorm, then the
    word-embedding matrix (tied) + bias."""

    def __init__(self, emb, hidden):
        super().__init__()
        self.emb = emb
        self.dense = torch.nn.Linear(hidden, hidden)
        self.norm = torch.nn.LayerNorm(hidden, eps=1e-7)
        self.bias = torch.nn.Parameter(torch.zeros(emb.weight.shape[0]))

    def forward(self, h):
        return torch.nn.functional.linear(self.norm(torch.nn.functional.gelu(self.dense(h))), self.emb.weight, self.bias)


def mask_tokens(ids, valid, special_ids, mask_id, vocab_n, gen, rate=0.15):
    # vocab_n: (first, end) id range of ordinary word pieces, for the 10% random replacements
    """BERT masking of the non-special tokens of a batch (prompt types and text alike):
    returns the corrupted ids and the boolean positions to predict."""
    maskable = valid & ~torch.isin(ids, special_ids)
    pick = maskable & (torch.rand(ids.shape, generator=gen, device=ids.device) < rate)
    r = torch.rand(ids.shape, generator=gen, device=ids.device)
    out = ids.clone()
    out[pick & (r < 0.8)] = mask_id
    rnd = pick & (r >= 0.8) & (r < 0.9)
    out[rnd] = torch.randint(vocab_n[0], vocab_n[1], ids.shape, generator=gen, device=ids.device)[rnd]
    return out, pick


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
    ap.add_argument("--mlm-frac", type=float, default=0.0, help="share of --minutes spent on the MLM warm-up")
    ap.add_argument("--mlm-lr", type=float, default=1e-3)
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
    use_amp = device == "cuda"

    def make_opt(params_named, lr):
        decay = [p for n, p in params_named if p.requires_grad and p.dim() >= 2]
        no_decay = [p for n, p in params_named if p.requires_grad and p.dim() < 2]
        return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                 lr=lr, betas=(0.9, 0.98), eps=1e-6)

    def run_phase(name, seconds, max_steps, lr0, opt, params, loss_fn):
        """Warm-up (4%) then linear decay to zero over the phase's time (or step) budget."""
        t_start = time.time()
        step, epoch, ema = 0, 0, None
        while True:
            epoch += 1
            for b in batches(insts, a.batch_tokens, rng):
                frac = (time.time() - t_start) / seconds
                if max_steps:
                    frac = max(frac, step / max_steps)
                if frac >= 1:
                    log(f"{name}: {step} steps, {epoch} epochs in {time.time() - t_start:.0f}s")
                    return step, epoch
                lr = lr0 * min(1.0, frac / 0.04) * max(0.0, (1 - frac) / 0.96 if frac > 0.04 else 1.0)
                for g in opt.param_groups:
                    g["lr"] = lr
                model.train()
                items = [insts[i] for i in b]
                ids, mask, pos, valid = make_batch(tok, [x["ids"] for x in items], device,
                                                   [x["segs"] for x in items])
                if use_amp:
                    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                        loss = loss_fn(items, ids, mask, pos, valid)
                else:
                    loss = loss_fn(items, ids, mask, pos, valid)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                step += 1
                ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
                if step % 200 == 0 or step == 1:
                    log(f"{name} step {step} epoch {epoch} lr {lr:.2e} loss {ema:.4f} "
                        f"elapsed {time.time() - t_start:.0f}s")

    def link_loss(items, ids, mask, pos, valid):
        B, L = ids.shape
        z = model(ids, mask, pos)
        labels = torch.zeros(B, L, L, device=device)
        bi = [k for k, x in enumerate(items) for _ in x["rows"]]
        if bi:
            labels[torch.tensor(bi, device=device),
                   torch.tensor([r for x in items for r in x["rows"]], device=device),
                   torch.tensor([c for x in items for c in x["cols"]], device=device)] = 1.0
        return circle_loss(z.float(), labels, valid.unsqueeze(2) & valid.unsqueeze(1))

    budget = a.minutes * 60
    mlm_steps = 0
    if a.mlm_frac > 0:
        # MLM warm-up on the training sequences themselves (prompt + text, same 2D mask and
        # positions as the link task), so the encoder starts from word statistics, not noise.
        head = MlmHead(model.plm.embeddings.word_embeddings, hidden).to(device)
        special_ids = torch.tensor([tok.vocab[t] for t in tok.specials], device=device)
        words = [i for t, i in tok.vocab.items() if not (t.startswith("[") and t.endswith("]"))]
        wrange = (min(words), max(words) + 1)
        gen = torch.Generator(device=device)
        gen.manual_seed(a.seed)

        def mlm_loss(items, ids, mask, pos, valid):
            inp, pick = mask_tokens(ids, valid, special_ids, tok.vocab["[MASK]"], wrange, gen)
            if not bool(pick.any()):
                pick = valid.clone()
            _, h = model(inp, mask, pos, return_hidden=True)
            logits = head(h[pick]).float()
            return torch.nn.functional.cross_entropy(logits, ids[pick])

        named = list(model.named_parameters()) + [(f"mlm.{n}", p) for n, p in head.named_parameters()
                                                   if not n.startswith("emb.")]
        opt = make_opt(named, a.mlm_lr)
        mlm_steps, _ = run_phase("mlm", budget * a.mlm_frac, a.max_steps // 2 if a.max_steps else 0, a.mlm_lr, opt,
                                 [p for _, p in named], mlm_loss)
        del head, opt
    opt = make_opt(list(model.named_parameters()), a.lr)
    step, epoch = run_phase("link", budget * (1 - a.mlm_frac), a.max_steps, a.lr, opt,
                            list(model.parameters()), link_loss)
    log(f"trained {mlm_steps} MLM + {step} link steps ({epoch} epochs) in {time.time() - t0:.0f}s since start")

    model.float().eval()
    sd = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    st_io.save(sd, f"{a.out}/model.safetensors", metadata={"format": "pt"})
    exp_cfg = dict(cfg)
    exp_cfg["vocab_size"] = 12800  # as the original config: embeddings hold 12,800 + 4 added tokens
    json.dump(exp_cfg, open(f"{a.out}/config.json", "w"), indent=2)
    res = evaluate(model, tok, device, f"{a.data}/eval", log, a.eval_limit, a.eval_seconds)
    json.dump({"size": a.size, "params": n_params, "mlm_frac": a.mlm_frac, "mlm_steps": mlm_steps, "steps": step, "epochs": epoch, "eval": res},
              open(f"{a.out}/eval.json", "w"), indent=2)
    log(f"total {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
