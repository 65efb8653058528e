// Python values <-> what the engine's public API takes and gives: str <-> UTF-8, dicts and lists
// <-> JSON (schemas, options, limits), Result -> the original pipeline's dict, rexnlu::Error -> the
// Python exception of its kind.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "rexnlu/json.h"
#include "rexnlu/options.h"
#include "rexnlu/result.h"

namespace rexnlu::python {

namespace py = pybind11;

// A str argument as UTF-8. TypeError for a non-str, ValueError for a str that has no UTF-8 form
// (lone surrogates); both name `what`.
std::string utf8_arg(py::handle value, const char* what);

// A schema: a JSON string (passed on as is: the engine parses it and names what is wrong) or a
// dict (serialized). TypeError for anything else.
std::string schema_arg(py::handle value);

// None, bool, int, float, str, dict (str keys), list and tuple as JSON, nested at most 64 levels
// (a self-containing dict is refused, not followed). TypeError for other types.
Json to_json(py::handle value, const char* what);

// Keyword arguments -> Options through the engine's own option parser (names, types, ranges and
// messages as docs/options.md). ValueError for an unknown option or a bad value.
Options options_arg(const py::dict& kwargs);

// JSON -> the Python value (None, bool, int, float, str, list, dict).
py::object from_json(const Json& j);

// rexnlu::result_json as Python: {"output": [[{"type", "span", "offset": [s, e], "probability"?}...]...],
// "warnings"?: [...]}, or {"error": "...", "error_kind": "..."} for a failed request of a batch.
py::dict result_dict(const Result& r);

// Registers ModelError, LimitExceededError (both ValueError), the translation of rexnlu::Error
// (invalid input -> ValueError, io -> OSError, cancelled -> TimeoutError, internal -> RuntimeError)
// in module `m`.
void register_errors(py::module_& m);

// The name of an ErrorKind as the Python side reports it: "invalid_input", "limit_exceeded", ...
const char* error_kind_name(ErrorKind kind);

}  // namespace rexnlu::python
