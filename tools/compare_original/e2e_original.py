#!/usr/bin/env python3
"""Times the ORIGINAL RexUniNLU pipeline's end-to-end extraction call (the `rex/` package of the
ModelScope model repo, public mirror AisakaTaiga143-6/dy_second at 7d800dd; not part of this
repository) on a model directory, text by text, as the ModelScope pipeline runs it:
`RexUniNLUPipeline.forward` (ms_wrapper.py) calls `RexModelTrainer.prediction_step(model,
{"text", "schema"}, prediction_loss_only=False, do_pred=True)`, which tokenizes (HF fast BERT
tokenizer with the 4 added special tokens), builds position ids and the 2D mask
(`UIEDataLoader.build_position_ids_attn_mask`), runs `RexModel.forward` once per window and
schema level and decodes (`prompt_loop`, `infer_info_from_prediction`). All of that is the
original's code, imported from ORIG_DIR.

What is replaced, because the framework around it is not installed (modelscope) or changed
(transformers 5 Trainer): the Trainer object is not constructed (no Trainer.__init__: its
`prediction_step` and helpers are called on an instance with the attributes they read: tokenizer,
rex_dl); `compute_loss_context_manager` is a no-op (the original's is autocast only when fp16/bf16
training args are set, which the pipeline does not set) and `_prepare_inputs` moves the tensors to
the device (as Trainer's does); `RexModel.__init__` gets the encoder from the config instead of
`from_pretrained(base dir)`, then the checkpoint is loaded with `load_state_dict(strict=False)`
exactly as ms_wrapper does (every weight is checked to be loaded); `datasets` and `jsonlines`
(imported, used only for training) are stubbed when missing.

    python3 e2e_original.py ORIG_DIR MODEL_DIR TEXTS.jsonl OUT.jsonl [--device cuda] [--rounds 3]
        [--autocast fp16]

TEXTS.jsonl: lines with "text" and "schema". Prints one JSON line: calls, median / mean ms per call.
OUT.jsonl: the pipeline's output per text (first round), {"text", "output"}.
"""
import argparse
import contextlib
import importlib.machinery
import json
import os
import statistics
import sys
import time
import types


def stub_missing(name, **attrs):
    try:
        __import__(name)
    except ImportError:
        m = types.ModuleType(name)
        m.__spec__ = importlib.machinery.ModuleSpec(name, None)  # importlib.util.find_spec() must not fail on it
        m.__dict__.update(attrs)
        sys.modules[name] = m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("orig"), ap.add_argument("model"), ap.add_argument("texts"), ap.add_argument("out")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--autocast", default="", help="fp16: run the model under torch.autocast(float16)")
    a = ap.parse_args()

    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoTokenizer

    stub_missing("jsonlines")
    import transformers.trainer  # noqa: F401  before the datasets stub: it asks whether datasets is installed
    stub_missing("datasets", load_dataset=None)
    sys.path.insert(0, a.orig)
    from rex.data_utils import data_loader, token_config  # original code
    from rex.model import model as rex_model
    from rex.model.utils_mod import DebertaV2Model2dAttnMask
    from rex.Trainer.trainer import RexModelTrainer

    dev = torch.device(a.device)
    # ms_wrapper.RexUniNLUPipeline.init_model, with the framework parts named in the docstring replaced
    tokenizer = AutoTokenizer.from_pretrained(a.model)
    special = [token_config.PREFIX_TOKEN, token_config.TYPE_TOKEN, token_config.CLASSIFY_TOKEN,
               token_config.MULTI_CLASSIFY_TOKEN]
    tokenizer.add_special_tokens({"additional_special_tokens": special})
    if not hasattr(tokenizer, "additional_special_tokens"):
        # transformers 5 dropped the attribute the original's prompt_loop reads (the GPU machine
        # has 5.x): give this tokenizer's class the list back, as transformers 4 kept it.
        cls = type(tokenizer)
        tokenizer.__class__ = type(cls.__name__, (cls,), {"additional_special_tokens": property(lambda self: special)})
    config = AutoConfig.from_pretrained(a.model)
    DebertaV2Model2dAttnMask.from_pretrained = classmethod(lambda cls, _dir: cls(config))
    model = rex_model.RexModel(config, types.SimpleNamespace(bert_model_dir=a.model), None)
    state = load_file(os.path.join(a.model, "model.safetensors"))
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if "position_ids" not in m]
    assert not missing and not unexpected, (missing, unexpected)
    model = model.to(dev, torch.float32).eval()

    # rex/arguments.py DataArguments' defaults (what get_args() gives the pipeline); that module itself
    # imports names transformers 5 no longer has, so its values are repeated here
    data_args = types.SimpleNamespace(stride_len=32, max_len=512, hint_max_len=256, negative_sampling_rate=1.0,
                                      data_path="", prefix_string_max_len=125, info_type_max_len=125,
                                      empty_sampling_rate=1, in_low_res=False)
    rex_dl = data_loader.UIEDataLoader(data_args, tokenizer, None, -1, 1, a.device == "cpu")

    class Pipeline(RexModelTrainer):
        tokenizer = None  # shadows Trainer's property: prediction_step reads self.tokenizer

        def __init__(self):  # noqa: the Trainer is not constructed, see the docstring
            self.tokenizer, self.rex_dl = tokenizer, rex_dl

        def compute_loss_context_manager(self):
            if a.autocast == "fp16":
                return torch.autocast(device_type=dev.type, dtype=torch.float16)
            return contextlib.nullcontext()

        def _prepare_inputs(self, batch):
            return [x.to(dev) if x is not None else None for x in batch]

    pipe = Pipeline()
    lines = [json.loads(l) for l in open(a.texts, encoding="utf-8") if l.strip()]

    def call(line):  # RexUniNLUPipeline.forward without its two print()s
        schema = line["schema"]
        if isinstance(schema, str):
            schema = json.loads(schema)
        return pipe.prediction_step(model, {"text": line["text"], "schema": schema}, prediction_loss_only=False, do_pred=True)

    for i in range(a.warmup):
        call(lines[i % len(lines)])
    times, outputs = [], []
    for r in range(a.rounds):
        for line in lines:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = call(line)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            if r == 0:
                outputs.append({"text": line["text"], "output": out})
    with open(a.out, "w", encoding="utf-8") as f:
        for o in outputs:
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
    print(json.dumps({"pipeline": "original", "device": a.device, "autocast": a.autocast or "none",
                      "model": os.path.basename(os.path.normpath(a.model)), "texts": len(lines), "calls": len(times),
                      "median_ms": round(statistics.median(times) * 1e3, 3),
                      "mean_ms": round(statistics.mean(times) * 1e3, 3),
                      "total_s": round(sum(times), 3),
                      "paths": sum(len(o["output"]) for o in outputs)}))


if __name__ == "__main__":
    main()
