"""Time-boxed training of a small RexUniNLU model from scratch, then PyTorch evaluation and export.

  python3 tools/train/train.py --size small --minutes 6 --data .device/train --out OUT/small

Writes OUT/model.safetensors (original key names; fp32, or fp16 with --export-dtype f16),
OUT/config.json, OUT/eval.json, OUT/log.txt, and OUT/checkpoint.pt (model + AdamW state, step,
data position, RNG states) whenever the link phase stops.

Schedule: --warmup-steps linear warm-up, then linear decay to zero at --total-steps. Without
--total-steps the run measures its speed over the first 200 steps and fixes total-steps so that
the schedule ends with --minutes (logged: a rerun with that --total-steps follows the same
schedule step by step). --resume CHECKPOINT continues a stopped run exactly where it stopped (same
batches, same learning rates); --minutes is then this call's time box, and a run that is not done
stops at it and writes a new checkpoint. --init MODEL_DIR starts from a model directory's weights
(fp32 or fp16 safetensors) with a fresh optimizer; a model with fewer layers than --size fills the
deeper model by layer stacking (--init-stack). Sizes: tiny, narrow, small (the bundled model),
medium, deep (8 x 256) and wide (6 x 384, the largest that keeps models/ within 40 MB in F16).
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
    "deep": (256, 8, 4, 1024),  # 10.1 M parameters, 20.1 MB in F16
    "wide": (384, 6, 6, 1280),  # 15.3 M parameters, 30.6 MB in F16 (models/ stays within 40 MB)
}


def stack_init(sd, layers, mode="repeat"):
    """Weights of a deeper model from a shallower one's state dict (progressive stacking): new
    layer i copies old layer i * n // layers ("interleave": 0,0,1,1,...) or i % n ("repeat":
    0,1,..,n-1,0,1,...); every other tensor is taken as it is. The hidden size must agree."""
    pre = "plm.encoder.layer."
    n = 1 + max(int(k[len(pre):].split(".")[0]) for k in sd if k.startswith(pre))
    if layers < n:
        raise ValueError(f"cannot stack {n} layers into {layers}")
    out = {k: v for k, v in sd.items() if not k.startswith(pre)}
    for i in range(layers):
        src = i * n // layers if mode == "interleave" else i % n
        for k, v in sd.items():
            if k.startswith(f"{pre}{src}."):
                out[f"{pre}{i}." + k[len(f"{pre}{src}."):]] = v.clone()
    return out


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
    ap.add_argument("--max-steps", "--total-steps", dest="max_steps", type=int, default=0,
                    help="schedule length in steps (0: fixed from the speed measured over the first 200 steps)")
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
    ap.add_argument("--warmup-steps", type=int, default=300)
    ap.add_argument("--call-steps", type=int, default=0, help="stop this call after this many steps (tests)")
    ap.add_argument("--init", default=None, help="model directory whose weights start the run (fresh optimizer)")
    ap.add_argument("--init-stack", default="repeat", choices=["interleave", "repeat"],
                    help="when --init has fewer layers than --size: how its layers fill the deeper model "
                    "(v2 -> 8 layers, circle loss on 64 training instances: repeat 6.7, interleave 9.0, v2 0.50)")
    ap.add_argument("--resume", default=None, help="checkpoint.pt of a stopped run: continue it exactly")
    ap.add_argument("--export-dtype", default="f32", choices=["f32", "f16"])
    ap.add_argument("--repeat", default="", help="SRC=N[,SRC=N]: use the instances of a source file N times "
                    "per epoch (SRC as in the instances' src field, e.g. cluener=2)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    logf = open(f"{a.out}/log.txt", "a")

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
    if a.repeat:
        rep = {k: int(n) for k, n in (kv.split("=") for kv in a.repeat.split(","))}
        insts = [x for x in insts for _ in range(rep.get(x["src"], 1))]
    log(f"{len(insts)} instances loaded in {time.time() - t0:.1f}s on {device}{' (repeat ' + a.repeat + ')' if a.repeat else ''}")

    hidden, layers, heads, inter = SIZES[a.size]
    cfg = config_for(hidden, layers, heads, inter)
    model = RexModel(cfg, dropout=a.dropout)
    init_weights(model)
    resumed = None
    if a.resume:
        resumed = torch.load(a.resume, map_location="cpu", weights_only=False)
        model.load_state_dict(resumed["model"])
    elif a.init:
        sd = {k: v.float() for k, v in st_io.load(f"{a.init}/model.safetensors").items()}
        n_init = len({k.split(".")[3] for k in sd if k.startswith("plm.encoder.layer.")})
        if n_init != layers:
            sd = stack_init(sd, layers, a.init_stack)
        model.load_state_dict(sd)
        log(f"weights from {a.init}" + (f" ({n_init} layers stacked into {layers}, {a.init_stack})"
                                        if n_init != layers else ""))
    model.to(device)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"size {a.size}: hidden {hidden}, layers {layers}, heads {heads}, ffn {inter}, params {n_params}")
    use_amp = device == "cuda"

    def make_opt(params_named, lr):
        decay = [p for n, p in params_named if p.requires_grad and p.dim() >= 2]
        no_decay = [p for n, p in params_named if p.requires_grad and p.dim() < 2]
        return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                 lr=lr, betas=(0.9, 0.98), eps=1e-6)

    def lr_at(step, lr0, total, warmup):
        if step < warmup:
            return lr0 * (step + 1) / warmup
        return lr0 * max(0.0, (total - step) / max(1, total - warmup))

    def run_phase(name, seconds, max_steps, lr0, opt, params, loss_fn, st=None):
        """Trains until `seconds` of this call are spent or st["total"] steps are done.

        st (the resumable state): step, epoch (1-based, the current one), pos (batches of the
        current epoch already done), epoch_rng (the batch RNG's state when the epoch's order was
        drawn), total (None: fixed from the measured speed at step 200), warmup."""
        if st is None:
            st = {"step": 0, "epoch": 0, "pos": 0, "epoch_rng": None, "total": max_steps or None,
                  "warmup": a.warmup_steps}
        t_start = time.time()
        ema = None
        first_step = st["step"]
        while True:
            if st["epoch_rng"] is None:  # a new epoch: draw its batch order
                st["epoch"] += 1
                st["pos"] = 0
                st["epoch_rng"] = rng.getstate()
            else:  # resuming inside an epoch: the same order again
                rng.setstate(st["epoch_rng"])
            order = batches(insts, a.batch_tokens, rng)
            while st["pos"] < len(order):
                b = order[st["pos"]]
                spent = time.time() - t_start
                if st["total"] is None and st["step"] >= 200:
                    st["total"] = max(st["warmup"] + 1, int(st["step"] / spent * seconds * 0.97))
                    log(f"{name}: {st['step']} steps in {spent:.0f}s: total steps fixed at {st['total']}")
                done = st["total"] is not None and st["step"] >= st["total"]
                if done or spent >= seconds or (a.call_steps and st["step"] - first_step >= a.call_steps):
                    log(f"{name}: {'done' if done else 'stopped (time box)'} at step {st['step']}, epoch "
                        f"{st['epoch']}, batch {st['pos']} of {len(order)}, {spent:.0f}s in this call")
                    st["finished"] = bool(done)
                    return st
                lr = lr_at(st["step"], lr0, st["total"] or 10 ** 9, st["warmup"])
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
                st["step"] += 1
                st["pos"] += 1
                ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
                if st["step"] % 200 == 0 or st["step"] == 1:
                    log(f"{name} step {st['step']} epoch {st['epoch']} lr {lr:.2e} loss {ema:.4f} "
                        f"elapsed {time.time() - t_start:.0f}s")
            st["epoch_rng"] = None

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
    if a.mlm_frac > 0 and not resumed:
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
        mlm_steps = run_phase("mlm", budget * a.mlm_frac, a.max_steps // 2 if a.max_steps else 0, a.mlm_lr, opt,
                              [p for _, p in named], mlm_loss)["step"]
        del head, opt
    opt = make_opt(list(model.named_parameters()), a.lr)
    st = None
    if resumed is not None:
        opt.load_state_dict(resumed["opt"])
        st = resumed["state"]
        rng.setstate(resumed["rng"])
        torch.set_rng_state(resumed["torch_rng"])
        if device == "cuda" and resumed.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(resumed["cuda_rng"])
        log(f"resumed from {a.resume}: step {st['step']} of {st['total']}, epoch {st['epoch']}, batch {st['pos']}")
    st = run_phase("link", budget * (1 - a.mlm_frac), a.max_steps, a.lr, opt,
                   list(model.parameters()), link_loss, st)
    step, epoch = st["step"], st["epoch"]
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "state": st, "rng": rng.getstate(),
                "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state() if device == "cuda" else None,
                "args": vars(a), "size": a.size}, f"{a.out}/checkpoint.pt")
    log(f"trained {mlm_steps} MLM + {step} link steps ({epoch} epochs) in {time.time() - t0:.0f}s since start; "
        f"checkpoint written ({'schedule finished' if st['finished'] else 'not finished: --resume it'})")

    model.float().eval()
    dt = torch.float16 if a.export_dtype == "f16" else torch.float32
    sd = {k: v.detach().float().cpu().to(dt) for k, v in model.state_dict().items()}
    st_io.save(sd, f"{a.out}/model.safetensors", metadata={"format": "pt"})
    exp_cfg = dict(cfg)
    exp_cfg["vocab_size"] = 12800  # as the original config: embeddings hold 12,800 + 4 added tokens
    json.dump(exp_cfg, open(f"{a.out}/config.json", "w"), indent=2)
    res = evaluate(model, tok, device, f"{a.data}/eval", log, a.eval_limit, a.eval_seconds)
    json.dump({"size": a.size, "params": n_params, "mlm_frac": a.mlm_frac, "mlm_steps": mlm_steps, "steps": step,
               "epochs": epoch, "total_steps": st["total"], "finished": st["finished"], "init": a.init,
               "resume": a.resume, "seed": a.seed, "lr": a.lr, "repeat": a.repeat, "eval": res},
              open(f"{a.out}/eval.json", "w"), indent=2)
    log(f"total {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
