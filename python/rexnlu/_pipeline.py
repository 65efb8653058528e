"""The ModelScope-style call: pipeline(task, model=...)(input=text, schema=schema)."""

import os
import warnings

from . import _rexnlu

# ModelScope task name -> the engine's model family that runs it (Engine.info()['family']).
# 'rex-uninlu' is the task of RexUniNLU's configuration.json; 'siamese-uie' is Tasks.siamese_uie.
TASKS = {
    "rex-uninlu": "rex-uninlu",
    "siamese-uie": "siamese-uie",
}

# The original pipeline's output keys: no probability unless asked for.
_PIPELINE_DEFAULTS = {"probabilities": False}

_ERRORS = {
    "invalid_input": ValueError,
    "limit_exceeded": _rexnlu.LimitExceededError,
    "invalid_model": _rexnlu.ModelError,
    "cancelled": TimeoutError,
    "io": OSError,
}


class RexnluWarning(UserWarning):
    """The engine skipped part of a request (e.g. a type name longer than 125 word pieces)."""


def _device(device):
    """ModelScope's device strings ('cpu', 'cpu:0', 'gpu', 'gpu:N') in the engine's spelling ('cpu',
    'cuda', 'cuda:N'); the engine checks the result (a ValueError naming what it expects)."""
    name, colon, index = str(device).lower().partition(":")
    if name == "gpu":
        name = "cuda"
    if name == "cpu" and index in ("", "0"):
        return "cpu"
    return name + colon + index


