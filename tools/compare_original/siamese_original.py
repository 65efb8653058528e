#!/usr/bin/env python3
"""Runs the ORIGINAL ModelScope SiameseUIE code (model `modelscope/models/nlp/bert/siamese_uie.py`
on modelscope's own BERT backbone `models/nlp/bert/backbone.py`, pipeline
`modelscope/pipelines/nlp/siamese_uie_pipeline.py`, preprocessor
`preprocessors/nlp/siamese_uie_preprocessor.py`) from a modelscope source tree on a full-size
random SiameseUIE model, and writes reference files in the format of the tiny fixtures
(tests/data/siamese_uie_tiny), which tests/siamese_uie/test_siamese_fullsize.cpp reads.

    siamese_original.py MODELSCOPE_SRC MODEL_DIR CASES_JSONL OUT_DIR

MODELSCOPE_SRC: a checkout of github.com/modelscope/modelscope (the folder holding `modelscope/`);
nothing of it is copied here: its files are imported as they are. Only the framework around them
(registries, the Model/Pipeline/Preprocessor base classes, the hub) is replaced by the small
stand-ins below, because installing all of modelscope needs far more than these files use.
Under transformers 5 (the GPU machine's python), which dropped what modelscope's BERT files use
from transformers 4 (`transformers.onnx`, PreTrainedModel.get_extended_attention_mask /
get_head_mask, the config's is_decoder / add_cross_attention defaults), those come from
transformers 4.40's definitions below (`_Transformers4`); ORIGINAL_TRANSFORMERS4_STANDINS=1 uses
them under transformers 4 too, to check that they change nothing.
DEVICE=cuda (default cpu) runs the original there, as its pipeline does with device='gpu': the
model moved to the GPU, and the pipeline's own `torch.cuda.amp.autocast()` around every forward
then runs its float32 model's matrix products in float16 (float64 is left alone by autocast).
MODEL_DIR: written by siamese_fullsize_case.py. CASES_JSONL: {id, text, schema} per line.
OUT_DIR gets
  forward_cases.jsonl  per case of at most 384 tokens (one window): text_ids/offsets, the first schema type's hint and its ids, the
                       lower-layer text states and the head/tail logits (float64 run);
  e2e_cases.jsonl      per case: {id, text, schema, expected} = the pipeline's output (float32 run,
                       as users run it) and expected_f64 (float64 run: where they differ a decision
                       sits on the threshold).
"""
import functools
import importlib
import importlib.util
import json
import os
import sys
import time
import types

import torch


def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def _package(name, path=None):
    m = _module(name)
    m.__path__ = [path] if path else []
    return m


class _Registry:
    def register_module(self, *args, **kwargs):
        return lambda cls: cls


class _Transformers4:
    """What modelscope's BERT files take from transformers 4 and transformers 5 no longer has, as
    transformers 4.40.2 defines it (only the parts these files reach: an encoder, no decoder)."""

    class PretrainedConfig:  # configuration_utils.PretrainedConfig: the defaults backbone.py reads
        def __init__(self, **kwargs):
            self.return_dict = kwargs.pop("return_dict", True)
            self.output_hidden_states = kwargs.pop("output_hidden_states", False)
            self.output_attentions = kwargs.pop("output_attentions", False)
            self.is_decoder = kwargs.pop("is_decoder", False)
            self.add_cross_attention = kwargs.pop("add_cross_attention", False)
            self.chunk_size_feed_forward = kwargs.pop("chunk_size_feed_forward", 0)
            self.name_or_path = str(kwargs.pop("name_or_path", ""))
            for key, value in kwargs.items():
                setattr(self, key, value)

        @property
        def use_return_dict(self):
            return self.return_dict

        @classmethod
        def from_json_file(cls, path):
            with open(path, encoding="utf-8") as f:
                return cls(**json.load(f))

    class PreTrainedModel(torch.nn.Module):  # modeling_utils.PreTrainedModel + ModuleUtilsMixin
        def __init__(self, config, *args, **kwargs):
            super().__init__()
            self.config = config

        def post_init(self):  # init_weights(); every weight is loaded afterwards anyway
            self.apply(self._init_weights)

        @property
        def dtype(self):
            return next(p.dtype for p in self.parameters() if p.is_floating_point())

        def get_head_mask(self, head_mask, num_hidden_layers, is_attention_chunked=False):
            if head_mask is not None:
                raise NotImplementedError("head masks: not used by the SiameseUIE pipeline")
            return [None] * num_hidden_layers

        def get_extended_attention_mask(self, attention_mask, input_shape, device=None, dtype=None):
            if dtype is None:
                dtype = self.dtype
            if attention_mask.dim() == 3:
                extended = attention_mask[:, None, :, :]
            elif attention_mask.dim() == 2 and not self.config.is_decoder:
                extended = attention_mask[:, None, None, :]
            else:
                raise ValueError(f"attention mask of shape {tuple(attention_mask.shape)}: not an encoder's")
            extended = extended.to(dtype=dtype)  # fp16 compatibility
            return (1.0 - extended) * torch.finfo(dtype).min

    class OnnxConfig:  # transformers.onnx.OnnxConfig: a base class configuration.py names, unused
        pass


