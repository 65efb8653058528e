// rexnlu._rexnlu: the C++ engine's public API (include/rexnlu) for Python. The package around it
// (python/rexnlu) adds the ModelScope-style pipeline; docs/python.md describes both.
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "convert.h"
#include "py_engine.h"
#include "rexnlu/default_model.h"
#include "rexnlu/tasks.h"

#ifndef REXNLU_VERSION
#error "REXNLU_VERSION must be defined by the build"
#endif

namespace py = pybind11;
using rexnlu::python::PyEngine;

namespace {

// A task preset (rexnlu/tasks.h) -> (text, schema JSON) the model expects.
py::tuple build_task(const std::string& task, const py::handle& text, const py::object& labels, const py::object& text2,
                     const py::object& question) {
  using rexnlu::python::utf8_arg;
  rexnlu::TaskArgs args;
  args.task = task;
  args.text = utf8_arg(text, "text");
  if (!labels.is_none()) {
    if (PyUnicode_Check(labels.ptr())) throw py::type_error("labels must be a list of str, not a str");
    for (auto label : labels) args.labels.push_back(utf8_arg(label, "labels"));
  }
  if (!text2.is_none()) args.text2 = utf8_arg(text2, "text2");
  if (!question.is_none()) args.question = utf8_arg(question, "question");
  const rexnlu::TaskRequest r = rexnlu::build_task(args);
  return py::make_tuple(py::str(r.text), py::str(r.schema));
}

}  // namespace

PYBIND11_MODULE(_rexnlu, m) {
  m.doc() = "The rexnlu C++ engine (RexUniNLU universal NLU). Use rexnlu.pipeline or rexnlu.Engine.";
  m.attr("__version__") = REXNLU_VERSION;
  rexnlu::python::register_errors(m);

  py::class_<PyEngine>(m, "Engine", R"doc(A loaded model: extract typed spans from texts with a schema.

Engine(model=None, device='cpu', precision='auto', threads=0)

model: the model directory (config.json, vocab.txt, model.safetensors or pytorch_model.bin), as
  str or os.PathLike; None = the bundled demo model. device: 'cpu', 'cuda' or 'cuda:N' (GPU N). precision: 'fp32',
  'fp16', 'bf16' or 'int8' (what the build and device support); 'auto' = fp32 on the CPU, fp16 on a GPU. threads: CPU threads, 0 = one per
  core (or OMP_NUM_THREADS).
Raises ModelError (a ValueError) for a missing, corrupt or unsupported model directory, OSError
when a file cannot be read, ValueError for a device or precision this build cannot run.

One Engine may be shared by any number of threads; the GIL is released while it computes.)doc")
      .def(py::init<const py::object&, const std::string&, const std::string&, int>(), py::arg("model") = py::none(),
           py::arg("device") = "cpu", py::arg("precision") = "auto", py::arg("threads") = 0)
      .def(
          "extract",
          [](PyEngine& e, const py::handle& text, const py::handle& schema, const py::object& timeout, bool timings,
             const py::kwargs& options) { return e.extract(text, schema, timeout, timings, options); },
          py::arg("text"), py::arg("schema"), py::kw_only(), py::arg("timeout") = py::none(), py::arg("timings") = false,
          R"doc(extract(text, schema, *, timeout=None, timings=False, **options) -> dict

Runs one text. schema: a dict such as {'人物': None, '组织机构': None} (nested for relations and
events) or the same as a JSON string. Returns {'output': [path, ...]} where a path is a list of
{'type', 'span', 'offset': [start, end], 'probability'} from the schema's root to a leaf (offsets
in code points of text, so text[start:end] == span; in UTF-8 bytes with byte_offsets=True), plus
'warnings' when some type was skipped. options: link_threshold, max_len, stride, hint_max_len,
dedup, probabilities, byte_offsets, max_batch_cells (docs/options.md). timeout: seconds, after
which the request stops between model calls with TimeoutError. timings=True adds 'timings': the
engine's own seconds by stage {'tokenize', 'forward', 'decode', 'forward_calls'} (the rest of a
call's time is the binding's).
Raises TypeError for arguments of the wrong type, ValueError (the engine's message) for a bad
text, schema or option, LimitExceededError (a ValueError) past the engine's limits.)doc")
      .def(
          "extract_batch",
          [](PyEngine& e, const py::handle& texts, const py::handle& schema, const py::object& timeout,
             const py::kwargs& options) { return e.extract_batch(texts, schema, timeout, options); },
          py::arg("texts"), py::arg("schema"), py::kw_only(), py::arg("timeout") = py::none(),
          R"doc(extract_batch(texts, schema, *, timeout=None, **options) -> list[dict]

Runs several texts in one engine call: each recursion level is one model forward for all of
them. schema: one schema for every text, or a list with one schema per text. Returns one dict
per text, as extract() does; a text whose request fails gets {'error': message, 'error_kind':
'invalid_input' | 'limit_exceeded' | 'cancelled' | ...} instead, and the others are unaffected.)doc")
      .def(
          "check_options", [](const PyEngine& e, const py::kwargs& options) { e.check_options(options); },
          "check_options(**options): raises ValueError (the engine's message) for an option extract() "
          "would refuse; runs nothing.")
      .def("info", &PyEngine::info,
           "info() -> dict: the model's family, architecture, sizes, checkpoint, backend, load_warnings "
           "and limits.")
      .def(
          "set_limits", [](PyEngine& e, const py::kwargs& limits) { e.set_limits(limits); },
          R"doc(set_limits(**limits): bounds on every request's size and work: max_text_bytes,
max_schema_types, max_schema_depth, max_paths, max_output_bytes, max_sequences (docs/options.md).
Waits for running extractions.)doc")
      .def("limits", &PyEngine::limits, "limits() -> dict: the limits in force.")
      .def("count_tokens", &PyEngine::count_tokens, py::arg("text"),
           "count_tokens(text) -> int: word pieces of text alone (no prompt, no special tokens).")
      .def_property_readonly("forward_calls", &PyEngine::forward_calls, "Model forward passes run so far.")
      .def_property_readonly("load_warnings", &PyEngine::load_warnings,
                             "What loading noticed, e.g. unused tensors in the checkpoint.");

  m.def("build_task", &build_task, py::arg("task"), py::arg("text"), py::arg("labels") = py::none(),
        py::arg("text2") = py::none(), py::arg("question") = py::none(),
        R"doc(build_task(task, text, labels=None, text2=None, question=None) -> (text, schema_json)

The text (with its [CLASSIFY]/[MULTICLASSIFY] marker) and schema the model expects for a task
preset, as `rexnlu extract --task` builds them. Raises ValueError for an unknown task or missing
arguments.)doc");
  m.def("task_names", &rexnlu::task_names, "task_names() -> list[str]: the task presets build_task knows.");
  m.def(
      "default_model_dir", [] { return rexnlu::default_model_dir().string(); },
      "default_model_dir() -> str: where the engine looks for the bundled model ($REXNLU_MODEL first).");
}
