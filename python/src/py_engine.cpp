#include "py_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <mutex>

#include <Python.h>
#include <pybind11/stl.h>

#include "convert.h"
#include "rexnlu/default_model.h"
#include "rexnlu/load_options.h"

namespace rexnlu::python {
namespace {

Engine load(const py::object& model_dir, const std::string& device, const std::string& precision, int threads) {
  std::filesystem::path dir;
  if (model_dir.is_none()) {
    dir = default_model_dir();
  } else {
    const py::object path = py::module_::import("os").attr("fspath")(model_dir);  // str or os.PathLike
    dir = utf8_arg(path, "model");
  }
  LoadOptions options;
  if (!parse_device_spec(device, options))
    throw py::value_error("device '" + device + "': expected 'cpu', 'cuda' or 'cuda:N'");
  const auto p = precision == "auto" ? std::optional(default_precision(options.device)) : parse_precision(precision);
  if (!p) throw py::value_error("precision '" + precision + "': expected 'fp32', 'fp16', 'bf16', 'int8' or 'auto'");
  if (threads < 0) throw py::value_error("threads must be >= 0 (0 = one per core), got " + std::to_string(threads));
  options.precision = *p;
  options.threads = threads;
  py::gil_scoped_release release;
  return Engine::load(dir, options);
}

std::chrono::steady_clock::time_point deadline_of(const py::object& timeout) {
  if (timeout.is_none()) return std::chrono::steady_clock::time_point::max();
  const double seconds = timeout.cast<double>();
  if (!(seconds > 0) || !std::isfinite(seconds))
    throw py::value_error("timeout must be a positive number of seconds, got " + std::string(py::str(timeout)));
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// The thread that may receive KeyboardInterrupt (Python runs signal handlers there only).
unsigned long main_thread_id() {
  static const unsigned long id = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  return id;
}

int64_t int_arg(const py::handle& value, const std::string& name) {
  if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()))
    throw py::type_error("limit " + name + " must be an int, not " + std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  return value.cast<int64_t>();
}

}  // namespace

PyEngine::PyEngine(const py::object& model_dir, const std::string& device, const std::string& precision, int threads)
    : engine_(load(model_dir, device, precision, threads)) {}

std::vector<Result> PyEngine::run(std::vector<Request>& requests, const py::object& timeout, BatchTimings* timings) {
  const auto deadline = deadline_of(timeout);
  for (auto& r : requests) r.deadline = deadline;
  // On the main thread Ctrl-C cancels between model calls (the handler's exception is raised after).
  bool interrupted = false;
  std::function<bool()> cancelled;
  if (PyThread_get_thread_ident() == main_thread_id()) {
    cancelled = [&interrupted] {
      if (interrupted) return true;
      py::gil_scoped_acquire gil;
      interrupted = PyErr_CheckSignals() != 0;
      return interrupted;
    };
  }
  std::vector<Result> results;
  {
    py::gil_scoped_release release;
    std::shared_lock lock(mutex_);
    results = engine_.extract_batch(requests, timings, cancelled);
  }
  if (interrupted) throw py::error_already_set();
  return results;
}

py::dict PyEngine::extract(const py::handle& text, const py::handle& schema, const py::object& timeout, bool timings,
                           const py::dict& options) {
  std::vector<Request> requests(1);
  requests[0].text = utf8_arg(text, "text");
  requests[0].schema = schema_arg(schema);
  requests[0].options = options_arg(options);
  BatchTimings t;
  const std::vector<Result> results = run(requests, timeout, timings ? &t : nullptr);
  if (!results[0].ok()) throw Error(results[0].error_kind, results[0].error);
  py::dict d = result_dict(results[0]);
  if (timings) {
    py::dict td;
    td["tokenize"] = t.tokenize_seconds;
    td["forward"] = t.forward_seconds;
    td["decode"] = t.decode_seconds;
    td["forward_calls"] = t.forward_calls;
    d["timings"] = td;
  }
  return d;
}

py::list PyEngine::extract_batch(const py::handle& texts, const py::handle& schema, const py::object& timeout,
                                 const py::dict& options) {
  if (PyUnicode_Check(texts.ptr()) || !PySequence_Check(texts.ptr()))
    throw py::type_error("texts must be a list of str, not " + std::string(py::str(py::type::handle_of(texts).attr("__name__"))));
  const py::sequence seq = py::reinterpret_borrow<py::sequence>(texts);
  const bool per_text_schema = PyList_Check(schema.ptr()) || PyTuple_Check(schema.ptr());
  if (per_text_schema && py::len(schema) != seq.size())
    throw py::value_error("schema: a list of " + std::to_string(py::len(schema)) + " schemas for " +
                          std::to_string(seq.size()) + " texts");
  const Options o = options_arg(options);
  const std::string shared_schema = per_text_schema ? std::string() : schema_arg(schema);
  std::vector<Request> requests(seq.size());
  for (size_t i = 0; i < seq.size(); ++i) {
    const std::string what = "texts[" + std::to_string(i) + "]";
    requests[i].text = utf8_arg(seq[i], what.c_str());
    requests[i].schema = per_text_schema ? schema_arg(py::reinterpret_borrow<py::sequence>(schema)[i]) : shared_schema;
    requests[i].options = o;
  }
  const std::vector<Result> results = run(requests, timeout);
  py::list out;
  for (const Result& r : results) out.append(result_dict(r));
  return out;
}

void PyEngine::check_options(const py::dict& options) const {
  Request probe;
  probe.text = "x";
  probe.schema = R"({"x": null})";
  probe.options = options_arg(options);
  py::gil_scoped_release release;
  std::shared_lock lock(mutex_);
  engine_.estimate_cost(probe);
}

py::dict PyEngine::info() const {
  const ModelInfo& m = engine_.model_info();
  py::dict d;
  d["family"] = m.family;
  d["architecture"] = m.architecture;
  d["model_type"] = m.model_type;
  d["layers"] = m.layers;
  d["hidden_size"] = m.hidden_size;
  d["attention_heads"] = m.attention_heads;
  d["head_dim"] = m.head_dim;
  d["intermediate_size"] = m.intermediate_size;
  d["max_position_embeddings"] = m.max_position_embeddings;
  d["position_buckets"] = m.position_buckets;
  d["vocab_size"] = m.vocab_size;
  d["added_tokens"] = m.added_tokens;
  d["config_vocab_size"] = m.config_vocab_size;
  d["parameters"] = m.parameters;
  d["parameter_bytes"] = m.parameter_bytes;
  d["dtypes"] = m.dtypes;
  d["checkpoint"] = m.checkpoint;
  d["checkpoint_format"] = m.checkpoint_format;
  d["checkpoint_tensors"] = m.checkpoint_tensors;
  d["backend"] = m.backend;
  d["device"] = m.device;
  d["precision"] = m.precision;
  d["load_warnings"] = py::cast(engine_.load_warnings());
  d["limits"] = limits();
  return d;
}

void PyEngine::set_limits(const py::dict& limits) {
  Limits l = engine_.limits();
  for (auto item : limits) {
    const std::string name = py::str(item.first);
    const int64_t v = int_arg(item.second, name);
    if (name == "max_text_bytes") l.max_text_bytes = v;
    else if (name == "max_schema_types") l.max_schema_types = v;
    else if (name == "max_schema_depth") l.max_schema_depth = static_cast<int>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
    else if (name == "max_paths") l.max_paths = v;
    else if (name == "max_output_bytes") l.max_output_bytes = v;
    else if (name == "max_sequences") l.max_sequences = v;
    else
      throw py::type_error("unknown limit '" + name + "' (max_text_bytes, max_schema_types, max_schema_depth, max_paths, "
                           "max_output_bytes, max_sequences)");
  }
  py::gil_scoped_release release;
  std::unique_lock lock(mutex_);  // waits for running extractions
  engine_.set_limits(l);
}

py::dict PyEngine::limits() const {
  Limits l;
  {
    py::gil_scoped_release release;
    std::shared_lock lock(mutex_);
    l = engine_.limits();
  }
  py::dict d;
  d["max_text_bytes"] = l.max_text_bytes;
  d["max_schema_types"] = l.max_schema_types;
  d["max_schema_depth"] = l.max_schema_depth;
  d["max_paths"] = l.max_paths;
  d["max_output_bytes"] = l.max_output_bytes;
  d["max_sequences"] = l.max_sequences;
  return d;
}

int64_t PyEngine::count_tokens(const py::handle& text) const {
  const std::string utf8 = utf8_arg(text, "text");
  py::gil_scoped_release release;
  return engine_.count_tokens(utf8);
}

}  // namespace rexnlu::python