def _transformers4_modules():
    """The stand-in modules to import modelscope's BERT files with, or {} where transformers has
    what they use (transformers 4, unless ORIGINAL_TRANSFORMERS4_STANDINS=1)."""
    from transformers.modeling_utils import PreTrainedModel
    if hasattr(PreTrainedModel, "get_extended_attention_mask") and os.environ.get("ORIGINAL_TRANSFORMERS4_STANDINS") != "1":
        return {}
    t4 = _Transformers4
    return {"transformers.configuration_utils": types.SimpleNamespace(PretrainedConfig=t4.PretrainedConfig),
            "transformers.modeling_utils": types.SimpleNamespace(PreTrainedModel=t4.PreTrainedModel),
            "transformers.onnx": types.SimpleNamespace(OnnxConfig=t4.OnnxConfig)}


def install_original(src):
    """Imports the original files from `src`, with stand-ins for the framework they sit in."""
    root = os.path.join(src, "modelscope")
    _package("modelscope", root)
    import transformers.modeling_utils  # noqa: F401  (before the scipy stand-in: it looks for scipy)
    if importlib.util.find_spec("scipy") is None:
        _module("scipy")
        _module("scipy.special", softmax=None)  # imported by the pipeline, not used by it

    class Model:  # modelscope.models.base.Model: keeps model_dir; no super() call
        def __init__(self, model_dir=None, *args, **kwargs):
            self.model_dir = model_dir

    class TorchModel(Model, torch.nn.Module):  # modelscope.models.base.TorchModel.__init__
        def __init__(self, model_dir=None, *args, **kwargs):
            super().__init__(model_dir, *args, **kwargs)
            torch.nn.Module.__init__(self)

    _package("modelscope.models", os.path.join(root, "models"))
    sys.modules["modelscope.models"].Model = Model
    sys.modules["modelscope.models"].TorchModel = TorchModel
    _module("modelscope.models.base", Model=Model, TorchModel=TorchModel)
    _module("modelscope.models.builder", MODELS=_Registry())
    _package("modelscope.models.nlp", os.path.join(root, "models", "nlp"))
    _package("modelscope.models.nlp.bert", os.path.join(root, "models", "nlp", "bert"))
    _package("modelscope.utils.nlp", os.path.join(root, "utils", "nlp"))
    _module("modelscope.utils.nlp.utils", parse_labels_in_order=None)  # loading from a hub dir only
    _module("modelscope.msdatasets", MsDataset=type("MsDataset", (), {}))

    class Pipeline:  # modelscope.pipelines.base.Pipeline: holds model/preprocessor; prepare_model's move
        def __init__(self, model=None, preprocessor=None, device="cpu", **kwargs):
            self.model, self.preprocessor = model, preprocessor
            self.device = torch.device(device)
            if model is not None:
                model.to(self.device)
            self._model_prepare = True

    class Preprocessor:
        def __init__(self, mode=None, *args, **kwargs):
            self.mode = mode

    _package("modelscope.pipelines", os.path.join(root, "pipelines"))
    _module("modelscope.pipelines.base", Pipeline=Pipeline)
    _module("modelscope.pipelines.builder", PIPELINES=_Registry())
    _package("modelscope.pipelines.nlp", os.path.join(root, "pipelines", "nlp"))
    _package("modelscope.preprocessors", os.path.join(root, "preprocessors"))
    sys.modules["modelscope.preprocessors"].Preprocessor = Preprocessor
    _module("modelscope.preprocessors.builder", PREPROCESSORS=_Registry())
    _package("modelscope.preprocessors.nlp", os.path.join(root, "preprocessors", "nlp"))
    _module("modelscope.preprocessors.nlp.transformers_tokenizer", NLPTokenizer=None)
    _module("modelscope.utils.hub", get_model_type=None)

    def load(name, path):
        spec = importlib.util.spec_from_file_location(name, os.path.join(root, path))
        m = importlib.util.module_from_spec(spec)
        sys.modules[name] = m
        spec.loader.exec_module(m)
        return m

    standins = _transformers4_modules()  # in place while modelscope's BERT files import, then restored
    saved = {name: sys.modules.get(name) for name in standins}
    sys.modules.update(standins)
    try:
        load("modelscope.models.nlp.bert.configuration", "models/nlp/bert/configuration.py")
        load("modelscope.models.nlp.bert.backbone", "models/nlp/bert/backbone.py")
        model_mod = load("modelscope.models.nlp.bert.siamese_uie", "models/nlp/bert/siamese_uie.py")
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    if standins:
        print("siamese_original.py: transformers 4.40's PretrainedConfig / PreTrainedModel parts stand in "
              f"(transformers {__import__('transformers').__version__})", file=sys.stderr)
    pre_mod = load("modelscope.preprocessors.nlp.siamese_uie_preprocessor",
                   "preprocessors/nlp/siamese_uie_preprocessor.py")
    sys.modules["modelscope.preprocessors"].SiameseUiePreprocessor = pre_mod.SiameseUiePreprocessor
    amp = importlib.import_module("torch.cuda.amp")
    if not hasattr(amp, "autocast"):  # the pipeline's import; a later torch spells it torch.autocast("cuda")
        amp.autocast = functools.partial(torch.autocast, "cuda")
    pipe_mod = load("modelscope.pipelines.nlp.siamese_uie_pipeline", "pipelines/nlp/siamese_uie_pipeline.py")
    return model_mod.SiameseUieModel, pre_mod.SiameseUiePreprocessor, pipe_mod.SiameseUiePipeline


