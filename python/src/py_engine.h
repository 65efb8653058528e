// The engine as the Python module holds it: rexnlu::Engine plus what makes it a good Python
// object. Extractions run with the GIL released; any number of threads may extract at once (the
// engine serializes its model calls itself) while set_limits waits for them; Ctrl-C on the main
// thread stops an extraction between model calls.
#pragma once

#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "rexnlu/engine.h"

namespace rexnlu::python {

namespace py = pybind11;

class PyEngine {
 public:
  // model_dir None = the bundled default model (rexnlu::default_model_dir()).
  PyEngine(const py::object& model_dir, const std::string& device, const std::string& precision, int threads);

  // One text -> its result dict; raises on a bad request (ValueError, LimitExceededError, ...).
  // With `timings` the dict also holds the engine's own time by stage ("timings": seconds).
  py::dict extract(const py::handle& text, const py::handle& schema, const py::object& timeout, bool timings,
                   const py::dict& options);

  // Several texts in one engine call (shared model forwards). `schema` is one schema for all or a
  // list of one per text. A failed request gets {"error", "error_kind"}; the others are unaffected.
  py::list extract_batch(const py::handle& texts, const py::handle& schema, const py::object& timeout,
                         const py::dict& options);

  // Checks extraction options as a request would (names, types, ranges, also those that depend on
  // each other) without running anything. ValueError naming the option.
  void check_options(const py::dict& options) const;

  py::dict info() const;
  void set_limits(const py::dict& limits);
  py::dict limits() const;
  int64_t count_tokens(const py::handle& text) const;
  int64_t forward_calls() const { return engine_.forward_calls(); }
  std::vector<std::string> load_warnings() const { return engine_.load_warnings(); }

 private:
  std::vector<Result> run(std::vector<Request>& requests, const py::object& timeout, BatchTimings* timings = nullptr);

  Engine engine_;
  mutable std::shared_mutex mutex_;  // extractions share it; set_limits takes it alone
};

}  // namespace rexnlu::python