def _model_dir(model):
    """A model directory, or a ModelScope model id found in the local ModelScope cache."""
    if model is None:
        bundled = os.path.join(os.path.dirname(__file__), "models", "rexnlu-demo-zh-small")
        return bundled if os.path.isfile(os.path.join(bundled, "config.json")) else None
    path = os.fspath(model)
    if os.path.isdir(path) or path.count("/") != 1 or os.path.isabs(path):
        return path
    cache = os.environ.get("MODELSCOPE_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "modelscope", "hub"))
    for candidate in (os.path.join(cache, path), os.path.join(cache, "models", path)):
        if os.path.isfile(os.path.join(candidate, "config.json")):
            return candidate
    raise _rexnlu.ModelError(
        f"{path}: no such model directory, nor in the ModelScope cache {cache}; rexnlu does not download "
        "models: pass the directory that holds config.json, vocab.txt and the weights")


def _raise_for(result, index=None):
    """Raises the exception of a failed batch item's error_kind; index names it in a list."""
    if "error" in result:
        where = "" if index is None else f"input[{index}]: "
        raise _ERRORS.get(result["error_kind"], RuntimeError)(where + result["error"])


def _warn(result):
    for message in result.pop("warnings", ()):
        warnings.warn(message, RexnluWarning, stacklevel=3)
    return result


class Pipeline:
    """A loaded model called as ModelScope's pipeline is: ``p(input=text, schema=schema)``.

    Made by :func:`pipeline`. Calls return ``{'output': [path, ...]}``, a path being a list of
    ``{'type', 'span', 'offset': [start, end]}`` from the schema's root to a leaf, with offsets in
    code points of the text (``text[start:end] == span``). Options given to :func:`pipeline` apply
    to every call; a call's own keyword options override them. Safe to share between threads.
    """

    def __init__(self, task, engine, model_dir, options):
        self.task = task
        self.model = model_dir
        self.engine = engine
        self.options = dict(options)

    def __repr__(self):
        return f"rexnlu.Pipeline(task={self.task!r}, model={self.model!r})"

    def __call__(self, input=None, schema=None, *, timeout=None, **options):
        """Runs ``input`` (a str, or a list of str as one batched call) with ``schema``.

        schema: a dict such as ``{'人物': None, '组织机构': None}`` (nested for relations and events)
        or the same as a JSON string. options: link_threshold, max_len, stride, hint_max_len, dedup,
        probabilities, byte_offsets, max_batch_cells (docs/options.md). timeout: seconds.
        Returns one dict for a str, a list of dicts for a list. Raises TypeError / ValueError with
        the engine's message for a bad input, schema or option.
        """
        if input is None:
            raise TypeError("input is required: a text (str) or a list of texts")
        if schema is None:
            raise TypeError("schema is required: a dict such as {'人物': None} or a JSON string")
        merged = {**self.options, **options} if options else self.options
        if isinstance(input, str):
            return _warn(self.engine.extract(input, schema, timeout=timeout, **merged))
        results = self.engine.extract_batch(input, schema, timeout=timeout, **merged)
        for i, r in enumerate(results):
            _raise_for(r, i)
        return [_warn(r) for r in results]

    def run_task(self, task, input, labels=None, *, text2=None, question=None, timeout=None, **options):
        """Runs a task preset (the names of ``rexnlu extract --task``; :data:`rexnlu.task_names`).

        The preset builds the text marker and schema the model expects from simple arguments.
        When it changed the text (a [CLASSIFY] marker, a '#', two passages joined), the result
        carries that ``'text'``, which its offsets refer to. ``input`` may be a list (one batched call).
        """
        texts = [input] if isinstance(input, str) else list(input)
        built = [_rexnlu.build_task(task, t, labels, text2, question) for t in texts]
        merged = {**self.options, **options}
        results = self.engine.extract_batch([b[0] for b in built], [b[1] for b in built], timeout=timeout, **merged)
        single = isinstance(input, str)
        for i, (r, t, b) in enumerate(zip(results, texts, built)):
            _raise_for(r, None if single else i)
            _warn(r)
            if b[0] != t:
                r["text"] = b[0]
        return results[0] if single else results

    def ner(self, input, labels, **options):
        """Named entities of the types ``labels``, e.g. ``['人名', '公司']``."""
        return self.run_task("ner", input, labels, **options)

    def re(self, input, labels, **options):
        """Relations, ``labels`` as ``'subject type/relation(object type)'``."""
        return self.run_task("re", input, labels, **options)

    def ee(self, input, labels, **options):
        """Events, ``labels`` as ``'event(事件触发词)/role'``."""
        return self.run_task("ee", input, labels, **options)

    def absa(self, input, labels=None, **options):
        """Aspects and their sentiment (``labels``: sentiment classes; default plain 情感词)."""
        return self.run_task("absa", input, labels, **options)

    def sentiment(self, input, labels=None, **options):
        """Sentiment classification (``labels`` overrides 正向情感 / 负向情感)."""
        return self.run_task("sentiment", input, labels, **options)

    def classify(self, input, labels, **options):
        """Single-label classification; ``'a/b'`` labels make a hierarchy."""
        return self.run_task("classify", input, labels, **options)

    def multi_classify(self, input, labels, **options):
        """Multi-label classification; ``'a/b'`` labels make a hierarchy."""
        return self.run_task("multi_classify", input, labels, **options)

    def nli(self, input, text2, labels=None, **options):
        """Natural language inference between ``input`` and ``text2``."""
        return self.run_task("nli", input, labels, text2=text2, **options)

    def matching(self, input, text2, labels=None, **options):
        """Text matching: are ``input`` and ``text2`` similar."""
        return self.run_task("matching", input, labels, text2=text2, **options)

    def mrc(self, input, question, labels=None, **options):
        """Reading comprehension: the answer to ``question`` (``labels``: choices; none = extractive)."""
        return self.run_task("mrc", input, labels, question=question, **options)

    def coref(self, input, labels, **options):
        """Coreference: does pronoun ``labels[0]`` refer to candidate ``labels[1]``."""
        return self.run_task("coref", input, labels, **options)

    def info(self):
        """The engine's model information (family, sizes, checkpoint, backend, limits)."""
        return self.engine.info()


def pipeline(task="rex-uninlu", model=None, device="cpu", *, precision="auto", threads=0, model_revision=None,
             **options):
    """Loads ``model`` for ``task`` and returns a :class:`Pipeline`, as ``modelscope.pipelines.pipeline``.

    task: 'rex-uninlu' (RexUniNLU) or 'siamese-uie' (``Tasks.siamese_uie``; needs an engine with
    that model family). model: the model directory, a ModelScope model id already in the local
    ModelScope cache, or None for the bundled demo model. device: 'cpu', 'cuda' or 'cuda:N' (also
    'gpu', 'gpu:N'). precision: 'fp32', 'fp16', 'bf16', 'int8' (as the build supports), 'auto' = fp32 on the CPU, fp16 on a GPU. threads: CPU
    threads (0 = one per core). model_revision: accepted for ModelScope code, ignored (the
    directory is what runs). options: extraction options for every call (docs/options.md).
    Raises ValueError for an unknown task, ModelError (a ValueError) for a bad model directory or
    one of another family, before any work.
    """
    del model_revision
    family = TASKS.get(task)
    if family is None:
        raise ValueError(f"task {task!r}: rexnlu runs the tasks {', '.join(map(repr, TASKS))}")
    model_dir = _model_dir(model)
    try:
        engine = _rexnlu.Engine(model_dir, device=_device(device), precision=precision, threads=threads)
    except _rexnlu.ModelError as e:
        raise _rexnlu.ModelError(f"task {task!r}: {e}") from None
    loaded = engine.info()["family"]
    if loaded != family:
        raise _rexnlu.ModelError(f"task {task!r} needs a {family} model, but {model_dir or 'the bundled model'} "
                                 f"holds a {loaded} model")
    engine.check_options(**options)  # a bad option fails here, with the engine's message
    return Pipeline(task, engine, model_dir or _rexnlu.default_model_dir(), {**_PIPELINE_DEFAULTS, **options})