def load_model(model_cls, model_dir, dtype):
    from safetensors.torch import load_file
    cfg = sys.modules["modelscope.models.nlp.bert.configuration"].BertConfig.from_json_file(
        os.path.join(model_dir, "config.json"))
    model = model_cls(cfg)
    state = load_file(os.path.join(model_dir, "model.safetensors"))
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise SystemExit(f"state dict mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model.to(dtype).eval()


def main():
    src, model_dir, cases_path, out = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    device = torch.device(os.environ.get("DEVICE", "cpu"))
    model_cls, pre_cls, pipe_cls = install_original(src)
    pre = pre_cls(model_dir)
    cases = [json.loads(line) for line in open(cases_path, encoding="utf-8") if line.strip()]
    m64 = load_model(model_cls, model_dir, torch.float64).to(device)
    with open(os.path.join(out, "forward_cases.jsonl"), "w", encoding="utf-8") as f:
        for c in cases:
            enc = pre([c["text"]])[0]
            if len(enc.ids) > 384:  # one window only: longer texts are compared end to end
                continue
            hint = next(iter(c["schema"])) + ": "
            hint_ids = pre([hint])[0].ids
            ids = torch.tensor([enc.ids], device=device)
            mask = torch.ones_like(ids)
            with torch.no_grad():
                lower = m64.get_plm_sequence_output(ids, mask)
                head, tail = m64.fast_inference(lower, mask, torch.tensor([hint_ids], device=device),
                                                torch.ones(1, len(hint_ids), dtype=torch.long, device=device))
            f.write(json.dumps({"id": c["id"], "hint": hint, "text_ids": enc.ids,
                                "text_offsets": [list(o) for o in enc.offsets], "hint_ids": hint_ids,
                                "text_hidden_lower": lower[0].tolist(), "head_logits": head[0].tolist(),
                                "tail_logits": tail[0].tolist()}, ensure_ascii=False) + "\n")
    results = {}
    for name, dtype in (("f64", torch.float64), ("f32", torch.float32)):
        pipe = pipe_cls(model=m64 if dtype == torch.float64 else load_model(model_cls, model_dir, dtype),
                        preprocessor=pre, device=device)  # on CUDA the f32 run is the pipeline's autocast (fp16)
        for c in cases:
            t0 = time.perf_counter()
            results[(c["id"], name)] = pipe(c["text"], schema=c["schema"])["output"]
            print(f"{name} {c['id']}: {len(results[(c['id'], name)])} paths, {time.perf_counter() - t0:.2f} s",
                  flush=True)
    with open(os.path.join(out, "e2e_cases.jsonl"), "w", encoding="utf-8") as f:
        for c in cases:
            row = dict(c, expected=results[(c["id"], "f32")], expected_f64=results[(c["id"], "f64")])
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            same = row["expected"] == row["expected_f64"]
            print(f"{c['id']}: original f32 {'==' if same else '!='} original f64")


if __name__ == "__main__":
    main()
